#!/usr/bin/env bash
# `gpureap ps --json` against an nvidia-smi --query-compute-apps stand-in (bench/smi_standin.c:
# the NVML calls that query needs, in C), both over the NVML test double answering each call
# as late as an H200 does (bench/lib/nvml_latency_h200.json, see bench/README.md).
#   PROCS=500 FDS=20 HOLDERS=1 GPUS=1 RUNS=21 bench/nvml_latency.sh
#   BEFORE=/path/to/other/gpureap bench/nvml_latency.sh   # a second gpureap, timed in the same rounds
#   PROC_ROOT=tests/fixtures/proc/host bench/nvml_latency.sh  # no fleet: a fixture's /proc instead
set -euo pipefail
cd "$(dirname "$0")/.."
PROCS=${PROCS:-500} FDS=${FDS:-20} HOLDERS=${HOLDERS:-1} GPUS=${GPUS:-1} RUNS=${RUNS:-21}
GPUREAP=${GPUREAP:-build/gpureap}
BEFORE=${BEFORE:-}
# A fixture proc root instead of the machine's /proc and the fleet: the /proc scan is then
# almost nothing, and what is timed is gpureap's own path (start, NVML, rendering). Its PID
# 4242 is the one holder GPU 0 lists.
PROC_ROOT=${PROC_ROOT:-}
NVML_DOUBLE=${NVML_DOUBLE:-build/tests/fake_nvml/libnvidia-ml.so.1}
LATENCY=${LATENCY:-bench/lib/nvml_latency_h200.json}
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh
# shellcheck source=bench/lib/timing.sh
source bench/lib/timing.sh
[ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP (cmake --build build)"
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || fleet_die "BEFORE=$BEFORE is not an executable"
[ -f "$NVML_DOUBLE" ] || fleet_die "no NVML test double at $NVML_DOUBLE (cmake --build build --target fake_nvml)"
[ -f "$LATENCY" ] || fleet_die "no latency table at $LATENCY"

fleet_init
BENCH_TIME_FILE="$FLEET_WORK/time"
fleet_make_dev_root
proc_args=()
if [ -n "$PROC_ROOT" ]; then
  [ -d "$PROC_ROOT/4242" ] || fleet_die "PROC_ROOT=$PROC_ROOT has no process 4242 (tests/fixtures/proc/host)"
  holders=4242 proc_args=(--proc-root "$PROC_ROOT") PROCS=0 FDS=0 HOLDERS=1
else
  fleet_check_limits "$PROCS" "$FDS"
  fleet_build
  fleet_start "$PROCS" "$FDS" "$HOLDERS"
  holders=$(fleet_pids holder)
fi
standin="$FLEET_WORK/smi-standin"
"${CC:-cc}" -O2 -o "$standin" bench/smi_standin.c -ldl || fleet_die "cannot compile bench/smi_standin.c"

# GPU 0 (minor 0, the stand-in nvidia0) lists every holder with 512 MiB; the other GPUs idle.
scenario="$FLEET_WORK/scenario.json"
{
  printf '{"call_latency_us": %s, ' "$(tr -d '\n' <"$LATENCY")"
  # The double lists a holder while its proc root shows it alive.
  [ -z "$PROC_ROOT" ] || printf '"proc_root": "%s", ' "$(realpath "$PROC_ROOT")"
  printf '"gpus": ['
  for ((g = 0; g < GPUS; g++)); do
    [ $g -gt 0 ] && printf ','
    printf '{"name": "NVIDIA H200", "minor": %d, "total_bytes": %d, "temperature_celsius": 40,' $g $((141 << 30))
    printf ' "power_mw": 120000, "utilization_percent": 0, "mig_mode": false, "processes": ['
    sep=""
    if [ $g -eq 0 ]; then
      for pid in $holders; do
        printf '%s{"pid": %d, "used_bytes": %d, "sm_util": 10}' "$sep" "$pid" $((512 << 20))
        sep=","
      done
    fi
    printf ']}'
  done
  printf ']}\n'
} >"$scenario"
export FAKE_NVML_SCENARIO="$scenario" GPUREAP_NVML_LIBRARY="$NVML_DOUBLE"

names=(gpureap) cmds=("$GPUREAP ps --json --no-daemon --dev-root $FLEET_DEV ${proc_args[*]}")
if [ -n "$BEFORE" ]; then
  names+=(before) cmds+=("$BEFORE ps --json --no-daemon --dev-root $FLEET_DEV ${proc_args[*]}")
fi
names+=(smi-standin) cmds+=("$standin $NVML_DOUBLE")

# Each answers once with its calls counted (which slows every call: not timed); each must list
# the holders.
for i in "${!names[@]}"; do
  read -r -a cmd <<<"${cmds[$i]}"
  FAKE_NVML_CALL_COUNTS="$FLEET_WORK/calls-${names[$i]}.json" "${cmd[@]}" \
    >"$FLEET_WORK/out-${names[$i]}" 2>"$FLEET_WORK/err-${names[$i]}" ||
    fleet_die "${names[$i]} failed: $(tail -3 "$FLEET_WORK/err-${names[$i]}")"
  for pid in $holders; do
    grep -q "\b$pid\b" "$FLEET_WORK/out-${names[$i]}" || fleet_die "${names[$i]} does not list holder $pid"
  done
done

declare -A wall cpu
for ((r = 0; r <= RUNS; r++)); do  # round 0 warms up
  for i in "${!names[@]}"; do
    read -r -a cmd <<<"${cmds[$i]}"
    bench_time /dev/null /dev/null "${cmd[@]}"
    [ "$BENCH_RC" -eq 0 ] || fleet_die "${names[$i]} exited $BENCH_RC"
    [ $r -gt 0 ] || continue
    wall[${names[$i]}]+=" $BENCH_REAL_MS" cpu[${names[$i]}]+=" $BENCH_CPU_MS"
  done
done

# Then once more each with its phases on stderr.
for i in "${!names[@]}"; do
  read -r -a cmd <<<"${cmds[$i]}"
  [ "${names[$i]}" = smi-standin ] && cmd+=(--timing)
  GPUREAP_TIMING=1 "${cmd[@]}" >/dev/null 2>"$FLEET_WORK/err-${names[$i]}" || true
done

echo "NVML at H200 latency ($LATENCY): $GPUS GPU(s), $HOLDERS holder(s), ${PROC_ROOT:+proc root $PROC_ROOT, }$PROCS processes x $FDS fds, $RUNS runs"
printf '%-12s %10s %6s %6s %8s %7s %s\n' program "median ms" min max "cpu ms" "x smi" "NVML calls"
# shellcheck disable=SC2086
read -r smi _ _ <<<"$(bench_stats ${wall[smi-standin]})"
for name in "${names[@]}"; do
  # shellcheck disable=SC2086
  read -r m lo hi <<<"$(bench_stats ${wall[$name]})"
  # shellcheck disable=SC2086
  read -r c _ _ <<<"$(bench_stats ${cpu[$name]})"
  calls=$(python3 -c 'import json,sys; print(sum(json.load(open(sys.argv[1])).values()))' \
    "$FLEET_WORK/calls-$name.json" 2>/dev/null || echo "?")
  printf '%-12s %10s %6s %6s %8s %7s %s\n' "$name" "$m" "$lo" "$hi" "$c" \
    "$(awk -v a="$m" -v b="$smi" 'BEGIN {printf "%.2f", a / b}')" "$calls"
done
for name in "${names[@]}"; do
  echo
  echo "$name: NVML calls"
  python3 -c 'import json,sys; [print(f"  {n:<48} {c}") for n, c in sorted(json.load(open(sys.argv[1])).items())]' \
    "$FLEET_WORK/calls-$name.json" 2>/dev/null || echo "  (python3 needed)"
  echo "$name: phases (one run)"
  grep 'timing:' "$FLEET_WORK/err-$name" | sed 's/^[^:]*: timing: /  /' || true
done
