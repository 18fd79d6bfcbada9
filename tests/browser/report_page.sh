#!/usr/bin/env bash
# `gpureap report` drawn by headless Chromium: an hour of history (a trainer, a hostile process
# name, a ghost kept by a forked worker until a policy kills it, a second ghost still held),
# written at run time, made into a page, opened at 1280×800 and printed. Fails when the browser
# fails, when the DOM it built lacks the charts or the ghost table, when a name became markup,
# or when the screenshot is not a 1280×800 image with something drawn on it.
#   report_page.sh GPUREAP_BINARY OUT_DIR SOURCE_DIR
set -euo pipefail
gpureap=$1 out=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: headless Chromium is not installed; as root, scripts/install-deps.sh --browser installs it (scripts/test.sh does)"
  exit 77
fi

rm -rf "$out" && mkdir -p "$out"
gib=$((1 << 30))
t0=1700000000
# 720 samples 5 s apart. 4242 trains (30 GiB) until 20 min, then is gone from /proc while its
# worker 4250 keeps the context (a ghost) until the policy kills the worker at 40 min; 5151 is
# gone from 45 min on and still held at the end. The server 6001 has a hostile name.
{
  printf '{"schema":"gpureap.history/v1","hostname":"gpu-node-7","since":%d,"window_seconds":3600,' $t0
  printf '"interval_seconds":5,"gpus":['
  for g in 0 1; do
    [ $g = 1 ] && printf ','
    printf '{"gpu":%d,"uuid":"GPU-%d1b2c3d4","memory_total_bytes":%d,"samples":[' $g $g $((141 * gib))
    for i in $(seq 0 719); do
      s=$((i * 5)) used=$((2 * gib)) ghost=0 unatt=$((2 * gib))
      if [ $g = 0 ]; then
        used=$((used + 40 * gib))                                   # the server, always
        [ $s -lt 1200 ] && used=$((used + 30 * gib))                # the trainer
        [ $s -ge 1200 ] && [ $s -lt 2400 ] && ghost=$((30 * gib))   # its ghost
        [ $s -ge 2700 ] && ghost=$((ghost + 6 * gib))                # the one still held
        [ $s -ge 600 ] && [ $s -lt 1800 ] && used=$((used + 12 * gib))  # an eval job
        used=$((used + ghost))
      fi
      [ $i -gt 0 ] && printf ','
      printf '{"time":%d,"memory_used_bytes":%d,"memory_unattributed_bytes":%d,' $((t0 + s)) $used $unatt
      printf '"memory_ghost_bytes":%d,"utilization_ratio":0.5,"processes":2}' $ghost
    done
    printf ']}'
  done
  printf '],"processes":['
  track() {  # pid start_ticks comm first last bytes keepers
    printf '{"pid":%d,"start_ticks":%d,"gpu":0,"comm":"%s","user":"alice","container":"",' "$1" "$2" "$3"
    printf '"first_seen":%d,"last_seen":%d,"changes":[{"time":%d,"memory_bytes":%d,' \
      $((t0 + $4)) $((t0 + $5)) $((t0 + $4)) "$6"
    printf '"sm_utilization_ratio":0.5}],"keepers":[%s]}' "$7"
  }
  track 6001 9001 '<script>alert(\"pwned\")</script>'"'"'serve' 0 3595 $((40 * gib)) ''; printf ','
  track 4242 9002 'python train.py' 0 1195 $((30 * gib)) ''; printf ','
  track 4242 0 'python train.py' 1200 2395 $((30 * gib)) '{"pid":4250,"comm":"pt_data_worker"}'; printf ','
  track 4300 9003 'eval' 600 1795 $((12 * gib)) ''; printf ','
  track 5151 0 'ray::IDLE' 2700 3595 $((6 * gib)) '{"pid":5160,"comm":"raylet"}'
  printf '],"releases":[{"path":"/dev/nvidia0","pid":4250,"at":"2023-11-14T22:53:21.400Z"}]}\n'
} > "$out/history.json"
printf '%s\n' '{"time":"2023-11-14T22:53:20.000Z","host":"gpu-node-7","event":"action","policy":"reap-ghosts","action":"terminate","enforced":true,"outcome":"released","process":{"pid":4250,"start_ticks":9010,"comm":"pt_data_worker"},"memory":[{"gpu":0,"bytes":32212254720}],"released_bytes":32212254720,"attempt":1}' > "$out/audit.jsonl"

"$gpureap" report --from "$out/history.json" --audit-log "$out/audit.jsonl" --out "$out/report.html" \
  || fail "gpureap report failed"

page="$out/report.html"
. "$(dirname "$0")/chromium.sh"
chrome --dump-dom > "$out/dom.html" || fail "chromium could not load the page (see $out/chromium.log)"
charts=$(grep -o '<svg class="chart"' "$out/dom.html" | wc -l)
[ "$charts" = 1 ] || fail "the browser built $charts charts, not 1 (GPU 1 is idle: one line)"
grep -q '<section class="gpu idle" data-gpu="1">' "$out/dom.html" || fail "GPU 1 is not shown as idle"
bands=$(grep -o '<path class="band' "$out/dom.html" | wc -l)
[ "$bands" = 6 ] || fail "the browser built $bands bands, not 6 (on GPU 0)"
ghosts=$(grep -o '<tr data-pid=' "$out/dom.html" | wc -l)
[ "$ghosts" = 2 ] || fail "the ghost table has $ghosts rows, not 2"
grep -q 'killed by policy' "$out/dom.html" || fail "the kill is not the ghost's ending"
! grep -qi '<script' "$out/dom.html" || fail "a process name became a script element"
grep -q '&lt;script&gt;alert' "$out/dom.html" || fail "the hostile name is not shown as text"

chrome --window-size=1280,800 --screenshot="$out/report.png" >/dev/null || fail "no screenshot"
chrome --window-size=1280,3000 --screenshot="$out/report-full.png" >/dev/null || fail "no full screenshot"
chrome --print-to-pdf="$out/report.pdf" --no-pdf-header-footer >/dev/null || fail "cannot print"
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}'; }
[ "$(head -c 8 "$out/report.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || fail "the screenshot is not a PNG"
[ "$(png_size "$out/report.png")" = 1280x800 ] || fail "the screenshot is $(png_size "$out/report.png"), not 1280x800"
# A blank page compresses to a few KiB; the charts do not.
[ "$(stat -c %s "$out/report.png")" -gt 30000 ] || fail "the screenshot looks blank"
[ "$(head -c 4 "$out/report.pdf")" = "%PDF" ] || fail "the printout is not a PDF"
echo "ok: $out/report.png, $out/report-full.png, $out/report.pdf"
