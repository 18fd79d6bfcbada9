#!/usr/bin/env bash
# An open/close storm on a GPU device file by an unprivileged user (GPU device files are usually
# mode 0666) against the daemon following holders by the kernel's events, on the fleet:
#
#   1. the fleet (PROCS x FDS, HOLDERS), the NVML test double listing one GPU, the daemon at
#      `interval = 1s` and `history = HISTORY` (default 60s), up for longer than HISTORY;
#   2. for STORM seconds (default 30) uid 65534 opens and closes the stand-in nvidia0 as fast as
#      it can: the daemon's CPU over its first half (its own user + system time, % of one core;
#      target <= 10 %), split into collections and reading events, and how busy the machine was;
#   3. in its second half, TRIALS times (default 10) a long-running process opens nvidia0 and the
#      time until /api/v1/snapshot names it (bench/holder_seen.c polls it every POLL_US, default
#      1000 µs): p50 / max (target <= 50 ms);
#   4. then, still in the storm, MIXED_CLIENTS clients (default 8) on each of /api/v1/snapshot,
#      /api/v1/history, /api/v1/findings and /metrics, MIXED_REQUESTS requests each (default
#      50), all at once and each as soon as the one before is answered (bench/scrape_load.c):
#      the answers by status (a 503 is the server's response budget refusing a page);
#   5. after it: the history's GPU series, its points and their span (target: the whole
#      HISTORY window, one point per interval), and the daemon's peak RSS (before the storm,
#      after its first half, after the trials, after the mixed requests; target <= 20 MiB).
#      Latest figures: bench/README.md.
#
# Knobs: PROCS=2000 FDS=40 HOLDERS=100 STORM=30 TRIALS=10 HISTORY=60 (seconds) POLL_US=1000
#   MIXED_CLIENTS=8 MIXED_REQUESTS=50 (0: no mixed requests)
#   GPUREAP=build/gpureap FAKE_NVML=<gpureap's dir>/tests/fake_nvml/libnvidia-ml.so.1
# Needs root (fanotify; the storm runs as uid 65534), curl, python3 and a C compiler.
set -uo pipefail
if [ -n "${GPUREAP:-}" ] && [ "${GPUREAP#/}" = "$GPUREAP" ]; then GPUREAP="$PWD/$GPUREAP"; fi
if [ -n "${FAKE_NVML:-}" ] && [ "${FAKE_NVML#/}" = "$FAKE_NVML" ]; then FAKE_NVML="$PWD/$FAKE_NVML"; fi
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh

PROCS=${PROCS:-2000} FDS=${FDS:-40} HOLDERS=${HOLDERS:-100} STORM=${STORM:-30}
TRIALS=${TRIALS:-10} HISTORY=${HISTORY:-60} POLL_US=${POLL_US:-1000}
MIXED_CLIENTS=${MIXED_CLIENTS:-8} MIXED_REQUESTS=${MIXED_REQUESTS:-50}
GPUREAP=${GPUREAP:-$PWD/build/gpureap}
FAKE_NVML=${FAKE_NVML:-$(dirname "$GPUREAP")/tests/fake_nvml/libnvidia-ml.so.1}
for v in PROCS FDS HOLDERS STORM TRIALS HISTORY MIXED_CLIENTS MIXED_REQUESTS POLL_US; do
  [[ ${!v} =~ ^[0-9]+$ ]] || fleet_die "$v must be a number, not '${!v}'"
done
[ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP"
[ -f "$FAKE_NVML" ] || fleet_die "no NVML test double at $FAKE_NVML (cmake --build BUILD)"
[ "$(id -u)" = 0 ] || fleet_die "run as root: the kernel's events need CAP_SYS_ADMIN"
command -v curl >/dev/null || fleet_die "curl is needed"
command -v python3 >/dev/null || fleet_die "python3 is needed"

fleet_init
fleet_make_dev_root
chmod 0755 "$FLEET_WORK" "$FLEET_DEV"
chmod 0666 "${FLEET_DEV_FILES[@]}"
fleet_check_limits "$PROCS" "$FDS"
fleet_build
fleet_start "$PROCS" "$FDS" "$HOLDERS"

# The storm: open and close as fast as it can, until killed.
cat >"$FLEET_WORK/storm.c" <<'C'
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char** argv) {
  for (;;) {
    int fd = open(argv[1], O_RDONLY);
    if (fd >= 0) close(fd);
  }
  return argc;
}
C
"$(command -v "${CC:-cc}" || command -v gcc)" -O2 -o "$FLEET_WORK/storm" "$FLEET_WORK/storm.c" ||
  fleet_die "building the storm failed"
"$(command -v "${CC:-cc}" || command -v gcc)" -O2 -pthread -o "$FLEET_WORK/scrape_load" bench/scrape_load.c ||
  fleet_die "building bench/scrape_load.c failed"
"$(command -v "${CC:-cc}" || command -v gcc)" -O2 -o "$FLEET_WORK/holder_seen" bench/holder_seen.c ||
  fleet_die "building bench/holder_seen.c failed"
chmod 0755 "$FLEET_WORK/storm"

printf '{"gpus": [{"name": "Bench GPU", "uuid": "GPU-storm", "minor": 0, "total_bytes": %d, "processes": []}]}\n' \
  $((80 << 30)) >"$FLEET_WORK/scenario.json"
printf 'interval = "1s"\nhistory = "%ss"\nlocal_socket = ""\n' "$HISTORY" >"$FLEET_WORK/config.toml"
FAKE_NVML_SCENARIO="$FLEET_WORK/scenario.json" GPUREAP_NVML_LIBRARY="$FAKE_NVML" \
  "$GPUREAP" daemon --config "$FLEET_WORK/config.toml" --listen 127.0.0.1:0 --dev-root "$FLEET_DEV" \
  2>"$FLEET_WORK/daemon.log" &
DAEMON=$!
FLEET_EXIT_HOOKS+=("kill -TERM $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null")
port=""
for ((i = 0; i < 300 && ${#port} == 0; i++)); do
  sleep 0.1
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$FLEET_WORK/daemon.log" | head -n1)
done
[ -n "$port" ] || { cat "$FLEET_WORK/daemon.log" >&2; fleet_die "the daemon did not start"; }
grep -q 'holder tracking: events' "$FLEET_WORK/daemon.log" ||
  { cat "$FLEET_WORK/daemon.log" >&2; fleet_die "the daemon does not follow events"; }
BASE="http://127.0.0.1:$port"
TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$DAEMON/stat"; }
# CPU ticks of the daemon's threads named $1 (gpureap-sample: collections; gpureap-events: the
# kernel's events); comms have no spaces.
thread_ticks() {
  local t n=0 comm
  for t in /proc/"$DAEMON"/task/*; do
    read -r comm <"$t/comm" 2>/dev/null || continue
    [ "$comm" = "$1" ] && n=$((n + $(awk '{print $14 + $15}' "$t/stat")))
  done
  echo "$n"
}
# The machine's busy and total ticks so far (every CPU), from /proc/stat.
machine_ticks() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
hwm_mib() { awk '$1 == "VmHWM:" {printf "%.1f", $2 / 1024}' "/proc/$DAEMON/status"; }

echo "holder storm: $PROCS processes x $FDS fds, $HOLDERS holders; $(nproc) CPUs, Linux $(uname -r)"
echo "  $(grep -o 'holder tracking: events.*' "$FLEET_WORK/daemon.log" | head -n1)"
echo "  event source: $(curl -sf "$BASE/api/v1/status" | python3 -c 'import json,sys; t=json.load(sys.stdin)["holder_tracking"]; print(t["event_source"], t.get("event_source_fallback") or "")')"
# Up for longer than the history's window before the storm: its span can be judged after.
sleep $((HISTORY > STORM ? HISTORY - STORM + 5 : 5))

hwm_before=$(hwm_mib)

# --- 2. the storm, and the CPU over it
setpriv --reuid 65534 --regid 65534 --clear-groups "$FLEET_WORK/storm" "$FLEET_DEV/nvidia0" &
STORM_PID=$!
FLEET_EXIT_HOOKS+=("kill -KILL $STORM_PID 2>/dev/null; wait $STORM_PID 2>/dev/null")
t0=$EPOCHREALTIME
c0=$(cpu_ticks)
s0=$(thread_ticks gpureap-sample)
e0=$(thread_ticks gpureap-events)
read -r mb0 mt0 < <(machine_ticks)
opens0=$(curl -sf "$BASE/metrics" | awk '$1 == "gpureap_holder_opens_total" {print $2}')

# The CPU over the storm's first half, with nothing else asking the daemon anything.
sleep $((STORM / 2))
c1=$(cpu_ticks)
s1=$(thread_ticks gpureap-sample)
e1=$(thread_ticks gpureap-events)
read -r mb1 mt1 < <(machine_ticks)
t1=$EPOCHREALTIME
hwm_storm=$(hwm_mib)
# --- 3. new holders during the storm
mapfile -t lat < <("$FLEET_WORK/holder_seen" -p "$port" -f "$FLEET_DEV/nvidia0" -t "$TRIALS" -i "$POLL_US")
hwm_trials=$(hwm_mib)
# --- 4. every kind of request at once, as fast as they are answered, still in the storm
if [ "$MIXED_CLIENTS" -gt 0 ] && [ "$MIXED_REQUESTS" -gt 0 ]; then
  loaders=()
  for path in /api/v1/snapshot '/api/v1/history?since=1h' /api/v1/findings /metrics; do
    "$FLEET_WORK/scrape_load" -p "$port" -c "$MIXED_CLIENTS" -n "$MIXED_REQUESTS" -u "$path" \
      >"$FLEET_WORK/mixed.$((${#loaders[@]}))" &
    loaders+=($!)
  done
  for l in "${loaders[@]}"; do wait "$l"; done
  mixed=$(cat "$FLEET_WORK"/mixed.* | awk '{n[$1]++} END {for (s in n) printf "%s%d x %s", (i++ ? ", " : ""), n[s], (s == 0 ? "failed" : s)}')
fi
left=$(awk -v a="$t0" -v b="$EPOCHREALTIME" -v s="$STORM" 'BEGIN {d = s - (b - a); if (d < 0) d = 0; printf "%.2f", d}')
sleep "$left"
opens1=$(curl -sf "$BASE/metrics" | awk '$1 == "gpureap_holder_opens_total" {print $2}')
kill -KILL "$STORM_PID" 2>/dev/null
wait "$STORM_PID" 2>/dev/null
cpu=$(awk -v c=$((c1 - c0)) -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", 100 * c / hz / (b - a)}')
echo "  storm: ${STORM} s by uid 65534, $(awk -v a="$opens0" -v b="$opens1" 'BEGIN {printf "%.0f", b - a}') open events read by the daemon"
pct() { awk -v c="$1" -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", 100 * c / hz / (b - a)}'; }
echo "  daemon CPU during the storm's first $((STORM / 2)) s: ${cpu}% of a core (target <= 10%):" \
  "collections $(pct $((s1 - s0)))%, reading events $(pct $((e1 - e0)))%;" \
  "$(nproc) CPUs $(awk -v b=$((mb1 - mb0)) -v t=$((mt1 - mt0)) 'BEGIN {printf "%.0f", t ? 100 * b / t : 0}')% busy" \
  "(load average $(cut -d' ' -f1 /proc/loadavg))"
read -r p50 pmax <<<"$(printf '%s\n' "${lat[@]}" | grep -v -- - | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)], v[NR]}')"
missed=$(printf '%s\n' "${lat[@]}" | grep -c -- - || true)
echo "  new holder during the storm, $TRIALS trials: p50 ${p50} ms, max ${pmax} ms, missed ${missed} (target <= 50 ms)"
[ -n "${mixed:-}" ] &&
  echo "  mixed requests during the storm ($MIXED_CLIENTS clients x $MIXED_REQUESTS on each of snapshot, history, findings, metrics): $mixed"

# --- 5. the history after it
sleep 2
curl -sf "$BASE/api/v1/history?since=1h" | HISTORY=$HISTORY python3 -c '
import json, os, sys
doc = json.load(sys.stdin)
pts = [p["time"] for p in doc["gpus"][0]["samples"]]
span = pts[-1] - pts[0]
window = float(os.environ["HISTORY"])
slots = len({int(t) for t in pts})
print(f"  history after the storm: {len(pts)} GPU points over {span:.1f} s of a {window:.0f} s window "
      f"({slots} one-second slots; target: the whole window, one point per interval)")
'
echo "  daemon peak RSS (VmHWM): ${hwm_before} MiB before the storm, ${hwm_storm} MiB after its first half," \
  "${hwm_trials} MiB after the trials (their /api/v1/snapshot polling included)," \
  "$(hwm_mib) MiB after the mixed requests (target <= 20 MiB)"
exit 0
