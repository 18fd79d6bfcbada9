"""A torch.multiprocessing.spawn job of 4 ranks (gloo backend, CPU).

usage: spawn_job.py DEVICE_FILE PORT

Each rank opens DEVICE_FILE and keeps it open, as each rank's CUDA context keeps
/dev/nvidia<N>, joins the process group on 127.0.0.1:PORT, prints "rank R PID" and enters a
collective that rank 3 never joins: ranks 0 to 2 wait in it.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world_size, device_file, port):
    device = open(device_file, "rb")  # kept open: the rank's GPU context
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    dist.barrier()
    print(f"rank {rank} {os.getpid()}", flush=True)  # one write: 4 ranks share the pipe
    if rank == 3:
        time.sleep(1000000)
    dist.all_reduce(torch.ones(1))


if __name__ == "__main__":
    mp.spawn(rank_main, args=(4, sys.argv[1], sys.argv[2]), nprocs=4)
