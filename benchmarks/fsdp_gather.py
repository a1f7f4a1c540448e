"""What saving sharded (FSDP2) weights and gradients costs: step time and peak memory per rank.

A real two-process job on CPU (gloo, ``torch.distributed.fsdp.fully_shard`` on every linear layer and
the root): an MLP 1024-1024-1024-1024-10 (about 3.2 M parameters, 12.6 MB in float32, each rank holding
half of every parameter). Each rank trains on its own batch with SGD; configurations:

* ``none``          no hook;
* ``default``       ``smd.Hook(out_dir)``: losses every 500 steps, nothing sharded is due;
* ``wg_every_10``   weights, biases, gradients and losses every 10 steps (``include_workers="one"``: rank
  0 writes);
* ``wg_every_1``    the same every step;
* ``wg_every_1_all``  the same every step with ``include_workers="all"``: both ranks write the full tensors.

On a step where a sharded parameter (or its gradient) is due, every rank all-gathers it
(``DTensor.full_tensor()``), one tensor at a time, and the writing rank(s) save the full value. The job
counts those gathers per rank (by wrapping ``smdebug.pytorch.sharded.full_value``) and times them, so the
table says how many collectives a quiet step and a saving step cost and how much of the step they take.
Memory: each configuration is a fresh pair of processes; a rank's peak is ``VmHWM`` (the kernel's
high-water mark of its RSS), compared with the same rank's peak in the ``none`` job of the same round.

Method: ``torch.set_num_threads(1)`` per rank (two ranks on two cores); ``warmup`` steps, then ``steps``
timed steps between two barriers, ending with ``hook.flush()`` (what was queued is written inside the timed
window). ``rounds`` rounds, the configurations' order rotating each round; values are the mean of the rounds,
+-: the standard error between rounds. Hook output goes to a temporary folder, removed after each job.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

from disk_usage import dir_bytes

HERE = os.path.dirname(os.path.abspath(__file__))

DIMS = (1024, 1024, 1024, 1024, 10)
BATCH = 32
LR = 0.01
SEED = 1234
CONFIGS = ("none", "default", "wg_every_10", "wg_every_1", "wg_every_1_all")
LABELS = {
    "none": "no hook",
    "default": "default (losses every 500 steps)",
    "wg_every_10": "weights+gradients every 10 steps",
    "wg_every_1": "weights+gradients every step",
    "wg_every_1_all": "weights+gradients every step, include_workers=\"all\"",
}
SIZES = {"full": {"warmup": 5, "steps": 40, "rounds": 3}, "quick": {"warmup": 2, "steps": 10, "rounds": 1}}
WORLD = 2


# --------------------------------------------------------------------------------------------------
# one rank (run as ``python fsdp_gather.py rank CONFIG OUT_DIR WARMUP STEPS``)
# --------------------------------------------------------------------------------------------------
def _vm_hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rank_main(config: str, out_dir: str, warmup: int, steps: int) -> dict:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.fsdp import fully_shard

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    torch.manual_seed(SEED)
    layers: List[nn.Module] = []
    for d_in, d_out in zip(DIMS[:-1], DIMS[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED + rank)
    x, y = torch.randn(BATCH, DIMS[0], generator=gen), torch.randint(0, DIMS[-1], (BATCH,), generator=gen)

    hook = None
    gathers = {"count": 0, "seconds": 0.0}
    if config != "none":
        from sides import check_ours

        check_ours()
        import smdebug.pytorch as smd
        from smdebug.pytorch import sharded

        original_full_value = sharded.full_value

        def counted_full_value(value):
            t0 = time.perf_counter()
            try:
                return original_full_value(value)
            finally:
                gathers["count"] += 1
                gathers["seconds"] += time.perf_counter() - t0

        sharded.full_value = counted_full_value  # the hook calls it through the module
        if config == "default":
            hook = smd.Hook(out_dir=out_dir)
        else:
            interval = 10 if config == "wg_every_10" else 1
            hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=interval),
                            include_collections=["weights", "biases", "gradients", "losses"],
                            include_workers="all" if config.endswith("_all") else "one")
        hook.register_module(model)
        hook.register_loss(loss_fn)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    if hook is not None:
        hook.flush()
    dist.barrier()
    gathers.update(count=0, seconds=0.0)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if hook is not None:
        hook.flush()
    dist.barrier()
    elapsed = time.perf_counter() - t0
    if hook is not None:
        hook.close()
    shard = next(iter(model.parameters()))
    result = {"rank": rank, "ms_per_step": elapsed / steps * 1e3, "peak_rss_mb": _vm_hwm_mb(),
              "gathers_per_step": gathers["count"] / steps, "gather_ms_per_step": gathers["seconds"] / steps * 1e3,
              "params_mb": sum(p.numel() * p.element_size() for p in model.parameters()) / 1e6,
              "largest_param_mb": max(p.numel() * p.element_size() for p in model.parameters()) / 1e6,
              "sharded": type(shard).__name__ == "DTensor",
              "failure": None if hook is None or hook._failure is None else str(hook._failure)}
    dist.barrier()
    dist.destroy_process_group()
    return result


# --------------------------------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(config: str, warmup: int, steps: int) -> List[dict]:
    """One two-rank job; each rank's result, rank order."""
    out_dir = tempfile.mkdtemp(prefix="smdebug-fsdp-bench-")
    run_dir = os.path.join(out_dir, "run")
    port = _free_port()
    try:
        procs = []
        for rank in range(WORLD):
            env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                   "WORLD_SIZE": str(WORLD), "OMP_NUM_THREADS": "1", "PYTHONPATH": HERE}
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "rank", config, run_dir, str(warmup), str(steps)],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=900) for p in procs]
        results = []
        for p, (out, err) in zip(procs, outs):
            if p.returncode != 0:
                raise RuntimeError(f"{config}: a rank exited {p.returncode}: {err.strip()[-800:]}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        for r in results:
            if r["failure"]:
                raise RuntimeError(f"{config}: rank {r['rank']}'s hook failed: {r['failure']}")
            if not r["sharded"]:
                raise RuntimeError(f"{config}: the parameters were not DTensors")
        written = dir_bytes(run_dir) / 1e6 if os.path.isdir(run_dir) else 0.0
        for r in results:
            r["out_mb"] = written
        return results
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _mean_se(values: List[float]):
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return mean, se


def main(quick: bool = False, repeat: int = 3) -> dict:
    size = SIZES["quick" if quick else "full"]
    rounds = size["rounds"] if quick else max(size["rounds"], repeat)
    per_round: List[Dict[str, List[dict]]] = []
    for i in range(rounds):
        order = CONFIGS[i % len(CONFIGS):] + CONFIGS[:i % len(CONFIGS)]
        per_round.append({config: run_job(config, size["warmup"], size["steps"]) for config in order})
    rows = {}
    for config in CONFIGS:
        row = {"ranks": []}
        for rank in range(WORLD):
            ms = [r[config][rank]["ms_per_step"] for r in per_round]
            added = [r[config][rank]["ms_per_step"] - r["none"][rank]["ms_per_step"] for r in per_round]
            over = [r[config][rank]["peak_rss_mb"] - r["none"][rank]["peak_rss_mb"] for r in per_round]
            row["ranks"].append({
                "ms_per_step": _mean_se(ms), "added_ms": _mean_se(added),
                "peak_rss_mb": statistics.fmean(r[config][rank]["peak_rss_mb"] for r in per_round),
                "rss_over_none_mb": max(over),
                "gathers_per_step": statistics.fmean(r[config][rank]["gathers_per_step"] for r in per_round),
                "gather_ms_per_step": statistics.fmean(r[config][rank]["gather_ms_per_step"] for r in per_round),
            })
        row["out_mb"] = statistics.fmean(r[config][0]["out_mb"] for r in per_round)
        rows[config] = row
    first = per_round[0]["none"][0]
    return {"rows": rows, "rounds": rounds, "steps": size["steps"], "warmup": size["warmup"],
            "params_mb": first["params_mb"], "largest_param_mb": first["largest_param_mb"]}


def format_table(report: dict) -> str:
    params, largest = report["params_mb"], report["largest_param_mb"]
    out = [f"Two ranks (gloo, CPU, one thread each), MLP {'-'.join(map(str, DIMS))} under `fully_shard` "
           f"({params:.1f} MB of float32 parameters, {params / WORLD:.1f} MB per rank; largest parameter "
           f"{largest:.1f} MB), batch {BATCH} per rank, {report['steps']} timed steps after {report['warmup']}, "
           f"{report['rounds']} rounds. Gathers: `DTensor.full_tensor()` calls per step (each a collective on "
           "every rank) and their time; peak RSS over no hook: the largest difference to the no-hook job of "
           "the same round.", "",
           "| hook config | rank | ms/step | added ms/step | gathers/step | gather ms/step | peak RSS MB | "
           "over no hook MB | written MB |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for config, row in report["rows"].items():
        hooked = config != "none"
        for rank, r in enumerate(row["ranks"]):
            ms, se = r["ms_per_step"]
            added, added_se = r["added_ms"]
            added_cell = f"{added:+.2f} ±{added_se:.2f}" if hooked else "-"
            over_cell = f"{r['rss_over_none_mb']:+.0f}" if hooked else "-"
            written_cell = f"{row['out_mb']:.1f}" if hooked and rank == 0 else ""
            out.append(f"| {LABELS[config] if rank == 0 else ''} | {rank} | {ms:.2f} ±{se:.2f} | {added_cell} | "
                       f"{r['gathers_per_step']:.1f} | {r['gather_ms_per_step']:.2f} | {r['peak_rss_mb']:.0f} | "
                       f"{over_cell} | {written_cell} |")
    rows = report["rows"]
    quiet = rows["default"]["ranks"]
    out += ["", f"- default config: quiet steps gather nothing: {max(r['gathers_per_step'] for r in quiet):.1f} "
                f"gathers/step on any rank "
                f"({'met' if all(r['gathers_per_step'] == 0 for r in quiet) else 'MISSED'})"]
    n_tensors = 2 * sum(1 for _ in DIMS[1:]) * 2  # weight + bias, value + gradient, per linear layer
    every = rows["wg_every_1"]["ranks"]
    counts = ", ".join(f"rank {i}: {r['gathers_per_step']:.0f}" for i, r in enumerate(every))
    ok = "met" if all(r["gathers_per_step"] == n_tensors for r in every) else "MISSED"
    out.append(f"- weights+gradients every step: every rank gathers each saved parameter and gradient once per "
               f"step ({n_tensors} tensors here): {counts} gathers/step ({ok})")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "rank":
        _, _, config, out_dir, warmup, steps = sys.argv
        print(json.dumps(rank_main(config, out_dir, int(warmup), int(steps))))
    else:
        print(format_table(main(quick="--quick" in sys.argv)))
