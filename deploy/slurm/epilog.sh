#!/bin/sh
# gpureap Slurm epilog: at job end, ends the job user's leftover processes on the job's GPUs
# (`gpureap kill --gpu N --user UID --yes`, which waits until their memory is back), then
# checks that no ghost memory stays on those GPUs. When memory stays held it prints one line
# and exits non-zero, so slurmd drains the node.
#
# Slurm gives:  SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GPUS and/or CUDA_VISIBLE_DEVICES
# Settings (environment, or /etc/default/gpureap-slurm, which overrides it):
#   GPUREAP               the gpureap binary (default: PATH, then /usr/local/bin/gpureap)
#   GPUREAP_OPTS          global options for every gpureap run (e.g. --nvml-library PATH)
#   GPUREAP_GRACE         SIGTERM → SIGKILL delay (default 5s)
#   GPUREAP_WAIT_RELEASE  how long to wait for the memory to come back (default 30s)
#   GPUREAP_SETTLE        doctor's releasing-or-leaked window (default 3s)
#   GPUREAP_TIMEOUT       seconds any one gpureap run may take (default 120)
#   GPUREAP_SYSLOG        0: do not also log to syslog (default 1)
# Exit: 0 nothing left (or no GPUs); 1 memory still held; 2 could not check. Both drain.
#
# POSIX sh (dash, bash, busybox ash); needs only coreutils, sed, awk and, optionally, logger.
# The block between the "common" markers is identical in prolog.sh; a test keeps it so.

tag=epilog

# --- common: begin ---------------------------------------------------------------------------
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
  if [ "$status" -ne 0 ]; then say err "$*; draining"; fi
  exit "$status"
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
# --- common: end -----------------------------------------------------------------------------

grace=${GPUREAP_GRACE:-5s}
wait_release=${GPUREAP_WAIT_RELEASE:-30s}
settle=${GPUREAP_SETTLE:-3s}

uid=${SLURM_JOB_UID:-}
is_number "$uid" || finish 2 "SLURM_JOB_UID is not set (run this as Slurm's Epilog)"
job_gpus
[ -n "$gpus" ] || exit 0 # no GPUs on this node for this job
find_gpureap

held=     # "4.0 GiB still held on GPU 1, 2.0 GiB on GPU 3"
problems= # survivors, memory not released, what could not be checked
ended=0   # processes ended, on the GPUs in $ended_on
ended_on=
status=0

add_held() {
  if [ -z "$held" ]; then held="$1 still held on GPU $2"; else held="$held, $1 on GPU $2"; fi
}
add_problem() { # $1: the status it implies (1 memory held, 2 could not check)
  problems="${problems:+$problems; }$2"
  if [ "$1" -gt "$status" ]; then status=$1; fi
}
# A count in the summary of `gpureap kill --json` (its fields sit at four spaces); 0 if absent.
summary_count() {
  awk -v k="$1" '
    /^  "summary": \{$/ { s = 1; next }
    /^  [^ ]/ { s = 0 }
    s && $1 == "\"" k "\":" { v = $2; sub(/,$/, "", v); n = v + 0; exit }
    END { print n + 0 }' "$tmp/out"
}
count_text() { # 1 → "1 process", 2 → "2 processes"
  if [ "$1" -eq 1 ]; then printf '1 process'; else printf '%s processes' "$1"; fi
}

# First end the leftovers on every GPU of the job, then look at what stays: a process that held
# two of its GPUs is gone before either is examined. kill_<gpu> keeps each kill's exit status.
for gpu in $gpus; do
  eval "kill_$gpu=skipped survivors_$gpu=0"
  if [ "$uid" -eq 0 ]; then continue; fi # a root job: never end root's processes (slurmd, daemons)
  run_gpureap kill --gpu "$gpu" --user "$uid" --yes --json --grace "$grace" --wait-release "$wait_release"
  eval "kill_$gpu=$rc"
  case $rc in
    0 | 1 | 3)
      n=$(summary_count released)
      if [ "$n" -gt 0 ]; then
        ended=$((ended + n))
        ended_on="${ended_on:+$ended_on,}$gpu"
      fi
      ;;
    *) add_problem 2 "$(run_failure "gpureap kill on GPU $gpu")" ;;
  esac
  if [ "$rc" -eq 1 ]; then
    n=$(summary_count survived)
    eval "survivors_$gpu=$n"
    if [ "$n" -gt 0 ]; then add_problem 1 "$(count_text "$n") of uid $uid on GPU $gpu survived SIGKILL"; fi
  fi
done

for gpu in $gpus; do
  killed='' survivors=''
  eval "killed=\$kill_$gpu survivors=\$survivors_$gpu"
  case $killed in skipped | 0 | 1 | 3) ;; *) continue ;; esac # its kill could not run: said so
  check_gpu "$gpu" "$settle"
  case $verdict in
    clean)
      if [ "$killed" = 1 ] && [ "$survivors" -eq 0 ]; then
        # The reaper gave up waiting, and by now nothing is a ghost: still being freed, or held
        # by a process the driver lists. Either way the job's memory was not back in time.
        add_problem 1 "the memory of uid $uid's processes on GPU $gpu was not released within $wait_release"
      fi
      ;;
    ghost)
      add_held "${amount:-ghost memory}" "$gpu"
      if [ "$status" -lt 1 ]; then status=1; fi
      ;;
    *) add_problem 2 "$detail" ;;
  esac
done

if [ "$status" -eq 0 ]; then
  if [ "$ended" -gt 0 ]; then
    say notice "ended $(count_text "$ended") of uid $uid on GPU $ended_on; memory released"
  fi
  exit 0
fi
reason=
if [ -n "$held" ]; then
  if [ "$uid" -eq 0 ]; then
    reason="$held (a root job: its processes are left alone)"
  else
    reason="$held after ending uid $uid's processes"
  fi
fi
finish "$status" "${reason}${reason:+${problems:+; }}${problems}"
