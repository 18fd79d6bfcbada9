#!/usr/bin/env bash
# The README's first command: installs what building gpureap needs and builds the program into
# build/ (nothing else, so a newcomer runs it within minutes).
#   scripts/build.sh --tests   also the test suite and the NVML test double, with the packages
#                              they need (scripts/test.sh)
# GPUREAP_CI=1 (set by .ci/run) makes every warning an error (GPUREAP_WERROR). Both forms use
# the same compiler flags, so the second reuses what the first compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=OFF
case "${1:-}" in
  --tests) tests=ON ;;
  "") ;;
  *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
esac
if [ $tests = ON ]; then bash scripts/install-deps.sh --tests; else bash scripts/install-deps.sh; fi
werror=OFF
if [ -n "${GPUREAP_CI:-}" ]; then werror=ON; fi
# -g1: line tables only, enough for a backtrace's files and lines, and about a third less
# compile time than -g.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
      -DGPUREAP_WERROR="$werror" -DBUILD_TESTING="$tests" >/dev/null
if [ $tests = ON ]; then
  cmake --build build -j"$(nproc)"
else
  cmake --build build -j"$(nproc)" --target gpureap
fi
