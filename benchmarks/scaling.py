"""How our costs grow with tensors, steps and workers (per-unit costs, so "linear or better" reads as a
flat or falling column), with a chart.

(a) Writing, with our hook (a ``BaseHook`` subclass saving float32 tensors of 16 elements every step),
    timed from the hook's construction to the end of ``close()`` (everything on disk):
    * tensors per step 10, 100, 1,000 at a fixed number of steps: µs per tensor, best of ``--repeat``;
    * steps 1k, 4k, 16k at 10 tensors per step: µs per step, next to the file system's own cost of
      the same file operations (the format has one event file in a folder of its own and one index
      file per step: a mkdir and two create/write/rename), done by plain Python with the same sizes.
(b) Reading runs of 1k, 10k and 30k steps x 10 tensors, each read in a fresh process, best of
    ``--repeat``: ``create_trial`` + ``steps()`` (µs per step), the first ``tensor_names()`` (the trial
    parses index payloads lazily: µs per step), ``tensor(n).value(step)`` at every step of one tensor
    (µs per value), and ``values()`` of another (µs per value).
    The runs of (a) and (b) are one series (1k, 4k, 10k, 16k, 30k steps), each written once: a long run
    averages its own noise, and writing them is most of this benchmark's time.
(c) Workers: 1, 2 and 4 processes (``RANK``/``WORLD_SIZE`` set as torchrun does, ``include_workers="all"``)
    writing the same run at once, each the same amount; they import everything, wait at a barrier, then
    write: total tensors/s over the wall time from the first start to the last ``close()``; then the time
    to open the multi-worker run (fresh process). The machine's core count caps how far this can scale;
    as a control, the same number of processes each writing an independent single-worker run shows what
    the machine allows when nothing is shared.

Ours only: the original's open time on 1k/10k steps is in the trial-read benchmark (it takes about a
minute to open 10k steps, which rules out 30k here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))

ELEMS = 16
# (a) writes: tensors per step at TENSOR_SERIES_STEPS steps; steps at STEP_SERIES_TENSORS tensors per step
TENSOR_SERIES = (10, 100, 1_000)
TENSOR_SERIES_STEPS = 200
STEP_SERIES = (1_000, 4_000, 16_000)
STEP_SERIES_TENSORS = 10
# (b) reads: runs of these many steps x READ_TENSORS tensors
READ_SERIES = (1_000, 10_000, 30_000)
READ_TENSORS = STEP_SERIES_TENSORS  # (a) and (b) share their runs
# (c) workers: each writes WORKER_STEPS x WORKER_TENSORS
WORKER_SERIES = (1, 2, 4)
WORKER_STEPS = 1_000
WORKER_TENSORS = 20
# --quick: smaller sizes and one repetition (a smoke run)
QUICK = {"TENSOR_SERIES_STEPS": 20, "STEP_SERIES": (100, 400, 1_600), "READ_SERIES": (100, 400, 1_600),
         "WORKER_STEPS": 100}
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "HOROVOD_RANK",
                 "HOROVOD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SMDEBUG_WORKER_NAME", "SMDEBUG_NUM_WORKERS")


def write(path: str, steps: int, tensors: int, include_workers: str = "one") -> float:
    """Our hook writes ``steps`` x ``tensors``; seconds from construction to the end of close()."""
    from io_throughput import ours_write_small

    return ours_write_small(path, steps, tensors, ELEMS, include_workers=include_workers)["seconds"]


def _best_write(base: str, steps: int, tensors: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeat)):
        path = os.path.join(base, f"w-{steps}x{tensors}")
        shutil.rmtree(path, ignore_errors=True)
        best = min(best, write(path, steps, tensors))
        shutil.rmtree(path, ignore_errors=True)
    return best


def _file_sizes(path: str) -> Dict[str, float]:
    """Mean size of the event and index files of a run."""
    sizes: Dict[str, List[int]] = {"events": [], "index": []}
    for root, _dirs, files in os.walk(path):
        kind = os.path.relpath(root, path).split(os.sep)[0]  # events/<step>/..., index/<folder>/...
        if kind in sizes:
            sizes[kind] += [os.path.getsize(os.path.join(root, f)) for f in files]
    return {k: (sum(v) / len(v) if v else 0.0) for k, v in sizes.items()}


def fs_floor(path: str, steps: int, event_bytes: int, index_bytes: int) -> float:
    """Seconds for the file operations the format needs per step, without smdebug: a folder per step with
    an event file, an index file in a shared folder, each written under a temporary name and renamed."""
    events, index = os.path.join(path, "events"), os.path.join(path, "index", "000000000")
    os.makedirs(events)
    os.makedirs(index)
    ev, ix = b"e" * event_bytes, b"i" * index_bytes
    t0 = time.perf_counter()
    for step in range(steps):
        folder = os.path.join(events, format(step, "012"))
        os.makedirs(folder, exist_ok=True)
        final = os.path.join(folder, f"{step:012}_worker_0.tfevents")
        with open(final + ".tmp", "wb") as f:
            f.write(ev)
        os.replace(final + ".tmp", final)
        final = os.path.join(index, f"{step:012}_worker_0.json")
        with open(final + ".tmp", "wb") as f:
            f.write(ix)
        os.replace(final + ".tmp", final)
    return time.perf_counter() - t0


def _steps_case(base: str, steps: int, tensors: int, floor: bool, read_repeat: int) -> dict:
    """One run of ``steps`` x ``tensors``: its write time; the file-system floor for the same steps
    (``floor``); reading it back, best of ``read_repeat`` fresh processes (0: not read)."""
    path = os.path.join(base, f"w-{steps}x{tensors}")
    shutil.rmtree(path, ignore_errors=True)
    res = {"steps": steps, "tensors": tensors, "seconds": write(path, steps, tensors)}
    sizes = _file_sizes(path)
    res.update(event_bytes=sizes["events"], index_bytes=sizes["index"])
    if read_repeat:
        res["read"] = _best_read(path, read_repeat)
    shutil.rmtree(path, ignore_errors=True)
    if floor:
        path = os.path.join(base, f"floor-{steps}")
        res["floor_s"] = fs_floor(path, steps, int(sizes["events"]), int(sizes["index"]))
        shutil.rmtree(path, ignore_errors=True)
    return res


# --------------------------------------------------------------------------------------------------
# (b) reading: one fresh process per measurement
# --------------------------------------------------------------------------------------------------
def measure_read(path: str) -> dict:
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    from smdebug.trials import create_trial

    for root, _dirs, files in os.walk(path):  # warm the page cache (not timed)
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while fh.read(1 << 20):
                    pass
    t0 = time.perf_counter()
    trial = create_trial(path)
    steps = trial.steps()
    open_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    names = trial.tensor_names()
    names_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    tensor = trial.tensor(names[0])
    for s in steps:
        tensor.value(s)
    fetch_s = time.perf_counter() - t2
    t3 = time.perf_counter()
    tensor = trial.tensor(names[1])
    bulk = len(tensor.values())
    bulk_s = time.perf_counter() - t3
    return {"steps": len(steps), "workers": len(trial.workers()) or getattr(trial, "num_workers", 1),
            "open_s": open_s, "names_s": names_s, "fetch_s": fetch_s, "fetch_values": len(steps),
            "bulk_s": bulk_s, "bulk_values": bulk}


def _read(path: str) -> dict:
    env = {**os.environ, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0"}
    res = subprocess.run([sys.executable, os.path.join(HERE, "scaling.py"), "read", path], capture_output=True,
                         text=True, env=env, check=False)
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode != 0 or not lines:
        raise RuntimeError(f"scaling.py read failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(lines[-1])


def _best_read(path: str, repeat: int) -> dict:
    runs = [_read(path) for _ in range(max(1, repeat))]
    out = dict(runs[0])
    for key in ("open_s", "names_s", "fetch_s", "bulk_s"):
        out[key] = min(r[key] for r in runs)
    return out


# --------------------------------------------------------------------------------------------------
# (c) workers
# --------------------------------------------------------------------------------------------------
def worker_main(path: str, steps: int, tensors: int) -> int:
    """One worker: warm up, say ready, wait for "go" on stdin, write, report wall-clock times."""
    # A first hook in a process pays one-off costs (imports, plugin discovery): paid here, on a scratch
    # run of this worker's own, before the barrier, so the timed part is the writing itself.
    scratch = f"{path}-warm-up-{os.environ.get('RANK', '0')}"
    write(scratch, 5, tensors, include_workers="all")
    shutil.rmtree(scratch, ignore_errors=True)
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.time()
    seconds = write(path, steps, tensors, include_workers="all")
    print(json.dumps({"start": start, "end": time.time(), "seconds": seconds, "tensors": steps * tensors}), flush=True)
    return 0


def run_workers(path: str, workers: int, steps: int, tensors: int, shared: bool = True) -> dict:
    """``workers`` processes writing at once: the workers of one run (``shared``), or, as a control, as
    many independent single-worker runs (what the machine allows when nothing is shared)."""
    base_env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    procs = []
    for rank in range(workers):
        env = {**base_env, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0"}
        out = path
        if shared:
            env.update({"RANK": str(rank), "WORLD_SIZE": str(workers)})
        else:
            out = os.path.join(path, f"run{rank}")
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "scaling.py"), "worker", out, str(steps),
                                       str(tensors)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    try:
        for p in procs:
            line = p.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"worker did not start: {line!r} {p.stderr.read()[-2000:]}")
        for p in procs:  # the barrier: every worker has its imports done
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            lines = [line for line in out.splitlines() if line.startswith("{")]
            if p.returncode != 0 or not lines:
                raise RuntimeError(f"worker failed ({p.returncode}): {err[-2000:]}")
            results.append(json.loads(lines[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    total = sum(r["tensors"] for r in results)
    return {"workers": workers, "wall_s": wall, "tensors": total, "tensors_per_s": total / wall,
            "worker_s": [r["seconds"] for r in results]}


# --------------------------------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------------------------------
def run(base: str, repeat: int = 3, quick: bool = False) -> dict:
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    cfg = {"TENSOR_SERIES_STEPS": TENSOR_SERIES_STEPS, "STEP_SERIES": STEP_SERIES, "READ_SERIES": READ_SERIES,
           "WORKER_STEPS": WORKER_STEPS}
    if quick:
        cfg.update(QUICK)
        repeat = 1
    report: Dict[str, object] = {"cfg": cfg, "cores": os.cpu_count(), "repeat": max(1, repeat)}

    # The first hook of a process pays one-off costs (plugin discovery, imports): not part of any case.
    warm = os.path.join(base, "warm-up")
    write(warm, 10, 10)
    shutil.rmtree(warm, ignore_errors=True)
    ts_steps = cfg["TENSOR_SERIES_STEPS"]
    report["by_tensors"] = [{"tensors": t, "steps": ts_steps, "seconds": _best_write(base, ts_steps, t, repeat)}
                            for t in TENSOR_SERIES]
    series = sorted(set(cfg["STEP_SERIES"]) | set(cfg["READ_SERIES"]))
    report["by_steps"] = [_steps_case(base, n, STEP_SERIES_TENSORS, floor=n in cfg["STEP_SERIES"],
                                      read_repeat=repeat if n in cfg["READ_SERIES"] else 0) for n in series]

    workers = []
    for w in WORKER_SERIES:
        best = control = None
        for _ in range(max(1, repeat)):
            path = os.path.join(base, f"workers-{w}")
            shutil.rmtree(path, ignore_errors=True)
            r = run_workers(path, w, cfg["WORKER_STEPS"], WORKER_TENSORS)
            if best is None or r["wall_s"] < best["wall_s"]:
                best = r
                best["read"] = _read(path)
            shutil.rmtree(path, ignore_errors=True)
            if w > 1:
                r = run_workers(path, w, cfg["WORKER_STEPS"], WORKER_TENSORS, shared=False)
                if control is None or r["wall_s"] < control["wall_s"]:
                    control = r
                shutil.rmtree(path, ignore_errors=True)
        best["control"] = control
        workers.append(best)
    report["workers"] = workers
    return report


def _per_unit(report: dict) -> Dict[str, List]:
    """The per-unit series of the steps runs: (steps, value) pairs for each measured quantity."""
    out: Dict[str, List] = {k: [] for k in ("write", "floor", "open", "names", "value", "values")}
    for r in report["by_steps"]:
        n = r["steps"]
        out["write"].append((n, r["seconds"] / n * 1e6))
        if "floor_s" in r:
            out["floor"].append((n, r["floor_s"] / n * 1e6))
        rd = r.get("read")
        if rd:
            out["open"].append((n, rd["open_s"] / rd["steps"] * 1e6))
            out["names"].append((n, rd["names_s"] / rd["steps"] * 1e6))
            out["value"].append((n, rd["fetch_s"] / rd["fetch_values"] * 1e6))
            out["values"].append((n, rd["bulk_s"] / rd["bulk_values"] * 1e6))
    return out


def _trend(points: List) -> str:
    """Per-unit cost of the largest case over the smallest's: <= 1 means linear or better."""
    values = [v for _, v in points] if points and isinstance(points[0], tuple) else points
    return f"{values[-1] / values[0]:.2f}x" if values and values[0] > 0 else "-"


def _span(points: List) -> str:
    return f"{points[0][0]:,} -> {points[-1][0]:,} steps" if points else "-"


def format_table(report: dict) -> str:
    cfg = report["cfg"]
    lines = [f"Per-unit costs: a flat or falling column is linear (or better) growth. Best of {report['repeat']} "
             "where it says so.", ""]
    # (a) writes by tensors per step
    lines += [f"**(a) writing** (our hook, float32 tensors of {ELEMS} elements, hook construction to the end of "
              f"close(); best of {report['repeat']})", "",
              "| tensors per step | steps | seconds | µs per tensor | tensors/s |", "|---:|---:|---:|---:|---:|"]
    per_tensor = []
    for r in report["by_tensors"]:
        n = r["tensors"] * r["steps"]
        per_tensor.append(r["seconds"] / n * 1e6)
        lines.append(f"| {r['tensors']:,} | {r['steps']:,} | {r['seconds']:.2f} | {per_tensor[-1]:.1f} "
                     f"| {n / r['seconds']:,.0f} |")
    # (a) + (b) by steps
    pu = _per_unit(report)
    last = report["by_steps"][-1]
    lines += ["", f"**(a) writing and (b) reading** runs of N steps x {STEP_SERIES_TENSORS} tensors, each written "
              f"once; read back in a fresh process (best of {report['repeat']}). File-system floor: the format's "
              f"file operations for the same steps by plain Python (a folder per step; an event file of "
              f"{last['event_bytes']:,.0f} bytes and an index file of {last['index_bytes']:,.0f} bytes, each written "
              "under a temporary name and renamed), no encoding.", "",
              "| steps | write s | write µs/step | file-system floor µs/step | write / floor | open s "
              "| open µs/step "
              "| first `tensor_names()` µs/step | `value(step)` µs/value | `values()` µs/value |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["by_steps"]:
        n = r["steps"]
        cells = [f"{n:,}", f"{r['seconds']:.2f}", f"{r['seconds'] / n * 1e6:.0f}"]
        if "floor_s" in r:
            cells += [f"{r['floor_s'] / n * 1e6:.0f}", f"{r['seconds'] / r['floor_s']:.2f}x"]
        else:
            cells += ["-", "-"]
        rd = r.get("read")
        if rd:
            cells += [f"{rd['open_s']:.3f}", f"{rd['open_s'] / rd['steps'] * 1e6:.1f}",
                      f"{rd['names_s'] / rd['steps'] * 1e6:.1f}", f"{rd['fetch_s'] / rd['fetch_values'] * 1e6:.1f}",
                      f"{rd['bulk_s'] / rd['bulk_values'] * 1e6:.1f}"]
        else:
            cells += ["-"] * 5
        lines.append("| " + " | ".join(cells) + " |")
    # (c) workers
    w1 = report["workers"][0]
    lines += ["", f"**(c) workers** writing one run at once (`include_workers=\"all\"`, RANK/WORLD_SIZE), each "
              f"{cfg['WORKER_STEPS']:,} steps x {WORKER_TENSORS} tensors; {report['cores']} cores; best of "
              f"{report['repeat']}", "",
              "| workers | tensors | wall s | total tensors/s | speed-up vs 1 worker | µs per tensor per worker "
              "| control: as many independent runs at once, total tensors/s | open the run s "
              "| open µs per index file | workers / steps the trial sees |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["workers"]:
        per_worker = r["wall_s"] / (r["tensors"] / r["workers"]) * 1e6
        rd = r["read"]
        files = rd["steps"] * r["workers"]
        ctl = (r.get("control") or {}).get("tensors_per_s")
        lines.append(f"| {r['workers']} | {r['tensors']:,} | {r['wall_s']:.2f} | {r['tensors_per_s']:,.0f} "
                     f"| {r['tensors_per_s'] / w1['tensors_per_s']:.2f}x | {per_worker:.1f} "
                     f"| {f'{ctl:,.0f}' if ctl else '-'} | {rd['open_s']:.3f} "
                     f"| {rd['open_s'] / files * 1e6:.1f} | {rd['workers']} / {rd['steps']:,} |")
    lines += ["", "Per-unit cost of the largest case / the smallest (<= ~1.1x: linear or better):",
              f"- write µs per tensor, {TENSOR_SERIES[0]} -> {TENSOR_SERIES[-1]:,} tensors per step: "
              f"{_trend(per_tensor)}",
              f"- write µs per step, {_span(pu['write'])}: {_trend(pu['write'])} "
              f"(file-system floor, {_span(pu['floor'])}: {_trend(pu['floor'])})",
              f"- open µs per step, {_span(pu['open'])}: {_trend(pu['open'])}; first tensor_names() µs per step: "
              f"{_trend(pu['names'])}",
              f"- value(step) µs per value: {_trend(pu['value'])}; values() µs per value: {_trend(pu['values'])}"]
    return "\n".join(lines)


def chart(report: dict, path: str) -> Optional[str]:
    """Four panels of per-unit costs; the path written, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    ax = axes[0][0]
    xs = [r["tensors"] for r in report["by_tensors"]]
    ax.plot(xs, [r["seconds"] / (r["tensors"] * r["steps"]) * 1e6 for r in report["by_tensors"]], "o-")
    ax.set(xscale="log", xlabel="tensors per step", ylabel="µs per tensor", title="(a) write cost per tensor")
    pu = _per_unit(report)

    def plot(ax, key, style, label, **kw):
        if pu[key]:
            ax.plot([n for n, _ in pu[key]], [v for _, v in pu[key]], style, label=label, **kw)

    ax = axes[0][1]
    plot(ax, "write", "o-", "ours")
    plot(ax, "floor", "--", "file-system floor (same file operations)", color="grey")
    ax.legend(fontsize=8)
    ax.set(xscale="log", xlabel=f"steps ({STEP_SERIES_TENSORS} tensors each)", ylabel="µs per step",
           title="(a) write cost per step")
    ax = axes[1][0]
    plot(ax, "open", "o-", "open, µs/step")
    plot(ax, "names", "s-", "first tensor_names(), µs/step")
    plot(ax, "value", "^-", "value(step), µs/value")
    plot(ax, "values", "v-", "values(), µs/value")
    ax.set(xscale="log", xlabel=f"steps in the run ({READ_TENSORS} tensors each)", ylabel="µs",
           title="(b) reading: cost per step / per value")
    ax.legend(fontsize=8)
    ax = axes[1][1]
    xs = [r["workers"] for r in report["workers"]]
    ax.plot(xs, [r["tensors_per_s"] for r in report["workers"]], "o-", label="workers of one run")
    ax.plot(xs, [(r.get("control") or report["workers"][0])["tensors_per_s"] for r in report["workers"]], "s:",
            label="control: independent single-worker runs")
    one = report["workers"][0]["tensors_per_s"]
    ax.plot(xs, [one * min(w, report["cores"] or w) for w in xs], "--", color="grey",
            label=f"linear up to {report['cores']} cores")
    ax.set(xlabel="workers writing one run", ylabel="total tensors/s", title="(c) workers: write throughput")
    ax.set_xticks(xs)
    ax.legend(fontsize=8)
    for row in axes:
        for a in row:
            a.set_ylim(bottom=0)
            a.grid(True, alpha=0.3)
            if a.get_xscale() == "log":  # label the measured sizes themselves, not powers of ten
                xs = sorted({int(x) for line in a.get_lines() for x in line.get_xdata()})
                a.set_xticks(xs, [f"{x:,}" for x in xs])
                a.minorticks_off()
    fig.suptitle("smdebug scaling (flat or falling per-unit cost = linear or better)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(quick: bool = False, repeat: int = 3, chart_path: Optional[str] = None) -> dict:
    from sides import check_ours

    check_ours()
    base = tempfile.mkdtemp(prefix="smdebug-scaling-bench-")
    try:
        report = run(base, repeat=repeat, quick=quick)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if chart_path:
        report["chart"] = chart(report, chart_path)
    return report


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from sides import check_ours

    check_ours()
    if len(sys.argv) > 1 and sys.argv[1] == "read":
        print(json.dumps(measure_read(sys.argv[2])))
    elif len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    else:
        chart_path = os.path.join(tempfile.gettempdir(), "smdebug-scaling.png")
        report = main(quick="--quick" in sys.argv, chart_path=chart_path)
        print(format_table(report))
