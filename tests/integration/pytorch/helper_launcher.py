"""A launcher that runs helpers it never reaps and starts its last rank late, for gpureap's tests.

usage: helper_launcher.py NRANKS PORT GATE HELPER_FILE HELPER_GATE PROGRAM ARGS...

Starts ranks 0 .. NRANKS-2 of a job of NRANKS ranks that all run on this node, with the
environment torchrun would give them, and prints "ranks PID...". Then it runs two helpers, as
launchers run nvidia-smi or a short script to log the GPUs, and never reaps them (it keeps them,
and never waits for them or polls them): one that exits at once ("quick PID"), and one that opens
HELPER_FILE, as nvidia-smi opens the GPUs' device files, says "helper PID", and exits once the
file HELPER_GATE exists. The last rank starts once the file GATE exists ("started PID"). Then it
waits for its ranks, one by one.
"""
import os
import subprocess
import sys
import time

n, port, gate, helper_file, helper_gate = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                                           sys.argv[4], sys.argv[5])
program = sys.argv[6:]


def rank(r):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n),
               LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    return subprocess.Popen(program, env=env)


ranks = [rank(r) for r in range(n - 1)]
print("ranks", *[p.pid for p in ranks], flush=True)
HELPER = """
import os, sys, time
f = open(sys.argv[1], "rb")
os.write(1, b"helper %d\\n" % os.getpid())
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
"""
helpers = [subprocess.Popen([sys.executable, "-c", "pass"])]
print("quick", helpers[0].pid, flush=True)  # before the other helper can say anything
helpers.append(subprocess.Popen([sys.executable, "-c", HELPER, helper_file, helper_gate]))
while not os.path.exists(gate):
    time.sleep(0.1)
ranks.append(rank(n - 1))
print("started", ranks[-1].pid, flush=True)
for p in ranks:
    p.wait()
