"""One rank of a real two-process DistributedDataParallel job (gloo on CPU), for the every-worker rule tests.

usage: ddp_rank.py OUT_DIR INIT_FILE RANK WORLD FROZEN_RANK -- every rank saves its own tensors
(``include_workers="all"``); the rank FROZEN_RANK (-1: none) never calls ``optimizer.step()``, so its replica keeps
its initial weights while the others train (a rank whose optimizer is skipped, or steps a copy of the model).
"""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import smdebug.pytorch as smd

out_dir, init_file, rank, world, frozen_rank = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)))
hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                include_collections=["weights", "gradients", "losses"], include_workers="all")
hook.register_module(model)
loss_fn = nn.CrossEntropyLoss()
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(100 + rank)  # each rank trains on its own shard
x = torch.randn(64, 8, generator=g)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
for step in range(6):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()  # (gradients are averaged over the ranks, frozen one included)
    if rank != frozen_rank:
        opt.step()
hook.close()
dist.barrier()
dist.destroy_process_group()
