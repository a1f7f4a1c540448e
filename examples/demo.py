"""smdebug demo: train a small real model with a hook, evaluate the recommended rules, report what they found.

A two-layer ReLU network (PyTorch, CPU) is trained twice on a synthetic classification task, each time with
the one documented way to debug a run::

    hook = smd.Hook.recommended(out_dir)       # saves what the recommended rules need
    hook.register_module(model)
    hook.register_loss(loss_fn)
    ...                                        # train
    $ smdebug rules run OUT_DIR                # the recommended rules for the run's framework

1. a sound set-up. ``smdebug rules run`` over the finished run: every rule should stay quiet.
2. a learning rate far too high. This time ``smdebug rules run --follow --stop-training`` *follows* the run
   while it trains: when a rule fires, the training loop is stopped at its next step, and everything saved up
   to there stays readable.

Run: python examples/demo.py [--out DIR]      (also: nox -s demo)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
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
from smdebug.trials import create_trial

STEPS = 300
EXIT_NO_ISSUES, EXIT_ISSUES = 0, 1  # `smdebug rules run` exit status


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
    """Train with the recommended hook. Returns the number of steps run (fewer than ``steps`` when a rule
    stopped training)."""
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    model, loss_fn = Net(), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    hook = smd.Hook.recommended(out_dir)
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


def smdebug_rules_run(*args):
    """``smdebug rules run ARGS`` (the command of smdebug-core's CLI); its output goes to this terminal."""
    command = [sys.executable, "-m", "smdebug.cli", "rules", "run", *args]
    print("  $ smdebug rules run " + " ".join(args), flush=True)
    return subprocess.run(command, env={**os.environ, "PYTHONWARNINGS": "ignore"}).returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="directory for the runs (default: a temporary one)")
    args = parser.parse_args(argv)
    base = args.out or tempfile.mkdtemp(prefix="smdebug-demo-")
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    print(f"smdebug {smdebug.__version__}: runs are written under {base}")

    healthy = os.path.join(base, "healthy")
    shutil.rmtree(healthy, ignore_errors=True)
    print(f"\n== 1. healthy run (lr=0.5, {STEPS} steps), then the recommended rules over the finished run ==")
    train(healthy, lr=0.5)
    trial = create_trial(healthy)
    loss = trial.tensor("CrossEntropyLoss_output_0")
    steps = trial.steps()
    shown = ", ".join(map(str, steps)) if len(steps) <= 12 else f"{', '.join(map(str, steps[:6]))}, ..., {steps[-1]}"
    print(f"  saved {len(steps)} steps ({shown}), {len(trial.tensor_names())} "
          f"tensors; loss {float(loss.value(loss.steps()[0])):.3f} -> {float(loss.value(loss.steps()[-1])):.3f}")
    quiet = smdebug_rules_run(healthy)

    broken = os.path.join(base, "lr_too_high")
    shutil.rmtree(broken, ignore_errors=True)
    print("\n== 2. lr=200, followed live by the recommended rules, which stop training when one fires ==")
    ran = {}
    with np.errstate(all="ignore"):
        trainer = threading.Thread(target=lambda: ran.setdefault("steps", train(broken, lr=200.0, step_time=0.03)))
        trainer.start()
        while not os.path.isdir(os.path.join(broken, "collections")) and trainer.is_alive():
            time.sleep(0.05)
        followed = smdebug_rules_run(broken, "--follow", "--stop-training", "--poll-interval", "0.1",
                                     "--timeout", "120")
        trainer.join()
    trial = create_trial(broken)
    print(f"  training ran {ran.get('steps')} of {STEPS} steps; the run holds {len(trial.steps())} readable steps "
          f"(last {trial.steps()[-1]})")

    ok = quiet == EXIT_NO_ISSUES and followed == EXIT_ISSUES and ran.get("steps", STEPS) < STEPS
    print("\nDemo finished: the rules passed the healthy run and stopped the broken one early." if ok else
          "\nUnexpected: the rules did not separate the runs as expected.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
