"""Write an interactive, self-contained HTML report of a run (or of runs side by side).

The page shows what the run holds, each section only where there is data for it: losses and metrics;
weight and gradient l2 norms per tensor and their histograms over steps; the share of dead or saturated
activations; for XGBoost, feature importance over rounds, a SHAP summary and tree depth; for runs of
several workers, gradient norms per worker; and rule verdicts, each finding marked on the chart of the
tensor it is about (or on the loss curve) with its text on hover.

  smdebug report /tmp/run -o report.html
  smdebug rules run /tmp/run --rule loss_not_decreasing --rule vanishing_gradient -o /tmp/run/rule_results.json
  smdebug report /tmp/run -o report.html                   # picks up /tmp/run/rule_results.json
  smdebug report s3://bucket/run -o report.html --rules s3://bucket/results.json
  smdebug report /tmp/healthy /tmp/broken -o compare.html  # two runs' curves overlaid
  smdebug report /tmp/run -o report.html --follow          # kept current while the run trains

Charts: hover for values, drag to zoom (box zoom; wheel zoom and pan from the toolbar), click a legend
entry to hide its line, and smooth the lines with the slider at the top. The page works offline: Bokeh's
JavaScript is embedded, nothing is loaded from elsewhere, so it can be mailed or archived as one file.
Every saved step is read; a line keeps at most --max-points points, each bucket of steps keeping its
smallest and largest value, and NaN/inf values are marked where they occur.

Weight and gradient norms: at most 8 charts of 16 tensors per section; of a run with more, those a rule
finding is about and others spread evenly over the names are drawn, and the page says how many are not.

Rule verdicts come from --rules FILE (local or s3://; once per run when comparing), or from
rule_results.json in the run's directory. Verdicts computed for another run, or up to an earlier step
than the run now has, are shown with a warning (on the page and on stderr). --follow rewrites the page
every --interval seconds while the run grows (the page reloads itself, keeping its scroll position and
zoom) and stops when training ends (or after --timeout seconds). Needs Bokeh: pip install
'smdebug-core[cli]'. Exit status: 0, 2 (error).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import List, Tuple

from smdebug.cli import _common as c
from smdebug.core.interruption import watch_ctrl_c
from smdebug.core.names import one_line, printable

#: rule results the report picks up from the run's own directory (kept here for older imports)
RULE_RESULTS_FILE = "rule_results.json"
MAX_RUNS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="TRIAL",
                        help=f"the run's directory or s3://bucket/prefix; up to {MAX_RUNS} runs are compared side by side")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the HTML file to write; - writes the page to stdout (not with --follow)")
    parser.add_argument("--rules", action="append", metavar="FILE",
                        help="rule runner result (smdebug rules run ... -o FILE), local or s3://; give it once per "
                             f"TRIAL when comparing; default: TRIAL/{RULE_RESULTS_FILE} if present")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="name of a TRIAL in the page (once per TRIAL; default: the run's directory name)")
    parser.add_argument("--max-points", type=int, default=1500, metavar="N",
                        help="points drawn per line (default 1500; each bucket keeps its extremes; 0: every step)")
    parser.add_argument("--title", help="page title (default: the run's name)")
    parser.add_argument("--follow", action="store_true",
                        help="keep rewriting the page while the run trains; stop when training ends")
    parser.add_argument("--interval", type=c.pause_seconds, default=10.0, metavar="SECONDS",
                        help="--follow: seconds between rewrites, and the page's reload interval (default 10)")
    parser.add_argument("--timeout", type=c.wait_seconds, default=None, metavar="SECONDS",
                        help="--follow: stop after this long even if training has not ended (default: no limit)")
    parser.add_argument("--wait", type=c.wait_seconds, default=0.0, metavar="SECONDS",
                        help="wait this long for the runs' collection files to appear (a job just starting); default 0")
    c.add_progress_arguments(parser)


def need_bokeh(command: str):
    try:
        import bokeh  # noqa: F401
        from bokeh.embed import components  # noqa: F401
    except ImportError as e:
        raise c.CliError(f"{command} needs Bokeh ({e}); install it with: pip install '{c.PLOT_EXTRA}'") from None


def _labels(args) -> list:
    if args.label and len(args.label) != len(args.runs):
        raise c.CliError(f"--label given {len(args.label)} time(s) for {len(args.runs)} run(s): give one per run")
    if args.label:
        return list(args.label)
    names = [printable(os.path.basename(os.path.normpath(r.rstrip("/"))) or r) for r in args.runs]
    if len(set(names)) < len(names):  # the same directory name in two places: number them
        names = [f"{n} #{i + 1}" for i, n in enumerate(names)]
    return names


def _facts(trial) -> dict:
    import datetime

    from smdebug.core.locations import END_OF_JOB_FILE

    global_steps = trial.steps()
    by_mode: dict = {}
    for g in global_steps:
        m, ms = trial.mode_modestep(g)
        by_mode.setdefault(m.name if m is not None else "GLOBAL", []).append(ms if ms is not None else g)
    names = trial.tensor_names()
    colls = trial.collections()
    ended = None
    if trial.loaded_all_steps:
        try:
            age = trial.storage.age(END_OF_JOB_FILE)
        except Exception:  # noqa: BLE001 - only informative
            age = None
        if age is not None:
            ended = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=age)).isoformat(
                timespec="seconds")
    return {
        "global_steps": global_steps,
        "steps": {m: by_mode[m] for m in ("TRAIN", "EVAL", "PREDICT", "GLOBAL") if m in by_mode},
        "tensor_count": len(names),
        "collections": [(cn, sum(1 for n in names if colls[cn].matches(n))) for cn in sorted(colls)],
        "ended": ended,
    }


def _absent(groups: dict, collection_sizes) -> list:
    """What the run does not hold, of what the report draws. A metric that is also a loss (XGBoost files its
    evaluation metrics in both) is drawn once, with the losses, so the metrics group can be empty while the
    run's metric collections are not: those are not called absent."""
    from smdebug.cli.report.content import METRIC_COLLECTIONS

    sizes = dict(collection_sizes)
    out = []
    for what in ("losses", "metrics", "weights", "gradients", "activations"):
        if groups[what]:
            continue
        if what == "metrics" and any(sizes.get(cn) for cn in METRIC_COLLECTIONS):
            continue
        out.append(what)
    return out


class Report:
    """The runs of one report, opened once; :meth:`page` reads what is new and draws the page."""

    def __init__(self, args):
        from smdebug.cli.report import verdicts as vd
        from smdebug.cli.report.content import RunInfo
        from smdebug.cli.report.lines import LineReader

        if len(args.runs) > MAX_RUNS:
            raise c.CliError(f"at most {MAX_RUNS} runs side by side ({len(args.runs)} given)")
        if args.rules and len(args.rules) != len(args.runs):
            raise c.CliError(f"--rules given {len(args.rules)} time(s) for {len(args.runs)} run(s): give one per run")
        self.args = args
        self.vd = vd
        labels = _labels(args)
        self.runs = []
        for path, label in zip(args.runs, labels):
            trial = c.open_trial(path, args.wait)
            self.runs.append(RunInfo(label=label, trial=trial, reader=LineReader(trial)))
        self.rules_paths = list(args.rules) if args.rules else [None] * len(self.runs)
        self._warned: set = set()
        self.load_rules()

    def load_rules(self) -> None:
        for run, path in zip(self.runs, self.rules_paths):
            try:
                run.rules = self.vd.load(run.trial, path)
            except self.vd.RuleResultsError as e:
                raise c.CliError(str(e)) from None
            self._warn(run)

    def _warn(self, run) -> None:
        """Say on stderr what the page says about the verdicts it shows (or could not read): the summary
        and a glance at the page read as if they were the run's. Once each, however often --follow reads
        them again: told apart without their numbers, or a result lagging a live run ("judged up to step
        40; the run now has steps to 42") would be said again at every rewrite."""
        res = run.rules
        if res is None:
            return
        prefix = f"{run.label}: " if len(self.runs) > 1 else ""
        found = [f"rule verdicts not shown: {res.unusable}"] if res.unusable else res.mismatch
        for text in found:
            line = one_line(f"smdebug report: warning: {prefix}{text}")
            kind = re.sub(r"\d+", "#", line)
            if kind not in self._warned:
                self._warned.add(kind)
                c.note(line)

    def refresh(self) -> None:
        for run in self.runs:
            run.trial.refresh_data()
        self.load_rules()

    @property
    def ended(self) -> bool:
        return all(r.trial.loaded_all_steps for r in self.runs)

    def page(self, live=None) -> tuple:
        from smdebug.cli.report import content, page
        from smdebug.cli.report.charts import Drawer

        args = self.args
        stages = ["reading the runs", "drawing"]
        bar = c.progress(stages, total=len(stages), desc="report", enabled=args.progress)
        next(bar, None)
        max_points = args.max_points or None
        sections = content.build(self.runs)
        many = len(self.runs) > 1
        timeline = content.place_findings(sections, self.runs, many)
        facts = []
        for run in self.runs:
            f = _facts(run.trial)
            f["absent"] = _absent(run.groups, f["collections"])
            facts.append(f)
        next(bar, None)
        title = args.title or ("smdebug report: " + " vs ".join(r.label for r in self.runs))
        html = page.render(title=title, runs=self.runs, facts=facts, sections=sections, timeline=timeline,
                           drawer=Drawer(max_points or 0, live=bool(live)), live=live, max_points=args.max_points,
                           finished=self.ended)
        for _ in bar:
            pass
        charts = sum(len(s.charts) for s in sections) + (1 if timeline.data.get("findings") else 0)
        return html, charts, sections


def write_atomic(path: str, text: str) -> None:
    from smdebug.cli._common import CliError
    from smdebug.core.storage.safe_fs import check_output_path

    check_output_path(path)  # (never replace /dev/null, a FIFO or a folder with the page)
    try:
        _replace_with(path, text)
    except OSError as e:  # (named after the output, not the temporary file beside it)
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None


def _replace_with(path: str, text: str) -> None:
    """Write ``text`` to a new temporary file beside ``path``, then rename it over ``path``."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:  # (never fails on a name)
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a report is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _summary(args, report, charts, sections) -> str:
    verdicts = "; ".join(_verdicts_said(r.rules) for r in report.runs if r.rules is not None)
    tensors = sum(len(r.trial.tensor_names()) for r in report.runs)
    names = ", ".join(s.sid for s in sections) or "none"
    return (f"wrote {args.output}: {charts} chart(s) ({names}), {tensors} tensor(s)"
            + (f", {one_line(verdicts)}" if verdicts else ""))


def _verdicts_said(res) -> str:
    """Where the verdicts came from, for the summary; a file that could not be used is said to be so (the
    summary said "rule verdicts from" it, while the page showed none), and verdicts that do not fit the run
    are marked as such."""
    if res.unusable:
        return f"rule verdicts could not be read ({res.unusable})"
    if res.mismatch:
        return f"rule verdicts from {res.source} (which do not match this run: see the warning)"
    return f"rule verdicts from {res.source}"


def _inputs(args) -> List[Tuple[str, str]]:
    """The files the page is made from, which it must never replace: the --rules files and each run's own
    rule verdicts (read when no --rules file is given)."""
    from smdebug.cli.report.verdicts import RULE_RESULTS_FILE

    found = [(f"the --rules file {path}", path) for path in args.rules or ()]
    found += [(f"the rule verdicts of the run {run}", os.path.join(run, RULE_RESULTS_FILE)) for run in args.runs]
    return found


def run(args: argparse.Namespace) -> int:
    if args.max_points < 0:
        raise c.CliError("--max-points must be 0 or more")
    if args.follow and not args.interval > 0:
        raise c.CliError("--interval must be positive")
    need_bokeh("smdebug report")
    c.check_output(args.output, _inputs(args))  # (said before the runs are read)
    if args.output == c.STDOUT:
        c.check_stdout("the HTML page", [(args.follow, "--follow (rewriting the page)")])
    report = Report(args)
    if not args.follow:
        html, charts, sections = report.page()
        if args.output == c.STDOUT:
            c.write_stdout(html.encode("utf-8", "backslashreplace"))
            print(_summary(args, report, charts, sections).replace("wrote -", "wrote the page to stdout", 1),
                  file=sys.stderr)
            return c.EXIT_OK
        write_atomic(args.output, html)
        print(_summary(args, report, charts, sections))
        return c.EXIT_OK
    return follow(args, report)


def follow(args, report) -> int:
    """Rewrite the page every --interval seconds until every run has ended (or --timeout)."""
    try:
        with watch_ctrl_c() as ctrl_c:
            return _rewrite_until_ended(args, report, ctrl_c)
    except KeyboardInterrupt:
        html, charts, sections = report.page(live=None)  # a last page that no longer reloads itself
        write_atomic(args.output, html)
        print(_summary(args, report, charts, sections) + " (interrupted)")
        return 130


def _rewrite_until_ended(args, report, ctrl_c) -> int:
    start = time.monotonic()
    last = None
    while True:
        ctrl_c.check()  # (a Ctrl-C whose KeyboardInterrupt Python dropped)
        ended = report.ended
        timed_out = args.timeout is not None and time.monotonic() - start >= args.timeout
        html, charts, sections = report.page(live=None if ended or timed_out else args.interval)
        write_atomic(args.output, html)
        steps = [len(r.trial.steps()) for r in report.runs]
        if steps != last:
            print(f"{time.strftime('%H:%M:%S')} {args.output}: {', '.join(map(str, steps))} step(s), {charts} chart(s)",
                  file=sys.stderr, flush=True)
            last = steps
        if ended:
            print(_summary(args, report, charts, sections) + " (training ended)")
            return c.EXIT_OK
        if timed_out:
            print(_summary(args, report, charts, sections) + f" (stopped following after {args.timeout:g} s; "
                  "training has not ended)")
            return c.EXIT_OK
        # (never past the deadline: --interval 30 --timeout 1 took 43 s)
        pause = args.interval if args.timeout is None else max(
            0.0, min(args.interval, args.timeout - (time.monotonic() - start)))
        time.sleep(pause)
        report.refresh()
