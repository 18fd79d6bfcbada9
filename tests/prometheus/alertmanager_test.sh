#!/usr/bin/env bash
# gpureap → Prometheus → Alertmanager, all real, on loopback: Prometheus scrapes a daemon that
# sees a ghost, evaluates the shipped deploy/prometheus/alerts.yml (its `for:` durations set to
# 0s, so the test need not wait 10 minutes) and sends to a real Alertmanager, where
# `amtool alert query` shows GpuGhostMemory; once the ghost's keeper dies it resolves there.
#
#   alertmanager_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY ALERTS_YML
#
# Exit 0 pass, 1 fail, 77 skipped (prometheus, prometheus-alertmanager, amtool or curl not
# installed: scripts/install-deps.sh installs them). Everything it starts is killed on exit.
set -uo pipefail

GPUREAP=${1:?usage: alertmanager_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY ALERTS_YML}
FAKE_NVML=${2:?usage: alertmanager_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY ALERTS_YML}
ALERTS=${3:?usage: alertmanager_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY ALERTS_YML}
GiB=1073741824

for tool in prometheus prometheus-alertmanager amtool curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh installs prometheus, prometheus-alertmanager and curl)"
    exit 77
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-alertmanager.XXXXXX") || exit 1
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
  for f in gpureap.log prometheus.log alertmanager.log; do
    [ -s "$WORK/$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$WORK/$f"; }
  done
  exit 1
}

wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# start NAME LOG READY_PATH COMMAND...: runs COMMAND with --web.listen-address on a free port
# (the placeholder PORT in its arguments), retried on a lost race; sets STARTED_PORT.
start() {
  local name=$1 log=$2 ready=$3 attempt candidate pid
  shift 3
  STARTED_PORT=""
  for attempt in 1 2 3 4 5 6 7 8; do
    candidate=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$candidate" || continue
    "${@//PORT/$candidate}" >"$log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    if wait_for 30 curl -sf "http://127.0.0.1:$candidate$ready" -o /dev/null; then
      STARTED_PORT=$candidate
      return 0
    fi
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    grep -q "address already in use" "$log" || fail "$name did not start"
  done
  fail "no free port for $name after 8 attempts"
}

# --- the world: a stand-in GPU file, a gone trainer whose worker keeps its context
mkdir -p "$WORK/dev"
: >"$WORK/dev/nvidia0"
: >"$WORK/dev/nvidiactl"
# A gone trainer that led its own session: the worker it started holds the file, in its group.
setsid sh -c 'sleep 600 <"$1" & echo $! >"$2"' sh "$WORK/dev/nvidia0" "$WORK/worker.pid" &
GONE=$!
wait "$GONE"
WORKER=$(cat "$WORK/worker.pid")
PIDS+=("$WORKER")
cat >"$WORK/scenario.json" <<JSON
{"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-am-0", "minor": 0, "total_bytes": $((80 * GiB)),
           "processes": [{"pid": $GONE, "used_bytes": $((8 * GiB)), "holders": [$WORKER]}]}]}
JSON

printf 'interval = "500ms"\nlocal_socket = ""\n' >"$WORK/gpureap.toml"
FAKE_NVML_SCENARIO="$WORK/scenario.json" GPUREAP_NVML_LIBRARY="$FAKE_NVML" \
  "$GPUREAP" daemon --config "$WORK/gpureap.toml" --listen 127.0.0.1:0 --dev-root "$WORK/dev" \
  2>"$WORK/gpureap.log" &
PIDS+=("$!")
daemon_port() { sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/gpureap.log" | head -n1; }
has_port() { [ -n "$(daemon_port)" ]; }
wait_for 20 has_port || fail "gpureap did not start listening"
GPORT=$(daemon_port)

# --- Alertmanager: no cluster, storage in the temp dir, a receiver that goes nowhere
cat >"$WORK/alertmanager.yml" <<YAML
route:
  receiver: nowhere
  group_by: [alertname]
  group_wait: 100ms
  group_interval: 500ms
receivers:
  - name: nowhere
YAML
start alertmanager "$WORK/alertmanager.log" /-/ready prometheus-alertmanager \
  --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/am-data" \
  --web.listen-address=127.0.0.1:PORT --cluster.listen-address= --log.level=warn
APORT=$STARTED_PORT
echo "alertmanager listens on 127.0.0.1:$APORT"

# --- Prometheus with the shipped rules, every `for:` 0s, sending to that Alertmanager
sed -E 's/^( *)for: .*/\1for: 0s/' "$ALERTS" >"$WORK/alerts.yml"
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$WORK/alerts.yml"]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$APORT"]
scrape_configs:
  - job_name: gpureap
    static_configs:
      - targets: ["127.0.0.1:$GPORT"]
YAML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "the generated prometheus.yml is invalid"
start prometheus "$WORK/prometheus.log" /-/ready prometheus --config.file="$WORK/prometheus.yml" \
  --storage.tsdb.path="$WORK/prom-data" --web.listen-address=127.0.0.1:PORT
echo "prometheus listens on 127.0.0.1:$STARTED_PORT"

# query NAME: the alerts `amtool alert query alertname=NAME` lists, one line each (labels first).
query() {
  amtool --alertmanager.url="http://127.0.0.1:$APORT" -o extended alert query "alertname=$1" |
    tail -n +2
}
# has NAME LABELS...: one alert of that name, with each label="value".
has() {
  local out l
  out=$(query "$1")
  shift
  [ "$(printf '%s' "$out" | grep -c .)" = 1 ] || return 1
  for l in "$@"; do [[ "$out" == *"$l"* ]] || return 1; done
}
none() { [ -z "$(query "$1")" ]; }

wait_for 30 has GpuGhostMemory "instance=\"127.0.0.1:$GPORT\"" 'job="gpureap"' 'gpu="0"' \
  'severity="warning"' ||
  fail "amtool alert query alertname=GpuGhostMemory lists '$(query GpuGhostMemory)'"
echo "ok: GpuGhostMemory fired and reached Alertmanager: $(query GpuGhostMemory | cut -c1-100)"
# The rules that must not fire did not (checked once the one that must has).
for a in GpuMemoryNearlyFull GpureapDown GpuDriverNotAnswering; do
  none "$a" || fail "$a fired: $(query "$a")"
done

# The keeper dies: the ghost is gone, Prometheus sends it resolved, Alertmanager drops it.
kill -KILL "$WORKER"
wait "$WORKER" 2>/dev/null
wait_for 30 none GpuGhostMemory || fail "GpuGhostMemory still listed: $(query GpuGhostMemory)"
echo "ok: GpuGhostMemory resolved"
echo "PASS"
