#!/usr/bin/env bash
# The README's second command: builds gpureap and its tests and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --tests
# What only some tests need: the container test's packages, the report page's browser, PyTorch
# for the real-PyTorch jobs, and the Slurm test's on a best-effort basis (scripts/install-deps.sh says why). A test whose tool is
# missing skips, saying so; no test installs anything itself.
bash scripts/install-deps.sh --containers --browser --pytorch --slurm
# A skip must be seen, not just counted: the run ends with each skipped test and the reason its
# output gives (GoogleTest's line after "Skipped", a script's "SKIP" line), from ctest's log.
console=$(mktemp)
trap 'rm -f "$console"' EXIT
set +e
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 300 2>&1 | tee "$console"
status=${PIPESTATUS[0]}
set -e
bash scripts/skipped-tests.sh "$console" build/Testing/Temporary/LastTest.log
exit "$status"
