#!/usr/bin/env bash
# clang-tidy over gpureap's sources with the checks in .clang-tidy; fails on any finding.
# Configures its own build directory (build-tidy) only to get compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TIDY_BUILD_DIR:-build-tidy}
cmake -S . -B "$dir" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
mapfile -t files < <(git ls-files 'src/*.cpp')
jobs=$(nproc)
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 8 clang-tidy -p "$dir" --quiet 2>/dev/null | tee "$dir/tidy.log"
if grep -qE '(warning|error):' "$dir/tidy.log"; then
  echo "clang-tidy: findings above (checks in .clang-tidy)" >&2
  exit 1
fi
echo "clang-tidy: ${#files[@]} files clean"
