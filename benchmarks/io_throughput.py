"""Write and read throughput: ours vs the original smdebug 1.0.34, small and large tensors.

Each case is measured in the same run for both libraries (the original in its own venv, driven as a
subprocess) and, for large tensors, against the raw sequential write speed of the same disk
(``numpy.tofile`` of the same bytes). Best of ``--repeat`` runs.
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
from smdebug.trials import create_trial

HERE = os.path.dirname(os.path.abspath(__file__))


class BenchHook(BaseHook):
    framework_name = "bench"

    def default_collections(self):
        return [Collection("weights", include_regex=["weight|big"])]


def _fresh(base, name):
    path = os.path.join(base, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def ours_write_small(out, steps, tensors, elems, include_workers="one"):
    """Our hook writes ``steps`` x ``tensors`` float32 tensors of ``elems`` elements (``layer{i}/weight``)."""
    arr = np.arange(elems, dtype=np.float32)
    names = [f"layer{i}/weight" for i in range(tensors)]
    t0 = time.perf_counter()
    hook = BenchHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"],
                     include_workers=include_workers)
    hook.set_mode(modes.TRAIN)
    for _ in range(steps):
        hook.begin_step()
        for n in names:
            hook.record(n, arr)
        hook.end_step()
    hook.close()
    return {"seconds": time.perf_counter() - t0, "tensors": steps * tensors}


def ours_write_large(out, nbytes, repeat):
    arr = np.ones(nbytes // 4, dtype=np.float32)
    t0 = time.perf_counter()
    hook = BenchHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for _ in range(repeat):
        hook.begin_step()
        hook.record("big", arr)
        hook.end_step()
    hook.close()
    return {"seconds": time.perf_counter() - t0, "bytes": nbytes * repeat}


def raw_write_large(out, nbytes, repeat):
    os.makedirs(out, exist_ok=True)
    arr = np.ones(nbytes // 4, dtype=np.float32)
    t0 = time.perf_counter()
    for i in range(repeat):
        arr.tofile(os.path.join(out, f"{i}.bin"))
    return {"seconds": time.perf_counter() - t0, "bytes": nbytes * repeat}


def ours_read(run):
    t0 = time.perf_counter()
    trial = create_trial(run)
    steps = trial.steps()
    t_open = time.perf_counter() - t0
    t1 = time.perf_counter()
    n = nbytes = 0
    for name in trial.tensor_names():
        for v in trial.tensor(name).values().values():
            n += 1
            nbytes += v.nbytes
    return {"open_seconds": t_open, "fetch_seconds": time.perf_counter() - t1, "values": n, "bytes": nbytes,
            "steps": len(steps)}


def original(python, *args):
    env = {**os.environ, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", "PYTHONPATH": ""}
    res = subprocess.run([python, os.path.join(HERE, "io_original.py"), *map(str, args)], capture_output=True,
                         text=True, env=env, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"original smdebug failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def best(fn, repeat, key="seconds"):
    results = [fn() for _ in range(repeat)]
    return min(results, key=lambda r: r[key])


def run(original_python, base, repeat=3, quick=False):
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    rows = []
    steps, tensors, elems = (50, 100, 16) if quick else (200, 100, 16)

    def small(which):
        out = _fresh(base, f"small_{which}")
        return (ours_write_small(out, steps, tensors, elems) if which == "ours"
                else original(original_python, "write_small", out, steps, tensors, elems))

    o = best(lambda: small("ours"), repeat)
    g = best(lambda: small("orig"), repeat)
    rows.append(("write small tensors (64 B), tensors/s", None, o["tensors"] / o["seconds"],
                 g["tensors"] / g["seconds"]))

    sizes = [1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
    if quick:
        sizes = [1 << 10, 1 << 20, 16 << 20]
    for nbytes in sizes:
        # Large tensors: 1 GiB per case, four times the hook's write-behind budget (256 MiB), so the figure is
        # the sustained rate (back-pressure, reused snapshot buffers), not how fast a burst fits in memory.
        rep = max(2, min(200, (1 << 30) // nbytes // (8 if quick else 1)))

        def large(which, nbytes=nbytes, rep=rep):
            out = _fresh(base, f"large_{which}")
            if which == "ours":
                return ours_write_large(out, nbytes, rep)
            if which == "raw":
                return raw_write_large(out, nbytes, rep)
            return original(original_python, "write_large", out, nbytes, rep)

        r = best(lambda: large("raw"), repeat)
        o = best(lambda: large("ours"), repeat)
        g = best(lambda: large("orig"), repeat)
        mb = lambda x: x["bytes"] / x["seconds"] / 1e6  # noqa: E731
        rows.append((f"write {_human(nbytes)} tensors, MB/s", mb(r), mb(o), mb(g)))

    # reads: the same run (written by ours, which both can read)
    small_run = _fresh(base, "read_small")
    ours_write_small(small_run, steps, tensors, elems)
    o = best(lambda: ours_read(small_run), repeat, "fetch_seconds")
    g = best(lambda: original(original_python, "read", small_run), repeat, "fetch_seconds")
    rows.append((f"open trial ({steps} steps x {tensors} tensors), s", None, o["open_seconds"], g["open_seconds"]))
    rows.append(("read small tensors, values/s", None, o["values"] / o["fetch_seconds"],
                 g["values"] / g["fetch_seconds"]))
    large_run = _fresh(base, "read_large")
    ours_write_large(large_run, 16 << 20, 8)
    o = best(lambda: ours_read(large_run), repeat, "fetch_seconds")
    g = best(lambda: original(original_python, "read", large_run), repeat, "fetch_seconds")
    rows.append(("read 16 MiB tensors, MB/s", None, o["bytes"] / o["fetch_seconds"] / 1e6,
                 g["bytes"] / g["fetch_seconds"] / 1e6))
    return rows


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"


def format_table(rows):
    lines = ["| case | raw disk | ours | original 1.0.34 | ours / original |", "|---|---:|---:|---:|---:|"]
    for case, raw, ours, orig in rows:
        lower_is_better = case.endswith(", s")
        ratio = (orig / ours) if lower_is_better else (ours / orig)
        raw_s = f"{raw:,.1f}" if raw is not None else "-"
        pct = f" ({ours / raw * 100:.0f}% of raw)" if raw else ""
        lines.append(f"| {case} | {raw_s} | {ours:,.3f}{pct} | {orig:,.3f} | {ratio:.2f}x |")
    return "\n".join(lines + ["", *targets(rows)])


SMALL_TARGET = 50_000  # tensors/s
LARGE_TARGET = 0.80  # of the raw sequential write rate
LARGE_FROM = 16 << 20  # "large" in the targets: 16 MiB and up
# What bounds each case when it falls short (profiled with py-spy; see RESULTS.md for the figures).
SMALL_LIMIT = ("the file system: the format keeps each step in files of its own (a folder, an event file and "
               "an index file, each written under a temporary name and renamed so a crash never leaves a "
               "half-written file under its final name), and those operations alone cost 1.2-2 ms per step on "
               "this machine (the scaling benchmark's file-system floor), 12-20 µs per tensor at 100 tensors per "
               "step; with 1,000 tensors per step the scaling benchmark writes over 60,000 tensors/s")
LARGE_LIMIT = ("memory bandwidth, not the disk: the hook copies each tensor when it is saved (training may "
               "change it right after), checksums the copy (CRC32C, on a helper thread) and writes it, about five "
               "passes over the bytes (copy: read and write; CRC: read; write: read, and write into the page "
               "cache) against raw `tofile`'s two, so the share moves with what else uses the memory bus")


def targets(rows) -> list:
    out = []
    for case, raw, ours, _orig in rows:
        if case.startswith("write small"):
            ok = ours >= SMALL_TARGET
            out.append(f"- small-tensor writes >= {SMALL_TARGET:,} tensors/s: {ours:,.0f}/s "
                       + ("(met)" if ok else f"(not met: {SMALL_LIMIT})"))
        elif raw and case.startswith("write ") and _case_bytes(case) >= LARGE_FROM:
            share = ours / raw
            out.append(f"- {case.split(',')[0]} >= {LARGE_TARGET:.0%} of raw: {share:.0%} "
                       + ("(met)" if share >= LARGE_TARGET else f"(not met: {LARGE_LIMIT})"))
    return out


def _case_bytes(case: str) -> int:
    """``"write 16 MiB tensors, MB/s"`` -> 16 MiB in bytes."""
    number, unit = case.split()[1:3]
    return int(float(number) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit])


def main(quick=False, repeat=3):
    from original_env import original_python
    from sides import check_ours

    check_ours()

    python = original_python()
    base = tempfile.mkdtemp(prefix="smdebug-bench-")
    try:
        return run(python, base, repeat=repeat, quick=quick)
    finally:
        shutil.rmtree(base, ignore_errors=True)
