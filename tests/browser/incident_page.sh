#!/usr/bin/env bash
# The report as an incident page in headless Chromium: the integration test
# ReportIncident.ATrainerKilledItsGhostEndedByKillALeakAndAStoppedJob drives a real incident
# through a daemon (a trainer with forked workers killed, its ghost ended by `gpureap kill`, a
# leak on GPU 1, a stopped job) and leaves its page here; Chromium then builds its DOM and
# screenshots it 1400 and 800 pixels wide. Fails when the DOM lacks the Now box, the lanes or
# who ended the ghost, when anything is fetched or scripted, or when a screenshot is blank.
#   incident_page.sh INTEGRATION_TESTS_BINARY OUT_DIR
set -euo pipefail
tests=$1 out=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: headless Chromium is not installed; as root, scripts/install-deps.sh --browser installs it (scripts/test.sh does)"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED: the incident needs root (the daemon's peer checks, kcmp)"
  exit 77
fi

rm -rf "$out" && mkdir -p "$out"
GPUREAP_INCIDENT_PAGE_DIR="$out" "$tests" \
  --gtest_filter='ReportIncident.ATrainerKilledItsGhostEndedByKillALeakAndAStoppedJob' \
  > "$out/incident-test.log" 2>&1 || fail "the incident test failed (see $out/incident-test.log)"
grep -q '\[  SKIPPED \]' "$out/incident-test.log" && { echo "SKIPPED: the incident test skipped"; exit 77; }
[ -s "$out/incident.html" ] || fail "the incident test left no page"

page="$out/incident.html"
. "$(dirname "$0")/chromium.sh"
chrome --dump-dom > "$out/dom.html" || fail "chromium could not load the page (see $out/chromium.log)"
grep -q '<section class="now" id="now">' "$out/dom.html" || fail "no Now box"
grep -q 'data-state="leaked"' "$out/dom.html" || fail "the Now box does not say GPU 1 is leaked"
lanes=$(grep -o '<g class="lane' "$out/dom.html" | wc -l)
[ "$lanes" -ge 5 ] || fail "the browser built $lanes lanes, not at least 5"
grep -q 'data-spans="alive ghost"' "$out/dom.html" || fail "no lane turns from alive to ghost"
grep -q 'class="lane stopped-now"' "$out/dom.html" || fail "the stopped job is not drawn as stopped"
grep -q 'ended by `gpureap kill [0-9]*` (root) at' "$out/dom.html" || fail "the ghost's ending does not say who"
grep -q 'nobody (leaked)' "$out/dom.html" || fail "the leak is not kept by nobody"
! grep -qi '<script' "$out/dom.html" || fail "the page has a script"

png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}'; }
for width in 1400 800; do
  png="$out/incident-$width.png"
  chrome --window-size=$width,1800 --screenshot="$png" >/dev/null || fail "no screenshot at $width"
  [ "$(png_size "$png")" = "${width}x1800" ] || fail "the screenshot is $(png_size "$png"), not ${width}x1800"
  [ "$(stat -c %s "$png")" -gt 30000 ] || fail "the $width-pixel screenshot looks blank"
done
echo "ok: $out/incident-1400.png, $out/incident-800.png ($(stat -c %s "$out/incident.html") bytes of page)"
