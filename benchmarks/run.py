"""Run the benchmarks, print the tables and record them in benchmarks/RESULTS.md (one section per benchmark).

    python benchmarks/run.py [--quick] [--repeat N] [--no-record]
                             [--only io|torch|fsdp|rules|s3|trial_read|memory|scaling|report|rule_accuracy]
                             [--summary]

``io``: write/read throughput, ours vs the original smdebug 1.0.34 (io_throughput.py).
``torch``: step-time overhead of the PyTorch hook, ours vs the original (torch_overhead.py).
``fsdp``: what saving FSDP2-sharded weights and gradients costs two real ranks: gathers, step time, peak
memory (fsdp_gather.py; ours only: the original predates FSDP2).
``rules``: evaluation time of the built-in rules over a 1,000-step run, and of user-written rules
ours vs the original (rules_eval.py).
``s3``: reading a run from S3 (moto on loopback with a per-request delay), time and HTTP requests,
ours vs the original (s3_read.py).
``trial_read``: trial open time and value-fetch throughput on 1,000- and 10,000-step runs, ours vs the
original (trial_read.py).
``memory``: peak RSS of a PyTorch training process saving weights+gradients every step, as the run
gets longer, no hook vs ours vs the original (memory.py).
``scaling``: how write, open and fetch costs grow with tensors, steps and workers (ours; scaling.py),
with a chart (benchmarks/scaling.png).
``report``: size and build time of ``smdebug report`` for a 10,000-step run, and ``trial.to_dataframe`` on
it (report_build.py).
``rule_accuracy``: how well the built-in rules and the recommended set detect known bugs in small real
PyTorch, Keras and XGBoost runs, and how often they fire on healthy ones (rule_accuracy/; its own nox session
``bench_rules`` has all three frameworks). Only with ``--only rule_accuracy``: it needs TensorFlow and XGBoost,
which the ``bench`` session does not install.
All others by default. Each benchmark's section replaces its previous one in RESULTS.md (which moves to
benchmarks/history/, see results_file.py); sections are newest first, under "Targets at a glance": every
target's verdict from the section of each benchmark (``--summary`` makes only that table, and puts the file
in that shape).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "RESULTS.md")
sys.path.insert(0, HERE)

from sides import check_ours  # noqa: E402
import results_file  # noqa: E402


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def versions() -> str:
    import google.protobuf
    import numpy

    import smdebug

    return f"smdebug-core {smdebug.__version__}, numpy {numpy.__version__}, protobuf {google.protobuf.__version__}"


def _dist_version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def torch_versions(report) -> str:
    ours = report["ours"]
    orig = report["original"]
    orig_s = (f"original smdebug {orig['smdebug']} with torch {orig['torch']} in its own venv" if "error" not in orig
              else f"original unavailable ({orig['error']})")
    return (f"smdebug-core {_dist_version('smdebug-core')}, smdebug-torch {_dist_version('smdebug-torch')}, "
            f"torch {ours['torch']}; {orig_s}")


def torch_versions_plain() -> str:
    import torch

    return (f"smdebug-core {_dist_version('smdebug-core')}, smdebug-torch {_dist_version('smdebug-torch')}, "
            f"torch {torch.__version__}")


MEMORY_METHOD = (
    "CPU, one torch thread; every cell is a fresh process that trains N steps with SGD on fixed random batches, "
    "the hook saving weights, gradients and the loss every step, closes the hook and reports "
    "`VmHWM` from `/proc/self/status` (the kernel's peak RSS of the process's own memory; `ru_maxrss` would include the parent's, inherited through fork and exec); the original in its own torch venv, each venv "
    "with its own no-hook runs. Our hook's write budget is `SMDEBUG_WRITER_MAX_PENDING_BYTES` (256 MiB default)."
)

TORCH_METHOD = (
    "CPU, `torch.set_num_threads(1)` in each process; each library in its own process runs the same "
    "code (benchmarks/torch_overhead.py) with its own no-hook baseline; per pass, fresh models (same "
    "initial weights, same batches) for every configuration, warmed up, then timed in interleaved "
    "blocks (order rotating each round); a hooked block includes waiting for the hook to write what it "
    "saved (ours: `hook.flush()`; the original writes synchronously), and starts after `os.sync()` (not "
    "timed) so write-back of earlier blocks does not throttle it; `close()` timed on its own. "
    "`torch.utils.tensorboard.SummaryWriter` (where it can do what the hook config does) runs in our process "
    "against the same no-hook blocks, called by the training loop after each optimizer step, its blocks ending "
    "with `writer.flush()`. "
    "Values: mean over all timed blocks of all passes; +-: standard error of the added ms/step between passes."
)


FSDP_METHOD = (
    "two real processes (gloo on loopback, one torch thread each, on the 2-core machine), "
    "`fully_shard` on every linear layer and the root; each configuration a fresh pair of processes, "
    "the order rotating each round; timed steps between two barriers, ending with `hook.flush()`; gathers "
    "counted and timed by wrapping `smdebug.pytorch.sharded.full_value` (benchmarks/fsdp_gather.py); peak "
    "RSS: `VmHWM` of each rank. No original side: 1.0.34 predates DTensor and FSDP2."
)


def rule_accuracy_versions() -> str:
    dists = ("smdebug-core", "smdebug-rules", "smdebug-torch", "smdebug-tf", "smdebug-xgboost", "torch",
             "tensorflow-cpu", "keras", "xgboost-cpu")
    return ", ".join(f"{d} {_dist_version(d)}" for d in dists)


def _section(title: str, lines) -> str:
    return f"\n## {title} — {datetime.date.today().isoformat()}\n\n" + "\n".join(lines) + "\n"


class _Sections(list):
    """Sections of this run; each is printed and, unless recording is off, written to RESULTS.md at once (in
    the place of that benchmark's previous section), so a long run that is interrupted keeps what it already
    measured."""

    def __init__(self, record: bool):
        super().__init__()
        self.record = record

    def append(self, section: str) -> None:
        super().append(section)
        print(section)
        if self.record:
            results_file.normalise(RESULTS, [section], summary_of=targets_summary)

    def rewrite(self) -> None:
        """Only the targets table again (and the file in its shape)."""
        results_file.normalise(RESULTS, summary_of=targets_summary)
        print(results_file.split(open(RESULTS).read())[1][0][2] if os.path.exists(RESULTS) else "")


ORIGINAL_VENV = "original smdebug 1.0.34 in its own venv"


def _scaling_chart(args) -> str:
    # The chart goes next to RESULTS.md only when the run is recorded there (it is linked from it).
    if args.no_record:
        return os.path.join(tempfile.gettempdir(), "smdebug-scaling.png")
    return os.path.join(HERE, "scaling.png")


def _scaling_chart_line(args, report) -> str:
    if not report.get("chart"):
        return "- chart: not drawn (matplotlib is not installed)"
    return f"- chart: {_scaling_chart(args)} (not recorded)" if args.no_record else "- chart: [scaling.png](scaling.png)"


# name -> (module, section title, how the module's main() is called, the section's header lines after the
# machine line). A header function gets (args, command, report, module).
BENCHMARKS = {
    "io": ("io_throughput", "I/O throughput",
           lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
           lambda a, cmd, r, m: [f"- versions: {versions()}; {ORIGINAL_VENV}",
                                 f"- command: `{cmd}` (best of {a.repeat})"]),
    "torch": ("torch_overhead", "PyTorch hook step-time overhead",
              lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
              lambda a, cmd, r, m: [f"- versions: {torch_versions(r)}",
                                    f"- command: `{cmd}` ({max(1, a.repeat) * m.PASSES_PER_REPEAT} passes)",
                                    f"- method: {TORCH_METHOD}"]),
    "fsdp": ("fsdp_gather", "FSDP2: saving sharded weights and gradients",
             lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
             lambda a, cmd, r, m: [f"- versions: {torch_versions_plain()}", f"- command: `{cmd}`",
                                   f"- method: {FSDP_METHOD}"]),
    "rules": ("rules_eval", "Rule evaluation time",
              lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
              lambda a, cmd, r, m: [f"- versions: {versions()}; {ORIGINAL_VENV}",
                                    f"- command: `{cmd}` (best of {a.repeat}; each time includes opening the trial)",
                                    f"- writing the run took {r['write_seconds']:.2f} s"]),
    "s3": ("s3_read", "S3 read throughput and request count",
           lambda m, a: m.main(quick=a.quick),
           lambda a, cmd, r, m: [f"- versions: {versions()}; {ORIGINAL_VENV}; moto server (S3 API) on loopback",
                                 f"- command: `{cmd}`"]),
    "trial_read": ("trial_read", "Trial open time and value-fetch throughput",
                   lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
                   lambda a, cmd, r, m: [f"- versions: {versions()}; {ORIGINAL_VENV}", f"- command: `{cmd}`"]),
    "memory": ("memory", "Peak memory of a training process saving every step",
               lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
               lambda a, cmd, r, m: [f"- versions: {torch_versions_plain()}; original smdebug 1.0.34 with the same "
                                     "torch in its own venv", f"- command: `{cmd}`", f"- method: {MEMORY_METHOD}"]),
    "scaling": ("scaling", "Scaling with tensors, steps and workers",
                lambda m, a: m.main(quick=a.quick, repeat=a.repeat, chart_path=_scaling_chart(a)),
                lambda a, cmd, r, m: [f"- versions: {versions()}", f"- command: `{cmd}`",
                                      _scaling_chart_line(a, r)]),
    "rule_accuracy": ("rule_accuracy.bench", "Rule accuracy on real buggy and healthy runs",
                      lambda m, a: m.main(quick=a.quick, json_path=None if a.no_record else m.JSON_PATH),
                      lambda a, cmd, r, m: [f"- versions: {rule_accuracy_versions()}",
                                            f"- command: `{'nox -s bench_rules' + (' -- --quick' if a.quick else '')}` "
                                            f"(= `{cmd}` with TensorFlow and XGBoost installed)",
                                            *m.header_lines(r)]),
    "report": ("report_build", "Report size and build time, to_dataframe (10,000-step run)",
               lambda m, a: m.main(quick=a.quick, repeat=a.repeat),
               lambda a, cmd, r, m: [f"- versions: {versions()}, bokeh {_dist_version('bokeh')}, "
                                     f"pandas {_dist_version('pandas')}", f"- command: `{cmd}`"]),
}
#: benchmarks that run only when named with --only
OPT_IN = {"rule_accuracy"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for a smoke run)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="I/O, trial_read, scaling: best of N runs; torch: 2N passes; memory: unused")
    parser.add_argument("--no-record", action="store_true", help="do not record in RESULTS.md")
    parser.add_argument("--only", choices=tuple(BENCHMARKS), help="run one benchmark only")
    parser.add_argument("--summary", action="store_true",
                        help="measure nothing; write the targets table again from RESULTS.md's latest sections")
    args = parser.parse_args(argv)

    extra = [a for a, on in (("--quick", args.quick), (f"--repeat {args.repeat}", args.repeat != 3),
                             (f"--only {args.only}", args.only)) if on]
    command = "nox -s bench" + (" -- " + " ".join(extra) if extra else "")
    sections = _Sections(record=not args.no_record)
    if not args.summary:
        print(f"ours: {check_ours()}", file=sys.stderr)
    failed = []
    for name, (module_name, title, run, header) in BENCHMARKS.items():
        if args.only not in (None, name) or args.summary or (args.only is None and name in OPT_IN):
            continue
        module = importlib.import_module(module_name)
        try:
            report = run(module, args)
            missing = comparison_failures(report)
            if missing:
                raise RuntimeError("the original's side is missing: " + "; ".join(missing[:3]))
        except Exception as e:  # noqa: BLE001 - one benchmark failing does not hide the others' results
            print(f"benchmark {name} FAILED, nothing recorded: {type(e).__name__}: {e}", file=sys.stderr)
            failed.append(name)
            continue
        sections.append(_section(title, [f"- machine: {machine()}", *header(args, command, report, module), "",
                                         module.format_table(report)]))
    if args.summary:
        sections.rewrite()
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def comparison_failures(report) -> list:
    """Why the original's side of a report is missing, anywhere in it (empty: the comparison is whole).

    Benchmarks mark it as ``original_error``, an ``original`` entry holding an ``error``, or a row of the
    original (``"original": True``) whose results hold errors."""
    found: list = []

    def walk(node) -> None:
        if isinstance(node, dict):
            if node.get("original_error"):
                found.append(str(node["original_error"]))
            side = node.get("original")
            if isinstance(side, dict) and side.get("error"):
                found.append(str(side["error"]))
            if side is True:
                found.extend(str(r["error"]) for r in (node.get("results") or {}).values()
                             if isinstance(r, dict) and r.get("error"))
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)

    walk(report)
    return list(dict.fromkeys(found))


SUMMARY_TITLE = results_file.SUMMARY_TITLE


def _is_verdict(line: str) -> bool:
    """The benchmarks end their tables with lines like ``- <target>: <measured> (met)`` or ``(not met: <cause>)``."""
    return line.startswith("- ") and any(mark in line for mark in ("(met", "met)", "not met", "MISSED"))


def targets_summary(sections) -> str:
    """A section listing every target verdict of the current section of each benchmark (``sections``:
    (title, date, text) as results_file.split gives them), with the date each was measured."""
    rows = [f"| {title} ({date}) | {line[2:]} |" for title, date, text in sections
            for line in text.splitlines() if _is_verdict(line)]
    if not rows:
        return ""
    return _section(SUMMARY_TITLE, [
        "- the verdicts of the section of each benchmark below (its date in the first column); "
        "`nox -s bench -- --summary` makes this table again", "",
        "| benchmark | target: measured (verdict) |", "|---|---|", *rows])


if __name__ == "__main__":
    sys.exit(main())
