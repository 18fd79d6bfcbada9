# Sourced by the browser tests: `chrome ARGS...` runs headless Chromium ($browser) on the page
# $page, writing its messages to $out/chromium.log.
# Each run has a profile of its own: a browser of an earlier run still holding a shared one makes
# the next hand its command line over and wait. A run that hangs anyway (a loaded machine) is
# tried once more, and says so in the log.
chrome_once() {
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-extensions \
    --user-data-dir="$(mktemp -d "$out/profile.XXXXXX")" \
    --run-all-compositor-stages-before-draw "$@" "file://$page" 2>>"$out/chromium.log"
}
chrome() {
  local rc=0
  chrome_once "$@" || rc=$?
  [ "$rc" = 124 ] || return "$rc"
  echo "chromium did not finish in 90 s; trying once more" >>"$out/chromium.log"
  chrome_once "$@"
}
