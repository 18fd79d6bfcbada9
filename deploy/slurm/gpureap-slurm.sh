# gpureap Slurm scripts: the code epilog.sh and prolog.sh share. Not run on its own: each
# script sources it from its own directory, after setting `tag` (epilog or prolog).
# shellcheck shell=sh
# shellcheck disable=SC2034 # variables set here are used by the scripts that source it

set -u
set -f # GPUREAP_OPTS is split on blanks, never globbed
PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH
defaults=${GPUREAP_SLURM_DEFAULTS:-/etc/default/gpureap-slurm}
# shellcheck disable=SC1090 # the site's settings, a file root owns
if [ -r "$defaults" ]; then . "$defaults"; fi
job=${SLURM_JOB_ID:-unknown}
timeout_s=${GPUREAP_TIMEOUT:-120}
tmp=

# One line on stderr and, unless GPUREAP_SYSLOG=0, in syslog (slurmd discards the output of
# prologs and epilogs). $1: syslog level.
say() {
  level=$1
  shift
  line=$(printf '%s' "gpureap $tag: job $job: $*" | tr -d '\000-\037')
  printf '%s\n' "$line" >&2
  if [ "${GPUREAP_SYSLOG:-1}" != 0 ] && command -v logger >/dev/null 2>&1; then
    logger -t gpureap-slurm -p "daemon.$level" -- "$line" 2>/dev/null || :
  fi
}

# Ends the script: $1 exit status, the rest the one line that says why.
finish() {
  status=$1
  shift
  if [ "$status" -ne 0 ]; then
    say err "$*; draining"
    drain_with_reason "$*"
  fi
  exit "$status"
}

# scontrol "$@", bounded (a controller that does not answer holds no script up), its output on
# stdout and nothing on stderr.
scontrol_bounded() {
  if command -v timeout >/dev/null 2>&1; then
    timeout -k 2 10 scontrol "$@" </dev/null 2>/dev/null
  else
    scontrol "$@" </dev/null 2>/dev/null
  fi
}

# The node's reason, when the node is drained and the reason is gpureap's (a resume clears
# both); nothing otherwise. `scontrol -o show node` prints one line of Key=Value fields, State
# (IDLE+DRAIN, MIXED+DRAIN, ...) before Reason, which ends the line with its [user@time].
gpureap_drain_reason() {
  line=$(scontrol_bounded -o show node "$SLURMD_NODENAME") || return 0
  state=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^State=//p')
  case $state in *DRAIN*) ;; *) return 0 ;; esac
  case $line in *" Reason=gpureap "*) printf '%s' "${line#* Reason=}" ;; esac
}

# Drains the node itself, with a reason that says what gpureap found, before failing: the drain
# slurmd asks for on a failed script says only "Prolog error" or "Epilog error" in `sinfo -R`,
# and slurmctld leaves a node that is already drained, and its reason, as they are. A node
# gpureap already drained keeps that first reason too: a later script sees the same memory
# (Slurm runs the epilog of a job the prolog refused) and would blame a job that never ran.
# Skipped with GPUREAP_DRAIN_REASON=0, outside Slurm (no SLURMD_NODENAME) and without scontrol;
# Slurm still drains the node then, with its own reason.
drain_with_reason() {
  if [ "${GPUREAP_DRAIN_REASON:-1}" = 0 ] || [ -z "${SLURMD_NODENAME:-}" ] ||
    ! command -v scontrol >/dev/null 2>&1; then
    return 0
  fi
  kept=$(gpureap_drain_reason)
  if [ -n "$kept" ]; then
    say notice "the node stays drained with gpureap's earlier reason: $kept"
    return 0
  fi
  why=$(printf 'gpureap %s: job %s: %s' "$tag" "$job" "$1" | tr -d '\000-\037"' | cut -c1-250)
  scontrol_bounded update NodeName="$SLURMD_NODENAME" State=DRAIN Reason="$why" >/dev/null ||
    say warning "scontrol could not set the drain reason; Slurm gives its own"
}

# shellcheck disable=SC2317 # called by the trap
cleanup() { if [ -n "$tmp" ]; then rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 2' HUP INT TERM

is_number() {
  case $1 in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac
}

find_gpureap() {
  if [ -n "$tmp" ]; then return; fi
  if [ -n "${GPUREAP:-}" ]; then
    bin=$GPUREAP
  elif ! bin=$(command -v gpureap 2>/dev/null); then
    bin=/usr/local/bin/gpureap
  fi
  if [ ! -x "$bin" ]; then
    finish 2 "gpureap not found (\$GPUREAP, PATH, /usr/local/bin); install it or set GPUREAP"
  fi
  is_number "$timeout_s" || finish 2 "GPUREAP_TIMEOUT=$timeout_s is not a number of seconds"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-slurm.XXXXXX") || finish 2 "cannot create a temporary directory"
}

# Runs gpureap with GPUREAP_OPTS and "$@", bounded by GPUREAP_TIMEOUT: stdout in $tmp/out,
# stderr in $tmp/err, the exit status in $rc (124 or 137: it did not finish in time).
run_gpureap() {
  # shellcheck disable=SC2086 # GPUREAP_OPTS is a list of options
  if command -v timeout >/dev/null 2>&1; then
    timeout -k 5 "$timeout_s" "$bin" ${GPUREAP_OPTS:-} "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
  else
    "$bin" ${GPUREAP_OPTS:-} "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
  fi
  rc=$?
}

# Why the last gpureap run failed, in a few words: "gpureap doctor on GPU 1 ...".
run_failure() {
  what=$1
  case $rc in
    124 | 137) printf '%s did not finish within %ss (driver not answering?)' "$what" "$timeout_s" ;;
    *)
      first=$(sed -n '1{s/^gpureap: //;p;}' "$tmp/err" | tr -d '\000-\037' | cut -c1-200)
      printf '%s failed (exit %s)%s' "$what" "$rc" "${first:+: $first}"
      ;;
  esac
}

# 4294967296 → "4.0 GiB".
human_bytes() {
  awk -v b="$1" 'BEGIN {
    if (b >= 1073741824) printf "%.1f GiB", b / 1073741824
    else if (b >= 1048576) printf "%.0f MiB", b / 1048576
    else printf "%d bytes", b }'
}

# From `gpureap doctor --json` in $tmp/out, "BYTES|AVAILABLE|CODES|BACKEND ERROR": the memory
# and codes of its findings, and whether it could ask the driver. The JSON is pretty-printed
# with sorted keys: a finding's fields sit at six spaces, the snapshot's backend's too.
doctor_summary() {
  awk '
    /^  "findings": \[$/ { f = 1; next }
    /^  "snapshot": \{$/ { s = 1; next }
    /^  [^ ]/ { f = 0; s = 0 }
    f && /^      "memory_bytes": [0-9]/ { v = $2; sub(/,$/, "", v); sum += v }
    f && /^      "code": "/ {
      c = $0; sub(/^      "code": "/, "", c); sub(/",?$/, "", c)
      if (!(c in seen)) { seen[c] = 1; codes = codes (codes == "" ? "" : ",") c }
    }
    s && /^    "backend": \{$/ { b = 1; next }
    s && /^    [^ ]/ { b = 0 }
    b && /^      "available": / { avail = $2; sub(/,$/, "", avail) }
    b && /^      "error": "/ { err = $0; sub(/^      "error": "/, "", err); sub(/",?$/, "", err); gsub(/\\/, "", err); err = substr(err, 1, 200) }
    END { printf "%.0f|%s|%s|%s\n", sum, avail, codes, err }' "$tmp/out"
}

# Looks for ghost memory on GPU $1 (doctor's settle window $2). Sets $verdict: clean, ghost
# ($amount, e.g. "4.0 GiB" or empty, and $codes say more) or error ($detail says why nothing
# can be said).
check_gpu() {
  verdict=error
  run_gpureap doctor --gpu "$1" --only no-such-process,leaked-memory,gpu-error --settle "$2" --json
  case $rc in
    0 | 1 | 2) ;;
    *)
      detail=$(run_failure "gpureap doctor on GPU $1")
      return
      ;;
  esac
  IFS='|' read -r bytes available codes backend_error <<EOF
$(doctor_summary)
EOF
  if [ "$available" != true ]; then
    detail="no GPU driver to ask about GPU $1${backend_error:+ ($backend_error)}"
  elif [ "$rc" -eq 0 ]; then
    verdict=clean
  else
    case ",$codes," in
      *,gpu-error,*) detail="the driver reports GPU $1 in error" ;;
      *)
        verdict=ghost
        amount=
        if [ "$bytes" -gt 0 ] 2>/dev/null; then amount=$(human_bytes "$bytes"); fi
        ;;
    esac
  fi
}

# The job's GPUs as NVML indices in $gpus (space-separated, no duplicates). GPU UUIDs in
# CUDA_VISIBLE_DEVICES name GPUs exactly and come first; then SLURM_JOB_GPUS; then indices in
# CUDA_VISIBLE_DEVICES. MIG instances are not whole GPUs: the script stands aside.
job_gpus() {
  gpus=
  cvd=${CUDA_VISIBLE_DEVICES:-}
  sjg=${SLURM_JOB_GPUS:-}
  case $cvd in NoDevFiles) cvd= ;; esac
  case $sjg in NoDevFiles) sjg= ;; esac
  case ",$cvd" in
    *,MIG-*)
      say notice "GPUs are MIG instances ($cvd); gpureap acts on whole GPUs, so nothing was checked"
      exit 0
      ;;
    *,GPU-*) ids=$cvd ;;
    *) ids=${sjg:-$cvd} ;;
  esac
  uuids=
  old_ifs=$IFS
  IFS=', '
  for id in $ids; do
    case $id in
      GPU-*) uuids="$uuids $id" ;;
      *)
        is_number "$id" || finish 2 "cannot read the job's GPUs from '$ids'"
        add_gpu "$id"
        ;;
    esac
  done
  IFS=$old_ifs
  [ -z "$uuids" ] && return
  find_gpureap
  run_gpureap ps --json
  [ "$rc" -eq 0 ] || finish 2 "$(run_failure "gpureap ps (to map GPU UUIDs)")"
  # `"index": N` precedes `"uuid": "GPU-…"` in each GPU object (sorted keys, six spaces).
  map=$(awk '
    /^  "gpus": \[$/ { g = 1; next }
    /^  [^ ]/ { g = 0 }
    g && /^      "index": [0-9]/ { i = $2; sub(/,$/, "", i) }
    g && /^      "uuid": "/ { u = $2; gsub(/[",]/, "", u); print tolower(u), i }' "$tmp/out")
  for uuid in $uuids; do
    want=$(printf '%s' "$uuid" | tr '[:upper:]' '[:lower:]')
    index=$(printf '%s\n' "$map" | awk -v u="$want" '$1 == u { print $2; exit }')
    [ -n "$index" ] || finish 2 "no GPU has the UUID $uuid"
    add_gpu "$index"
  done
}

add_gpu() {
  case " $gpus " in *" $1 "*) ;; *) gpus="${gpus:+$gpus }$1" ;; esac
}
