"""A launcher that starts a job rank by rank, as a hand-written script or Slurm's srun does.

usage: rank_launcher.py [--helper-status N] NRANKS PORT PROGRAM ARGS...

Starts NRANKS copies of PROGRAM ARGS with the environment torchrun would give them (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), prints "ranks PID...",
and waits for each in turn. When one fails it does nothing: nothing tears the others down.
With --helper-status N it also runs a helper that exits with status N, as a launcher runs
nvidia-smi or a short script to log the GPUs, prints "helper PID", and never reaps it.
"""
import os
import subprocess
import sys

args = sys.argv[1:]
helper_status = None
if args[0] == "--helper-status":
    helper_status, args = int(args[1]), args[2:]
n, port, program = int(args[0]), args[1], args[2:]
ranks = []
for r in range(n):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n),
               LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    ranks.append(subprocess.Popen(program, env=env))
print("ranks", *[p.pid for p in ranks], flush=True)
if helper_status is not None:
    helper = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(%d)" % helper_status])
    print("helper", helper.pid, flush=True)
for p in ranks:
    p.wait()
