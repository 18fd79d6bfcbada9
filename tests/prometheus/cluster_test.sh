#!/usr/bin/env bash
# `gpureap cluster` against the real Prometheus scraping three real gpureap daemons on loopback,
# each a node of its own (its own dev root, NVML test double scenario and `instance` label):
# node-a is healthy; node-b's GPU holds a ghost (a gone trainer kept by its worker), a paused
# job and a leak (a gone PID nothing holds); node-c has a leak alone. The test asserts the exact
# lines for each node, that no command names the paused job, and that each command it prints is
# what doctor, run on that node's scene, answers with findings; then it stops node-a's daemon
# and asserts that node-a reads as down. Two more nodes, served as text by busybox httpd under
# another scrape job, export a job whose ranks are gone on one node and hold memory on the other.
#
#   cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY
#
# Exit 0 pass, 1 fail, 77 skipped (prometheus or curl not installed). Everything it starts is
# killed on exit, however it exits.
set -uo pipefail

GPUREAP=${1:?usage: cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY}
FAKE_NVML=${2:?usage: cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY}
GiB=1073741824

for tool in prometheus curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (apt-get install prometheus curl)"
    exit 77
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-cluster.XXXXXX") || exit 1
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
  for f in node-a/gpureap.log node-b/gpureap.log node-c/gpureap.log prometheus.log; do
    [ -s "$WORK/$f" ] && { echo "--- $f (last 20 lines)"; tail -n 20 "$WORK/$f"; }
  done
  exit 1
}

wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.3
  done
}

gone_pid() {
  sh -c 'exit 0' &
  local p=$!
  wait "$p"
  echo "$p"
}

# --- three nodes: a dev root with a stand-in GPU file and a scenario each
for n in node-a node-b node-c; do
  mkdir -p "$WORK/$n/dev"
  : >"$WORK/$n/dev/nvidia0"
  : >"$WORK/$n/dev/nvidiactl"
done
sleep 600 <"$WORK/node-a/dev/nvidia0" &
JOB_A=$!
PIDS+=("$JOB_A")
# node-b's gone trainer led its own session: its worker holds the file, in its group.
setsid sh -c 'sleep 600 <"$1" & echo $! >"$2"' sh "$WORK/node-b/dev/nvidia0" "$WORK/worker.pid" &
GONE_B=$!
wait "$GONE_B"
WORKER_B=$(cat "$WORK/worker.pid")
PIDS+=("$WORKER_B")
# node-b's paused job: it holds the GPU file itself (its own open), stopped once it runs sleep.
sleep 600 <"$WORK/node-b/dev/nvidia0" &
PAUSED_B=$!
PIDS+=("$PAUSED_B")
runs_sleep() { [ "$(cat "/proc/$PAUSED_B/comm" 2>/dev/null)" = sleep ]; }
wait_for 10 runs_sleep || fail "the paused job did not start"
kill -STOP "$PAUSED_B"
LEAK_B=$(gone_pid)
ME=$(id -un)
GONE_C=$(gone_pid)
gpu() { # NAME USED_GIB PROCESSES_JSON
  printf '{"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-%s", "minor": 0, "total_bytes": %d,
            "driver_held_bytes": 0, "processes": [%s]}]}\n' "$1" $((80 * GiB)) "$3"
}
gpu node-a 4 "{\"pid\": $JOB_A, \"used_bytes\": $((4 * GiB))}" >"$WORK/node-a/scenario.json"
gpu node-b 11 "{\"pid\": $GONE_B, \"used_bytes\": $((8 * GiB)), \"holders\": [$WORKER_B]},
  {\"pid\": $PAUSED_B, \"used_bytes\": $((1 * GiB))},
  {\"pid\": $LEAK_B, \"used_bytes\": $((2 * GiB)), \"leaked\": true}" >"$WORK/node-b/scenario.json"
gpu node-c 2 "{\"pid\": $GONE_C, \"used_bytes\": $((2 * GiB)), \"leaked\": true}" \
  >"$WORK/node-c/scenario.json"

declare -A PORT DAEMON
start_daemon() {
  local n=$1
  printf 'interval = "500ms"\nlocal_socket = ""\n' >"$WORK/$n/gpureap.toml"
  FAKE_NVML_SCENARIO="$WORK/$n/scenario.json" GPUREAP_NVML_LIBRARY="$FAKE_NVML" \
    "$GPUREAP" daemon --config "$WORK/$n/gpureap.toml" --listen 127.0.0.1:0 \
    --dev-root "$WORK/$n/dev" 2>"$WORK/$n/gpureap.log" &
  DAEMON[$n]=$!
  PIDS+=("$!")
}
daemon_port() { sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/$1/gpureap.log" | head -n1; }
has_port() { [ -n "$(daemon_port "$1")" ]; }
for n in node-a node-b node-c; do start_daemon "$n"; done
for n in node-a node-b node-c; do
  wait_for 30 has_port "$n" || fail "gpureap on $n did not start listening"
  PORT[$n]=$(daemon_port "$n")
done

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- A job split across two more nodes, node-x and node-y (the scrape job gpureap-jobs): the
# job series their daemons export, served as text (a real job's ranks on two hosts cannot run
# on one). alice's exp-7 lost a rank on node-x while its 4 ranks on node-y hold 96 GiB; her
# job launched with torchrun's default run id "none" looks the same and must not join; bob's
# job reuses the run id exp-7 on node-y, whole, and must not join hers.
gib() { echo $(($1 * GiB)); }
job_series() { # RUN_ID USER LIVE GONE BYTES
  local l="launcher_pid=\"4100\",user=\"$2\",kind=\"srun\",run_id=\"$1\""
  printf 'gpureap_job_ranks{%s,state="live"} %s\ngpureap_job_ranks{%s,state="gone"} %s\n' \
    "$l" "$3" "$l" "$4"
  printf 'gpureap_job_memory_bytes{%s} %s\n' "$l" "$5"
}
SPLIT_PORT=""
if command -v busybox >/dev/null; then
  mkdir -p "$WORK/static/node-x" "$WORK/static/node-y"
  {
    echo "gpureap_up 1"
    job_series exp-7 alice 3 1 "$(gib 3)"
    job_series none alice 1 1 "$(gib 1)"
  } >"$WORK/static/node-x/metrics"
  {
    echo "gpureap_up 1"
    job_series exp-7 alice 4 0 "$(gib 96)"
    job_series none alice 4 0 "$(gib 8)"
    job_series exp-7 bob 2 0 "$(gib 16)"
  } >"$WORK/static/node-y/metrics"
  for attempt in 1 2 3 4 5 6 7 8; do
    candidate=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$candidate" || continue
    busybox httpd -f -p "127.0.0.1:$candidate" -h "$WORK/static" 2>>"$WORK/httpd.log" &
    PIDS+=("$!")
    if wait_for 10 curl -sf "http://127.0.0.1:$candidate/node-x/metrics" -o /dev/null; then
      SPLIT_PORT=$candidate
      break
    fi
  done
  [ -n "$SPLIT_PORT" ] || fail "busybox httpd did not serve the split job's series"
else
  echo "skip: busybox is not installed: the job split across nodes is not tested"
fi

# --- Prometheus: one target per node, its `instance` the node's name
{
  printf 'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n'
  printf '  - job_name: gpureap\n    static_configs:\n'
  for n in node-a node-b node-c; do
    printf '      - targets: ["127.0.0.1:%s"]\n        labels: {instance: %s}\n' "${PORT[$n]}" "$n"
  done
  if [ -n "$SPLIT_PORT" ]; then
    printf '  - job_name: gpureap-jobs\n    static_configs:\n'
    for n in node-x node-y; do
      printf '      - targets: ["127.0.0.1:%s"]\n        labels: {instance: %s, __metrics_path__: /%s/metrics}\n' \
        "$SPLIT_PORT" "$n" "$n"
    done
  fi
} >"$WORK/prometheus.yml"

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
  kill -KILL "$PROM" 2>/dev/null
  wait "$PROM" 2>/dev/null
  grep -q "address already in use" "$WORK/prometheus.log" || fail "prometheus did not start"
done
[ -n "$PPORT" ] || fail "no free port for prometheus after 8 attempts"
echo "prometheus listens on 127.0.0.1:$PPORT; daemons on ${PORT[node-a]} ${PORT[node-b]} ${PORT[node-c]}"

cluster() { "$GPUREAP" cluster --prometheus "http://127.0.0.1:$PPORT" "$@" 2>&1; }
# expect_view WANT [OPTIONS...]: waits (the next scrapes) until `gpureap cluster` prints WANT.
LAST=""
same() {
  LAST=$(cluster "${@:2}")
  [ "$LAST" = "$1" ]
}
expect_view() {
  if ! wait_for 40 same "$@"; then
    echo "--- expected"
    printf '%s\n' "$1"
    echo "--- got"
    printf '%s\n' "$LAST"
    fail "gpureap cluster ${*:2} did not print the expected view"
  fi
  echo "ok: gpureap cluster ${*:2}"
}

NODE_B="node-b  0    11 GiB    ghost PID $GONE_B: 8.0 GiB kept by $WORKER_B; leaked PID $LEAK_B: 2.0 GiB, nothing holds it; stopped PID $PAUSED_B (sleep, $ME): 1.0 GiB
        run: ssh -t node-b sudo gpureap doctor --gpu 0"
NODE_C="node-c  0    2.0 GiB   leaked PID $GONE_C: 2.0 GiB, nothing holds it
        run: ssh -t node-c sudo gpureap doctor --gpu 0"
DOCTOR_NOTE="Doctor on the node names each problem's remedy: it needs the node's process tree, which Prometheus does not hold."
expect_view "NODE    GPU  AT STAKE  PROBLEM
$NODE_B
$NODE_C
$DOCTOR_NOTE
1 node healthy: 1 GPU, 4.0 GiB of 80 GiB used."

# Each command the view prints is doctor on that node: run it on the node's scene (as the node's
# own root would), and doctor finds the problems and names each remedy, the paused job's a
# person's choice. No command names the paused job.
! grep "run:" <<<"$LAST" | grep -qw "$PAUSED_B" || fail "a command names the paused job: $LAST"
doctor_on() { # NODE GPUREAP_ARGS...: the arguments the view's command gives gpureap, on NODE
  FAKE_NVML_SCENARIO="$WORK/$1/scenario.json" GPUREAP_NVML_LIBRARY="$FAKE_NVML" \
    "$GPUREAP" "${@:2}" --no-daemon --dev-root "$WORK/$1/dev" --settle 0s --no-color 2>&1
}
while read -r node words; do
  read -ra args <<<"$words"
  [ "${args[0]}" = gpureap ] && [ "${args[1]}" = doctor ] || fail "$node's command is no doctor: $words"
  out=$(doctor_on "$node" "${args[@]:1}")
  status=$?
  [ "$status" -eq 2 ] || fail "doctor on $node exited $status, yet the view names problems: $out"
  echo "ok: $node's command is doctor, which finds what the view names"
done < <(sed -n 's/^ *run: ssh -t \([^ ]*\) sudo \(.*\)$/\1 \2/p' <<<"$LAST")
doctor_b=$(doctor_on node-b doctor --gpu 0)
for want in "gpureap kill $GONE_B" "kill -CONT $PAUSED_B" \
  "reset is blocked by paused PID $PAUSED_B; resume or end it first"; do
  grep -qF -- "$want" <<<"$doctor_b" || fail "doctor on node-b does not say $want: $doctor_b"
done
# The plan doctor --fix shows (not on a terminal, it signals nothing) ends the ghost's worker and
# leaves the paused job alone.
plan_b=$(doctor_on node-b doctor --gpu 0 --fix | sed -n '/^Fixing:/,$p')
grep -qw "$WORKER_B" <<<"$plan_b" || fail "doctor --fix does not plan the ghost's worker: $plan_b"
! grep -qw "$PAUSED_B" <<<"$plan_b" || fail "doctor --fix plans the paused job: $plan_b"
echo "ok: doctor on node-b ends the ghost, asks about the paused job, then resets for the leak"

# The exit status says whether there is something to see.
cluster >/dev/null
[ $? -eq 1 ] || fail "gpureap cluster with problems did not exit 1"
cluster --node node-a >/dev/null || fail "gpureap cluster --node node-a (healthy) did not exit 0"
# A mistyped node or job is a usage error that names it, never "nothing to show" and 0.
for typo in "--node node-typo" "--job typo"; do
  # shellcheck disable=SC2086 # the option and its value are two words
  out=$(cluster $typo)
  status=$?
  [ "$status" -eq 2 ] || fail "gpureap cluster $typo exited $status: $out"
  grep -q "typo" <<<"$out" || fail "gpureap cluster $typo does not name it: $out"
  ! grep -q "Nothing to show" <<<"$out" || fail "gpureap cluster $typo reads as healthy: $out"
done
echo "ok: an unknown node or job is an error"

expect_view "NODE    GPU  AT STAKE  PROBLEM
$NODE_C
$DOCTOR_NOTE" --node node-c

# --via chooses the command's form for every node; these nodes' labels name no pod, so auto is ssh.
expect_view "NODE    GPU  AT STAKE  PROBLEM
node-c  0    2.0 GiB   leaked PID $GONE_C: 2.0 GiB, nothing holds it
        run: kubectl debug node/node-c -it --profile=sysadmin --image=busybox -- chroot /host gpureap doctor --gpu 0
$DOCTOR_NOTE" --node node-c --via kubectl-debug

# The same view for scripts.
json=$(cluster --json)
for want in '"schema": "gpureap.cluster/v1"' "\"command\": \"ssh -t node-b sudo gpureap doctor --gpu 0\"" \
  "\"keepers\": [" "\"state\": null"; do
  grep -qF "$want" <<<"$json" || fail "gpureap cluster --json lacks $want: $json"
done
echo "ok: gpureap cluster --json"

# The same view as a page: the nodes with problems in a table, one chart of the fleet's ghost
# and unattributed memory from range queries, the healthy nodes counted; nothing fetched, no
# script.
"$GPUREAP" report --prometheus "http://127.0.0.1:$PPORT" --since 10m -o "$WORK/cluster.html" \
  2>"$WORK/report.err" || fail "gpureap report --prometheus failed: $(cat "$WORK/report.err")"
for want in "<h2>Nodes with problems, worst first</h2>" "<td>node-b</td>" \
  "<h2>Ghost and unattributed memory, the whole fleet</h2>" "<svg" \
  "<td>GPU 0: ghost PID $GONE_B: 8.0 GiB kept by $WORKER_B; leaked PID $LEAK_B: 2.0 GiB, nothing holds it; stopped PID $PAUSED_B (sleep, $ME): 1.0 GiB</td><td>ssh -t node-b sudo gpureap doctor --gpu 0</td>" \
  "1 node healthy now"; do
  grep -qF -- "$want" "$WORK/cluster.html" || fail "the cluster page lacks $want"
done
! grep -qF "<h2>node-a</h2>" "$WORK/cluster.html" || fail "the cluster page draws a healthy node"
! grep -qiE "<script|<link|<img| src=" "$WORK/cluster.html" || fail "the cluster page fetches or runs something"
echo "ok: gpureap report --prometheus"

# node-a's daemon stops: Prometheus cannot scrape it, and node-a reads as down.
if [ -n "$SPLIT_PORT" ]; then
  expect_view "Jobs split across nodes (joined on the run id and user their launchers carry, a label the user sets: check it on the node before acting):
job exp-7 (alice): 1 rank gone on node-x; node-y's 4 ranks still hold 96 GiB
  run: ssh -t node-y sudo gpureap doctor
2 nodes healthy: 0 GPUs." --job gpureap-jobs
  cluster --job gpureap-jobs >/dev/null
  [ $? -eq 1 ] || fail "gpureap cluster with a split job did not exit 1"
  json=$(cluster --job gpureap-jobs --json)
  for want in '"run_id": "exp-7"' '"command": "ssh -t node-y sudo gpureap doctor"'; do
    grep -qF "$want" <<<"$json" || fail "gpureap cluster --json lacks $want: $json"
  done
  ! grep -qF '"run_id": "none"' <<<"$json" || fail "the run id none was joined: $json"
  echo "ok: a job split across nodes, joined on run id and user, with doctor on the node"
fi

kill -TERM "${DAEMON[node-a]}"
wait "${DAEMON[node-a]}" 2>/dev/null
expect_view "NODE    GPU  AT STAKE  PROBLEM
$NODE_B
$NODE_C
node-a  -    -         down: Prometheus cannot scrape its daemon (up == 0)
        run: ssh -t node-a systemctl status gpureap
$DOCTOR_NOTE"

# Nothing answers: an error that says where, exit 2.
out=$("$GPUREAP" cluster --prometheus "http://127.0.0.1:1" --timeout 2s 2>&1)
status=$?
[ "$status" -eq 2 ] || fail "gpureap cluster against nothing exited $status: $out"
grep -q "cannot reach Prometheus at http://127.0.0.1:1" <<<"$out" || fail "unexpected error: $out"
echo "ok: an unreachable Prometheus is an error"

echo "PASS"
