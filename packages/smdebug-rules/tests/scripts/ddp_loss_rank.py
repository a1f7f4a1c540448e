"""One rank of a real two-process DistributedDataParallel job (gloo on CPU) for the loss-curve rule tests.

usage: ddp_loss_rank.py OUT_DIR INIT_FILE RANK WORLD FAULT FAULT_RANK (-2: every rank) -- every rank saves its own losses
(``include_workers="all"``) of a small classifier trained on its own shard of one task; rank 0 alone validates
(EVAL mode every 10 steps, as many DDP loops do). FAULT is ``none``, ``zeros`` (rank FAULT_RANK's shard is all
zeros: its inputs teach nothing) or ``shuffle`` (rank FAULT_RANK's labels are permuted): the averaged gradients
keep the model learning from the other rank, and only the faulty rank's own loss shows the fault.
"""

import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import smdebug.pytorch as smd

out_dir, init_file, rank, world, fault, fault_rank = (sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                                                      sys.argv[5], int(sys.argv[6]))
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"],
                include_workers="all")
hook.register_module(model)
loss_fn = nn.CrossEntropyLoss()
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

teacher = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))  # one task for every rank
g = torch.Generator().manual_seed(100 + rank)  # each rank its own shard and batches
x = torch.randn(512, 16, generator=g)
y = (x @ teacher).argmax(1)
x_val = torch.randn(256, 16, generator=torch.Generator().manual_seed(8))
y_val = (x_val @ teacher).argmax(1)
faulty = fault_rank in (rank, -2)
if faulty and fault == "zeros":
    x.zero_()
elif faulty and fault == "shuffle":
    y = y[torch.randperm(len(y), generator=g)]

for step in range(120):
    hook.set_mode(smd.modes.TRAIN)
    batch = torch.randint(0, len(x), (32,), generator=g)
    opt.zero_grad()
    loss_fn(model(x[batch]), y[batch]).backward()  # (gradients are averaged over the ranks)
    opt.step()
    if rank == 0 and step % 10 == 9:
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            loss_fn(model(x_val), y_val)
hook.close()
dist.barrier()
dist.destroy_process_group()
