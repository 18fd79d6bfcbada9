"""A launcher that starts a job rank by rank, as a hand-written script or Slurm's srun does.

usage: rank_launcher.py NRANKS PORT PROGRAM ARGS...

Starts NRANKS copies of PROGRAM ARGS with the environment torchrun would give them (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), prints "ranks PID...",
and waits for each in turn. When one fails it does nothing: nothing tears the others down.
"""
import os
import subprocess
import sys

n, port, program = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
ranks = []
for r in range(n):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n),
               LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    ranks.append(subprocess.Popen(program, env=env))
print("ranks", *[p.pid for p in ranks], flush=True)
for p in ranks:
    p.wait()
