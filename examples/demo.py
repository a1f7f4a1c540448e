"""smdebug demo: train a small real model with a hook, analyse the run, report what went wrong.

A two-layer ReLU network (numpy, hand-written backprop) is trained twice on a synthetic
classification task: once with a sound set-up and once with a learning rate that is far too high.
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

import smdebug
from smdebug import ReductionConfig, SaveConfig, modes
from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook
from smdebug.trials import create_trial


class NumpyHook(BaseHook):
    """A hook for hand-written numpy training loops."""

    framework_name = "numpy-demo"
    default_include_collections = ("losses",)

    def default_collections(self):
        return [
            Collection("weights", include_regex=[r"^(?!gradient).*\.weight$"]),
            Collection("biases", include_regex=[r"^(?!gradient).*\.bias$"]),
            Collection("gradients", include_regex=["^gradient/"]),
            Collection("losses", include_regex=["[Ll]oss"]),
            Collection("relu_output", include_regex=["relu_output"]),
        ]


def make_data(rng, n=512):
    x = rng.normal(size=(n, 8)).astype(np.float32)
    w = rng.normal(size=(8, 3)).astype(np.float32)
    y = np.argmax(x @ w + 0.3 * rng.normal(size=(n, 3)), axis=1)
    return x, y


def train(out_dir, lr, steps=60, seed=0):
    rng = np.random.default_rng(seed)
    x, y = make_data(rng)
    params = {
        "fc1.weight": (rng.normal(size=(8, 32)) * np.sqrt(2 / 8)).astype(np.float32),
        "fc1.bias": np.zeros(32, np.float32),
        "fc2.weight": (rng.normal(size=(32, 3)) * np.sqrt(2 / 32)).astype(np.float32),
        "fc2.bias": np.zeros(3, np.float32),
    }
    hook = NumpyHook(
        out_dir=out_dir,
        save_config=SaveConfig(save_interval=5),
        include_collections=["weights", "biases", "gradients", "losses", "relu_output"],
    )
    hook.get_collection("gradients").reduction_config = ReductionConfig(
        norms=["l2"], abs_reductions=["mean"], save_raw_tensor=True
    )
    hook.set_mode(modes.TRAIN)
    for _ in range(steps):
        hook.begin_step()
        idx = rng.choice(len(x), 64, replace=False)
        xb, yb = x[idx], y[idx]
        for name, p in params.items():
            hook.record(name, p)
        h_pre = xb @ params["fc1.weight"] + params["fc1.bias"]
        h = np.maximum(h_pre, 0)
        hook.record("relu_output_0", h)
        logits = h @ params["fc2.weight"] + params["fc2.bias"]
        logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        loss = -np.mean(np.log(probs[np.arange(len(yb)), yb] + 1e-9))
        hook.record("CrossEntropyLoss_output_0", np.array([loss], np.float32))
        d_logits = probs
        d_logits[np.arange(len(yb)), yb] -= 1
        d_logits /= len(yb)
        grads = {"fc2.weight": h.T @ d_logits, "fc2.bias": d_logits.sum(0)}
        d_h = (d_logits @ params["fc2.weight"].T) * (h_pre > 0)
        grads["fc1.weight"] = xb.T @ d_h
        grads["fc1.bias"] = d_h.sum(0)
        for name, g in grads.items():
            hook.record("gradient/" + name, g.astype(np.float32))
            params[name] -= lr * g.astype(np.float32)
        hook.end_step()
    hook.close()


def analyse(out_dir):
    """Checks in the spirit of the built-in rules; returns a list of findings."""
    trial = create_trial(out_dir)
    findings = []
    loss = trial.tensor("CrossEntropyLoss_output_0")
    values = [float(loss.value(s)[0]) for s in loss.steps()]
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
        mean_abs = float(t.reduction_value(last, "mean", abs=True)[0])
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
    for label, lr in (("healthy", 0.5), ("learning rate too high", 60.0)):
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
