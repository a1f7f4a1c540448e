"""smdebug demo: train a small real model with a hook, analyse the run, report what went wrong.

A two-layer ReLU network (PyTorch, CPU) is trained twice on a synthetic classification task: once with a sound set-up and once with a learning rate that is far too high.
A hook saves weights, gradients, activations and losses; a trial reads each run back and a few
checks (the kind the built-in rules make) report what they find.

Run: python examples/demo.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

import smdebug
import smdebug.pytorch as smd
from smdebug.trials import create_trial


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


def train(out_dir, lr, steps=60, seed=0):
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    model, loss_fn = Net(), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "gradients", "losses", "relu_output"],
    )
    hook.get_collection("relu_output").add_module_tensors(model.relu)
    hook.get_collection("gradients").reduction_config = smd.ReductionConfig(
        norms=["l2"], abs_reductions=["mean"], save_raw_tensor=True
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for step in range(steps):
        idx = torch.randperm(len(x))[:64]
        optimizer.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
    hook.close()


def analyse(out_dir):
    """Checks in the spirit of the built-in rules; returns a list of findings."""
    trial = create_trial(out_dir)
    findings = []
    loss = trial.tensor("CrossEntropyLoss_output_0")
    values = [float(loss.value(s)) for s in loss.steps()]
    print(f"  steps saved: {trial.steps()}")
    print(f"  tensors: {len(trial.tensor_names())} ({', '.join(trial.tensor_names()[:6])}, ...)")
    print(f"  loss: {values[0]:.3f} -> {values[-1]:.3f}")
    if not np.all(np.isfinite(values)):
        findings.append("ExplodingTensor: the loss became NaN/inf")
    elif values[-1] > 0.9 * values[0]:
        findings.append(f"LossNotDecreasing: loss went from {values[0]:.3f} to {values[-1]:.3f}")
    for name in trial.tensor_names(collection="gradients"):
        t = trial.tensor(name)
        last = t.steps()[-1]
        mean_abs = float(np.asarray(t.reduction_value(last, "mean", abs=True)).reshape(-1)[0])
        if mean_abs < 1e-7:
            findings.append(f"VanishingGradient: mean |{name}| = {mean_abs:.2e} at step {last}")
        if not np.isfinite(mean_abs) or mean_abs > 1e3:
            findings.append(f"ExplodingTensor: mean |{name}| = {mean_abs:.2e} at step {last}")
    relu = trial.tensor("relu_output_0")
    last = relu.steps()[-1]
    act = relu.value(last)
    dead = float(np.mean((act > 0).mean(axis=0) == 0)) * 100
    print(f"  dead ReLU units at step {last}: {dead:.0f}%")
    if dead > 50:
        findings.append(f"DeadRelu: {dead:.0f}% of ReLU units never fire at step {last}")
    return findings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="directory for the runs (default: a temporary one)")
    args = parser.parse_args(argv)
    base = args.out or tempfile.mkdtemp(prefix="smdebug-demo-")
    print(f"smdebug {smdebug.__version__}: runs are written under {base}")
    ok = True
    for label, lr in (("healthy", 0.5), ("learning rate too high", 200.0)):
        out_dir = os.path.join(base, label.replace(" ", "_"))
        shutil.rmtree(out_dir, ignore_errors=True)
        print(f"\n== run '{label}' (lr={lr}) ==")
        with np.errstate(all="ignore"):
            train(out_dir, lr)
        findings = analyse(out_dir)
        if findings:
            print("  findings:")
            for f in findings:
                print(f"   - {f}")
        else:
            print("  findings: none, training looks healthy")
        ok &= bool(findings) == (label != "healthy")
    print("\nDemo finished: the checks told the healthy run from the broken one." if ok else
          "\nUnexpected: the checks did not separate the runs.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
