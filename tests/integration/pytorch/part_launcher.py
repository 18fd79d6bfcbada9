"""A launcher that starts some of a job's ranks on this node, for gpureap's tests: one of two
containers that share a node's job, or a launcher whose last rank starts late (it waits for its
data), as a hand-written script or Slurm's srun starts them.

usage: part_launcher.py FIRST COUNT TOTAL PORT GATE PROGRAM ARGS...

Starts ranks FIRST .. FIRST+COUNT-1 of a job of TOTAL ranks that all run on this node (LOCAL_RANK
is RANK; LOCAL_WORLD_SIZE and WORLD_SIZE are TOTAL), with the environment torchrun would give
them, the last of them only once the file GATE exists ("-": no gate). Prints "started PID" as
each starts (its PID in the launcher's own PID namespace) and waits for each in turn.
"""
import os
import subprocess
import sys
import time

first, count, total = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
port, gate, program = sys.argv[4], sys.argv[5], sys.argv[6:]
ranks = []
for r in range(first, first + count):
    if r == first + count - 1 and gate != "-":
        while not os.path.exists(gate):
            time.sleep(0.1)
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(total),
               LOCAL_WORLD_SIZE=str(total), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    ranks.append(subprocess.Popen(program, env=env))
    print("started", ranks[-1].pid, flush=True)
for p in ranks:
    p.wait()
