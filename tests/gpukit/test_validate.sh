#!/usr/bin/env bash
# bench/gpu/validate.sh where there is no GPU: with no nvidia-smi at all, and with an
# nvidia-smi that finds no GPU (as on a machine whose driver sees none). Either way it says
# what it would check, writes a valid "skipped" result and exits 77; --plan exits 0 and bad
# arguments 2. It never reaches a GPU, so it is safe on a machine that has one.
#   test_validate.sh VALIDATE_SH CMAKE CHECK_RESULT_CMAKE
set -uo pipefail
validate=$1 cmake=$2 check_result=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/gpukit-validate-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
checks="environment;memory_info;healthy_holder;process_records;forked_ghost;stopped_holder;run_supervised;exit_release;timing;daemon_events;mps_client;mig_instances"

# An nvidia-smi that answers as the driver does when it finds no GPU. It must never be asked to
# change anything: any other call is recorded and fails the test.
mkdir -p "$work/bin-nogpu"
cat >"$work/bin-nogpu/nvidia-smi" <<SMI
#!/bin/sh
case "\$1" in
  --query-gpu=index) echo "No devices were found"; exit 6 ;;
  *) echo "\$*" >>"$work/unexpected-calls"; exit 1 ;;
esac
SMI
chmod +x "$work/bin-nogpu/nvidia-smi"

# run NAME PATH ARGS...: validate.sh with that PATH, its output and status kept.
run() {
  local name=$1 path=$2
  shift 2
  (cd "$work" && PATH=$path OUT="" bash "$validate" "$@" >"$work/$name.out" 2>&1)
  rc=$?
}
expect_out() { grep -qF -- "$2" "$work/$1.out" || fail "$1: output lacks '$2': $(cat "$work/$1.out")"; }
expect_plan() {
  local name
  IFS=';' read -r -a names <<<"$checks"
  for name in "${names[@]}"; do
    grep -qE "^  $name +[a-zA-Z]" "$work/$1.out" || fail "$1: the plan does not list $name"
  done
}
check_result_file() {
  "$cmake" -DRESULT="$1" -DSTATUS=skipped -DEXIT_CODE=77 "-DCHECKS=$checks" -P "$check_result" \
    >"$work/check.out" 2>&1 || fail "result $1: $(cat "$work/check.out")"
}

# No nvidia-smi anywhere on PATH (skipped where the system has one in the standard places).
if PATH=/usr/bin:/bin command -v nvidia-smi >/dev/null; then
  echo "nvidia-smi is installed in /usr/bin or /bin: the no-driver case is not checked here"
else
  run nodriver /usr/bin:/bin --out "$work/nodriver" --gpu 0 --mib 64
  [ "$rc" = 77 ] || fail "nodriver: exit status $rc, expected 77"
  expect_out nodriver "gpukit: skipped: nvidia-smi not found: no NVIDIA driver on this machine"
  expect_out nodriver "gpukit: checks on NVIDIA GPU 0, holders of 64 MiB:"
  expect_plan nodriver
  check_result_file "$work/nodriver/gpukit-result.json"
  grep -q "^timing  *skipped$" "$work/nodriver/gpukit-summary.txt" || fail "nodriver: summary lacks the timing row"
fi

# A driver that finds no GPU; the default result folder is ./gpukit-results.
run nogpu "$work/bin-nogpu:/usr/bin:/bin" --gpu 0
[ "$rc" = 77 ] || fail "nogpu: exit status $rc, expected 77"
expect_out nogpu "gpukit: skipped: nvidia-smi lists no GPU 0: No devices were found"
expect_plan nogpu
check_result_file "$work/gpukit-results/gpukit-result.json"
[ ! -e "$work/unexpected-calls" ] || fail "nvidia-smi was called with: $(cat "$work/unexpected-calls")"

# --plan touches nothing and exits 0; a bad argument is a usage error (2) and writes nothing.
run plan "$work/bin-nogpu:/usr/bin:/bin" --plan --out "$work/plan"
[ "$rc" = 0 ] || fail "plan: exit status $rc, expected 0"
expect_plan plan
[ ! -e "$work/plan/gpukit-result.json" ] || fail "plan: wrote a result"
run only "$work/bin-nogpu:/usr/bin:/bin" --plan --only timing,forked_ghost
[ "$rc" = 0 ] || fail "only: exit status $rc, expected 0"
[ "$(grep -cE '^  [a-z_]+ ' "$work/only.out")" = 2 ] || fail "only: the plan lists more than two checks"
grep -A1 "^  forked_ghost " "$work/only.out" | grep -q "^  timing " || fail "only: not in the usual order"
run unknown "$work/bin-nogpu:/usr/bin:/bin" --plan --only timing,nonsense
[ "$rc" = 2 ] || fail "unknown: exit status $rc, expected 2"
expect_out unknown "validate.sh: --only: no check named 'nonsense'"
run bad "$work/bin-nogpu:/usr/bin:/bin" --mib lots --out "$work/bad"
[ "$rc" = 2 ] || fail "bad: exit status $rc, expected 2"
expect_out bad "validate.sh: --gpu, --mib and --runs take whole numbers"
[ ! -e "$work/bad/gpukit-result.json" ] || fail "bad: wrote a result"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "validate.sh without a GPU: all checks passed"
