# shellcheck shell=bash
# The benchmark fleet: many sleeping processes with open fds, some of them holding stand-in
# GPU device files. Sourced by the bench/*.sh scripts; bash only.
#
#   source bench/lib/fleet.sh
#   fleet_init                          # temp work dir, exit trap that kills the fleet
#   fleet_make_dev_root                 # $FLEET_DEV: regular files nvidia0, nvidiactl, nvidia-uvm
#   fleet_check_limits 2000 40          # fails clearly if the fleet cannot start
#   fleet_build                         # compiles bench/fleet.c into the work dir
#   fleet_start 2000 40 100             # returns once every process is set up
#   ... FLEET_PID, FLEET_PIDFILE, fleet_pids holder|sleeper|all ...
#   fleet_stop                          # also run by the exit trap
#
# Every function prints "bench: ..." and exits the script on failure (fleet_die).

FLEET_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FLEET_SRC="$FLEET_LIB_DIR/../fleet.c"
FLEET_WORK=""     # temporary directory, removed on exit
FLEET_DEV=""      # the stand-in dev root
FLEET_DEV_FILES=()
FLEET_BIN=""
FLEET_PID=""      # the fleet's parent process
FLEET_PIDFILE=""  # "PID holder|sleeper" per line, holders first; exists once the fleet is up
FLEET_EXIT_HOOKS=()  # commands a script adds to run on exit, before the fleet is stopped

fleet_die() {
  echo "bench: $*" >&2
  exit 1
}

fleet_init() {
  FLEET_WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-bench.XXXXXX") || fleet_die "mktemp failed"
  trap fleet_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}

fleet_cleanup() {
  local hook
  for hook in "${FLEET_EXIT_HOOKS[@]}"; do eval "$hook" || true; done
  fleet_stop
  [ -n "$FLEET_WORK" ] && rm -rf "$FLEET_WORK"
  FLEET_WORK=""
}

# Regular files named like the NVIDIA nodes; gpureap matches them by device and inode when
# given --dev-root "$FLEET_DEV".
fleet_make_dev_root() {
  FLEET_DEV="$FLEET_WORK/dev"
  mkdir -p "$FLEET_DEV"
  FLEET_DEV_FILES=("$FLEET_DEV/nvidia0" "$FLEET_DEV/nvidiactl" "$FLEET_DEV/nvidia-uvm")
  : >"$FLEET_DEV/nvidia0"
  : >"$FLEET_DEV/nvidiactl"
  : >"$FLEET_DEV/nvidia-uvm"
}

# Tasks (threads) in the system: the second number of /proc/loadavg's "running/total".
fleet_task_count() {
  local _a _b _c rt _d
  read -r _a _b _c rt _d </proc/loadavg
  echo "${rt#*/}"
}

# fleet_check_limits PROCS FDS: fd limit (raised to the hard limit if needed), process limit,
# pid_max, threads-max, the cgroup's pids.max, memory. Fails with the limit and the fix.
fleet_check_limits() {
  local procs=$1 fds=$2
  local need_fds=$((fds + ${#FLEET_DEV_FILES[@]} + 8))
  local soft hard
  soft=$(ulimit -Sn) hard=$(ulimit -Hn)
  if [ "$soft" != unlimited ] && [ "$soft" -lt "$need_fds" ]; then
    if [ "$hard" = unlimited ] || [ "$hard" -ge "$need_fds" ]; then
      ulimit -Sn "$need_fds" || fleet_die "cannot raise ulimit -n to $need_fds"
    else
      fleet_die "each fleet process needs $need_fds fds but ulimit -n is $soft (hard $hard); lower FDS or raise the limit"
    fi
  fi
  local tasks
  tasks=$(fleet_task_count)
  local need_tasks=$((tasks + procs + 64))
  soft=$(ulimit -Su) hard=$(ulimit -Hu)
  if [ "$(id -u)" != 0 ] && [ "$soft" != unlimited ] && [ "$soft" -lt "$need_tasks" ]; then
    if [ "$hard" = unlimited ] || [ "$hard" -ge "$need_tasks" ]; then
      ulimit -Su "$need_tasks" || fleet_die "cannot raise ulimit -u to $need_tasks"
    else
      fleet_die "the fleet needs $procs more processes but ulimit -u is $soft (hard $hard) with about $tasks tasks running; lower PROCS or raise the limit"
    fi
  fi
  local pid_max threads_max
  pid_max=$(cat /proc/sys/kernel/pid_max)
  threads_max=$(cat /proc/sys/kernel/threads-max)
  [ "$need_tasks" -lt "$pid_max" ] ||
    fleet_die "the fleet needs $procs more pids; kernel.pid_max is $pid_max with $tasks tasks running"
  [ "$need_tasks" -lt "$threads_max" ] ||
    fleet_die "the fleet needs $procs more tasks; kernel.threads-max is $threads_max with $tasks tasks running"
  # cgroup v2 pids controller: this cgroup and every ancestor.
  local cg dir max cur
  cg=$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)
  if [ -n "$cg" ] && [ "$cg" != / ]; then
    dir="/sys/fs/cgroup$cg"
    while [ "$dir" != /sys/fs/cgroup ] && [ "$dir" != / ]; do
      if [ -r "$dir/pids.max" ] && [ -r "$dir/pids.current" ]; then
        read -r max <"$dir/pids.max"
        read -r cur <"$dir/pids.current"
        if [ "$max" != max ] && [ $((cur + procs + 64)) -ge "$max" ]; then
          fleet_die "the fleet needs $procs more pids; cgroup $dir has pids.max $max and $cur in use"
        fi
      fi
      dir=$(dirname "$dir")
    done
  fi
  local avail_kb
  avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  if [ -n "$avail_kb" ] && [ "$avail_kb" -lt $((procs * 512)) ]; then
    fleet_die "the fleet needs about $((procs / 2)) MiB of memory; only $((avail_kb / 1024)) MiB available"
  fi
}

# Compiles bench/fleet.c with the first of $CC, cc, gcc, clang found.
fleet_build() {
  local cc
  for cc in ${CC:-} cc gcc clang; do
    command -v "$cc" >/dev/null 2>&1 && break
    cc=""
  done
  [ -n "$cc" ] || fleet_die "no C compiler (cc, gcc or clang) to build $FLEET_SRC; apt-get install gcc"
  FLEET_BIN="$FLEET_WORK/fleet"
  "$cc" -O2 -pthread -o "$FLEET_BIN" "$FLEET_SRC" || fleet_die "building $FLEET_SRC with $cc failed"
}

# fleet_start PROCS FDS HOLDERS: PROCS sleepers with FDS fds each; the first HOLDERS also open
# every file of FLEET_DEV_FILES; each runs FLEET_THREADS threads (default 1) sharing its fd
# table. Returns when every process has reported ready.
fleet_start() {
  local procs=$1 fds=$2 holders=$3 timeout_s=${FLEET_START_TIMEOUT:-120}
  [ -n "$FLEET_BIN" ] || fleet_build
  FLEET_PIDFILE="$FLEET_WORK/fleet.pids"
  rm -f "$FLEET_PIDFILE"
  local args=(-n "$procs" -k "$fds" -H "$holders" -o "$FLEET_PIDFILE" -t "$FLEET_WORK"
    -T "${FLEET_THREADS:-1}")
  local f
  for f in "${FLEET_DEV_FILES[@]}"; do args+=(-d "$f"); done
  # stdin from /dev/null so the fleet keeps no terminal; its stderr is ours, for errors.
  "$FLEET_BIN" "${args[@]}" </dev/null >/dev/null &
  FLEET_PID=$!
  local deadline=$((SECONDS + timeout_s))
  while [ ! -e "$FLEET_PIDFILE" ]; do
    if ! fleet_running "$FLEET_PID"; then
      wait "$FLEET_PID" 2>/dev/null
      FLEET_PID=""
      fleet_die "the fleet of $procs processes failed to start (see above)"
    fi
    [ "$SECONDS" -lt "$deadline" ] || fleet_die "the fleet was not up after ${timeout_s}s"
    sleep 0.05
  done
  local n
  n=$(wc -l <"$FLEET_PIDFILE")
  [ "$n" -eq "$procs" ] || fleet_die "the fleet reported $n processes, expected $procs"
}

# fleet_pids holder|sleeper|all: the fleet's pids, one per line.
fleet_pids() {
  case $1 in
    all) cut -d' ' -f1 "$FLEET_PIDFILE" ;;
    *) awk -v role="$1" '$2 == role {print $1}' "$FLEET_PIDFILE" ;;
  esac
}

# True when PID exists and is not a zombie.
fleet_running() {
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  case $stat in *") Z "*) return 1 ;; esac
  return 0
}

# True when PID is a live (not zombie) fleet process.
fleet_alive() {
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  case $stat in
    *"(fleet-"*") Z "*) return 1 ;;
    *"(fleet-"*) return 0 ;;
  esac
  return 1
}

# Stops the fleet: SIGTERM to its parent, which kills and reaps every child (and the children
# die with the parent anyway). Then checks that none is left.
fleet_stop() {
  [ -n "$FLEET_PID" ] || return 0
  local pids=()
  [ -e "$FLEET_PIDFILE" ] && mapfile -t pids < <(fleet_pids all)
  kill -TERM "$FLEET_PID" 2>/dev/null
  local i
  for ((i = 0; i < 200; i++)); do
    fleet_running "$FLEET_PID" || break
    sleep 0.05
  done
  kill -KILL "$FLEET_PID" 2>/dev/null
  wait "$FLEET_PID" 2>/dev/null
  FLEET_PID=""
  # Children die with their parent (PR_SET_PDEATHSIG); wait for that, then make sure.
  local left=0 p
  for ((i = 0; i < 100; i++)); do
    left=0
    for p in "${pids[@]}"; do fleet_alive "$p" && left=$((left + 1)); done
    [ "$left" -eq 0 ] && return 0
    sleep 0.05
  done
  for p in "${pids[@]}"; do fleet_alive "$p" && kill -KILL "$p" 2>/dev/null; done
  echo "bench: $left fleet processes outlived the fleet; killed them" >&2
}
