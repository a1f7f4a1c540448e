"""Peak memory (RSS) of a PyTorch training process that saves weights and gradients every step, as the
run gets longer: no hook vs ours vs the original smdebug 1.0.34.

Every measurement is a fresh process that builds the model, trains N steps (plain SGD, fixed random
batches, one torch thread) with the hook saving weights+gradients at every step, closes the hook, and reports its
peak RSS (``VmHWM`` in ``/proc/self/status``, the kernel's high-water mark, so nothing between samples
is missed). Ours runs in this venv, the original in its own torch venv (``memory_original.py``); each
venv also runs the same training without a hook, the baseline its hooked runs are compared with (the
two venvs import different numpy/protobuf builds, so their baselines differ a little).

Two models:

* ``small``: an MLP 784-32-10 (about 200 KB saved per step): checks that per-step bookkeeping does not
  grow with the run (250, 1,000 and 4,000 steps);
* ``large``: an MLP 1024-1024-10 (about 8 MB of weights+gradients per step, more than the disk takes
  in that time on this machine) so our hook's write queue fills up to its byte budget
  (``SMDEBUG_WRITER_MAX_PENDING_BYTES``, 256 MiB by default, also run with 32 MiB) and back-pressure
  holds it there: the peak follows the budget and not the length of the run. For ours the process also
  reports the largest amount of data it saw queued (``hook._writer.pending_bytes``, sampled every step).

This module imports only the standard library at the top, so the original's venv can import it too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

from disk_usage import dir_bytes

HERE = os.path.dirname(os.path.abspath(__file__))

MODELS = {
    # in, hidden, out; batch; run lengths (steps); --quick lengths
    "small": {"dims": (784, 32, 10), "batch": 64, "lengths": (250, 1_000, 4_000), "quick": (100, 400)},
    "large": {"dims": (1024, 1024, 10), "batch": 4, "lengths": (40, 160, 640), "quick": (30, 120)},
}
BUDGETS_MIB = (256, 32)  # ours on the large model: the default budget and a smaller one
N_BATCHES = 8
SEED = 1234
LR = 0.01
# "independent of run length": the peak of the longest run exceeds the shortest's by at most this much
GROWTH_TOLERANCE_MB = 16.0


# --------------------------------------------------------------------------------------------------
# the child process (both venvs)
# --------------------------------------------------------------------------------------------------
def _status_mb(field: str) -> Optional[float]:
    """A memory figure of this process from /proc/self/status (``VmHWM``, ``VmRSS``...), in MiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return None


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM``, the high-water mark of its own address space. Not
    ``getrusage().ru_maxrss``: Linux carries that across fork and exec, so a child started by a large
    parent (the benchmark runner after the trial benchmarks) would report the parent's peak."""
    peak = _status_mb("VmHWM")
    if peak is not None:
        return peak
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _current_rss_mb() -> float:
    rss = _status_mb("VmRSS")
    return rss if rss is not None else float("nan")


def train(model_name: str, steps: int, hooked: bool, out_dir: Optional[str]) -> dict:
    """Train ``steps`` steps, saving weights+gradients every step if ``hooked``; this process's numbers."""
    import torch
    import torch.nn as nn

    torch.set_num_threads(1)
    spec = MODELS[model_name]
    d_in, d_hidden, d_out = spec["dims"]
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))
    gen = torch.Generator().manual_seed(SEED)
    data = [(torch.randn(spec["batch"], d_in, generator=gen), torch.randint(0, d_out, (spec["batch"],), generator=gen))
            for _ in range(N_BATCHES)]
    loss_fn = nn.CrossEntropyLoss()
    # Plain SGD written out rather than torch.optim.SGD: building a torch.optim optimizer imports
    # torch._dynamo, ~8 s per process here (27 processes in a full run); the update is the same.
    params = list(model.parameters())
    hook = None
    if hooked:
        import smdebug.pytorch as smd  # ours or the original, whichever this process has

        hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights", "gradients", "losses"])
        hook.register_module(model)
        hook.register_loss(loss_fn)
    rss_start = _current_rss_mb()
    queued_max = 0
    t0 = time.perf_counter()
    for i in range(steps):
        x, y = data[i % N_BATCHES]
        for p in params:
            p.grad = None
        loss = loss_fn(model(x), y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-LR)
        writer = getattr(hook, "_writer", None)  # ours: the background writer and its queue
        if writer is not None:
            queued_max = max(queued_max, getattr(writer, "pending_bytes", 0))
    train_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    if hook is not None:
        hook.close()
    close_s = time.perf_counter() - t1
    params_mb = sum(p.numel() * p.element_size() for p in model.parameters()) / 1e6
    res = {"peak_rss_mb": _peak_rss_mb(), "rss_start_mb": rss_start, "train_s": train_s, "close_s": close_s,
           "steps": steps, "params_mb": params_mb, "queued_max_mb": queued_max / (1 << 20),
           "failure": getattr(hook, "_failure", None)}
    if out_dir:
        res["out_mb"] = dir_bytes(out_dir) / 1e6
    return res


def child_main(argv: List[str]) -> int:
    """``child MODEL STEPS none|hook OUT_DIR``: one measurement; prints one JSON line."""
    model_name, steps, what, out_dir = argv[0], int(argv[1]), argv[2], argv[3]
    import logging

    logging.getLogger("smdebug").setLevel(logging.WARNING)
    print(json.dumps(train(model_name, steps, what == "hook", out_dir if what == "hook" else None)))
    return 0


# --------------------------------------------------------------------------------------------------
# the driver (our process)
# --------------------------------------------------------------------------------------------------
def _child(python: str, script: str, model: str, steps: int, hooked: bool, base: str,
           env_extra: Optional[Dict[str, str]] = None, original: bool = False) -> dict:
    out_dir = os.path.join(tempfile.mkdtemp(prefix=f"{model}-{steps}-", dir=base), "run")
    env = {**os.environ, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", **(env_extra or {})}
    if original:
        env["PYTHONPATH"] = ""
    cmd = [python, os.path.join(HERE, script), "child", model, str(steps), "hook" if hooked else "none", out_dir]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    finally:
        shutil.rmtree(os.path.dirname(out_dir), ignore_errors=True)
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode != 0 or not lines:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"{script} exited {res.returncode}: {tail[0][:300]}"}
    return json.loads(lines[-1])


def run(original_python: Optional[str], base: str, quick: bool = False, original_error: Optional[str] = None) -> dict:
    report = {"models": {}, "budgets_mib": BUDGETS_MIB}
    me = sys.executable
    for model, spec in MODELS.items():
        lengths = spec["quick"] if quick else spec["lengths"]
        # (label, python, script, hooked, extra env, original?)
        configs = [("no hook (our venv)", me, "memory.py", False, None, False)]
        if model == "large":
            configs += [(f"ours, budget {b} MiB", me, "memory.py", True,
                         {"SMDEBUG_WRITER_MAX_PENDING_BYTES": str(b << 20)}, False) for b in BUDGETS_MIB]
        else:
            configs.append(("ours", me, "memory.py", True, None, False))
        if original_python is not None:
            configs += [("no hook (original's venv)", original_python, "memory_original.py", False, None, True),
                        ("original 1.0.34", original_python, "memory_original.py", True, None, True)]
        # No-hook processes write nothing and their peak does not depend on how fast they run: two at a
        # time (each process starts by importing torch, seconds apiece). Hooked ones run alone, since
        # how far our queue fills depends on the writer's speed.
        jobs = {(i, n): (python, script, model, n, hooked, base, env, orig)
                for i, (_label, python, script, hooked, env, orig) in enumerate(configs) for n in lengths}
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {key: pool.submit(_child, *args) for key, args in jobs.items() if not args[4]}
            done = {key: f.result() for key, f in futures.items()}
        done.update({key: _child(*args) for key, args in jobs.items() if args[4]})
        rows = []
        for i, (label, _python, _script, hooked, env, orig) in enumerate(configs):
            rows.append({"label": label, "hooked": hooked, "original": orig,
                         "results": {n: done[(i, n)] for n in lengths},
                         "budget_mib": int(env["SMDEBUG_WRITER_MAX_PENDING_BYTES"]) >> 20 if env else None})
        report["models"][model] = {"lengths": list(lengths), "rows": rows, "dims": spec["dims"], "batch": spec["batch"]}
    if original_python is None:
        report["original_error"] = original_error or "original environment unavailable"
    return report


def _baseline(rows: List[dict], original: bool) -> Optional[dict]:
    return next((r for r in rows if not r["hooked"] and r["original"] == original), None)


def format_table(report: dict) -> str:
    out = []
    verdicts = []
    for model, m in report["models"].items():
        lengths = m["lengths"]
        first_ok = next((r["results"][lengths[0]] for r in m["rows"] if "error" not in r["results"][lengths[0]]), {})
        step_mb = first_ok.get("params_mb", 0) * 2  # weights + gradients
        d = "-".join(map(str, m["dims"]))
        out += [f"**{model}**: MLP {d}, batch {m['batch']}; weights+gradients+loss saved every step "
                f"(~{step_mb:.1f} MB per step). Peak RSS in MB of a fresh process per cell; \"over no hook\": the "
                "largest difference to the same venv's no-hook run of the same length.", ""]
        head = " | ".join(f"{n:,} steps" for n in lengths)
        out += [f"| process | {head} | growth {lengths[0]:,} -> {lengths[-1]:,} | growth {lengths[-2]:,} -> "
                f"{lengths[-1]:,} | over no hook | largest queue seen (ours), MiB "
                f"| data written ({lengths[-1]:,} steps), MB |",
                "|---|" + "---:|" * (len(lengths) + 5)]
        for r in m["rows"]:
            res = r["results"]
            errors = [v["error"] for v in res.values() if "error" in v]
            if errors:
                out.append(f"| {r['label']} | unavailable: {errors[0]} |" + " |" * (len(lengths) + 4))
                continue
            peaks = [res[n]["peak_rss_mb"] for n in lengths]
            base = _baseline(m["rows"], r["original"])
            over = None
            if r["hooked"] and base is not None and not any("error" in base["results"][n] for n in lengths):
                over = max(res[n]["peak_rss_mb"] - base["results"][n]["peak_rss_mb"] for n in lengths)
            ours = r["hooked"] and not r["original"]
            queue = f"{max(res[n]['queued_max_mb'] for n in lengths):.0f}" if ours else "-"
            written = f"{res[lengths[-1]].get('out_mb', 0):,.0f}" if r["hooked"] else "-"
            out.append(f"| {r['label']} | " + " | ".join(f"{p:,.0f}" for p in peaks)
                       + f" | {peaks[-1] - peaks[0]:+.0f} | {peaks[-1] - peaks[-2]:+.0f} | "
                       + (f"{over:+.0f}" if over is not None else "-") + f" | {queue} | {written} |")
            if not ours:
                continue
            # Our claim: the hook holds at most its byte budget of queued data (plus the few tensors being
            # encoded and written), so the peak is bounded whatever the length; once the queue has filled
            # (it may not have in the shortest run), a longer run does not raise it.
            budget = (r["budget_mib"] or 256) * 1.048576
            bound = budget + 4 * step_mb
            # Growth beyond what the write queue grew by: a queue still filling towards its budget (the
            # writer slower than training) raises the peak of a longer run, up to the bound, and no further.
            queued = [res[n]["queued_max_mb"] * 1.048576 for n in lengths]
            late = (peaks[-1] - queued[-1]) - (peaks[-2] - queued[-2])
            line = f"- {model}, {r['label']}: "
            if over is not None:
                line += (f"at most {over:+.0f} MB over no hook at any length (<= budget {budget:.0f} MB + 4 steps' "
                         f"data = {bound:.0f} MB: {'met' if over <= bound else 'not met'}); ")
            line += (f"{late:+.0f} MB from {lengths[-2]:,} to {lengths[-1]:,} steps besides the queue's own growth "
                     f"({queued[-2]:.0f} -> {queued[-1]:.0f} MB) "
                     f"(<= {GROWTH_TOLERANCE_MB:g} MB: {'met' if late <= GROWTH_TOLERANCE_MB else 'not met'})")
            verdicts.append(line)
        out.append("")
    if report.get("original_error"):
        out.append(f"- original: unavailable ({report['original_error']})")
    return "\n".join(out + verdicts)


def main(quick: bool = False, repeat: int = 3) -> dict:
    """One process per (configuration, length); ``repeat`` is not used (peaks are not noisy)."""
    from original_env import original_python
    from sides import check_ours

    check_ours()
    python = original_python(with_torch=True)  # no comparison, no benchmark: a failure here fails the run
    base = tempfile.mkdtemp(prefix="smdebug-memory-bench-")
    try:
        return run(python, base, quick=quick)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from sides import check_ours

    check_ours()  # our side (also the no-hook child of our venv)
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        sys.exit(child_main(sys.argv[2:]))
    print(format_table(main(quick="--quick" in sys.argv)))
