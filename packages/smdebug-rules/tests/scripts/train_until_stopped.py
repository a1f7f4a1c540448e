"""A PyTorch training script for the live stop test: an MLP whose learning rate is raised to an absurd
value at --blow-up-at, so its weights become infinite a few steps later. Runs --steps steps unless smdebug
stops it; prints one JSON line saying how it ended."""

import argparse
import json
import time

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.exceptions import TrainingStopRequested

parser = argparse.ArgumentParser()
parser.add_argument("out_dir")
parser.add_argument("--steps", type=int, default=3000)
parser.add_argument("--blow-up-at", type=int, default=20)
parser.add_argument("--step-time", type=float, default=0.02)
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=1),
                include_collections=["weights", "gradients", "losses"])
hook.register_module(model)
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))

step = -1
ended = "completed"
try:
    for step in range(args.steps):
        if step == args.blow_up_at:
            for group in opt.param_groups:
                group["lr"] = 1e38
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        time.sleep(args.step_time)  # a "slow" model: the rule runner must keep up in real time
except TrainingStopRequested as e:
    ended = f"stopped: {e}"
hook.close()
print(json.dumps({"ended": ended, "last_step": step}))
