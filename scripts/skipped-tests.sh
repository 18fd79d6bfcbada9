#!/usr/bin/env bash
# Lists the tests a ctest run skipped, each with its reason: the names from ctest's console
# output ("The following tests did not run:"), the reasons from its log of every test's output
# (build/Testing/Temporary/LastTest.log): GoogleTest's message after "Skipped", or a script's
# line that says SKIP.
#   usage: scripts/skipped-tests.sh CONSOLE_OUTPUT LAST_TEST_LOG
set -euo pipefail
console=$1 log=$2
mapfile -t names < <(sed -n '/^The following tests did not run:/,/^$/p' "$console" |
  sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p')
if [ ${#names[@]} -eq 0 ]; then
  echo "No test was skipped."
  exit 0
fi
echo
echo "${#names[@]} test(s) skipped:"
[ -r "$log" ] || { printf '  %s\n' "${names[@]}"; exit 0; }
printf '%s\n' "${names[@]}" | awk '
  FNR == NR { want[$0] = 1; next }
  /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); next }
  /^Output:$/ { inside = 1; reason = ""; after = 0; next }
  /^<end of output>$/ {
    if (inside && (name in want)) { why[name] = reason == "" ? "(no reason given)" : reason }
    inside = 0; next
  }
  inside && !/^-+$/ {
    line = $0; sub(/^[[:space:]]+/, "", line)
    if (after && reason == "") { reason = line ~ /^\[  SKIPPED \]/ ? "" : line; after = 0 }
    if (line ~ /: Skipped$/) after = 1
    else if (reason == "" && line ~ /SKIP/ && line !~ /^\[  SKIPPED \]/) reason = line
  }
  END {
    for (n in want) printf "  %s: %s\n", n, (n in why) ? why[n] : "(no output in the log)"
  }' - "$log" | sort
