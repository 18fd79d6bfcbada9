#!/usr/bin/env bash
# clang-tidy with the checks in .clang-tidy over the sources of src/ that differ from main (or,
# with --all, over every one); fails on any finding.
#   scripts/tidy.sh [--all] [BASE]   BASE: what the change is compared with (default main)
# Configures its own build directory (build-tidy, file by file, not as unity sources) only to get
# compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
if [ "${1:-}" = --all ]; then all=1; shift; fi
base=${1:-main}
dir=${TIDY_BUILD_DIR:-build-tidy}
cmake -S . -B "$dir" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DGPUREAP_UNITY=OFF -DBUILD_TESTING=OFF >/dev/null
if [ $all = 1 ]; then
  mapfile -t files < <(git ls-files 'src/*.cpp')
else
  mapfile -t files < <({ git diff --name-only --diff-filter=d "$(git merge-base "$base" HEAD)" -- 'src/*.cpp'
                         git ls-files --others --exclude-standard 'src/*.cpp'; } | sort -u)
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "clang-tidy: no source of src/ differs from $base"
  exit 0
fi
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 8 clang-tidy -p "$dir" --quiet 2>/dev/null | tee "$dir/tidy.log"
if grep -qE '(warning|error):' "$dir/tidy.log"; then
  echo "clang-tidy: findings above (checks in .clang-tidy)" >&2
  exit 1
fi
echo "clang-tidy: ${#files[@]} files clean"
