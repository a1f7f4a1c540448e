"""One rank of a real two-process DistributedDataParallel job (gloo on CPU) for Divergence's weight-norm test.

usage: ddp_weights_rank.py OUT_DIR INIT_FILE RANK WORLD GROW_RANK (-1: none) -- every rank saves its own copy of the
weights and the loss (``include_workers="all"``) of a linear classifier trained on its own shard of one task. Rank
GROW_RANK scales its replica's weights by 1.1 after every optimizer step (weight decay applied with the wrong sign
on that rank only): its copy grows ~1.1**step-fold while the averaged gradients -- of a linear layer under
cross-entropy, bounded by the inputs whatever the weights -- keep the other rank's copy at a trained size.
"""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import smdebug.pytorch as smd

out_dir, init_file, rank, world, grow_rank = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 4)))
hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=5), include_collections=["weights", "losses"],
                include_workers="all")
hook.register_module(model)
loss_fn = nn.CrossEntropyLoss()
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.05)

teacher = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))
g = torch.Generator().manual_seed(100 + rank)
x = torch.randn(512, 16, generator=g)
y = (x @ teacher).argmax(1)
for step in range(80):
    batch = torch.randint(0, len(x), (32,), generator=g)
    opt.zero_grad()
    loss_fn(model(x[batch]), y[batch]).backward()
    opt.step()
    if rank == grow_rank:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.1)
hook.close()
dist.barrier()
dist.destroy_process_group()
