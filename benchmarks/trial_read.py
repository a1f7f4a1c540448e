"""Trial open time and value-fetch throughput: ours vs the original smdebug 1.0.34.

Runs of 1,000 and 10,000 steps x 100 tensors (float32, 16 elements each) are written once by our hook
(a ``BaseHook`` subclass, as in io_throughput.py; the original reads our runs too). Each run is then
read by both libraries, each in a fresh process (ours in this venv, the original in its own venv through
``trial_read_original.py``; both run :func:`measure_read` of this module), so neither inherits the other's
caches or heap. What is timed:

* **open**: ``create_trial(path)`` + ``trial.steps()``;
* **fetch, rule pattern**: for every step (in order), ``trial.tensor(name).value(step)`` for each of 10
  tensors, as a rule's ``invoke_at_step`` does; it starts with ``trial.tensor_names()`` (a rule lists the
  tensors it checks), so work a library defers from open to first use is counted here;
* **bulk**: ``trial.tensor(name).steps()`` + ``trial.tensor(name).values()`` for 3 of those tensors, on the
  same trial right after (neither library caches values by default, so nothing fetched before is reused).

Both libraries do the same work on the same run. Best of ``--repeat`` fresh processes per library,
alternating, so drift hits both alike; except that the original reads runs of ``ORIGINAL_ONCE_STEPS``
steps or more only once (opening a 10,000-step run takes it about a minute here), which bounds its run
time; the table says so. The page cache is warm for both (every reader reads the whole run once before
timing starts): this measures the libraries, not the disk.

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
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))

TENSORS = 100
ELEMS = 16
FETCH_TENSORS = 10
BULK_TENSORS = 3
SIZES = (1_000, 10_000)  # steps of the runs
QUICK_SIZES = (100, 1_000)  # --quick: a smoke run
# The original reads a run of this many steps or more once, not best of --repeat: it takes about a
# minute to open a 10,000-step run, twice that to read it.
ORIGINAL_ONCE_STEPS = 5_000
OPEN_TARGET_S = 1.0  # opening a 10k-step run: at most 1 s
FETCH_TARGET_X = 5.0  # fetching: at least 5x the original's values/s


def fetch_names(tensors: int = TENSORS, n: int = FETCH_TENSORS) -> List[str]:
    """``n`` tensor names spread over the run's ``tensors`` (a rule checks some layers, not all)."""
    stride = max(1, tensors // n)
    return [f"layer{i}/weight" for i in range(0, tensors, stride)][:n]


# --------------------------------------------------------------------------------------------------
# writing (our process only)
# --------------------------------------------------------------------------------------------------
def write_run(path: str, steps: int, tensors: int = TENSORS, elems: int = ELEMS) -> float:
    """Write ``steps`` x ``tensors`` small float32 tensors with our hook; seconds."""
    from io_throughput import ours_write_small

    shutil.rmtree(path, ignore_errors=True)
    return ours_write_small(path, steps, tensors, elems)["seconds"]


# --------------------------------------------------------------------------------------------------
# reading (both processes)
# --------------------------------------------------------------------------------------------------
def _warm_page_cache(path: str) -> None:
    """Read every file of the run once (not timed), so both readers find it in the page cache."""
    for root, _dirs, files in os.walk(path):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while fh.read(1 << 20):
                    pass


def measure_read(path: str, names: List[str], bulk_names: List[str]) -> Dict[str, float]:
    """Open ``path`` and fetch the values of ``names``; the timings of one fresh process."""
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    from smdebug.trials import create_trial  # ours or the original, whichever this process has

    _warm_page_cache(path)
    t0 = time.perf_counter()
    trial = create_trial(path)
    steps = trial.steps()
    open_s = time.perf_counter() - t0

    # rule pattern: step by step, a few tensors each
    t1 = time.perf_counter()
    listed = trial.tensor_names()
    n = 0
    for step in steps:
        for name in names:
            trial.tensor(name).value(step)
            n += 1
    fetch_s = time.perf_counter() - t1
    missing = [name for name in names if name not in listed]

    # bulk: every value of a tensor at once
    t2 = time.perf_counter()
    bulk_n = 0
    for name in bulk_names:
        t = trial.tensor(name)
        t.steps()
        bulk_n += len(t.values())
    bulk_s = time.perf_counter() - t2
    return {"open_s": open_s, "steps": len(steps), "fetch_s": fetch_s, "fetch_values": n,
            "bulk_s": bulk_s, "bulk_values": bulk_n, "missing": missing}


def _run_reader(python: str, script: str, path: str, names: List[str], bulk_names: List[str],
                env: Optional[dict] = None) -> dict:
    cmd = [python, os.path.join(HERE, script), "read", path, ",".join(names), ",".join(bulk_names)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode != 0 or not lines:
        raise RuntimeError(f"{script} failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(lines[-1])


def ours(path: str, names: List[str], bulk_names: List[str]) -> dict:
    env = {**os.environ, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0"}
    return _run_reader(sys.executable, "trial_read.py", path, names, bulk_names, env)


def original(python: str, path: str, names: List[str], bulk_names: List[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": "", "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", "SMDEBUG_LOG_LEVEL": "warning"}
    return _run_reader(python, "trial_read_original.py", path, names, bulk_names, env)


def _best(results: List[dict]) -> dict:
    """Per quantity, the best of the repetitions (each quantity's noise is independent)."""
    out = dict(results[0])
    for key in ("open_s", "fetch_s", "bulk_s"):
        out[key] = min(r[key] for r in results)
    return out


def run(original_python: Optional[str], base: str, repeat: int = 3, quick: bool = False,
        original_error: Optional[str] = None) -> dict:
    names = fetch_names()
    bulk_names = names[:BULK_TENSORS]
    report = {"tensors": TENSORS, "elems": ELEMS, "names": names, "bulk_names": bulk_names, "cases": [],
              "repeat": max(1, repeat)}
    for steps in (QUICK_SIZES if quick else SIZES):
        path = os.path.join(base, f"run-{steps}")
        write_s = write_run(path, steps)
        case = {"steps": steps, "write_s": write_s}
        orig_reps = 1 if steps >= ORIGINAL_ONCE_STEPS else max(1, repeat)
        o_runs, g_runs = [], []
        for i in range(max(1, repeat)):
            # alternate which library goes first, so machine drift does not favour one
            order = ("ours", "orig") if i % 2 == 0 else ("orig", "ours")
            for which in order:
                if which == "ours":
                    o_runs.append(ours(path, names, bulk_names))
                elif original_python is not None and "original_error" not in case and len(g_runs) < orig_reps:
                    try:
                        g_runs.append(original(original_python, path, names, bulk_names))
                    except RuntimeError as e:
                        case["original_error"] = str(e).splitlines()[-1][:300]
        case["ours"] = _best(o_runs)
        case["ours"]["runs"] = len(o_runs)
        if g_runs:
            case["original"] = _best(g_runs)
            case["original"]["runs"] = len(g_runs)
        else:
            case.setdefault("original_error", original_error or "original environment unavailable")
        report["cases"].append(case)
        shutil.rmtree(path, ignore_errors=True)
    return report


# --------------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------------
def _fmt(x: Optional[float], digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:,.{digits}f}" if abs(x) < 1000 else f"{x:,.0f}"


def _row(label: str, ours_v: Optional[float], orig_v: Optional[float], lower_is_better: bool, digits: int = 3) -> str:
    if ours_v is None or orig_v is None or not ours_v or not orig_v:
        ratio = "-"
    else:
        ratio = f"{(orig_v / ours_v) if lower_is_better else (ours_v / orig_v):.1f}x"
    return f"| {label} | {_fmt(ours_v, digits)} | {_fmt(orig_v, digits)} | {ratio} |"


def _rate(side: Optional[dict], key_s: str, key_n: str) -> Optional[float]:
    if not side or side[key_s] <= 0 or not side[key_n]:
        return None
    return side[key_n] / side[key_s]


# What bounds the rule pattern when it falls short: the original parses every index file when the trial
# opens (its open time), ours on first use, so the "fetch" column carries our index parsing (JSON
# decoding and checks, ~0.1 ms per step of 100 tensors on this machine) and not the original's.
FETCH_LIMIT = ("our fetch includes parsing each step's index, which ours defers from open to first use and "
               "the original does while opening (the open row)")


def format_table(report: dict) -> str:
    names = report["names"]
    lines = [
        f"Runs written by our hook: N steps x {report['tensors']} tensors (float32, {report['elems']} elements). "
        f"Rule pattern: `trial.tensor_names()`, then for every step `trial.tensor(n).value(step)` for "
        f"{len(names)} tensors ({', '.join(names[:2])}, ..., {names[-1]}); bulk: `steps()` + `values()` of "
        f"{len(report['bulk_names'])} of them on the same trial. Each library in a fresh process per repetition; "
        f"best of {report['repeat']} (the original: once for runs of {ORIGINAL_ONCE_STEPS:,} steps or more). "
        "Ratio: how many times better ours is (time: original / ours; throughput: ours / original).",
        "",
        "| run | case | ours | original 1.0.34 | ours vs original |",
        "|---|---|---:|---:|---:|",
    ]
    verdicts = []
    for case in report["cases"]:
        o, g = case["ours"], case.get("original")
        run = f"{case['steps']:,} steps"
        if g is not None and g["runs"] != o["runs"]:
            run += f" (original: {g['runs']} run{'s' if g['runs'] > 1 else ''})"
        lines.append(_row(f"{run} | open: `create_trial` + `steps()`, s", o["open_s"], g and g["open_s"], True))
        lines.append(_row(f"{run} | rule pattern: values/s ({o['fetch_values']:,} values)",
                          _rate(o, "fetch_s", "fetch_values"), _rate(g, "fetch_s", "fetch_values"), False, 0))
        lines.append(_row(f"{run} | open + rule pattern, s", o["open_s"] + o["fetch_s"],
                          g and g["open_s"] + g["fetch_s"], True))
        lines.append(_row(f"{run} | bulk `values()`: values/s ({o['bulk_values']:,} values)",
                          _rate(o, "bulk_s", "bulk_values"), _rate(g, "bulk_s", "bulk_values"), False, 0))
        if g is None:
            lines.append(f"| {run} | original | - | unavailable: {case.get('original_error')} | - |")
        elif g.get("missing") or o.get("missing"):
            lines.append(f"| {run} | tensors not listed (ours / original) | {o.get('missing')} "
                         f"| {g.get('missing')} | - |")
        if case is report["cases"][-1]:
            ok = o["open_s"] <= OPEN_TARGET_S
            verdicts.append(f"- open a {case['steps']:,}-step run <= {OPEN_TARGET_S:g} s: {o['open_s']:.3f} s "
                            f"({'met' if ok else 'not met'})"
                            + ("" if case["steps"] >= 10_000 else " (--quick: the target is for 10,000 steps)"))
        ro, rg = _rate(o, "fetch_s", "fetch_values"), _rate(g, "fetch_s", "fetch_values")
        if ro and rg:
            x = ro / rg
            both = (g["open_s"] + g["fetch_s"]) / (o["open_s"] + o["fetch_s"])
            verdicts.append(f"- {case['steps']:,} steps, fetching (rule pattern) >= {FETCH_TARGET_X:g}x the original's "
                            f"values/s: {x:.1f}x ({ro:,.0f} vs {rg:,.0f} values/s) "
                            + ("(met)" if x >= FETCH_TARGET_X else f"(not met: {FETCH_LIMIT}; open + rule pattern: "
                               f"{both:.1f}x)"))
        bo, bg = _rate(o, "bulk_s", "bulk_values"), _rate(g, "bulk_s", "bulk_values")
        if bo and bg:
            verdicts.append(f"- {case['steps']:,} steps, fetching (bulk `values()`) >= {FETCH_TARGET_X:g}x the "
                            f"original's values/s: {bo / bg:.1f}x ({'met' if bo / bg >= FETCH_TARGET_X else 'not met'})")
    writes = "; ".join(f"{c['steps']:,} steps {c['write_s']:.1f} s" for c in report["cases"])
    return "\n".join(lines + ["", *verdicts, f"- writing the runs (our hook; not compared): {writes}"])


def main(quick: bool = False, repeat: int = 3) -> dict:
    from original_env import original_python
    from sides import check_ours

    check_ours()
    python = original_python()  # no comparison, no benchmark: a failure here fails the run
    base = tempfile.mkdtemp(prefix="smdebug-trial-bench-")
    try:
        return run(python, base, repeat=repeat, quick=quick)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _cli(argv: List[str]) -> int:
    """``read RUN NAMES BULK_NAMES``: one fresh reader process; prints one JSON line."""
    sys.path.insert(0, HERE)
    from sides import check_ours

    check_ours()
    if len(argv) >= 4 and argv[0] == "read":
        print(json.dumps(measure_read(argv[1], argv[2].split(","), argv[3].split(","))))
        return 0
    sys.path.insert(0, HERE)
    print(format_table(main(quick="--quick" in argv)))
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
