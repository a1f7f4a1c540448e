"""One Horovod worker (started by horovodrun) for test_horovod.py: a small MLP trained data-parallel with
hvd.DistributedOptimizer and the smdebug hook; prints what it computed as JSON."""

import argparse
import json

import horovod.torch as hvd
import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("--include-workers", default="all")
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()

hvd.init()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 3))
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=1),
                include_collections=["weights", "gradients", "losses"], include_workers=args.include_workers)
hook.register_module(model)
loss_fn = nn.CrossEntropyLoss()
hook.register_loss(loss_fn)
g = torch.Generator().manual_seed(100 + hvd.rank())  # each worker its own shard of data
x, y = torch.randn(32, 10, generator=g), torch.randint(0, 3, (32,), generator=g)
losses = []
for step in range(args.steps):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
hook.close()
print(json.dumps({"rank": hvd.rank(), "size": hvd.size(), "worker": hook.worker, "losses": losses,
                  "final_weight": model[0].weight.detach().numpy().tolist()}))
