"""One rank of a real two-process FSDP2 (``fully_shard``, gloo) job, started by test_sharded.py.

argv: out_dir, include_workers, fail_at (a step at which rank 0's hook fails with an injected internal
error, -1 for none), register ("before" or "after" sharding).
"""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

import smdebug.pytorch as smd
from dist_jobs import join_job
from models import MLP, mlp_data

STEPS = 5
out_dir, include_workers, fail_at, register = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
join_job()
rank = dist.get_rank()
torch.manual_seed(0)
model = MLP()
loss_fn = nn.CrossEntropyLoss()
hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=2),
                include_collections=["weights", "biases", "gradients", "losses"], include_workers=include_workers)
if register == "before":
    hook.register_module(model)  # the parameters are replaced by DTensors below: the hook follows
fully_shard(model.fc1)
fully_shard(model.fc2)
fully_shard(model)
if register == "after":
    hook.register_module(model)
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = mlp_data(seed=rank)  # each rank trains on its own half of the batch
for step in range(STEPS):
    if step == fail_at and rank == 0:
        hook._fail("an injected test failure", RuntimeError("injected"))
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
shard = dict(model.named_parameters())["fc1.weight"]
print("rank", rank, "shard", tuple(shard.to_local().shape), "of", tuple(shard.shape), "failed", hook._failure is not None)
hook.close()
dist.barrier()
dist.destroy_process_group()
print("rank", rank, "done")
