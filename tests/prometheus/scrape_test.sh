#!/usr/bin/env bash
# A real Prometheus scrapes a real gpureap daemon on loopback; the test asserts, through
# Prometheus's HTTP API, that the gpureap series arrive with the values the NVML test double
# and the real processes below make, and that they change when a holder dies.
#
#   scrape_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY
#
# Exit 0 pass, 1 fail, 77 skipped (prometheus, promtool or curl not installed: apt-get install
# prometheus curl). Everything it starts is killed on exit, however it exits.
set -uo pipefail

GPUREAP=${1:?usage: scrape_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY}
FAKE_NVML=${2:?usage: scrape_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY}
GiB=1073741824

for tool in prometheus promtool curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (apt-get install prometheus curl)"
    exit 77
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-prometheus.XXXXXX") || exit 1
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "FAIL: $*"
  for f in gpureap.log prometheus.log; do
    [ -s "$WORK/$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$WORK/$f"; }
  done
  exit 1
}

# wait_for SECONDS COMMAND...: polls every 0.2 s.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

# --- the world: a dev root with a stand-in GPU file, a job, a gone trainer kept alive by its worker
mkdir -p "$WORK/dev"
: >"$WORK/dev/nvidia0"
: >"$WORK/dev/nvidiactl"
# The job's name has a quote and a backslash (a process is named after the file it runs: here
# a link to sleep), to check gpureap's escaping against Prometheus's own parser.
mkdir -p "$WORK/bin"
ln -s "$(command -v sleep)" "$WORK/bin/job\"x\\y"
"$WORK/bin/job\"x\\y" 600 <"$WORK/dev/nvidia0" &
JOB=$!
PIDS+=("$JOB")
# A gone trainer that led its own session: the worker it started holds the file, in its group.
setsid sh -c 'sleep 600 <"$1" & echo $! >"$2"' sh "$WORK/dev/nvidia0" "$WORK/worker.pid" &
GONE=$!
wait "$GONE"
WORKER=$(cat "$WORK/worker.pid")
PIDS+=("$WORKER")
cat >"$WORK/scenario.json" <<JSON
{"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-prom-0", "minor": 0, "total_bytes": $((80 * GiB)),
           "driver_held_bytes": $GiB, "utilization_percent": 50,
           "processes": [{"pid": $JOB, "used_bytes": $((4 * GiB))},
                         {"pid": $GONE, "used_bytes": $((8 * GiB)), "holders": [$WORKER]}]}]}
JSON

# --- gpureap on a port the kernel picks; it logs which
printf 'interval = "500ms"\nper_process_metrics = true\nlocal_socket = ""\n' >"$WORK/gpureap.toml"
FAKE_NVML_SCENARIO="$WORK/scenario.json" GPUREAP_NVML_LIBRARY="$FAKE_NVML" \
  "$GPUREAP" daemon --config "$WORK/gpureap.toml" --listen 127.0.0.1:0 --dev-root "$WORK/dev" \
  2>"$WORK/gpureap.log" &
DAEMON=$!
PIDS+=("$DAEMON")
daemon_port() { sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/gpureap.log" | head -n1; }
has_port() { [ -n "$(daemon_port)" ]; }
wait_for 20 has_port || fail "gpureap did not start listening"
GPORT=$(daemon_port)
echo "gpureap listens on 127.0.0.1:$GPORT"

# The exposition itself passes Prometheus's own checker.
wait_for 20 curl -sf "http://127.0.0.1:$GPORT/healthz" -o /dev/null || fail "gpureap never became healthy"
curl -sf "http://127.0.0.1:$GPORT/metrics" >"$WORK/metrics.txt" || fail "GET /metrics failed"
promtool check metrics <"$WORK/metrics.txt" >"$WORK/check.txt" 2>&1 ||
  { cat "$WORK/check.txt"; fail "promtool check metrics rejected /metrics"; }

# --- Prometheus on a free port, storage in the temp dir, scraping every second
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpureap
    static_configs:
      - targets: ["127.0.0.1:$GPORT"]
YAML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "the generated prometheus.yml is invalid"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PPORT=""
for attempt in 1 2 3 4 5 6 7 8; do
  candidate=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  port_free "$candidate" || continue
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/data" \
    --web.listen-address="127.0.0.1:$candidate" >"$WORK/prometheus.log" 2>&1 &
  PROM=$!
  PIDS+=("$PROM")
  if wait_for 30 curl -sf "http://127.0.0.1:$candidate/-/ready" -o /dev/null; then
    PPORT=$candidate
    break
  fi
  # Lost a race for the port (or slow to start): try another one.
  kill -KILL "$PROM" 2>/dev/null
  wait "$PROM" 2>/dev/null
  grep -q "address already in use" "$WORK/prometheus.log" || fail "prometheus did not start"
done
[ -n "$PPORT" ] || fail "no free port for prometheus after 8 attempts"
echo "prometheus listens on 127.0.0.1:$PPORT"

# query EXPR: the value of the single series EXPR returns, or nothing.
query() {
  curl -sf -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p'
}
# expect EXPR VALUE: waits (the next scrapes) until EXPR is VALUE.
is() { [ "$(query "$1")" = "$2" ]; }
expect() {
  if ! wait_for 30 is "$1" "$2"; then
    fail "$1 is '$(query "$1")', expected $2"
  fi
  echo "ok: $1 = $2"
}

expect 'up{job="gpureap"}' 1
expect 'gpureap_up' 1
expect 'gpureap_gpu_info{gpu="0",uuid="GPU-prom-0",name="NVIDIA H200"}' 1
expect 'gpureap_gpu_memory_total_bytes{gpu="0",uuid="GPU-prom-0"}' $((80 * GiB))
expect 'gpureap_gpu_memory_used_bytes{gpu="0"}' $((13 * GiB))
expect 'gpureap_gpu_memory_unattributed_bytes{gpu="0"}' $GiB
expect 'gpureap_gpu_memory_ghost_bytes{gpu="0"}' $((8 * GiB))
expect 'gpureap_gpu_utilization_ratio{gpu="0"}' 0.5
expect 'gpureap_gpu_processes{gpu="0",anomaly="none"}' 1
expect 'gpureap_gpu_processes{gpu="0",anomaly="no-such-process"}' 1
expect 'gpureap_gpu_processes{gpu="0",anomaly="inherited-holder"}' 1
expect 'gpureap_findings{code="no-such-process"}' 1
expect 'gpureap_collect_errors_total{collector="driver"}' 0
expect 'count(gpureap_collect_duration_seconds)' 2
expect 'gpureap_process_memory_bytes{comm="job\"x\\y"}' $((4 * GiB))

# The worker dies: the trainer's context is released, and Prometheus sees the ghost go.
kill -KILL "$WORKER"
wait "$WORKER" 2>/dev/null
expect 'gpureap_gpu_memory_ghost_bytes{gpu="0"}' 0
expect 'gpureap_gpu_memory_used_bytes{gpu="0"}' $((5 * GiB))
expect 'gpureap_gpu_processes{gpu="0",anomaly="inherited-holder"}' 0
expect 'absent(gpureap_findings{code="no-such-process"})' 1

echo "PASS"
