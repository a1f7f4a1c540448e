"""A training job that dies: a small PyTorch classifier trained with ``Hook.recommended``, whose process kills
itself (SIGKILL: no exception handler, no atexit, no end marker) at a given step, as an out-of-memory kill or a
preempted machine does.

usage: train_and_die.py OUT_DIR DIE_AT_STEP [INIT_FILE RANK WORLD]
With INIT_FILE, one rank of a WORLD-process job (gloo on CPU, ``include_workers="all"``); DIE_AT_STEP -1: this
rank trains its 120 steps and ends normally. ``DIE_BY=raise`` (an exception nobody catches) or ``DIE_BY=sigterm``
dies another way: the at-exit or SIGTERM close then ends the run, saying training did not end normally.
"""

import os
import signal
import sys

import torch
import torch.nn as nn

import smdebug.pytorch as smd

out_dir, die_at = sys.argv[1], int(sys.argv[2])
options = {}
if len(sys.argv) > 3:
    import torch.distributed as dist

    init_file, rank, world = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    options["include_workers"] = "all"
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
loss_fn = nn.CrossEntropyLoss()
hook = smd.Hook.recommended(out_dir, **options)
hook.register_module(model)
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
for step in range(120):
    if step == die_at:
        how = os.environ.get("DIE_BY", "sigkill")
        if how == "raise":
            raise RuntimeError("the data loader lost its connection")
        os.kill(os.getpid(), signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    x = torch.randn(32, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
hook.close()
