#!/usr/bin/env bash
# Installs what is missing, then configures and builds gpureap (and its tests) into build/.
# GPUREAP_CI=1 (set by .ci/run) makes every warning an error (GPUREAP_WERROR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
werror=OFF
if [ -n "${GPUREAP_CI:-}" ]; then werror=ON; fi
# -g1: line tables only, enough for a backtrace's files and lines, and about a third less
# compile time than -g (the whole suite is built on 2 cores in CI).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
      -DGPUREAP_WERROR="$werror" >/dev/null
cmake --build build -j"$(nproc)"
