"""Reading a run from S3: trial open and fetching every tensor at every step, ours vs the original
smdebug 1.0.34, against a moto S3 server on loopback with a fixed delay per request (default 20 ms,
roughly a same-region S3 round trip), counting the HTTP requests moto served to each library.

The run (written once by our hook) has STEPS steps x TENSORS tensors of 4 KiB. Both libraries read the
same objects; the original in its own venv, pointed at the same endpoint through AWS_ENDPOINT_URL.
Ours is timed twice: a fresh trial, and a second analysis with ``cache_dir`` (local disk cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

import numpy as np

from smdebug import SaveConfig
from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook
from smdebug_test_support.s3 import MotoServer, apply_env, restore_env
from smdebug.trials import create_trial

HERE = os.path.dirname(os.path.abspath(__file__))


class _Hook(BaseHook):
    framework_name = "bench"

    def default_collections(self):
        return [Collection("weights", include_regex=["^layer"])]


def _write(path: str, steps: int, tensors: int) -> None:
    hook = _Hook(out_dir=path, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    arr = np.arange(1024, dtype=np.float32)
    for _ in range(steps):
        hook.begin_step()
        for t in range(tensors):
            hook.record(f"layer{t}/weight", arr)
        hook.end_step()
    hook.close()


def _ours(path: str, cache_dir=None) -> dict:
    t0 = time.perf_counter()
    trial = create_trial(path, cache_dir=cache_dir) if cache_dir else create_trial(path)
    steps = trial.steps()
    t_open = time.perf_counter() - t0
    t1 = time.perf_counter()
    n = nbytes = 0
    for name in trial.tensor_names():
        tensor = trial.tensor(name)
        for step in steps:
            value = tensor.value(step)
            n += 1
            nbytes += value.nbytes
    return {"open_seconds": t_open, "fetch_seconds": time.perf_counter() - t1, "values": n, "bytes": nbytes}


def _delta(after: dict, before: dict) -> int:
    return sum(after.values()) - sum(before.values())


def main(quick: bool = False, latency: float = 0.02) -> dict:
    from original_env import original_python
    from sides import check_ours

    check_ours()

    steps, tensors = (20, 10) if quick else (100, 20)
    python = original_python()
    report = {"steps": steps, "tensors": tensors, "latency_ms": latency * 1000}
    with MotoServer(latency=latency) as server:
        previous = apply_env({**server.env, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0"})
        try:
            path = "s3://bench-bucket/run"
            _write(path, steps, tensors)
            before = server.requests_served()
            report["ours"] = _ours(path)
            report["ours"]["requests"] = _delta(server.requests_served(), before)
            with tempfile.TemporaryDirectory() as cache:
                _ours(path, cache_dir=cache)  # fills the cache
                before = server.requests_served()
                report["ours_cached"] = _ours(path, cache_dir=cache)
                report["ours_cached"]["requests"] = _delta(server.requests_served(), before)
            before = server.requests_served()
            env = {**os.environ, "PYTHONPATH": ""}
            res = subprocess.run([python, os.path.join(HERE, "s3_original.py"), path], capture_output=True, text=True,
                                 env=env, check=False)
            if res.returncode != 0:
                raise RuntimeError(f"original smdebug failed: {res.stderr[-2000:]}")
            report["original"] = json.loads(res.stdout.strip().splitlines()[-1])
            report["original"]["requests"] = _delta(server.requests_served(), before)
        finally:
            restore_env(previous)
    return report


def format_table(report: dict) -> str:
    n = report["steps"] * report["tensors"]
    lines = [f"Run: {report['steps']} steps x {report['tensors']} tensors of 4 KiB on S3 (moto on loopback, "
             f"+{report['latency_ms']:.0f} ms per request); every tensor read at every step ({n} values).", "",
             "| reader | open s | fetch s | values/s | HTTP requests | vs original |", "|---|---:|---:|---:|---:|---:|"]
    orig = report["original"]
    orig_total = orig["open_seconds"] + orig["fetch_seconds"]
    for label, key in (("original smdebug 1.0.34", "original"), ("ours", "ours"),
                       ("ours, second analysis with cache_dir", "ours_cached")):
        r = report[key]
        total = r["open_seconds"] + r["fetch_seconds"]
        lines.append(f"| {label} | {r['open_seconds']:.2f} | {r['fetch_seconds']:.2f} | "
                     f"{r['values'] / r['fetch_seconds']:,.0f} | {r['requests']:,} | "
                     f"{'-' if key == 'original' else f'{orig_total / total:.1f}x faster'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, HERE)
    print(format_table(main(quick="--quick" in sys.argv)))
