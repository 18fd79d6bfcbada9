#!/usr/bin/env bash
# cmake/version.cmake on throwaway git repositories: the project version alone outside a
# checkout, the commit after a "+" in one, the distance from the release tag, ".dirty" with
# changed tracked files, and nothing of a repository the source is only inside of.
#   usage: version_test.sh path/to/version.cmake
set -uo pipefail
script=$1
command -v git >/dev/null || { echo "version_test: skipped: no git"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-version-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
version_of() {
  rm -rf "$work/out"
  cmake -DSOURCE_DIR="$1" -DPROJECT_VERSION=1.2.3 -DOUT_DIR="$work/out" -P "$script" >/dev/null || return 1
  cat "$work/out/version.txt"
}
expect() {
  local what=$1 dir=$2 want=$3 got
  got=$(version_of "$dir")
  if [ "$got" = "$want" ]; then echo "ok: $what: $got"
  else echo "FAIL: $what: got '$got', want '$want'"; failed=1; fi
}
g() { git -C "$work/repo" -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false "$@" >/dev/null 2>&1; }

mkdir -p "$work/plain" "$work/repo/sub"
expect "no checkout" "$work/plain" "1.2.3"
g init -q
echo a > "$work/repo/file"
g add file && g commit -q -m one
hash=$(git -C "$work/repo" rev-parse --short=7 HEAD)
expect "a commit without the release tag" "$work/repo" "1.2.3+g$hash"
expect "a folder inside a checkout" "$work/repo/sub" "1.2.3"
echo b > "$work/repo/file"
expect "changed tracked file" "$work/repo" "1.2.3+g$hash.dirty"
g checkout -q -- file
g tag v1.2.3
expect "the release tag" "$work/repo" "1.2.3"
g tag v9.9.9
echo c > "$work/repo/file"
g commit -q -am two
hash=$(git -C "$work/repo" rev-parse --short=7 HEAD)
expect "a commit after the release tag (another version's tag ignored)" "$work/repo" "1.2.3+1.g$hash"
# The generated source carries the same string, and an unchanged version rewrites nothing.
grep -q "return \"1.2.3+1.g$hash\";" "$work/out/version.cpp" || { echo "FAIL: version.cpp"; failed=1; }
touch -d '2000-01-01' "$work/out/version.cpp"
cmake -DSOURCE_DIR="$work/repo" -DPROJECT_VERSION=1.2.3 -DOUT_DIR="$work/out" -P "$script" >/dev/null
[ "$(stat -c %Y "$work/out/version.cpp")" = "$(date -d '2000-01-01' +%s)" ] ||
  { echo "FAIL: an unchanged version rewrote version.cpp (every build would relink)"; failed=1; }
exit $failed
