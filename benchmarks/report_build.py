"""Size and build time of ``smdebug report`` for a 10,000-step run, and ``trial.to_dataframe`` on it.

    python benchmarks/report_build.py [--quick] [--keep DIR]      (or: nox -s bench -- --only report)

The run is written by a hook (``BaseHook`` subclass, as in io_throughput.py): 10,000 TRAIN steps with an
EVAL phase of 20 steps after every 1,000 (10,200 global steps), each step saving the loss and an
accuracy scalar, and 4 layers of weights (16x16 float32), biases (16) and gradients (16x16, raw and
their l2 norm) - values drifting like a training's, with a loss spike and a NaN stretch so the
downsampling has something to keep. A rule result with findings on the loss and on a gradient is put
in the run, as ``smdebug rules run -o RUN/rule_results.json`` would.

Measured, best of ``--repeat``:

* **report (CLI)**: ``smdebug report RUN -o FILE`` in a fresh process, end to end (imports included);
* **read / draw**: the same work in this process, split into reading the run (``content.build``) and
  drawing + serialising the page (Bokeh);
* **follow rewrite**: a second page of the same report with no new steps (what ``--follow`` pays per
  interval when the run is idle: only new steps are read);
* **page size**, and how much of it is Bokeh's own JavaScript;
* **to_dataframe**: the whole run as one table with the l2 norm of every tensor
  (``reductions=["l2"]``), and the scalars' values (``collections=["losses", "scalars"]``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TRAIN_STEPS = 10_000
EVAL_EVERY = 1_000
EVAL_STEPS = 20
LAYERS = 4
WIDTH = 16
QUICK_TRAIN_STEPS = 1_000

SIZE_TARGET_MB = 5.0  # a 10k-step report should be mailable
BUILD_TARGET_S = 60.0  # end to end on this 2-core machine
DATAFRAME_TARGET_S = 20.0


def write_run(path: str, train_steps: int) -> dict:
    from smdebug.core.collection import Collection
    from smdebug.core.hook import BaseHook
    from smdebug.core.modes import ModeKeys
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig

    class BenchHook(BaseHook):
        framework_name = "bench"

        def default_collections(self):
            return [Collection("weights", include_regex=["^weights/"]), Collection("biases", include_regex=["^biases/"]),
                    Collection("gradients", include_regex=["^gradient/"]), Collection("losses", include_regex=["^loss$"])]

    hook = BenchHook(out_dir=path, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "biases", "gradients", "losses", "scalars"])
    hook.get_collection("gradients").reduction_config = ReductionConfig(norms=["l2"], save_raw_tensor=True)
    rng = np.random.default_rng(0)
    weights = [rng.normal(scale=0.3, size=(WIDTH, WIDTH)).astype(np.float32) for _ in range(LAYERS)]
    biases = [np.zeros(WIDTH, np.float32) for _ in range(LAYERS)]
    start = time.perf_counter()
    train_step = 0
    spike, nan_from = int(train_steps * 0.37), int(train_steps * 0.8)

    def record(training: bool, loss: float):
        for i in range(LAYERS):
            hook.record(f"weights/layer{i}", weights[i])
            hook.record(f"biases/layer{i}", biases[i])
        hook.record("loss", np.array([loss], np.float32))
        hook.save_scalar("accuracy", float(1 - loss / 3))

    while train_step < train_steps:
        hook.set_mode(ModeKeys.TRAIN)
        for _ in range(min(EVAL_EVERY, train_steps - train_step)):
            hook.begin_step()
            loss = 2.0 * np.exp(-train_step / (train_steps / 4)) + 0.05 * rng.random()
            if train_step == spike:
                loss = 40.0
            if nan_from <= train_step < nan_from + 15:
                loss = float("nan")
            record(True, loss)
            for i in range(LAYERS):
                grad = (rng.normal(scale=loss if np.isfinite(loss) else 1.0, size=(WIDTH, WIDTH)) * 0.01).astype(np.float32)
                hook.record(f"gradient/weights/layer{i}", grad)
                weights[i] -= 0.1 * grad
                biases[i] += 0.001 * rng.normal(size=WIDTH).astype(np.float32)
            hook.end_step()
            train_step += 1
        hook.set_mode(ModeKeys.EVAL)
        for _ in range(EVAL_STEPS):
            hook.begin_step()
            record(False, 2.0 * np.exp(-train_step / (train_steps / 4)) + 0.1)
            hook.end_step()
    hook.close()
    written = time.perf_counter() - start
    doc = {"status": "IssuesFound", "training_ended": True, "rules": [
        {"name": "LossNotDecreasing", "status": "IssuesFound", "steps_evaluated": train_steps, "findings_total": 1,
         "findings": [{"step": spike + (spike // EVAL_EVERY) * EVAL_STEPS, "reason": "loss jumped", "tensor": "loss"}]},
        {"name": "ExplodingTensor", "status": "IssuesFound", "steps_evaluated": train_steps, "findings_total": 1,
         "findings": [{"step": nan_from + (nan_from // EVAL_EVERY) * EVAL_STEPS, "reason": "NaN loss"}]}]}
    with open(os.path.join(path, "rule_results.json"), "w") as f:
        json.dump(doc, f)
    return {"write_seconds": written}


def _bokeh_js_bytes() -> int:
    from bokeh.resources import Resources

    return sum(len(js) for js in Resources(mode="inline", components=["bokeh"]).js_raw)


def measure(path: str, out: str, repeat: int) -> dict:
    import argparse

    from smdebug.cli import report_cmd
    from smdebug.cli.report import content
    from smdebug.trials import create_trial

    best = {}

    def keep(key, value):
        best[key] = min(best.get(key, float("inf")), value)

    import resource

    def child_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    for _ in range(repeat):
        t, c = time.perf_counter(), child_cpu()
        proc = subprocess.run([sys.executable, "-m", "smdebug.cli", "report", path, "-o", out, "-q"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"smdebug report failed: {proc.stderr[-2000:]}")
        keep("cli_s", time.perf_counter() - t)
        keep("cli_cpu_s", child_cpu() - c)

        args = argparse.Namespace(runs=[path], output=out, rules=None, label=None, max_points=1500, title=None,
                                  follow=False, interval=10.0, timeout=None, wait=0.0, progress=False)
        t = time.perf_counter()
        report = report_cmd.Report(args)
        keep("open_s", time.perf_counter() - t)
        t = time.perf_counter()
        sections = content.build(report.runs)
        content.place_findings(sections, report.runs, False)
        keep("read_s", time.perf_counter() - t)
        t = time.perf_counter()
        report.page()  # the curves are cached: what is left is the histograms' samples and the drawing
        keep("draw_s", time.perf_counter() - t)
        t = time.perf_counter()
        report.refresh()
        report.page(live=10.0)
        keep("follow_s", time.perf_counter() - t)

        trial = create_trial(path)
        t, c = time.perf_counter(), time.process_time()
        df = trial.to_dataframe(reductions=["l2"])
        keep("df_l2_s", time.perf_counter() - t)
        keep("df_l2_cpu_s", time.process_time() - c)
        rows_l2 = len(df)
        t = time.perf_counter()
        df = trial.to_dataframe(collections=["losses", "scalars"])
        keep("df_scalars_s", time.perf_counter() - t)
        rows_scalars = len(df)
    trial = create_trial(path)
    return {**best, "page_bytes": os.path.getsize(out), "bokeh_js_bytes": _bokeh_js_bytes(), "rows_l2": rows_l2,
            "rows_scalars": rows_scalars, "steps": len(trial.steps()), "tensors": len(trial.tensor_names()),
            "charts": open(out, encoding="utf-8").read().count('<div class="chart')}


def main(quick: bool = False, repeat: int = 3, keep: str = None) -> dict:
    train_steps = QUICK_TRAIN_STEPS if quick else TRAIN_STEPS
    base = keep or tempfile.mkdtemp(prefix="smdebug-report-bench-")
    run = os.path.join(base, "run")
    try:
        if os.path.exists(run):
            shutil.rmtree(run)
        written = write_run(run, train_steps)
        report = measure(run, os.path.join(base, "report.html"), max(1, repeat))
        report.update(written, train_steps=train_steps, repeat=max(1, repeat), load=os.getloadavg()[0])
        return report
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def format_table(r: dict) -> str:
    lines = [
        f"A run of {r['steps']:,} global steps ({r['train_steps']:,} TRAIN + EVAL phases) x {r['tensors']} tensors "
        f"(loss, accuracy, {LAYERS} layers of weights/biases/gradients, gradients with a stored l2 norm), written in "
        f"{r['write_seconds']:.1f} s; best of {r['repeat']}; load average at the end {r['load']:.1f} on this "
        "machine (shared: timings are noisy).",
        "",
        "| what | measured |",
        "|---|---:|",
        f"| `smdebug report RUN -o FILE` (fresh process, end to end) | {r['cli_s']:.1f} s ({r['cli_cpu_s']:.1f} s CPU) |",
        f"| open the run | {r['open_s']:.2f} s |",
        f"| read every step of every charted tensor (`content.build`) | {r['read_s']:.1f} s |",
        f"| the page again from the same reader (curves cached, histogram samples re-read) + Bokeh drawing | {r['draw_s']:.1f} s |",
        f"| `--follow` rewrite with no new steps | {r['follow_s']:.1f} s |",
        f"| page size ({r['charts']} charts) | {_mb(r['page_bytes'])} (of which Bokeh's JavaScript {_mb(r['bokeh_js_bytes'])}) |",
        f"| `trial.to_dataframe(reductions=[\"l2\"])`: {r['rows_l2']:,} rows | {r['df_l2_s']:.1f} s ({r['df_l2_cpu_s']:.1f} s CPU) |",
        f"| `trial.to_dataframe(collections=[\"losses\", \"scalars\"])`: {r['rows_scalars']:,} rows | {r['df_scalars_s']:.1f} s |",
        "",
    ]

    def verdict(ok, cpu=None, target=None):
        if ok:
            return "(met)"
        if cpu is not None:
            return (f"(not met: the machine is shared, load average {r['load']:.0f} on 2 cores; the work itself took "
                    f"{cpu:.1f} s of CPU, {'within' if cpu <= target else 'over'} the target's {target:g} s)")
        return "(not met)"

    lines.append(f"- report page of a 10,000-step run at most {SIZE_TARGET_MB:g} MB: {_mb(r['page_bytes'])} "
                 f"{verdict(r['page_bytes'] <= SIZE_TARGET_MB * 1e6)}")
    lines.append(f"- report of a 10,000-step run built in at most {BUILD_TARGET_S:g} s end to end: {r['cli_s']:.1f} s "
                 f"{verdict(r['cli_s'] <= BUILD_TARGET_S, r['cli_cpu_s'], BUILD_TARGET_S)}")
    lines.append(f"- to_dataframe of a 10,000-step run with l2 norms in at most {DATAFRAME_TARGET_S:g} s: "
                 f"{r['df_l2_s']:.1f} s {verdict(r['df_l2_s'] <= DATAFRAME_TARGET_S, r['df_l2_cpu_s'], DATAFRAME_TARGET_S)}")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="write the run and the page here and keep them")
    a = parser.parse_args()
    print(format_table(main(quick=a.quick, repeat=a.repeat, keep=a.keep)))
