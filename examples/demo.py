"""smdebug demo: train a small real model with a hook, evaluate the built-in rules, report what they found.

A two-layer ReLU network (PyTorch, CPU) is trained twice on a synthetic classification task:

1. a sound set-up. The finished run is analysed by the rule runner: every rule should stay quiet.
2. a learning rate far too high. This time the rule runner *follows* the run while it trains, with the
   StopTraining action: when a rule fires, the training loop is stopped at its next step, and
   everything saved up to there stays readable.

Run: python examples/demo.py [--out DIR]      (also: nox -s demo)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
import torch
import torch.nn as nn

import smdebug
import smdebug.pytorch as smd
from smdebug.exceptions import TrainingStopRequested
from smdebug.rules import run_rules
from smdebug.trials import create_trial

STEPS = 300
# The built-in rules the demo runs, with the parameters this model needs (strings, as on the command line).
RULES = [
    ("VanishingGradient", {}),
    ("ExplodingTensor", {"collection_names": "weights,gradients,losses"}),
    ("LossNotDecreasing", {"num_steps": "50"}),
    ("DeadRelu", {}),
    ("WeightUpdateRatio", {}),
    ("UnchangedTensor", {"collection_names": "weights", "num_steps": "5"}),
]


def make_data(n=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    w = torch.randn(8, 3, generator=g)
    y = torch.argmax(x @ w + 0.3 * torch.randn(n, 3, generator=g), dim=1)
    return x, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def train(out_dir, lr, steps=STEPS, seed=0, step_time=0.0):
    """Train with a hook saving weights, gradients, losses and ReLU outputs every 5 steps.

    Returns the number of steps run (fewer than ``steps`` when a rule stopped training)."""
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    model, loss_fn = Net(), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=5),
                    include_collections=["weights", "biases", "gradients", "losses", "relu_output"])
    hook.get_collection("relu_output").add_module_tensors(model.relu)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    step = 0
    try:
        for step in range(steps):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)  # full batch: the loss curve is smooth, so the rules see no noise
            loss.backward()
            optimizer.step()
            time.sleep(step_time)  # stands in for a data loader, so the run lasts long enough to watch
    except TrainingStopRequested as e:
        print(f"  training loop: {e}")
        return step
    hook.close()
    return steps


def print_result(result):
    width = max(len(r.name) for r in result.rules)
    for r in result.rules:
        line = f"    {r.name.ljust(width)}  {r.status:<14}"
        if r.error:
            line += f" {r.error}"
        elif r.findings:
            line += f" first at step {r.findings[0].step}: {r.findings[0].reason}"
        print(line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="directory for the runs (default: a temporary one)")
    args = parser.parse_args(argv)
    base = args.out or tempfile.mkdtemp(prefix="smdebug-demo-")
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    print(f"smdebug {smdebug.__version__}: runs are written under {base}")

    healthy = os.path.join(base, "healthy")
    shutil.rmtree(healthy, ignore_errors=True)
    print(f"\n== 1. healthy run (lr=0.5, {STEPS} steps), then the rules over the finished run ==")
    train(healthy, lr=0.5)
    trial = create_trial(healthy)
    loss = trial.tensor("CrossEntropyLoss_output_0")
    print(f"  saved {len(trial.steps())} steps, {len(trial.tensor_names())} tensors; "
          f"loss {float(loss.value(loss.steps()[0])):.3f} -> {float(loss.value(loss.steps()[-1])):.3f}")
    quiet = run_rules(healthy, RULES)
    print_result(quiet)

    broken = os.path.join(base, "lr_too_high")
    shutil.rmtree(broken, ignore_errors=True)
    print(f"\n== 2. lr=200, followed live by the rules with StopTraining ==")
    ran = {}
    with np.errstate(all="ignore"):
        trainer = threading.Thread(target=lambda: ran.setdefault("steps", train(broken, lr=200.0, step_time=0.01)))
        trainer.start()
        while not os.path.isdir(os.path.join(broken, "collections")) and trainer.is_alive():
            time.sleep(0.05)
        followed = run_rules(broken, RULES, follow=True, stop_training_on_issue=True, poll_interval=0.1,
                             timeout=120)
        trainer.join()
    print_result(followed)
    trial = create_trial(broken)
    print(f"  training ran {ran.get('steps')} of {STEPS} steps; the run holds {len(trial.steps())} readable steps "
          f"(last {trial.steps()[-1]})")

    ok = quiet.status == "NoIssuesFound" and followed.status == "IssuesFound" and ran.get("steps", STEPS) < STEPS
    print("\nDemo finished: the rules passed the healthy run and stopped the broken one early." if ok else
          "\nUnexpected: the rules did not separate the runs as expected.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
