#!/usr/bin/env bash
# A real single-node Slurm cluster (slurmctld and slurmd on loopback, munge with a key made
# here, everything in a temporary directory) with deploy/slurm/prolog.sh and epilog.sh as its
# Prolog= and Epilog=. The node's one GPU is a GRES whose File= is a stand-in device node, so
# the job's GPU comes from Slurm itself (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES), and the NVML
# test double plays the driver:
#   - a job on a clean GPU runs, on GPU 0;
#   - a job whose worker escapes (setsid, double fork) and keeps the GPU's file open after the
#     job ends: the epilog ends it, and only it (another user's process on that file lives);
#   - a job that leaves memory the driver keeps (a leaked context): the epilog fails and the
#     node is drained with gpureap's reason (`sinfo -R` names the GPU), not "Epilog error";
#   - once resumed, the prolog refuses the next job on that GPU (it does not run), drained again,
#     with the prolog's reason.
#
#   cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY DEPLOY_SLURM_DIR
#
# Exit 0 pass, 1 fail, 77 skipped (Slurm or munge not installed, not root, or the sandbox
# cannot run them or make a device node). Everything it starts is ended by its PID on exit.
set -uo pipefail

GPUREAP=${1:?usage: cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY DEPLOY_SLURM_DIR}
FAKE_NVML=${2:?usage: cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY DEPLOY_SLURM_DIR}
DEPLOY=${3:?usage: cluster_test.sh GPUREAP_BINARY FAKE_NVML_LIBRARY DEPLOY_SLURM_DIR}
GiB=1073741824
# slurmd runs the prolog from a directory of its own: absolute paths.
GPUREAP=$(realpath "$GPUREAP") FAKE_NVML=$(realpath "$FAKE_NVML") DEPLOY=$(realpath "$DEPLOY")
export PATH=$PATH:/usr/sbin

skip() {
  echo "SKIP: $*"
  exit 77
}
for tool in slurmctld slurmd munged srun sinfo squeue scontrol; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (scripts/install-deps.sh installs slurmctld, slurmd, slurm-client and munge)"
done
[ "$(id -u)" = 0 ] || skip "slurmd and its prolog must run as root"

W=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-slurm.XXXXXX") || exit 1
chmod 755 "$W"
PIDFILES=("$W/slurmd.pid" "$W/slurmctld.pid" "$W/munged.pid")
cleanup() {
  # The PIDs first: a daemon may remove its pid file as soon as it is told to stop.
  local f p pids=()
  for f in "${PIDFILES[@]}"; do
    if [ -s "$f" ]; then pids+=("$(cat "$f")"); fi
  done
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "FAIL: $*"
  for f in prolog.log epilog.log log/slurmctld.log log/slurmd.log munged.log; do
    [ -s "$W/$f" ] && { echo "--- $f (last 20 lines)"; tail -n 20 "$W/$f"; }
  done
  exit 1
}
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
  local p
  for _ in $(seq 20); do
    # Below the kernel's ephemeral range (32768 and up), where other tests' client connections
    # take their ports; never the one already chosen.
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    if [ "$p" != "${CTLD_PORT:-}" ] && port_free "$p"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

mkdir -p "$W/dev" "$W/gres" "$W/state" "$W/spool" "$W/log"
# The GPU's files under gpureap's dev root are stand-ins (regular files, numbered by their
# names, as the test double's GPU is), which a job holds as it would hold its GPU.
: >"$W/dev/nvidiactl"
: >"$W/dev/nvidia0"
chmod 666 "$W/dev/nvidia0"
# slurmd takes a GRES File= only if it is a device node: one with /dev/null's numbers, kept out
# of the dev root (gpureap matches device nodes by number, and every process holds /dev/null).
mknod -m 666 "$W/gres/nvidia0" c 1 3 2>/dev/null ||
  skip "cannot make a device node here (mknod: no CAP_MKNOD, or a nodev mount)"

# --- the driver (the NVML test double): a clean GPU to start with
write_scenario() { # write_scenario PROCESSES_JSON
  printf '{"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-slurm-0", "minor": 0, "total_bytes": %s, "processes": %s}]}\n' \
    $((80 * GiB)) "$1" >"$W/scenario.tmp"
  mv "$W/scenario.tmp" "$W/scenario.json"
}
write_scenario '[]'

# --- munge, with a key of its own
dd if=/dev/urandom of="$W/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$W/munge.key"
munged --key-file="$W/munge.key" --socket="$W/munge.sock" --pid-file="$W/munged.pid" \
  --log-file="$W/munged.log" --seed-file="$W/munge.seed" || skip "munged does not start here"

# --- the prolog as a site installs it; this wrapper only points it at the test's settings
# (a site has them in /etc/default/gpureap-slurm) and keeps what it says
printf 'GPUREAP=%s\nGPUREAP_OPTS="--dev-root %s"\nGPUREAP_SYSLOG=0\n' "$GPUREAP" "$W/dev" >"$W/defaults"
for script in prolog epilog; do
  printf '#!/bin/sh\nexport GPUREAP_SLURM_DEFAULTS=%s GPUREAP_NVML_LIBRARY=%s FAKE_NVML_SCENARIO=%s\nexec %s 2>>%s\n' \
    "$W/defaults" "$FAKE_NVML" "$W/scenario.json" "$DEPLOY/$script.sh" "$W/$script.log" >"$W/$script"
  chmod 755 "$W/$script"
done

HOST=$(hostname -s)
CTLD_PORT=$(free_port) || fail "no free port"
SLURMD_PORT=$(free_port) || fail "no free port"
cat >"$W/slurm.conf" <<CONF
ClusterName=gpureaptest
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$W/munge.sock
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
GresTypes=gpu
Prolog=$W/prolog
Epilog=$W/epilog
PrologFlags=Alloc
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=1 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
echo "NodeName=$HOST Name=gpu File=$W/gres/nvidia0" >"$W/gres.conf"
export SLURM_CONF=$W/slurm.conf

slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start here"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start here"
idle() { sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; }
wait_for 30 idle || fail "the node never became idle: $(sinfo -N 2>&1 | tail -n 1)"
echo "slurm: controller on 127.0.0.1:$CTLD_PORT, node $HOST idle"

# --- a job on the clean GPU: it runs, on the GPU Slurm gave it
out=$(timeout 60 srun --gres=gpu:1 -t 1 sh -c 'echo "gpus=$CUDA_VISIBLE_DEVICES"' 2>&1) ||
  fail "a job on a clean GPU did not run: $out"
[ "$out" = "gpus=0" ] || fail "the job saw '$out', expected gpus=0 from Slurm's GRES"
echo "ok: a job on a clean GPU ran on GPU 0"

# --- a job whose worker escapes it and keeps the GPU's file open; another user's process
# holds the same file and must be left alone
setpriv --reuid=65534 --regid=65534 --clear-groups sleep 600 <"$W/dev/nvidia0" >/dev/null 2>&1 &
OTHER=$!
PIDFILES+=("$W/other.pid")
echo "$OTHER" >"$W/other.pid"
# The job starts a worker in a session of its own (setsid, then a fork: no longer the job's
# child) that keeps the GPU's file open, and, as the driver would, the double lists it beside
# the other user's process.
cat >"$W/escape.sh" <<JOB
#!/bin/sh
setsid -w sh -c 'sleep 600 <$W/dev/nvidia0 >/dev/null 2>&1 & echo \$! >$W/escaped.pid'
printf '{"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-slurm-0", "minor": 0, "total_bytes": %s, "processes": [{"pid": %s, "used_bytes": %s}, {"pid": %s, "used_bytes": %s}]}]}\\n' \\
  $((80 * GiB)) "\$(cat $W/escaped.pid)" $((2 * GiB)) $OTHER $((1 * GiB)) >$W/scenario.tmp
mv $W/scenario.tmp $W/scenario.json
JOB
chmod 755 "$W/escape.sh"
timeout 60 srun --gres=gpu:1 -t 1 "$W/escape.sh" >/dev/null 2>&1 || fail "the escaping job did not run"
ESCAPED=$(cat "$W/escaped.pid" 2>/dev/null)
[ -n "$ESCAPED" ] || fail "the job did not say its worker's PID"
PIDFILES+=("$W/escaped.pid")
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_for 30 gone "$ESCAPED" || fail "the epilog did not end the job's escaped worker $ESCAPED"
kill -0 "$OTHER" 2>/dev/null || fail "the epilog ended uid 65534's process $OTHER, not the job's"
idle || fail "the node is not idle after a clean epilog: $(sinfo -N 2>&1)"
echo "ok: the epilog ended the escaped worker $ESCAPED; uid 65534's $OTHER lives"

# --- a job that leaves a leaked context (the job itself tells the driver's double)
sh -c 'exit 0' &
GONE=$!
wait "$GONE"
printf '{"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-slurm-0", "minor": 0, "total_bytes": %s, "processes": [{"pid": %s, "used_bytes": %s, "leaked": true}]}]}\n' \
  $((80 * GiB)) "$GONE" $((8 * GiB)) >"$W/leak.json"
timeout 60 srun --gres=gpu:1 -t 1 sh -c "cp $W/leak.json $W/scenario.tmp && mv $W/scenario.tmp $W/scenario.json" \
  >/dev/null 2>&1 || fail "the leaking job did not run"
drained() { sinfo -h -R -o '%E|%N' 2>/dev/null | grep -q "|$HOST\$"; }
wait_for 60 drained || fail "the node was not drained after the epilog: $(sinfo -N 2>&1)"
grep -q "8.0 GiB still held on GPU 0" "$W/epilog.log" ||
  fail "the epilog did not say why: $(cat "$W/epilog.log")"
echo "ok: the epilog failed: $(tail -n 1 "$W/epilog.log")"
# The reason is gpureap's, naming the GPU, not Slurm's "Epilog error", still once slurmctld has
# taken in the epilog's failure (the job has left COMPLETING).
no_jobs() { [ -z "$(squeue -h 2>/dev/null)" ]; }
wait_for 30 no_jobs || fail "the job never completed: $(squeue 2>&1)"
reason=$(sinfo -h -R -o '%E')
[[ "$reason" == "gpureap epilog: job "*"8.0 GiB still held on GPU 0"* ]] ||
  fail "the drain reason does not say what gpureap found: $reason"
echo "ok: the node is drained: $(sinfo -h -R -o '%E on %N')"

# --- resumed, the next job on that GPU is refused by the prolog
scontrol update nodename="$HOST" state=resume || fail "scontrol could not resume the node"
wait_for 30 idle || fail "the node did not come back: $(sinfo -N 2>&1)"
out=$(timeout 60 srun --gres=gpu:1 -t 1 sh -c 'echo job-ran' 2>&1)
[[ "$out" != *job-ran* ]] || fail "the prolog let a job start on a GPU with ghost memory: $out"
grep -q "GPU 0 has 8.0 GiB of ghost memory (leaked-memory)" "$W/prolog.log" ||
  fail "the prolog did not say why: $(cat "$W/prolog.log")"
wait_for 30 drained || fail "the node was not drained: $(sinfo -N 2>&1)"
echo "ok: the prolog refused the job: $(tail -n 1 "$W/prolog.log")"
# The reason is the prolog's still once the refused job has ended: Slurm runs its epilog too,
# which finds the same memory and keeps the reason that names it (the job never ran). The node
# reads "drained" (not "draining") once no job is on it, its epilog done.
refused=$(sed -n 's/^gpureap prolog: job \([0-9]*\):.*/\1/p' "$W/prolog.log" | tail -n 1)
settled() { no_jobs && [ "$(sinfo -h -N -o '%T' 2>/dev/null)" = drained ]; }
wait_for 60 settled || fail "the refused job $refused never left the node: $(squeue 2>&1; sinfo -N 2>&1)"
reason=$(sinfo -h -R -o '%E')
[[ "$reason" == "gpureap prolog: job $refused: GPU 0 has 8.0 GiB of ghost memory"* ]] ||
  fail "the drain reason does not say what gpureap found: $reason"
if grep -q "^gpureap epilog: job $refused:" "$W/epilog.log"; then
  grep -q "^gpureap epilog: job $refused: the node stays drained with gpureap's earlier reason" \
    "$W/epilog.log" || fail "the epilog of the refused job did not keep the prolog's reason"
fi
echo "ok: the node is drained: $(sinfo -h -R -o '%E on %N')"
echo "PASS"
