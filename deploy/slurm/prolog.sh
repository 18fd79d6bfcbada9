#!/bin/sh
# gpureap Slurm prolog: refuses to start a job on a GPU with ghost memory — memory the driver
# lists for processes that are gone, or uses for nobody (`gpureap doctor` codes no-such-process
# and leaked-memory) — by printing one line and exiting non-zero, so slurmd drains the node
# and requeues the job. A clean GPU costs one quick look: the settle window is only waited for
# when there is memory whose fate is open.
#
# Slurm gives:  SLURM_JOB_ID, SLURM_JOB_GPUS and/or CUDA_VISIBLE_DEVICES, SLURMD_NODENAME
# Settings (environment, or /etc/default/gpureap-slurm, which overrides it):
#   GPUREAP               the gpureap binary (default: PATH, then /usr/local/bin/gpureap)
#   GPUREAP_OPTS          global options for every gpureap run (e.g. --nvml-library PATH)
#   GPUREAP_PROLOG_SETTLE doctor's releasing-or-leaked window (default 1s)
#   GPUREAP_TIMEOUT       seconds any one gpureap run may take (default 120)
#   GPUREAP_SYSLOG        0: do not also log to syslog (default 1)
#   GPUREAP_DRAIN_REASON  0: leave the drain to slurmd, whose reason is "Prolog error" or
#                         "Epilog error" (default 1: scontrol drains the node first, with
#                         gpureap's reason, e.g. "gpureap epilog: job 7: 8.0 GiB still held on
#                         GPU 0 ...")
# Exit: 0 the job's GPUs are clean (or it has none); 1 ghost memory; 2 could not check.
#
# POSIX sh (dash, bash, busybox ash); needs only coreutils, sed, awk and, optionally, logger.
# Needs gpureap-slurm.sh (the code it shares with epilog.sh) in the same directory.

tag=prolog

# The code both scripts share, installed beside them.
lib="$(dirname -- "$0")/gpureap-slurm.sh"
if [ ! -r "$lib" ]; then
  echo "gpureap $tag: job ${SLURM_JOB_ID:-unknown}: cannot read $lib: install it beside $0; draining" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=gpureap-slurm.sh
. "$lib"

settle=${GPUREAP_PROLOG_SETTLE:-1s}

job_gpus
[ -n "$gpus" ] || exit 0 # no GPUs on this node for this job
find_gpureap

ghosts= # "GPU 1 has 4.0 GiB of ghost memory (leaked-memory)"
first_ghost=
problems=
status=0
for gpu in $gpus; do
  check_gpu "$gpu" "$settle"
  case $verdict in
    clean) ;;
    ghost)
      first_ghost=${first_ghost:-$gpu}
      ghosts="${ghosts:+$ghosts, }GPU $gpu has ${amount:+$amount of }ghost memory${codes:+ ($codes)}"
      if [ "$status" -lt 1 ]; then status=1; fi
      ;;
    *)
      problems="${problems:+$problems; }$detail"
      status=2
      ;;
  esac
done
[ "$status" -eq 0 ] && exit 0
reason=
if [ -n "$ghosts" ]; then
  reason="$ghosts; not starting the job (see \`gpureap doctor --gpu $first_ghost\`)"
fi
finish "$status" "${reason}${reason:+${problems:+; }}${problems}"
