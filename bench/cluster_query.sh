#!/usr/bin/env bash
# `gpureap cluster` against a simulated fleet: NODES nodes of GPUS GPUs each, their gpureap
# series written as OpenMetrics and loaded into a real Prometheus's TSDB with
# `promtool tsdb create-blocks-from openmetrics` (no scraping: the series are what NODES
# daemons would have exported a minute ago). PROBLEM_PERCENT of the nodes have a ghost (its
# gone PID kept by 4 workers), 1 % a leak, 1 % a stopped job, 1 % are down. Reports, over RUNS
# runs: the answer's size and Prometheus's time for each of the command's queries (curl),
# and the wall and CPU time of the whole `gpureap cluster` (queries, parsing, ranking,
# printing), text and --json.
#
#   bench/cluster_query.sh [GPUREAP_BINARY...]  (default build/gpureap; several: each is timed
#                                               on the same Prometheus, e.g. before and after)
#   NODES=1000 GPUS=8 RUNS=7 PROBLEM_PERCENT=5 bench/cluster_query.sh
#
# Needs prometheus, promtool, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then set -- build/gpureap; fi
NODES=${NODES:-1000}
GPUS=${GPUS:-8}
RUNS=${RUNS:-7}
PROBLEM_PERCENT=${PROBLEM_PERCENT:-5}
for tool in prometheus promtool curl python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool"; exit 1; }
done
for GPUREAP in "$@"; do
  [ -x "$GPUREAP" ] || { echo "no $GPUREAP: build it first (cmake --build build --target gpureap)"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-cluster-bench.XXXXXX")
PROM=""
cleanup() {
  [ -n "$PROM" ] && kill "$PROM" 2>/dev/null && wait "$PROM" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

NOW=$(date +%s)
echo "== generating $NODES nodes x $GPUS GPUs"
python3 - "$WORK/fleet.om" "$NODES" "$GPUS" "$PROBLEM_PERCENT" "$NOW" <<'PY'
import sys
out, nodes, gpus, pct, now = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
GiB = 1 << 30
times = [now - 90, now - 30]  # two samples within Prometheus's 5-minute lookback
fams = {}
def add(name, labels, value, typ="gauge"):
    fams.setdefault(name, (typ, []))[1].append((labels, value))
for n in range(nodes):
    inst = f"gpu-node-{n:04d}"
    base = {"job": "gpureap", "instance": inst}
    down = n % 100 == 99
    add("up", base, 0 if down else 1)
    if down:
        continue
    add("gpureap_up", base, 1)
    add("gpureap_sample_timestamp_seconds", base, None)  # the sample's own time
    ghost = n * 100 < nodes * pct and n % 100 != 99
    leak = n % 100 == 50
    stopped = n % 100 == 51
    for g in range(gpus):
        gl = dict(base, gpu=str(g), uuid=f"GPU-{n:04d}-{g}", pci_bus_id=f"00000000:{g + 0x17:02X}:00.0", vendor="nvidia")
        used = 40 * GiB + g * GiB
        add("gpureap_gpu_memory_total_bytes", gl, 141 * GiB)
        add("gpureap_gpu_memory_used_bytes", gl, used)
        add("gpureap_gpu_memory_unattributed_bytes", gl, 512 << 20)
        gb = (8 * GiB if (ghost and g == 0) else 0) + (2 * GiB if (leak and g == 1) else 0)
        add("gpureap_gpu_memory_ghost_bytes", gl, gb)
        # what a daemon also exports, which the cluster view does not ask for
        add("gpureap_gpu_utilization_ratio", gl, 0.5)
        add("gpureap_gpu_temperature_celsius", gl, 60)
        add("gpureap_gpu_power_watts", gl, 500)
    def proc(gpu, pid, problem, keepers, value):
        add("gpureap_problem_process_memory_bytes",
            dict(base, gpu=str(gpu), uuid=f"GPU-{n:04d}-{gpu}", pci_bus_id="", vendor="nvidia", pid=str(pid),
                 problem=problem, keepers=keepers, comm="python", user="alice", pod_namespace="", pod_name=""),
            value)
    if ghost:
        proc(0, 4242, "ghost", "4250,4251,4252,4253", 8 * GiB)
    if leak:
        proc(1, 5002, "leaked", "", 2 * GiB)
    if stopped:
        proc(2, 6001, "stopped", "", 4 * GiB)
def esc(v):
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
with open(out, "w") as f:
    for name, (typ, series) in fams.items():
        f.write(f"# TYPE {name} {typ}\n")
        for labels, value in series:
            ls = ",".join(f'{k}="{esc(v)}"' for k, v in labels.items())
            for t in times:
                v = t if value is None else value
                f.write(f"{name}{{{ls}}} {v} {t}\n")
    f.write("# EOF\n")
PY
echo "   $(wc -l <"$WORK/fleet.om") lines, $(du -h "$WORK/fleet.om" | cut -f1)"
echo "== loading it into a TSDB"
start=$(date +%s.%N)
promtool tsdb create-blocks-from openmetrics "$WORK/fleet.om" "$WORK/data" >"$WORK/promtool.log" 2>&1 ||
  { cat "$WORK/promtool.log"; exit 1; }
echo "   $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"

printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' >"$WORK/prometheus.yml"
PORT=$((20000 + RANDOM % 40000))
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/data" \
  --web.listen-address="127.0.0.1:$PORT" >"$WORK/prometheus.log" 2>&1 &
PROM=$!
for _ in $(seq 150); do curl -sf "http://127.0.0.1:$PORT/-/ready" -o /dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/-/ready" -o /dev/null || { tail "$WORK/prometheus.log"; exit 1; }
URL="http://127.0.0.1:$PORT"

# The command's own queries, as it sends them (cluster/cluster_view.h): all but the last at
# once; the last for every GPU of the nodes with something to say (here those with a problem),
# 256 nodes a query.
J='job="gpureap"'
sel() { echo "{$J,__name__=~\"$1\"${2:-}}"; }
total() { echo "label_replace($1 by (instance) ($(sel "$2")), \"sum\", \"$3\", \"\", \"\")"; }
ASKED=$(python3 - "$NODES" "$PROBLEM_PERCENT" <<'PY'
import sys
nodes, pct = int(sys.argv[1]), int(sys.argv[2])
asked = [n for n in range(nodes) if (n * 100 < nodes * pct and n % 100 != 99) or n % 100 in (50, 51)]
print("|".join(f"gpu-node-{n:04d}" for n in sorted(asked)[:256]))
PY
)
declare -A QUERIES=(
  [targets]=$(sel "up|gpureap_up|gpureap_sample_timestamp_seconds")
  [problems]=$(sel "gpureap_problem_process_memory_bytes|gpureap_gpu_kernel_last_event_timestamp_seconds")
  [unattributed]="$(sel gpureap_gpu_memory_unattributed_bytes) > 1073741824"
  [total_gpus]=$(total count gpureap_gpu_memory_used_bytes gpus)
  [total_used]=$(total sum gpureap_gpu_memory_used_bytes used)
  [total_total]=$(total sum gpureap_gpu_memory_total_bytes total)
  [missing]='max_over_time(up{job="gpureap"}[1h]) unless on(instance) up{job="gpureap"}'
  [gpu_memory_256_nodes]=$(sel "gpureap_gpu_memory_(used|total|ghost|unattributed)_bytes" ",instance=~\"$ASKED\"")
)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for q in targets problems unattributed total_gpus total_used total_total missing gpu_memory_256_nodes; do
  expr=${QUERIES[$q]}
  curl -s -G "$URL/api/v1/query" --data-urlencode "query=$expr" -o /dev/null  # warm
  times=() bytes=0
  for _ in $(seq "$RUNS"); do
    read -r t b < <(curl -s -G "$URL/api/v1/query" --data-urlencode "query=$expr" \
      -o /dev/null -w '%{time_total} %{size_download}\n')
    times+=("$t")
    bytes=$b
  done
  series=$(curl -s -G "$URL/api/v1/query" --data-urlencode "query=count($expr)" |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p')
  echo "query $q: ${series:-0} series, $bytes bytes, median $(printf '%s\n' "${times[@]}" | median) s over $RUNS"
done

for GPUREAP in "$@"; do
  [ $# -gt 1 ] && echo "== $GPUREAP"
  for mode in text json; do
    flag=""
    [ $mode = json ] && flag=--json
    "$GPUREAP" cluster --prometheus "$URL" $flag >"$WORK/out.$mode" 2>"$WORK/err.$mode" || true
    walls=() cpus=()
    for _ in $(seq "$RUNS"); do
      /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$GPUREAP" cluster --prometheus "$URL" $flag \
        >/dev/null 2>&1 || true
      read -r e u s m < <(tail -n 1 "$WORK/time")
      walls+=("$e")
      cpus+=("$(python3 -c "print(round($u + $s, 2))")")
      rss=$m
    done
    echo "gpureap cluster ($mode): median wall $(printf '%s\n' "${walls[@]}" | median) s," \
      "CPU $(printf '%s\n' "${cpus[@]}" | median) s, peak RSS $((rss / 1024)) MiB;" \
      "$(wc -l <"$WORK/out.$mode") lines out"
  done
  echo "-- the view's first lines and its last (or what it said on stderr):"
  head -n 5 "$WORK/out.text"
  tail -n 2 "$WORK/out.text"
  head -c 400 "$WORK/err.text"
done
