"""Rule evaluation time over a 1,000-step run.

1. Every built-in rule, one at a time and all together in one runner pass (``smdebug.rules.run_rules``:
   they share one trial), on a run that looks like a small CNN's: weights, biases, gradients, losses (TRAIN
   and EVAL), ReLU/tanh/sigmoid activations, input images, token ids, labels and predictions, saved at every
   step (the worst case: real jobs save every 10-500 steps).
2. Two user-written rules (benchmarks/rules_user.py) evaluated by ``invoke_rule``, the same code timed on
   the original smdebug 1.0.34 (in its own venv, reading the same run) and on ours, as a ratio.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

from smdebug import SaveConfig, modes
from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook

HERE = os.path.dirname(os.path.abspath(__file__))

# Parameters the built-in rules need on this run (the rest use their defaults).
RULE_PARAMS = {
    "AllZero": {"collection_names": "weights"},
    "TensorVariance": {"collection_names": "weights", "max_threshold": "1e6"},
    "UnchangedTensor": {"collection_names": "weights"},
    "ExplodingTensor": {"collection_names": "weights,gradients"},
    "CheckInputImages": {"regex": "conv0_input_0"},
    "SimilarAcrossRuns": {"collection_names": "losses"},
    "StalledTrainingRule": {"threshold": "3600"},
    "FeatureImportanceOverweight": {},
    "TreeDepth": {},
}


class RunHook(BaseHook):
    framework_name = "bench"

    def default_collections(self):
        return [
            Collection("weights", include_regex=[r"\.weight$"]),
            Collection("biases", include_regex=[r"\.bias$"]),
            Collection("gradients", include_regex=["^gradient/"]),
            Collection("losses", include_regex=["loss"]),
            Collection("outputs", include_regex=["_output_0$"]),
            Collection("inputs", include_regex=["_input_0$"]),
            Collection("labels", include_regex=["^labels$"]),
            Collection("predictions", include_regex=["^predictions$"]),
        ]


def write_run(out: str, steps: int, seed: int = 0) -> float:
    """A 1,000-step run of a small CNN-like model's tensors; returns seconds taken."""
    rng = np.random.default_rng(seed)
    shapes = {"conv0.weight": (8, 3, 3, 3), "conv0.bias": (8,), "fc0.weight": (64, 128), "fc0.bias": (64,),
              "fc1.weight": (10, 64), "fc1.bias": (10,)}
    params = {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in shapes.items()}
    hook = RunHook(out_dir=out, save_config=SaveConfig(save_interval=1),
                   include_collections=["weights", "biases", "gradients", "losses", "outputs", "inputs", "labels",
                                        "predictions"])
    t0 = time.perf_counter()
    for step in range(steps):
        evaluating = step % 10 == 9
        hook.set_mode(modes.EVAL if evaluating else modes.TRAIN)
        hook.begin_step()
        images = rng.normal(0, 1, (32, 3, 8, 8)).astype(np.float32)
        hook.record("conv0_input_0", images)
        hook.record("layer0_relu_output_0", np.maximum(rng.normal(0.2, 1, (32, 64)), 0).astype(np.float32))
        hook.record("layer0_relu_input_0", rng.normal(0, 1, (32, 64)).astype(np.float32))
        hook.record("layer0_tanh_input_0", rng.normal(0, 1, (32, 64)).astype(np.float32))
        hook.record("embedding0_input_0", rng.integers(1, 100, (32, 20)))
        labels = rng.integers(0, 10, 32)
        hook.record("labels", labels)
        hook.record("predictions", labels)
        hook.record("CrossEntropyLoss_output_0", np.float32(2.3 * np.exp(-step / 300) + (0.1 if evaluating else 0)))
        if not evaluating:
            for k, v in params.items():
                grad = rng.normal(0, 1e-2, v.shape).astype(np.float32)
                params[k] = v - 0.1 * grad
                hook.record(k, params[k])
                hook.record("gradient/" + k, grad)
        hook.end_step()
    hook.close()
    return time.perf_counter() - t0


def time_ours(run: str, other: str, requests) -> dict:
    from smdebug.rules import run_rules

    t0 = time.perf_counter()
    result = run_rules(run, requests, other_trials=[other])
    seconds = time.perf_counter() - t0
    errors = [f"{r.name}: {r.error}" for r in result.rules if r.error]
    if errors:
        raise RuntimeError("; ".join(errors))
    return {"seconds": seconds, "steps": result.steps_evaluated,
            "fired": {r.name: r.findings_total for r in result.rules if r.findings_total}}


def time_user_rule_ours(run: str, rule_name: str) -> float:
    import rules_user

    from smdebug.rules.rule_invoker import invoke_rule
    from smdebug.trials import create_trial

    t0 = time.perf_counter()
    rule = getattr(rules_user, rule_name)(create_trial(run))
    invoke_rule(rule)
    return time.perf_counter() - t0


def time_user_rule_original(python: str, run: str, rule_name: str) -> float:
    env = {**os.environ, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", "PYTHONPATH": HERE}
    res = subprocess.run([python, os.path.join(HERE, "rules_original.py"), run, rule_name], capture_output=True,
                         text=True, env=env, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"original smdebug failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])["seconds"]


def main(quick: bool = False, repeat: int = 3) -> dict:
    from original_env import original_python
    from sides import check_ours

    check_ours()

    from smdebug.rules import list_rules

    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    steps = 200 if quick else 1000
    base = tempfile.mkdtemp(prefix="smdebug-rules-bench-")
    try:
        run, other = os.path.join(base, "run"), os.path.join(base, "other")
        write_seconds = write_run(run, steps)
        write_run(other, steps)
        builtin = [i.name for i in list_rules() if i.pack == "builtin"]
        per_rule = {}
        for name in builtin:
            per_rule[name] = min((time_ours(run, other, [(name, RULE_PARAMS.get(name, {}))])
                                  for _ in range(repeat)), key=lambda r: r["seconds"])
        together = min((time_ours(run, other, [(n, RULE_PARAMS.get(n, {})) for n in builtin]) for _ in range(repeat)),
                       key=lambda r: r["seconds"])
        python = original_python()
        user = {}
        for rule_name in ("GradientScale", "InactiveUnits"):
            ours = min(time_user_rule_ours(run, rule_name) for _ in range(repeat))
            original = min(time_user_rule_original(python, run, rule_name) for _ in range(repeat))
            user[rule_name] = {"ours": ours, "original": original}
        return {"steps": steps, "write_seconds": write_seconds, "per_rule": per_rule, "together": together,
                "user": user}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def format_table(report: dict) -> str:
    steps = report["steps"]
    lines = [f"Run: {steps} steps (every 10th in EVAL mode), 19 tensors per step, every step saved.", "",
             "| built-in rule | seconds | steps/s | fired on steps |", "|---|---:|---:|---:|"]
    for name, r in sorted(report["per_rule"].items(), key=lambda kv: -kv[1]["seconds"]):
        lines.append(f"| {name} | {r['seconds']:.2f} | {r['steps'] / r['seconds']:,.0f} | "
                     f"{r['fired'].get(name, 0)} |")
    t = report["together"]
    total = sum(r["seconds"] for r in report["per_rule"].values())
    lines.append(f"| **all {len(report['per_rule'])} in one pass** | **{t['seconds']:.2f}** | "
                 f"{t['steps'] / t['seconds']:,.0f} | (sum of separate runs: {total:.2f} s) |")
    lines += ["", "| user-written rule (same code on both) | original 1.0.34 s | ours s | speed-up |",
              "|---|---:|---:|---:|"]
    for name, r in report["user"].items():
        lines.append(f"| {name} | {r['original']:.2f} | {r['ours']:.2f} | {r['original'] / r['ours']:.1f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, HERE)
    print(format_table(main(quick="--quick" in sys.argv)))
