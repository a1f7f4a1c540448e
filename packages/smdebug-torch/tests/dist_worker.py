"""One rank of a real torch.distributed (gloo) training job, started by test_distributed.py."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import smdebug.pytorch as smd
from dist_jobs import join_job
from models import MLP, mlp_data

out_dir, include_workers, skip_step = sys.argv[1], sys.argv[2], int(sys.argv[3])
join_job()
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(MLP())
hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                include_collections=["weights", "gradients", "losses", "ranks"], include_workers=include_workers)
hook.register_module(model)
loss_fn = nn.CrossEntropyLoss()
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = mlp_data(seed=rank)  # each rank trains on its own shard
for step in range(5):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if not (rank == 1 and step == skip_step):
        hook.save_tensor("rank_marker", torch.full((2,), float(rank * 100 + step)), "ranks")
hook.close()
dist.barrier()
dist.destroy_process_group()
print("rank", rank, "done")
