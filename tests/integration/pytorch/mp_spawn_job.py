"""A torch.multiprocessing.spawn job, for gpureap's tests.

usage: mp_spawn_job.py NPROCS PORT DEVICE_FILE_PATTERN

mp.spawn starts NPROCS ranks with the spawn start method (`python3 -c "from
multiprocessing.spawn import spawn_main; ..." --multiprocessing-fork`, children of this
launcher); each opens the device file the pattern names with its rank for "{}" and keeps it
open, as CUDA keeps /dev/nvidia<N>, joins a gloo group, and all-reduces in a loop, printing
"ready RANK PID" after the first. The launcher waits on every rank: when one dies it ends the
others and raises ProcessExitedException.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, n, port, pattern):
    device = open(pattern.format(rank), "rb")  # noqa: F841  (kept open: the GPU context's file)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=300))
    t = torch.ones(1)
    dist.all_reduce(t)
    os.write(1, ("ready %d %d\n" % (rank, os.getpid())).encode())
    while True:
        dist.all_reduce(t)
        time.sleep(0.2)


if __name__ == "__main__":
    n, port, pattern = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    mp.spawn(rank_main, args=(n, port, pattern), nprocs=n)
