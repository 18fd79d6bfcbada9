#!/usr/bin/env bash
# Builds gpureap and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# The container test's packages; the Slurm test's, on a best-effort basis (scripts/install-deps.sh
# says why).
bash scripts/install-deps.sh --containers --slurm
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 300
