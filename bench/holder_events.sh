#!/usr/bin/env bash
# Holder tracking by the kernel's events against scans, side by side in one run on the fleet:
#
#   1. two daemons on the same fleet for DURATION seconds (default 60), no driver library (their
#      own work alone): one following holders by events (holder_events = true, the default),
#      one scanning on the default intervals (holder_events = false): CPU per minute (user +
#      system, % of one core; target for events <= 0.2%) and peak RSS (VmHWM);
#   2. new-holder latency, TRIALS times (default 20): a long-running process opens the stand-in
#      GPU file; the time until the events daemon's /api/v1/snapshot names it (bench/holder_seen.c
#      polls it every POLL_US, default 1000 µs): p50 / p99 / max (target: p99 <= 10 ms; scans
#      see it at their next full scan);
#   3. `gpureap ps --json`: through the events daemon's local socket, its own scan
#      (--no-daemon), and fuser, median of RUNS (target via the daemon <= 20 ms).
#
# Knobs: PROCS=2000 FDS=40 HOLDERS=100 DURATION=60 TRIALS=20 POLL_US=1000 RUNS=7
#   GPUREAP=build/gpureap
# Needs root (fanotify, the proc connector), curl and a C compiler.
set -uo pipefail
if [ -n "${GPUREAP:-}" ] && [ "${GPUREAP#/}" = "$GPUREAP" ]; then GPUREAP="$PWD/$GPUREAP"; fi
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh
# shellcheck source=bench/lib/timing.sh
source bench/lib/timing.sh

PROCS=${PROCS:-2000} FDS=${FDS:-40} HOLDERS=${HOLDERS:-100} DURATION=${DURATION:-60}
TRIALS=${TRIALS:-20} RUNS=${RUNS:-7} POLL_US=${POLL_US:-1000}
GPUREAP=${GPUREAP:-$PWD/build/gpureap}
[ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP"
[ "$(id -u)" = 0 ] || fleet_die "run as root: the kernel's events need CAP_SYS_ADMIN and CAP_NET_ADMIN"
command -v curl >/dev/null || fleet_die "curl is needed (apt-get install curl)"

fleet_init
BENCH_TIME_FILE="$FLEET_WORK/time"
fleet_make_dev_root
fleet_check_limits "$PROCS" "$FDS"
fleet_build
"$(command -v "${CC:-cc}" || command -v gcc)" -O2 -o "$FLEET_WORK/holder_seen" bench/holder_seen.c ||
  fleet_die "building bench/holder_seen.c failed"
fleet_start "$PROCS" "$FDS" "$HOLDERS"

# start_daemon NAME CONFIG: sets PORT_<NAME> and PID_<NAME>.
start_daemon() {
  local name=$1 log="$FLEET_WORK/$1.log" port="" i
  printf '%s\n' "$2" >"$FLEET_WORK/$name.toml"
  GPUREAP_NVML_LIBRARY=/nonexistent "$GPUREAP" daemon --config "$FLEET_WORK/$name.toml" \
    --listen 127.0.0.1:0 --dev-root "$FLEET_DEV" 2>"$log" &
  local pid=$!
  FLEET_EXIT_HOOKS+=("kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null")
  for ((i = 0; i < 300 && ${#port} == 0; i++)); do
    sleep 0.1
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$log" | head -n1)
  done
  [ -n "$port" ] || { cat "$log" >&2; fleet_die "the $name daemon did not start"; }
  for ((i = 0; i < 300; i++)); do
    curl -sf "http://127.0.0.1:$port/api/v1/snapshot" -o /dev/null && break
    sleep 0.1
  done
  printf -v "PORT_$name" '%s' "$port"
  printf -v "PID_$name" '%s' "$pid"
}

start_daemon events "local_socket = \"$FLEET_WORK/gpureap.sock\""
start_daemon scans $'holder_events = false\nlocal_socket = ""'
grep -q 'holder tracking: events' "$FLEET_WORK/events.log" ||
  { cat "$FLEET_WORK/events.log" >&2; fleet_die "the events daemon does not follow events"; }
sleep 2

TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm_mib() { awk '$1 == "VmHWM:" {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

echo "holder tracking: $PROCS processes x $FDS fds, $HOLDERS holders; $(nproc) CPUs, Linux $(uname -r)"
# --- 1. CPU and memory, side by side
t0=$EPOCHREALTIME
e0=$(cpu_ticks "$PID_events") s0=$(cpu_ticks "$PID_scans")
sleep "$DURATION"
e1=$(cpu_ticks "$PID_events") s1=$(cpu_ticks "$PID_scans")
t1=$EPOCHREALTIME
pct() { awk -v c="$1" -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", 100 * c / hz / (b - a)}'; }
printf '  %-8s CPU %s%% of a core (%s s per minute), peak RSS %s MiB\n' events \
  "$(pct $((e1 - e0)))" "$(awk -v c=$((e1 - e0)) -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", 60 * c / hz / (b - a)}')" "$(hwm_mib "$PID_events")"
printf '  %-8s CPU %s%% of a core (%s s per minute), peak RSS %s MiB\n' scans \
  "$(pct $((s1 - s0)))" "$(awk -v c=$((s1 - s0)) -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", 60 * c / hz / (b - a)}')" "$(hwm_mib "$PID_scans")"

# --- 2. new-holder latency: a long-running process opens the file late
mapfile -t lat < <("$FLEET_WORK/holder_seen" -p "$PORT_events" -f "$FLEET_DEV/nvidia0" -t "$TRIALS" -i "$POLL_US")
read -r p50 p99 pmax <<<"$(printf '%s\n' "${lat[@]}" | grep -v -- - | sort -n | awk '{v[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; print v[int((NR + 1) / 2)], v[i], v[NR]}')"
missed=$(printf '%s\n' "${lat[@]}" | grep -c -- - || true)
echo "  new-holder latency with events, $TRIALS trials: p50 ${p50} ms, p99 ${p99} ms, max ${pmax} ms, missed ${missed} (target p99 <= 10 ms)"
echo "  with scans it is seen at the next full scan (full_scan_interval, 1 min by default)"

# --- 3. ps --json: via the daemon, its own scan, fuser
via=() own=() fus=()
for ((i = 0; i <= RUNS; i++)); do
  GPUREAP_DAEMON_SOCKET="$FLEET_WORK/gpureap.sock" GPUREAP_NVML_LIBRARY=/nonexistent \
    bench_time "$FLEET_WORK/via.json" /dev/null "$GPUREAP" ps --json
  [ $i -gt 0 ] && via+=("$BENCH_REAL_MS")
  GPUREAP_NVML_LIBRARY=/nonexistent bench_time /dev/null /dev/null "$GPUREAP" ps --json --no-daemon --dev-root "$FLEET_DEV"
  [ $i -gt 0 ] && own+=("$BENCH_REAL_MS")
  if command -v fuser >/dev/null; then
    bench_time /dev/null /dev/null fuser -v "${FLEET_DEV_FILES[@]}"
    [ $i -gt 0 ] && fus+=("$BENCH_REAL_MS")
  fi
done
grep -q '"kind": "daemon"' "$FLEET_WORK/via.json" || echo "  note: ps did not answer through the daemon (see $FLEET_WORK/via.json)"
read -r vm _ _ <<<"$(bench_stats "${via[@]}")"
read -r om _ _ <<<"$(bench_stats "${own[@]}")"
echo "  ps --json median of $RUNS: via the daemon ${vm} ms (target <= 20 ms), own scan ${om} ms"
[ ${#fus[@]} -gt 0 ] && { read -r fm _ _ <<<"$(bench_stats "${fus[@]}")"; echo "  fuser on the same files: ${fm} ms"; }
exit 0
