#!/usr/bin/env bash
# Daemon footprint benchmark: `gpureap daemon` at its default settings on a busy node.
#
# Spawns the fleet (PROCS sleeping processes with FDS fds each, HOLDERS of them holding the
# stand-in GPU device files, one per GPU), points the daemon at the NVML test double listing
# the holders as GPU processes (spread over GPUS GPUs), and measures:
#
#   1. over DURATION seconds (default 60), with a Prometheus-like scrape of /metrics every
#      SCRAPE_EVERY seconds: the daemon's average CPU (user + system, all its threads, as a
#      percentage of one core; target <= 1%), and apart from it the part spent in its NVML
#      thread (here: in the test double, which reads /proc itself to decide who is alive);
#      its RSS (peak: VmHWM over its whole life; target <= 20 MiB);
#   2. then CONCURRENCY clients (default 100) each scraping /metrics REQUESTS times, all at
#      once (bench/scrape_load.c, one thread per client, a new connection per request):
#      latency per request p50 / p90 / p99 / max, and requests per second.
#
# Knobs (environment): PROCS=2000 FDS=40 HOLDERS=100 GPUS=8 DURATION=60 SCRAPE_EVERY=15
#   CONCURRENCY=100 REQUESTS=10 GPUREAP=build/gpureap FAKE_NVML=<gpureap's dir>/tests/fake_nvml/libnvidia-ml.so.1
#   STRICT=1   exit 1 when a target is missed
set -uo pipefail

if [ -n "${GPUREAP:-}" ] && [ "${GPUREAP#/}" = "$GPUREAP" ]; then GPUREAP="$PWD/$GPUREAP"; fi
if [ -n "${FAKE_NVML:-}" ] && [ "${FAKE_NVML#/}" = "$FAKE_NVML" ]; then FAKE_NVML="$PWD/$FAKE_NVML"; fi
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh
# shellcheck source=bench/lib/timing.sh
source bench/lib/timing.sh

PROCS=${PROCS:-2000}
FDS=${FDS:-40}
HOLDERS=${HOLDERS:-100}
GPUS=${GPUS:-8}
DURATION=${DURATION:-60}
SCRAPE_EVERY=${SCRAPE_EVERY:-15}
CONCURRENCY=${CONCURRENCY:-100}
REQUESTS=${REQUESTS:-10}
GPUREAP=${GPUREAP:-$PWD/build/gpureap}
FAKE_NVML=${FAKE_NVML:-$(dirname "$GPUREAP")/tests/fake_nvml/libnvidia-ml.so.1}
STRICT=${STRICT:-0}

for v in PROCS FDS HOLDERS GPUS DURATION SCRAPE_EVERY CONCURRENCY REQUESTS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || fleet_die "$v must be a number, not '${!v}'"
done
[ "$GPUS" -ge 1 ] || fleet_die "GPUS must be at least 1"
[ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP; build it or set GPUREAP=path"
[ -f "$FAKE_NVML" ] || fleet_die "no NVML test double at $FAKE_NVML; build the tests (cmake --build BUILD) or set FAKE_NVML=path"
command -v curl >/dev/null || fleet_die "curl is needed (apt-get install curl)"

fleet_init
fleet_make_dev_root
# A stand-in for every GPU's device file, held by every holder (as a CUDA process that sees all
# the GPUs opens all of them): gpureap takes a listed PID for the process only where it holds
# that GPU's file, so a holder listed on GPU 3 that held only nvidia0 would be another process
# (no-such-process, a leaked context) and the daemon would count GPU 0's holders alone.
for ((g = 1; g < GPUS; g++)); do
  : >"$FLEET_DEV/nvidia$g"
  FLEET_DEV_FILES+=("$FLEET_DEV/nvidia$g")
done
fleet_check_limits "$PROCS" "$FDS"
fleet_build
LOAD_BIN="$FLEET_WORK/scrape_load"
"$(command -v "${CC:-cc}" || command -v gcc)" -O2 -pthread -o "$LOAD_BIN" bench/scrape_load.c ||
  fleet_die "building bench/scrape_load.c failed"
fleet_start "$PROCS" "$FDS" "$HOLDERS"

# --- the double's scenario: every holder is a GPU process with 1 GiB, round-robin over the GPUs
{
  echo '{"gpus": ['
  for ((g = 0; g < GPUS; g++)); do
    [ "$g" -gt 0 ] && echo ','
    printf '{"name": "Bench GPU", "uuid": "GPU-bench-%d", "minor": %d, "total_bytes": %d, "utilization_percent": 50, "processes": [' \
      "$g" "$g" $((80 << 30))
    i=0
    first=1
    while read -r pid; do
      if [ $((i % GPUS)) -eq "$g" ]; then
        [ "$first" = 1 ] || printf ','
        printf '{"pid": %d, "used_bytes": %d}' "$pid" $((1 << 30))
        first=0
      fi
      i=$((i + 1))
    done < <(fleet_pids holder)
    printf ']}'
  done
  echo ']}'
} >"$FLEET_WORK/scenario.json"

# --- the daemon, default settings (an empty config file: the built-in defaults; CONFIG=text
# replaces it, for experiments)
printf '%s\n' "${CONFIG:-}" >"$FLEET_WORK/config.toml"
FAKE_NVML_SCENARIO="$FLEET_WORK/scenario.json" GPUREAP_NVML_LIBRARY="$FAKE_NVML" \
  "$GPUREAP" daemon --config "$FLEET_WORK/config.toml" --listen 127.0.0.1:0 --dev-root "$FLEET_DEV" \
  2>"$FLEET_WORK/daemon.log" &
DAEMON=$!
FLEET_EXIT_HOOKS+=("kill -TERM $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null")
port=""
for ((i = 0; i < 200 && ${#port} == 0; i++)); do
  sleep 0.1
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$FLEET_WORK/daemon.log" | head -n1)
done
[ -n "$port" ] || { cat "$FLEET_WORK/daemon.log" >&2; fleet_die "the daemon did not start"; }
URL="http://127.0.0.1:$port/metrics"
for ((i = 0; i < 200; i++)); do curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null && break; sleep 0.1; done
sleep 2  # past the first holder scan's start-up

listed=$(curl -sf "$URL" | awk '/^gpureap_gpu_processes\{.*anomaly="none"\}/ {n += $2} END {print n + 0}')
[ "$listed" -eq "$HOLDERS" ] || fleet_die "the daemon sees $listed healthy GPU processes, expected $HOLDERS"

TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$DAEMON/stat"; }
# CPU ticks of the daemon's NVML threads (named gpureap-nvml); the comm has no spaces.
nvml_ticks() {
  local t n=0 comm
  for t in /proc/"$DAEMON"/task/*; do
    read -r comm <"$t/comm" 2>/dev/null || continue
    [ "$comm" = gpureap-nvml ] && n=$((n + $(awk '{print $14 + $15}' "$t/stat")))
  done
  echo "$n"
}
status_kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$DAEMON/status"; }

echo "daemon footprint: $PROCS processes x $FDS fds, $HOLDERS holders listed on $GPUS GPUs by the NVML double; default settings"
busy=$(bench_busy_percent 1)
echo "  machine: $(nproc) CPUs, Linux $(uname -r), ${busy}% busy before the run"

# --- 1. CPU and memory over DURATION seconds
t0=$EPOCHREALTIME
c0=$(cpu_ticks)
n0=$(nvml_ticks)
max_rss=0
next_scrape=0
for ((s = 0; s < DURATION; s++)); do
  if [ "$s" -ge "$next_scrape" ]; then
    curl -sf "$URL" -o /dev/null || fleet_die "a scrape failed during the run"
    next_scrape=$((s + SCRAPE_EVERY))
  fi
  rss=$(status_kib VmRSS)
  [ "$rss" -gt "$max_rss" ] && max_rss=$rss
  sleep 1
done
c1=$(cpu_ticks)
n1=$(nvml_ticks)
t1=$EPOCHREALTIME
hwm=$(status_kib VmHWM)
cpu_pct=$(awk -v c=$((c1 - c0)) -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", 100 * c / hz / (b - a)}')
nvml_pct=$(awk -v c=$((n1 - n0)) -v hz="$TICKS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", 100 * c / hz / (b - a)}')
own_pct=$(awk -v a="$cpu_pct" -v b="$nvml_pct" 'BEGIN {printf "%.2f", a - b}')
hwm_mib=$(awk -v k="$hwm" 'BEGIN {printf "%.1f", k / 1024}')
rss_mib=$(awk -v k="$max_rss" 'BEGIN {printf "%.1f", k / 1024}')
threads=$(awk '$1 == "Threads:" {print $2}' "/proc/$DAEMON/status")
printf '  CPU over %ss: %s%% of one core (target <= 1%%: %s); of which the NVML thread (the test double) %s%%, the rest %s%%\n' \
  "$DURATION" "$cpu_pct" "$(awk -v x="$cpu_pct" 'BEGIN {print (x <= 1) ? "met" : "MISSED"}')" "$nvml_pct" "$own_pct"
printf '  memory: peak RSS (VmHWM) %s MiB, highest VmRSS during the run %s MiB (target <= 20 MiB: %s); %s threads\n' \
  "$hwm_mib" "$rss_mib" "$(awk -v x="$hwm_mib" 'BEGIN {print (x <= 20) ? "met" : "MISSED"}')" "$threads"

# --- 2. CONCURRENCY clients at once, REQUESTS scrapes each
c0=$(cpu_ticks)
b0=$EPOCHREALTIME
"$LOAD_BIN" -p "$port" -c "$CONCURRENCY" -n "$REQUESTS" >"$FLEET_WORK/latency.txt" || fleet_die "the load generator failed"
b1=$EPOCHREALTIME
c1=$(cpu_ticks)
total=$(wc -l <"$FLEET_WORK/latency.txt")
ok=$(awk '$1 == 200' "$FLEET_WORK/latency.txt" | wc -l)
read -r p50 p90 p99 pmax < <(awk '$1 == 200 {print $2}' "$FLEET_WORK/latency.txt" | sort -n | awk '
  { v[NR] = $1 }
  END {
    if (NR == 0) { print "- - - -"; exit }
    i50 = int(NR * 0.50); i90 = int(NR * 0.90); i99 = int(NR * 0.99)
    if (i50 < 1) i50 = 1; if (i90 < 1) i90 = 1; if (i99 < 1) i99 = 1
    printf "%.1f %.1f %.1f %.1f\n", v[i50], v[i90], v[i99], v[NR]
  }')
rps=$(awk -v n="$ok" -v a="$b0" -v b="$b1" 'BEGIN {printf "%.0f", n / (b - a)}')
burst_cpu=$(awk -v c=$((c1 - c0)) -v hz="$TICKS" 'BEGIN {printf "%.2f", c / hz}')
size=$(curl -sf "$URL" | wc -c)
echo "  /metrics, $CONCURRENCY concurrent clients x $REQUESTS scrapes ($size bytes each): $ok/$total answered 200"
echo "    latency ms: p50 $p50, p90 $p90, p99 $p99, max $pmax; $rps requests/s; daemon CPU ${burst_cpu}s for the burst"
echo "  peak RSS after the burst (VmHWM): $(awk -v k="$(status_kib VmHWM)" 'BEGIN {printf "%.1f", k / 1024}') MiB"

status=0
if [ "$STRICT" = 1 ]; then
  awk -v x="$cpu_pct" -v m="$hwm_mib" 'BEGIN {exit !(x <= 1 && m <= 20)}' || status=1
  [ "$ok" -eq "$total" ] || status=1
fi
exit "$status"
