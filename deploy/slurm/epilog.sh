#!/bin/sh
# gpureap Slurm epilog: at job end, ends the job user's leftover processes on the job's GPUs
# (`gpureap kill --gpu N --user UID --yes`, which waits until their memory is back), then
# checks that no ghost memory stays on those GPUs. When memory stays held it prints one line
# and exits non-zero, so slurmd drains the node.
#
# Slurm gives:  SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GPUS and/or CUDA_VISIBLE_DEVICES,
#               SLURMD_NODENAME
# Settings (environment, or /etc/default/gpureap-slurm, which overrides it):
#   GPUREAP               the gpureap binary (default: PATH, then /usr/local/bin/gpureap)
#   GPUREAP_OPTS          global options for every gpureap run (e.g. --nvml-library PATH)
#   GPUREAP_GRACE         SIGTERM → SIGKILL delay (default 5s)
#   GPUREAP_WAIT_RELEASE  how long to wait for the memory to come back (default 30s)
#   GPUREAP_SETTLE        doctor's releasing-or-leaked window (default 3s)
#   GPUREAP_TIMEOUT       seconds any one gpureap run may take (default 120)
#   GPUREAP_SYSLOG        0: do not also log to syslog (default 1)
#   GPUREAP_DRAIN_REASON  0: leave the drain to slurmd, whose reason is "Prolog error" or
#                         "Epilog error" (default 1: scontrol drains the node first, with
#                         gpureap's reason, e.g. "gpureap epilog: job 7: 8.0 GiB still held on
#                         GPU 0 ...")
# Exit: 0 nothing left (or no GPUs); 1 memory still held; 2 could not check. Both drain.
#
# POSIX sh (dash, bash, busybox ash); needs only coreutils, sed, awk and, optionally, logger.
# Needs gpureap-slurm.sh (the code it shares with prolog.sh) in the same directory.

tag=epilog

# The code both scripts share, installed beside them.
lib="$(dirname -- "$0")/gpureap-slurm.sh"
if [ ! -r "$lib" ]; then
  echo "gpureap $tag: job ${SLURM_JOB_ID:-unknown}: cannot read $lib: install it beside $0; draining" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=gpureap-slurm.sh
. "$lib"

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
if [ -n "$held" ]; then reason="$held after ending uid $uid's processes"; fi
finish "$status" "${reason}${reason:+${problems:+; }}${problems}"
