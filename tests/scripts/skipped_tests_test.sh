#!/usr/bin/env bash
# scripts/skipped-tests.sh on a ctest console output and log laid out as ctest writes them: a
# GoogleTest skip with its message, a script's SKIP line, a skip with no output, and a test that
# passed (never listed). The list must be exact: a skip is seen with its reason, not counted.
#   skipped_tests_test.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: skipped_tests_test.sh SOURCE_DIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-skipped.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

cat >"$work/console" <<'OUT'
99% tests passed, 0 tests failed out of 4

The following tests did not run:
        600 - EngineTest.SnapshotsOfOneScanShareItsProcessList (Skipped)
       1401 - prometheus_cluster (Skipped)
       1402 - report_page_in_chromium (Skipped)

OUT
entry() {  # name, output lines...
  local name=$1
  shift
  printf '%s\n' "1/4 Testing: $name" "1/4 Test: $name" "Command: \"x\"" "Directory: /x" \
    "\"$name\" start time: Dec 06 06:44 UTC" "Output:" \
    "----------------------------------------------------------"
  [ $# -gt 0 ] && printf '%s\n' "$@"
  printf '%s\n' "<end of output>" "Test time =   0.01 sec" \
    "----------------------------------------------------------" ""
}
{
  entry EngineTest.SnapshotsOfOneScanShareItsProcessList \
    "[ RUN      ] EngineTest.SnapshotsOfOneScanShareItsProcessList" \
    "tests/unit/test_engine_engine.cpp:179: Skipped" \
    "another process's zombie was read again between the collections" \
    "[  SKIPPED ] EngineTest.SnapshotsOfOneScanShareItsProcessList (2 ms)" \
    "[  SKIPPED ] 1 test, listed below:" \
    "[  SKIPPED ] EngineTest.SnapshotsOfOneScanShareItsProcessList"
  entry prometheus_cluster "SKIP: prometheus is not installed (apt-get install prometheus curl)"
  entry KillBasic.WithoutATerminalItNeedsYes "[       OK ] KillBasic.WithoutATerminalItNeedsYes"
  entry report_page_in_chromium
} >"$work/LastTest.log"

got=$(bash "$src/scripts/skipped-tests.sh" "$work/console" "$work/LastTest.log")
want="
3 test(s) skipped:
  EngineTest.SnapshotsOfOneScanShareItsProcessList: another process's zombie was read again between the collections
  prometheus_cluster: SKIP: prometheus is not installed (apt-get install prometheus curl)
  report_page_in_chromium: (no reason given)"
if [ "$got" != "$want" ]; then
  printf 'FAIL: the skipped list differs\n--- want\n%s\n--- got\n%s\n' "$want" "$got"
  exit 1
fi
# Nothing skipped: one line that says so.
printf '100%% tests passed, 0 tests failed out of 4\n' >"$work/console"
got=$(bash "$src/scripts/skipped-tests.sh" "$work/console" "$work/LastTest.log")
[ "$got" = "No test was skipped." ] || { echo "FAIL: with no skip it printed: $got"; exit 1; }
echo "ok: the skipped tests are listed with their reasons"
