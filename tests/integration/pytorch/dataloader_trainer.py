"""A trainer whose DataLoader has 4 worker processes, for gpureap's tests.

usage: dataloader_trainer.py DEVICE_FILE

It opens DEVICE_FILE and keeps it open, as CUDA keeps /dev/nvidia<N> (the worker processes,
forked by the DataLoader, inherit it as they inherit CUDA's), starts the DataLoader's workers and
asks for the first batch. The data set has two items and each read of one blocks on a pipe
nobody writes, as a read from a hung file system does: workers 0 and 1 are stuck in their read,
workers 2 and 3 get no item and wait for work. Prints "workers P0 P1 P2 P3" once they all run.
"""
import os
import sys

import torch.utils.data

device = open(sys.argv[1], "rb")  # kept open: the GPU context's file
never_written, _writer = os.pipe()


class BlockingReads(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        os.read(never_written, 1)  # blocks forever
        return index


loader = torch.utils.data.DataLoader(BlockingReads(), batch_size=1, num_workers=4)
batches = iter(loader)
print("workers", *(w.pid for w in batches._workers), flush=True)
next(batches)
