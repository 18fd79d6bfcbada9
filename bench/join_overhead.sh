#!/usr/bin/env bash
# The cost of the join: `gpureap ps --json` with the NVML test double listing the fleet's
# holders, against the holder scan alone (no NVML library). Target: within 1.5x.
#   PROCS=2000 FDS=40 HOLDERS=100 RUNS=7 NVML_DOUBLE=build/tests/fake_nvml/libnvidia-ml.so.1 bench/join_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PROCS=${PROCS:-2000} FDS=${FDS:-40} HOLDERS=${HOLDERS:-100} RUNS=${RUNS:-7}
GPUREAP=${GPUREAP:-build/gpureap}
NVML_DOUBLE=${NVML_DOUBLE:-build/tests/fake_nvml/libnvidia-ml.so.1}
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh
# shellcheck source=bench/lib/timing.sh
source bench/lib/timing.sh
[ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP (cmake --build build)"
[ -f "$NVML_DOUBLE" ] || fleet_die "no NVML test double at $NVML_DOUBLE (cmake --build build --target fake_nvml)"

fleet_init
BENCH_TIME_FILE="$FLEET_WORK/time"
fleet_make_dev_root
fleet_check_limits "$PROCS" "$FDS"
fleet_build
fleet_start "$PROCS" "$FDS" "$HOLDERS"

# Every holder listed on GPU 0 (minor 0, the stand-in nvidia0) with 1 GiB.
scenario="$FLEET_WORK/scenario.json"
{
  printf '{"gpus": [{"name": "bench", "uuid": "GPU-b", "minor": 0, "total_bytes": %d, "processes": [' $((200 << 30))
  sep=""
  for pid in $(fleet_pids holder); do
    printf '%s{"pid": %d, "used_bytes": %d}' "$sep" "$pid" $((1 << 30))
    sep=","
  done
  printf ']}]}\n'
} >"$scenario"

scan=() join=()
for ((i = 0; i <= RUNS; i++)); do
  GPUREAP_NVML_LIBRARY=/nonexistent bench_time /dev/null /dev/null "$GPUREAP" ps --json --dev-root "$FLEET_DEV"
  [ $i -gt 0 ] && scan+=("$BENCH_REAL_MS")
  GPUREAP_NVML_LIBRARY="$NVML_DOUBLE" FAKE_NVML_SCENARIO="$scenario" \
    bench_time "$FLEET_WORK/join.json" /dev/null "$GPUREAP" ps --json --dev-root "$FLEET_DEV"
  [ $i -gt 0 ] && join+=("$BENCH_REAL_MS")
done
listed=$(grep -c '"listed_by_driver": true' "$FLEET_WORK/join.json" || true)
read -r sm smin smax <<<"$(bench_stats "${scan[@]}")"
read -r jm jmin jmax <<<"$(bench_stats "${join[@]}")"
echo "join overhead: $PROCS processes x $FDS fds, $HOLDERS listed by the double ($listed rows listed)"
printf '%-22s %8s %8s %8s\n' view "median ms" min max
printf '%-22s %8s %8s %8s\n' "holder scan alone" "$sm" "$smin" "$smax"
printf '%-22s %8s %8s %8s\n' "scan + NVML + join" "$jm" "$jmin" "$jmax"
awk -v a="$jm" -v b="$sm" 'BEGIN {printf "join / scan: %.2fx (target <= 1.5x)\n", a / b}'
