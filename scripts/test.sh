#!/usr/bin/env bash
# The README's second command: builds gpureap and its tests and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --tests
# What only some tests need: the container test's packages, the report page's browser, and the
# Slurm test's on a best-effort basis (scripts/install-deps.sh says why). A test whose tool is
# missing skips, saying so; no test installs anything itself.
bash scripts/install-deps.sh --containers --browser --slurm
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 300
