"""One rank of a gloo job, for gpureap's tests.

usage: gloo_rank.py DEVICE_FILE_PATTERN [LOADING_RANK]

Started by torchrun or by rank_launcher.py, which set RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT. It opens the device file the pattern names with
its LOCAL_RANK for "{}" (one GPU per rank) and keeps it open, as CUDA keeps /dev/nvidia<N>, and
prints "loaded PID". The rank whose LOCAL_RANK is LOADING_RANK then
sleeps as if it loaded a large checkpoint (the test kills it there, as an OOM kill would); every
other rank joins the process group (gloo, GLOO_TIMEOUT seconds, default 300) and all-reduces in
a loop, printing "ready RANK PID" after the first one. A rank whose peer died during start-up
waits in the group's set-up until the timeout.
"""
import datetime
import os
import sys
import time

device = open(sys.argv[1].format(os.environ["LOCAL_RANK"]), "rb")  # kept open: the GPU context's file


def say(*words):
    # One write per line: torchrun runs its ranks with `python3 -u`, under which print() writes
    # each word apart, and the ranks' words would interleave on the shared pipe.
    os.write(1, (" ".join(str(w) for w in words) + "\n").encode())


import torch  # noqa: E402  (the file is open before the import, as CUDA's would be)
import torch.distributed as dist  # noqa: E402

say("loaded", os.getpid())
loading = int(sys.argv[2]) if len(sys.argv) > 2 else -1
if int(os.environ["LOCAL_RANK"]) == loading:
    while True:
        time.sleep(3600)
timeout = datetime.timedelta(seconds=int(os.environ.get("GLOO_TIMEOUT", "300")))
dist.init_process_group("gloo", timeout=timeout)
t = torch.zeros(1)
dist.all_reduce(t)
say("ready", dist.get_rank(), os.getpid())
while True:
    dist.all_reduce(t)
    time.sleep(0.5)
