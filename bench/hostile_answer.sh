#!/usr/bin/env bash
# What a hostile or broken Prometheus answer of 64 MiB (just within the client's bound on
# bytes) costs `gpureap cluster` and `gpureap report --prometheus`: wall time and peak RSS for
# each shape of answer, served by a loopback server that answers every instant query with the
# shape, and every range query with the range shape (the instant ones then read an empty fleet).
#
#   bench/hostile_answer.sh [GPUREAP_BINARY...]   (default build/gpureap; several: each is run)
#
# Shapes (instant): series, 1.7 million of one label each; labels, series of 61 labels each;
# long, 16,000 nodes whose names are 4,000 bytes. Range: one series per node, 4 million points.
# Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then set -- build/gpureap; fi
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-hostile-bench.XXXXXX")
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

python3 - "$WORK" <<'PY'
import sys
work = sys.argv[1]
BOUND = (64 << 20) - 4096
def write(name, head, item, tail, count=None):
    with open(f"{work}/{name}", "w") as f:
        f.write(head)
        size, i = len(head) + len(tail), 0
        while count is None or i < count:
            s = ("," if i else "") + item(i)
            if size + len(s) > BOUND:
                break
            f.write(s)
            size += len(s)
            i += 1
        f.write(tail)
vec = '{"status":"success","data":{"resultType":"vector","result":['
mat = '{"status":"success","data":{"resultType":"matrix","result":['
end = ']}}'
write("series", vec, lambda i: '{"metric":{"i":"%d"},"value":[1800000000,"1"]}' % i, end)
labels = ",".join('"l%d":"v"' % k for k in range(60))
write("labels", vec, lambda i: '{"metric":{%s,"i":"%d"},"value":[1800000000,"1"]}' % (labels, i), end)
write("long", vec, lambda i: '{"metric":{"__name__":"up","job":"gpureap","instance":"%s-%d"},"value":[1800000000,"1"]}' % ("n" * 4000, i), end)
points = ",".join('[%d,"1"]' % (1800000000 + 15 * k) for k in range(240))
write("range", mat, lambda i: '{"metric":{"instance":"node-%d"},"values":[%s]}' % (i, points), end)
with open(f"{work}/empty", "w") as f:
    f.write(vec + end)
PY

cat >"$WORK/serve.py" <<'PY'
import http.server, sys, os
work, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        shape = open(f"{work}/shape").read().strip()
        if self.path.startswith("/api/v1/query_range"):
            name = "range"
        else:
            name = "empty" if shape == "range" else shape
        body = open(f"{work}/{name}", "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
python3 "$WORK/serve.py" "$WORK" "$WORK/port" &
SERVER=$!
for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")"

for GPUREAP in "$@"; do
  [ $# -gt 1 ] && echo "== $GPUREAP"
  for shape in series labels long range; do
    echo "$shape" >"$WORK/shape"
    if [ $shape = range ]; then
      cmd=("$GPUREAP" report --prometheus "$URL" --since 1h -o "$WORK/page.html")
    else
      cmd=("$GPUREAP" cluster --prometheus "$URL" --timeout 60s)
    fi
    /usr/bin/time -f '%e %M' -o "$WORK/time" "${cmd[@]}" >/dev/null 2>"$WORK/err" || true
    read -r e m < <(tail -n 1 "$WORK/time")
    printf '%-7s %5.1f MiB answer: %6s s, peak RSS %4d MiB; %s\n' "$shape" \
      "$(python3 -c "print($(stat -c %s "$WORK/$shape") / 1048576)")" "$e" "$((m / 1024))" \
      "$(head -c 160 "$WORK/err" | tr '\n' ' ')"
  done
done
