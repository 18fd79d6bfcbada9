#!/usr/bin/env bash
# Holder-scan benchmark: how fast each tool finds the processes that hold GPU device files.
#
# Spawns a fleet of PROCS sleeping processes with FDS open fds each, HOLDERS of which also
# hold three stand-in device files (regular files nvidia0, nvidiactl, nvidia-uvm in a
# temporary dev root), then times, in one run and interleaved, with a warm-up run each:
#
#   gpureap       $GPUREAP ps --json --dev-root DEV (as root: the kernel's open-file iterator
#                 names the fds to read)
#   gpureap-proc  the same with GPUREAP_BPF=0: every fd table read through /proc
#   fuser     fuser -v DEV/nvidia0 DEV/nvidiactl DEV/nvidia-uvm
#   lsof      lsof -w DEV/nvidia0 DEV/nvidiactl DEV/nvidia-uvm
#
# and prints median/min/max wall-clock milliseconds over RUNS runs, CPU time, and each tool's
# ratio to gpureap. The warm-up run of each tool is checked: it must find exactly the HOLDERS.
#
# Knobs (environment): PROCS=2000 FDS=40 HOLDERS=100 RUNS=7 GPUREAP=build/gpureap
#   THREADS=1                   threads per fleet process (sharing its fd table): the cost of
#                               asking which threads have a table of their own
#   TOOLS="gpureap gpureap-proc fuser lsof"  the columns to run (fuser/lsof are skipped if not installed:
#                               apt-get install psmisc lsof)
#   TARGET=2                    gpureap's target speed-up over fuser
#   STRICT=1                    exit 1 when the target is missed (default: report only)
#   VERBOSE=1                   print every timed run
#   KEEP=1                      keep the warm-up runs' outputs (their directory is printed)
set -uo pipefail

# A relative GPUREAP given by the caller is relative to the caller's directory.
if [ -n "${GPUREAP:-}" ] && [ "${GPUREAP#/}" = "$GPUREAP" ]; then GPUREAP="$PWD/$GPUREAP"; fi
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib/fleet.sh
source bench/lib/fleet.sh
# shellcheck source=bench/lib/timing.sh
source bench/lib/timing.sh

PROCS=${PROCS:-2000}
FDS=${FDS:-40}
HOLDERS=${HOLDERS:-100}
RUNS=${RUNS:-7}
THREADS=${THREADS:-1}
export FLEET_THREADS=$THREADS
GPUREAP=${GPUREAP:-build/gpureap}
TOOLS=${TOOLS:-gpureap gpureap-proc fuser lsof}
TARGET=${TARGET:-2}
STRICT=${STRICT:-0}

for v in PROCS FDS HOLDERS RUNS THREADS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || fleet_die "$v must be a number, not '${!v}'"
done
[ "$RUNS" -ge 1 ] || fleet_die "RUNS must be at least 1"
[ "$HOLDERS" -le "$PROCS" ] || fleet_die "HOLDERS ($HOLDERS) cannot exceed PROCS ($PROCS)"

# --- which tools run -------------------------------------------------------------------------
tools=()
for t in $TOOLS; do
  case $t in
    gpureap | gpureap-proc)
      [ -x "$GPUREAP" ] || fleet_die "no gpureap binary at $GPUREAP; build it (cmake -S . -B build && cmake --build build --target gpureap) or set GPUREAP=path"
      ;;
    fuser)
      if ! command -v fuser >/dev/null; then
        echo "bench: fuser not installed, skipping it (apt-get install psmisc)" >&2
        continue
      fi
      ;;
    lsof)
      if ! command -v lsof >/dev/null; then
        echo "bench: lsof not installed, skipping it (apt-get install lsof)" >&2
        continue
      fi
      ;;
    *) fleet_die "unknown tool '$t' in TOOLS (gpureap, gpureap-proc, fuser, lsof)" ;;
  esac
  tools+=("$t")
done
[ ${#tools[@]} -gt 0 ] || fleet_die "no tool to time"

# tool_cmd TOOL: sets CMD to the tool's command line.
tool_cmd() {
  case $1 in
    gpureap) CMD=("$GPUREAP" ps --json --dev-root "$FLEET_DEV") ;;
    gpureap-proc) CMD=(env GPUREAP_BPF=0 "$GPUREAP" ps --json --dev-root "$FLEET_DEV") ;;
    fuser) CMD=(fuser -v "${FLEET_DEV_FILES[@]}") ;;
    lsof) CMD=(lsof -w "${FLEET_DEV_FILES[@]}") ;;
  esac
}

# --- the fleet -------------------------------------------------------------------------------
fleet_init
BENCH_TIME_FILE="$FLEET_WORK/time"  # used by bench_time
fleet_make_dev_root
fleet_check_limits "$PROCS" "$FDS"
fleet_build
t0=$EPOCHREALTIME
fleet_start "$PROCS" "$FDS" "$HOLDERS"
t1=$EPOCHREALTIME
fleet_pids holder | sort -n >"$FLEET_WORK/expected"

echo "holder scan: $PROCS sleeping processes x $FDS fds x $THREADS threads, $HOLDERS holding 3 stand-in device files"
busy=$(bench_busy_percent 1)
echo "  machine: $(nproc) CPUs, Linux $(uname -r), $(fleet_task_count) tasks in all, ${busy}% busy before the runs"
echo "  fleet up in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s; $RUNS runs per tool after a warm-up, interleaved"
[ "$busy" -lt 20 ] || echo "  warning: the machine was ${busy}% busy with other work; the figures measure that too"
echo

# --- warm-up and check: each tool must find exactly the holders ------------------------------
# found_pids TOOL OUT ERR: the holder pids the tool reported, sorted, one per line.
found_pids() {
  case $1 in
    gpureap | gpureap-proc)
      if [ "$JSON_TOOL" = python3 ]; then
        python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["processes"]:
    if p.get("devices"):
        print(p["pid"])' "$2"
      else
        jq -r '.processes[] | select((.devices // []) | length > 0) | .pid' "$2"
      fi
      ;;
    fuser)
      # fuser -v writes its table to stderr but the PID column to stdout, space-separated.
      tr -s ' \t' '\n' <"$2" | sed -n 's/^\([0-9][0-9]*\).*/\1/p'
      ;;
    lsof) awk 'NR > 1 && $2 ~ /^[0-9]+$/ {print $2}' "$2" ;;
  esac | sort -nu
}

JSON_TOOL=""
command -v jq >/dev/null && JSON_TOOL=jq
command -v python3 >/dev/null && JSON_TOOL=python3

declare -A ok_check
for t in "${tools[@]}"; do
  tool_cmd "$t"
  bench_time "$FLEET_WORK/$t.out" "$FLEET_WORK/$t.err" "${CMD[@]}"
  rc=$BENCH_RC
  if [ "$t" = gpureap ] && [ "$rc" -ne 0 ]; then
    cat "$FLEET_WORK/gpureap.err" >&2
    fleet_die "gpureap exited $rc: ${CMD[*]}"
  fi
  if [ "$t" = gpureap ] && [ -z "$JSON_TOOL" ]; then
    echo "bench: neither python3 nor jq: gpureap's output not checked" >&2
    ok_check[$t]="unchecked"
    continue
  fi
  found_pids "$t" "$FLEET_WORK/$t.out" "$FLEET_WORK/$t.err" >"$FLEET_WORK/$t.found"
  if cmp -s "$FLEET_WORK/expected" "$FLEET_WORK/$t.found"; then
    ok_check[$t]="found $HOLDERS/$HOLDERS"
  else
    n=$(wc -l <"$FLEET_WORK/$t.found")
    missing=$(comm -23 "$FLEET_WORK/expected" "$FLEET_WORK/$t.found" | wc -l)
    extra=$(comm -13 "$FLEET_WORK/expected" "$FLEET_WORK/$t.found" | wc -l)
    msg="$t reported $n holders, expected $HOLDERS ($missing missing, $extra others)"
    if [ "$t" = gpureap ]; then
      keep=$(mktemp "${TMPDIR:-/tmp}/gpureap-bench-gpureap.XXXXXX.json")
      cp "$FLEET_WORK/gpureap.out" "$keep"
      fleet_die "$msg; its output is in $keep"
    fi
    echo "bench: warning: $msg (exit $rc)" >&2
    ok_check[$t]="WRONG: $n found"
  fi
done
if [ "${KEEP:-0}" = 1 ]; then
  keep_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-bench-out.XXXXXX")
  cp "$FLEET_WORK"/*.out "$FLEET_WORK"/*.err "$FLEET_WORK"/fleet.pids "$keep_dir"/ 2>/dev/null
  echo "bench: warm-up outputs kept in $keep_dir" >&2
fi

# --- timed runs, interleaved; the order rotates every run ------------------------------------
declare -A real cpu rcs
for ((r = 0; r < RUNS; r++)); do
  n=${#tools[@]}
  for ((j = 0; j < n; j++)); do
    t=${tools[$(((r + j) % n))]}
    tool_cmd "$t"
    bench_time /dev/null /dev/null "${CMD[@]}"
    real[$t]+="$BENCH_REAL_MS "
    cpu[$t]+="$BENCH_CPU_MS "
    [ "$BENCH_RC" -eq 0 ] || rcs[$t]+="$BENCH_RC "
    [ "${VERBOSE:-0}" = 1 ] && echo "  run $((r + 1)) $t: ${BENCH_REAL_MS} ms (cpu ${BENCH_CPU_MS} ms)" >&2
  done
done

# --- table -----------------------------------------------------------------------------------
declare -A med
# shellcheck disable=SC2086
read -r base _ _ <<<"$(bench_stats ${real[${tools[0]}]})"
for t in "${tools[@]}"; do
  # shellcheck disable=SC2086
  read -r med[$t] _ _ <<<"$(bench_stats ${real[$t]})"
done
[ -n "${med[gpureap]:-}" ] && base=${med[gpureap]}
ref=${tools[0]}
[ -n "${med[gpureap]:-}" ] && ref=gpureap

printf '%-8s %10s %8s %8s %14s %10s  %s\n' tool "median ms" "min" "max" "cpu ms (med)" "vs $ref" "check"
for t in "${tools[@]}"; do
  # shellcheck disable=SC2086
  read -r m lo hi <<<"$(bench_stats ${real[$t]})"
  # shellcheck disable=SC2086
  read -r cm _ _ <<<"$(bench_stats ${cpu[$t]})"
  ratio=$(awk -v a="$m" -v b="$base" 'BEGIN { if (b > 0) printf "%.1f×", a / b; else print "-" }')
  note=${ok_check[$t]}
  [ -n "${rcs[$t]:-}" ] && note+="; exit codes: ${rcs[$t]}"
  printf '%-8s %10s %8s %8s %14s %10s  %s\n' "$t" "$m" "$lo" "$hi" "$cm" "$ratio" "$note"
done
echo

status=0
if [ -n "${med[gpureap]:-}" ] && [ -n "${med[fuser]:-}" ]; then
  read -r x hit <<<"$(awk -v g="${med[gpureap]}" -v f="${med[fuser]}" -v t="$TARGET" \
    'BEGIN { x = (g > 0) ? f / g : 0; printf "%.1f %s\n", x, (x >= t) ? "met" : "MISSED" }')"
  echo "gpureap vs fuser: ${x}× faster (target ≥ ${TARGET}×: $hit)"
  [ "$hit" = met ] || { [ "$STRICT" = 1 ] && status=1; }
fi
exit "$status"
