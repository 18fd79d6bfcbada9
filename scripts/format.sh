#!/usr/bin/env bash
# clang-format with the project's .clang-format. `scripts/format.sh` rewrites the sources;
# `scripts/format.sh --check` changes nothing and fails, naming the files, when one differs.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.c')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f"); done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "clang-format: ${#files[@]} files formatted"
else
  clang-format -i "${files[@]}"
fi
