#!/usr/bin/env bash
# gpukit-hold (bench/gpu/hold.c) without a GPU.
#   test_hold.sh no-library HOLD        no libcuda.so.1: a clean failure, exit 3 (77: skipped
#                                       where a real driver is installed)
#   test_hold.sh fake HOLD FAKE_DIR     every mode over the libcuda.so.1 test double in FAKE_DIR
set -uo pipefail
mode=$1 hold=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/gpukit-hold-test.XXXXXX")
started=()
cleanup() {
  local pid
  for pid in "${started[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME ARGS...: runs hold, keeps its exit status in $rc, its stderr in $work/NAME.err
run() {
  local name=$1
  shift
  "$hold" "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
}
expect_rc() { [ "$rc" = "$2" ] || fail "$1: exit status $rc, expected $2; stderr: $(cat "$work/$1.err")"; }
expect_err() { grep -qF -- "$2" "$work/$1.err" || fail "$1: stderr lacks '$2': $(cat "$work/$1.err")"; }
expect_no_err() { ! grep -qF -- "$2" "$work/$1.err" || fail "$1: stderr has '$2'"; }
state_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
in_state() { [ "$(state_of "$1")" = "$2" ]; }
# Gone, or a zombie its new parent has not reaped yet.
ended() { [ ! -e "/proc/$1" ] || in_state "$1" Z; }
# wait_for COMMAND...: up to 10 s
wait_for() {
  local i
  for ((i = 0; i < 200; i++)); do "$@" && return 0; sleep 0.05; done
  return 1
}

case $mode in
  no-library)
    unset LD_LIBRARY_PATH
    run missing --mode hold --mib 1
    if [ "$rc" = 0 ] || grep -q "^ready" "$work/missing.out"; then
      echo "a real libcuda.so.1 is installed here: the failure without it cannot be shown"
      exit 77
    fi
    expect_rc missing 3
    expect_err missing "gpukit-hold: libcuda.so.1 not found ("
    expect_err missing "cannot open shared object file"
    run usage --mode hover
    expect_rc usage 2
    expect_err usage "--mode is hold, fork, stop or exit"
    run number --mib lots
    expect_rc number 2
    expect_err number "--mib takes a whole number"
    ;;
  fake)
    export LD_LIBRARY_PATH=$3 FAKE_CUDA_TRACE=1 FAKE_CUDA_MIB=1024

    # exit: allocates, reports ready, exits 0 without freeing or destroying the context.
    run exit --mode exit --mib 64 --ready-file "$work/exit.ready"
    expect_rc exit 0
    expect_err exit "fake-cuda: cuMemAlloc_v2"
    expect_no_err exit "cuMemFree_v2"
    expect_no_err exit "cuCtxDestroy_v2"
    grep -qE "^ready pid=[0-9]+ gpu=0 mib=64 mode=exit workers=$" "$work/exit.ready" ||
      fail "exit: ready file: $(cat "$work/exit.ready" 2>&1)"

    # CUDA errors are named, with their code, and fail the program.
    run oom --mode hold --mib 2048
    expect_rc oom 4
    expect_err oom "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
    FAKE_CUDA_DEVICES=2 run nogpu --gpu 2
    expect_rc nogpu 4
    expect_err nogpu "GPU 2 does not exist: the driver reports 2 GPUs"

    # hold: holds until SIGTERM, then frees, destroys the context and exits 0.
    "$hold" --mode hold --mib 8 --ready-file "$work/hold.ready" 2>"$work/hold.err" >/dev/null &
    pid=$!
    started+=("$pid")
    wait_for test -s "$work/hold.ready" || fail "hold: never ready"
    grep -q "^ready pid=$pid " "$work/hold.ready" || fail "hold: ready file names another pid"
    kill -0 "$pid" 2>/dev/null || fail "hold: exited before it was told to"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    expect_rc hold 0
    expect_err hold "fake-cuda: cuMemFree_v2"
    expect_err hold "fake-cuda: cuCtxDestroy_v2"

    # fork: the parent exits at once; its workers live on, outside its process, and end on
    # SIGTERM.
    run fork --mode fork --workers 3 --mib 8 --ready-file "$work/fork.ready"
    expect_rc fork 0
    workers=$(sed -n 's/^ready pid=\([0-9]*\) .*mode=fork workers=\([0-9,]*\)$/\2/p' "$work/fork.ready")
    parent=$(sed -n 's/^ready pid=\([0-9]*\) .*/\1/p' "$work/fork.ready")
    IFS=, read -r -a pids <<<"$workers"
    [ "${#pids[@]}" = 3 ] || fail "fork: ready file names ${#pids[@]} workers: $(cat "$work/fork.ready")"
    started+=("${pids[@]}")
    ended "$parent" || fail "fork: the parent $parent is still running"
    for w in "${pids[@]}"; do
      [ "$w" != "$parent" ] || fail "fork: a worker has the parent's pid"
      kill -0 "$w" 2>/dev/null || fail "fork: worker $w did not outlive the parent"
    done
    expect_no_err fork "cuMemFree_v2"
    for w in "${pids[@]}"; do kill -TERM "$w" 2>/dev/null; done
    for w in "${pids[@]}"; do
      wait_for ended "$w" || fail "fork: worker $w ignored SIGTERM"
    done

    # stop: stops itself once ready; continued, it holds until SIGTERM and then frees.
    "$hold" --mode stop --mib 8 --ready-file "$work/stop.ready" 2>"$work/stop.err" >/dev/null &
    pid=$!
    started+=("$pid")
    wait_for test -s "$work/stop.ready" || fail "stop: never ready"
    wait_for in_state "$pid" T || fail "stop: state $(state_of "$pid"), expected T"
    expect_no_err stop "cuMemFree_v2"
    kill -CONT "$pid"
    wait_for in_state "$pid" S || fail "stop: not sleeping after SIGCONT ($(state_of "$pid"))"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    expect_rc stop 0
    expect_err stop "fake-cuda: cuMemFree_v2"

    # --seconds bounds a holder nobody stops.
    run bounded --mode hold --mib 1 --seconds 1
    expect_rc bounded 0
    expect_err bounded "freed 1 MiB"
    ;;
  *) echo "usage: $0 no-library HOLD | fake HOLD FAKE_DIR" >&2; exit 2 ;;
esac
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "gpukit-hold: $mode: all checks passed"
