#!/usr/bin/env bash
# Builds everything (library, program, tests, NVML test double) with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer and with warnings as errors into build-asan/, then runs the
# whole suite there. The same tree has libFuzzer's coverage and the fuzz targets
# (GPUREAP_FUZZ), so scripts/fuzz.sh runs them from here (FUZZ_BUILD=build-asan, as .ci/run
# does) instead of compiling everything a third time. -O1 and line tables only: about 40% less
# compile time than -O2 -g, and reports still name file and line; no NDEBUG, so assert() and
# libraries' own checks (nlohmann::json's lookups of missing keys) stay on.
# Needs clang and libFuzzer: scripts/install-deps.sh --ci.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --tests --ci
cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DGPUREAP_FUZZ=ON -DGPUREAP_WERROR=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
# Diagnostics only, nothing suppressed (a plain `ctest --test-dir build-asan` finds the same
# errors): leaks are errors, a dynamic initialiser reading another file's unconstructed global
# is one, an abort() (an assert, a library's own check) prints its stack like any other error,
# and UB reports carry a stack. The programs the tests start inherit them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1:handle_abort=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 600
