# shellcheck shell=bash disable=SC2034
# Timing and statistics for the bench/*.sh scripts; bash only.
#
#   bench_time OUT ERR cmd args...   # runs cmd once: BENCH_RC, BENCH_REAL_MS, BENCH_CPU_MS
#   bench_stats 12.1 9.8 11.0 ...    # prints "median min max"
#
# bench_time uses bash's `time` keyword (no extra fork; wall clock plus the command's user +
# system CPU time, millisecond resolution). The command's stdout and stderr go to OUT and ERR
# (/dev/null for timed runs).

BENCH_TIME_FILE=""

bench_time() {
  local out=$1 err=$2
  shift 2
  [ -n "$BENCH_TIME_FILE" ] || BENCH_TIME_FILE=$(mktemp "${TMPDIR:-/tmp}/gpureap-bench-time.XXXXXX")
  local TIMEFORMAT='%3R %3U %3S' real user sys
  { time "$@" >"$out" 2>"$err"; } 2>"$BENCH_TIME_FILE"
  BENCH_RC=$?
  read -r real user sys <"$BENCH_TIME_FILE"
  BENCH_REAL_MS=$(bench_ms "$real")
  BENCH_CPU_MS=$(($(bench_ms "$user") + $(bench_ms "$sys")))
}

# "1.234" seconds -> 1234 (integer milliseconds), without forking.
bench_ms() {
  local s=${1%.*} ms=${1#*.}
  echo $((10#$s * 1000 + 10#$ms))
}

# Prints "median min max" of the numbers given.
bench_stats() {
  printf '%s\n' "$@" | sort -n | awk '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "- - -"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      print m, v[1], v[NR]
    }'
}

bench_time_cleanup() {
  [ -n "$BENCH_TIME_FILE" ] && rm -f "$BENCH_TIME_FILE"
  BENCH_TIME_FILE=""
}

# Percentage of CPU time the machine spent busy over the next $1 seconds (default 1), from
# /proc/stat: a benchmark on a loaded machine measures the load, not the tools.
bench_busy_percent() {
  local _c u1 n1 s1 i1 w1 q1 sq1 st1 u2 n2 s2 i2 w2 q2 sq2 st2
  read -r _c u1 n1 s1 i1 w1 q1 sq1 st1 _ </proc/stat
  sleep "${1:-1}"
  read -r _c u2 n2 s2 i2 w2 q2 sq2 st2 _ </proc/stat
  local busy=$(((u2 - u1) + (n2 - n1) + (s2 - s1) + (q2 - q1) + (sq2 - sq1) + (st2 - st1)))
  local idle=$(((i2 - i1) + (w2 - w1)))
  if [ $((busy + idle)) -gt 0 ]; then
    echo $((100 * busy / (busy + idle)))
  else
    echo 0
  fi
}
