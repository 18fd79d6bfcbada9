"""A trainer whose 2 DataLoader workers hand it batches through files in /dev/shm.

usage: shm_trainer.py

With the "file_system" sharing strategy each worker writes a batch's tensor to
/dev/shm/torch_<worker pid>_<random>_<counter> and starts a torch_shm_manager (in a session of
its own), which removes the files once the processes using them are gone. It takes one batch,
prints "workers P0 P1" and waits.
"""
import time

import torch
import torch.multiprocessing
import torch.utils.data

torch.multiprocessing.set_sharing_strategy("file_system")


class Zeros(torch.utils.data.Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, index):
        return torch.zeros(100000)


loader = torch.utils.data.DataLoader(Zeros(), batch_size=4, num_workers=2)
batches = iter(loader)
batch = next(batches)
print("workers", *(w.pid for w in batches._workers), flush=True)
time.sleep(1000000)
