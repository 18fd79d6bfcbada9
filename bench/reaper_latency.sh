#!/usr/bin/env bash
# Reaper latency: the time from the last target exiting to gpureap's report, for a
# TERM-cooperative tree of processes killed with `gpureap kill ROOT --tree --yes --json`.
# Target: the reaper adds < 20 ms (median). See bench/README.md, "reaper_latency.sh".
#
#   bench/reaper_latency.sh                 # 50 processes, 21 runs, with the NVML double if built
#   TREE=200 RUNS=11 bench/reaper_latency.sh
#
# Each tree process records CLOCK_REALTIME in its SIGTERM handler, just before _exit(), into
# memory shared with the launcher; the last of those is "the last target exiting". That stamp
# is taken a little before the kernel finishes the exit, so the figure errs against gpureap.
# The report time is gpureap's own `timing.report_at_us` (taken just before it prints) and,
# as an upper bound that includes printing and its process exit, the script's clock when
# gpureap has returned.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib/timing.sh
source "$here/lib/timing.sh"

TREE=${TREE:-50}
RUNS=${RUNS:-21}
TARGET_MS=${TARGET_MS:-20}
STRICT=${STRICT:-0}
VERBOSE=${VERBOSE:-0}
BUILD=${BUILD:-$root/build}
GPUREAP=${GPUREAP:-$BUILD/gpureap}
FAKE_NVML=${FAKE_NVML-$BUILD/tests/fake_nvml/libnvidia-ml.so.1}

die() {
  echo "reaper_latency: $*" >&2
  exit 2
}

[ -x "$GPUREAP" ] || die "no gpureap at $GPUREAP: build it (cmake --build build --target gpureap) or set GPUREAP"
cc=$(command -v cc || command -v gcc || command -v clang || true)
[ -n "$cc" ] || die "no C compiler (cc, gcc or clang) to build the tree spawner"
[ "$TREE" -ge 1 ] && [ "$TREE" -le 4000 ] || die "TREE must be 1..4000"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-reaper-bench.XXXXXX")
launcher_pid=""
tree_pids=()
cleanup() {
  # A run cut short leaves the tree and its launcher: kill them.
  if [ -n "$launcher_pid" ]; then
    [ "${#tree_pids[@]}" -gt 0 ] && kill -KILL "${tree_pids[@]}" 2>/dev/null
    kill -KILL "$launcher_pid" 2>/dev/null
  fi
  true
  bench_time_cleanup
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The tree spawner. Process i forks processes 2i+1 and 2i+2 (a binary tree of TREE processes
# rooted at 0), every one holding the stand-in device file the launcher opened. The launcher
# is a subreaper, so it reaps every tree process however the tree falls apart, and it prints
# the PIDs (root first) once every process has installed its handler.
cat >"$work/tree.c" <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct slot { long long exit_ns; pid_t pid; };
static struct slot *slots;
static int self_index;

static void on_term(int sig) {
  (void)sig;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  slots[self_index].exit_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  _exit(0);
}

__attribute__((noreturn)) static void node(int i, int n, int ready_fd) {
  self_index = i;
  /* Only the launcher writes to stdout: a node holding it would keep the reader waiting. */
  int null_fd = open("/dev/null", O_WRONLY);
  if (null_fd < 0 || dup2(null_fd, 1) < 0) _exit(6);
  close(null_fd);
  /* Only the root dies with the launcher: an inner node's parent is the tree, and gpureap's
     SIGTERM to it must not turn into a SIGKILL for its children. */
  if (i == 0) prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_NAME, "reaper-bench");
  struct sigaction sa = {0};
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  slots[i].pid = getpid();
  for (int c = 2 * i + 1; c <= 2 * i + 2 && c < n; ++c) {
    pid_t p = fork();
    if (p < 0) _exit(4);
    if (p == 0) node(c, n, ready_fd);
  }
  char b = 1;
  if (write(ready_fd, &b, 1) != 1) _exit(5);
  for (;;) pause();
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: tree N DEVFILE TIMES\n"); return 2; }
  int n = atoi(argv[1]);
  slots = mmap(NULL, sizeof *slots * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (slots == MAP_FAILED) { perror("mmap"); return 1; }
  if (open(argv[2], O_RDONLY) < 0) { perror(argv[2]); return 1; }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int ready[2];
  if (pipe(ready) != 0) { perror("pipe"); return 1; }
  pid_t root = fork();
  if (root == 0) { close(ready[0]); node(0, n, ready[1]); }
  close(ready[1]);
  char b;
  for (int got = 0; got < n; ++got)
    if (read(ready[0], &b, 1) != 1) { fprintf(stderr, "tree: a process failed to start\n"); return 1; }
  for (int i = 0; i < n; ++i) printf("%d\n", slots[i].pid);
  fflush(stdout);
  fclose(stdout);
  while (wait(NULL) > 0 || errno == EINTR) {}
  FILE *f = fopen(argv[3], "w");
  if (!f) { perror(argv[3]); return 1; }
  for (int i = 0; i < n; ++i) fprintf(f, "%d %lld\n", slots[i].pid, slots[i].exit_ns);
  fclose(f);
  return 0;
}
EOF
"$cc" -O2 -Wall -o "$work/tree" "$work/tree.c" || die "cannot build the tree spawner"

mkdir -p "$work/dev"
: >"$work/dev/nvidia0"
: >"$work/dev/nvidiactl"

# Modes: without a driver (verification is one /proc scan), and with the NVML test double
# listing the root's context until every tree process is gone (verification waits for the
# driver's list, as on a GPU machine).
modes=(no-driver)
if [ -n "$FAKE_NVML" ] && [ -r "$FAKE_NVML" ]; then
  modes+=(nvml-double)
else
  echo "reaper_latency: no NVML test double at ${FAKE_NVML:-(unset)}; measuring without a driver only" >&2
fi

json_number() { # KEY FILE: the first integer or decimal value of "KEY" in a JSON file
  grep -o "\"$1\": *[0-9.]*" "$2" | head -1 | sed 's/.*: *//'
}

declare -A internal external polls
run_once() { # MODE RUN
  local mode=$1 run=$2 pids times="$work/times.$2" out="$work/out.$1.$2.json"
  coproc TREE_PROC { exec "$work/tree" "$TREE" "$work/dev/nvidia0" "$times"; }
  launcher_pid=$TREE_PROC_PID
  mapfile -t -n "$TREE" pids <&"${TREE_PROC[0]}"
  tree_pids=("${pids[@]}")
  [ "${#pids[@]}" -eq "$TREE" ] || die "the tree did not start (${#pids[@]} of $TREE processes)"
  local env=(GPUREAP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1)
  if [ "$mode" = nvml-double ]; then
    local holders
    holders=$(IFS=,; echo "${pids[*]}")
    printf '{"gpus":[{"minor":0,"driver_held_bytes":536870912,"processes":[{"pid":%s,"used_bytes":4294967296,"holders":[%s]}]}]}\n' \
      "${pids[0]}" "$holders" >"$work/scenario.$run.json"
    env=(GPUREAP_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_SCENARIO="$work/scenario.$run.json")
  fi
  local rc=0
  env "${env[@]}" "$GPUREAP" kill "${pids[0]}" --tree --yes --json --dev-root "$work/dev" >"$out" 2>"$work/err" || rc=$?
  local returned_us
  returned_us=$(($(date +%s%N) / 1000))
  wait "$launcher_pid" || die "the tree launcher failed"
  launcher_pid=""
  [ "$rc" -eq 0 ] || { cat "$work/err" >&2; die "gpureap kill exited $rc (output: $out)"; }
  local released
  released=$(grep -c '"outcome": "released"' "$out" || true)
  [ "$released" -eq "$TREE" ] || die "$released of $TREE targets released (output: $out)"
  local on_term
  on_term=$(grep -c '"exited_after": "SIGTERM"' "$out" || true)
  [ "$on_term" -eq "$TREE" ] || die "$on_term of $TREE targets exited on SIGTERM (output: $out)"
  local last_ns report_us
  last_ns=$(awk '$2 > m { m = $2 } END { print m }' "$times")
  [ "$last_ns" -gt 0 ] || die "no tree process recorded its exit: did they get SIGTERM?"
  report_us=$(json_number report_at_us "$out")
  internal[$mode]+="$(awk -v r="$report_us" -v l="$last_ns" 'BEGIN { printf "%.3f", (r * 1000 - l) / 1e6 }') "
  external[$mode]+="$(awk -v r="$returned_us" -v l="$last_ns" 'BEGIN { printf "%.3f", (r * 1000 - l) / 1e6 }') "
  polls[$mode]+="$(json_number polls "$out") "
  if [ "$VERBOSE" = 1 ]; then
    echo "  $mode run $run: report $(awk -v r="$report_us" -v l="$last_ns" 'BEGIN { printf "%.3f", (r * 1000 - l) / 1e6 }') ms after the last exit"
  fi
}

busy=$(bench_busy_percent 1)
echo "gpureap kill --tree on a TERM-cooperative tree of $TREE processes, $RUNS runs per mode"
echo "(gpureap: $GPUREAP; $(nproc) CPUs, ${busy}% busy before the runs)"
[ "$busy" -le 20 ] || echo "warning: the machine is busy; the min column is the better guide" >&2

for mode in "${modes[@]}"; do
  run_once "$mode" warmup
  internal[$mode]="" external[$mode]="" polls[$mode]=""
  for ((i = 1; i <= RUNS; i++)); do run_once "$mode" "$i"; done
done

met=1
printf '\n%-12s  %-26s  %-26s  %s\n' "" "last exit -> report" "last exit -> returned" "polls"
printf '%-12s  %-26s  %-26s  %s\n' mode "median / min / max ms" "median / min / max ms" "median"
for mode in "${modes[@]}"; do
  # shellcheck disable=SC2086
  read -r med min max <<<"$(bench_stats ${internal[$mode]})"
  # shellcheck disable=SC2086
  read -r emed emin emax <<<"$(bench_stats ${external[$mode]})"
  # shellcheck disable=SC2086
  read -r pmed _ _ <<<"$(bench_stats ${polls[$mode]})"
  printf '%-12s  %-26s  %-26s  %s\n' "$mode" "$med / $min / $max" "$emed / $emin / $emax" "$pmed"
  awk -v m="$med" -v t="$TARGET_MS" 'BEGIN { exit !(m < t) }' || met=0
done
if [ "$met" = 1 ]; then
  echo "reaper latency: median below ${TARGET_MS} ms in every mode (target met)"
else
  echo "reaper latency: median at or above ${TARGET_MS} ms (target MISSED)"
  [ "$STRICT" = 1 ] && exit 1
fi
exit 0
