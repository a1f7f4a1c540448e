"""``smdebug rules list|show|run``: the command-line face of the registry and the runner.

The arguments are defined in smdebug.rules.command (the command smdebug-rules registers with the
``smdebug`` command line); this module does the work. Results (the verdict table, ``--json``) go to stdout; progress,
findings as they happen and logs go to stderr.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from typing import Optional

from smdebug.cli._common import CliError, check_output
from smdebug.core.names import one_line
from smdebug.exceptions import SMDebugError
from smdebug.rules.command import LIVE_FINDINGS_PER_RULE
from smdebug.rules.registry import find_rule, list_rules, rule_parameters
from smdebug.rules.results import ERROR, EXIT_CODES, IN_PROGRESS, TRAINING_FAILED, Finding, RuleResult, RunResult
from smdebug.rules.runner import run_rules

#: seconds between two writes of --output while following a run
SAVE_INTERVAL = 2.0


def run_command(args) -> int:
    command = getattr(args, "rules_command", None)
    if command == "list":
        return _list(args)
    if command == "show":
        return _show(args)
    if command == "run":
        return _run(args)
    print("usage: smdebug rules {list,show,run} ... (see smdebug rules --help)", file=sys.stderr)
    return EXIT_CODES[ERROR]


def _list(args) -> int:
    infos = list_rules()
    if args.json:
        print(json.dumps([info.to_dict() for info in infos], indent=2))
        return 0
    width = max((len(i.name) for i in infos), default=4)
    for info in infos:
        print(f"{info.name.ljust(width)}  {info.pack:<10}  {info.description}")
    return 0


def _show(args) -> int:
    try:
        info = find_rule(args.name)
        cls = info.load()
    except (SMDebugError, ImportError) as e:
        print(f"smdebug rules show: {e}", file=sys.stderr)
        return EXIT_CODES[ERROR]
    params = rule_parameters(cls)
    doc = inspect.getdoc(cls) or ""
    if args.json:
        print(json.dumps({**info.to_dict(), "parameters": params, "doc": doc}, indent=2, default=str))
        return 0
    print(f"{info.name} ({info.pack} pack) — {info.description}\n")
    if params:
        print("parameters (default):")
        for name, default in params.items():
            print(f"  {name} = {'(required)' if default is None else default}")
        print()
    print(doc)
    return 0


class _Progress:
    """What goes to stderr while rules run: findings and errors as they happen, and a tqdm progress bar
    (on a terminal, once the work has taken more than a second -- at once when following a run, long work
    by nature; always with --progress; never with -q, --no-progress or when stderr is not a terminal).

    A rule that fires keeps firing at every later step (a NaN loss stays NaN): the first
    LIVE_FINDINGS_PER_RULE findings of each rule are printed, then one line saying the rest are counted, so
    a live run's stream stays readable; --verbose prints every finding."""

    def __init__(self, quiet: bool, bar: Optional[bool], total: Optional[int], follow: bool = False,
                 stream=sys.stderr, verbose: bool = False):
        self.quiet = quiet
        self.stream = stream
        self.verbose = verbose
        self._printed = {}  # rule name -> findings printed so far
        self.bar = None
        if quiet or bar is False:
            return
        if bar is None and not (hasattr(stream, "isatty") and stream.isatty()):
            return
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency
            return
        self.bar = tqdm(total=total, desc="evaluating", unit="step", file=stream, leave=bool(bar),
                        delay=0 if (bar or follow) else 1.0, dynamic_ncols=True)

    def say(self, line: str) -> None:
        if self.quiet:
            return
        line = one_line(line)  # (a finding quotes names from the run, which may hold newlines)
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def event(self, event: str, rule: RuleResult, finding: Optional[Finding]) -> None:
        if event == "finding":
            printed = self._printed.get(rule.name, 0)
            self._printed[rule.name] = printed + 1
            if printed > LIVE_FINDINGS_PER_RULE and not self.verbose:
                return
            where = f"step {finding.step}" + (f" ({finding.mode} {finding.mode_step})" if finding.mode else "")
            if printed == LIVE_FINDINGS_PER_RULE and not self.verbose:
                self.say(f"[{rule.name}] issue at {where} and maybe later: counted, not printed (the verdict "
                         "table counts them; -v prints every one)")
                return
            self.say(f"[{rule.name}] issue at {where}: {finding.reason or 'condition met'}")
        elif event == "error":
            self.say(f"[{rule.name}] error: {rule.error}")

    def progress(self, result: RunResult) -> None:
        if self.bar is not None:
            self.bar.update(result.steps_evaluated - self.bar.n)
            issues = sum(r.findings_total for r in result.rules)
            self.bar.set_postfix_str(f"step {result.last_step}, {issues} issue{'s' if issues != 1 else ''}",
                                     refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _open(path: str, follow: bool, **kwargs):
    """A trial for the command line: a missing local directory is a message, not a traceback (unless
    following: a job that is just starting creates it)."""
    from smdebug.core.storage.base import is_s3_path
    from smdebug.trials import create_trial

    from smdebug.exceptions import NoSmdebugRun

    if not path.strip():
        raise SMDebugError("the run's path is empty (give . for the current directory)")
    if not follow and not is_s3_path(path) and not os.path.lexists(os.path.expanduser(path.strip())):
        raise SMDebugError(f"{path}: no such directory")
    try:
        trial = create_trial(path, **kwargs)
    except NoSmdebugRun as e:  # (a file, a FIFO, a link loop...: the trial says what is there instead)
        raise NoSmdebugRun(e.path, e.reason, hint="" if follow else "--follow waits for a run about to start") from None
    # (judged once, not followed: a missing event file of a run that has not ended -- a crashed job's -- is an
    # error at once, not 200 s of silence; probe 17b F3)
    trial.wait_for_missing_event_files = follow
    return trial


def _run(args) -> int:
    def fail(message: str) -> int:
        print(one_line(f"smdebug rules run: {message}"), file=sys.stderr)
        return EXIT_CODES[ERROR]

    try:
        if args.ended and args.follow:
            raise CliError("--ended reads the run as finished: it cannot be followed too (give one of them)")
        for request in args.rules or ():  # a typo is a usage error, found before anything is read
            find_rule(request["name"])
        # /dev/null, a FIFO, an unwritable folder, a run's own files, "" (an unset variable: nothing was saved,
        # silently): said before the rules run
        if args.output is not None:
            check_output(args.output, s3_ok=True)
        range_steps = (args.start_step, args.end_step) if (args.start_step or args.end_step) else None
        # a job that is just starting has no collection files yet: --follow waits for them (up to --timeout; with
        # none, without limit: a None here read as "do not wait", and a follower started before training exited 2)
        wait = (float("inf") if args.timeout is None else args.timeout) if args.follow else 0.0
        trial = _open(args.trial, args.follow, range_steps=range_steps, wait_for_collections=wait)
        others = [_open(p.strip(), args.follow, wait_for_collections=wait)
                  for p in args.other_trials.split(",") if p.strip()]
    except (SMDebugError, OSError, ImportError, CliError) as e:
        return fail(str(e))
    total = None
    if not args.follow:
        total = len([s for s in trial.steps() if s >= args.start_step
                     and (args.end_step is None or s < args.end_step)])
    progress = _Progress(args.quiet, args.progress, total, follow=args.follow, verbose=getattr(args, "verbose", False))
    saver = _Saver(args.output)
    if not args.quiet:
        verb = "following" if args.follow else "evaluating"
        names = ", ".join(r["name"] for r in args.rules) if args.rules else "the recommended rules"
        print(f"{verb} {names} on {trial.path}", file=sys.stderr)

    def on_event(event, rule, finding):
        progress.event(event, rule, finding)

    def on_progress(result):
        progress.progress(result)
        if args.follow:
            saver.save(result, throttle=True)

    try:
        # no --rule: the recommended rules of the run's framework (run_rules picks them)
        requests = [(r["name"], r["params"], r["action"]) for r in args.rules] if args.rules else None
        result = run_rules(trial, requests,
                           other_trials=others, start_step=args.start_step, end_step=args.end_step,
                           follow=args.follow, timeout=args.timeout, poll_interval=args.poll_interval,
                           stop_training_on_issue=args.stop_training, on_event=on_event, on_progress=on_progress,
                           ended=args.ended)
    except (SMDebugError, OSError) as e:
        progress.close()
        return fail(str(e))
    progress.close()
    code = 130 if result.interrupted else result.exit_code  # Ctrl-C: the shell's convention
    try:
        saver.save(result)
    except (SMDebugError, OSError, ValueError) as e:
        print(f"smdebug rules run: cannot write {args.output}: {e}", file=sys.stderr)
        code = EXIT_CODES[ERROR]
    if args.json:
        print(result.to_json())
    elif not args.quiet:
        print(verdict_table(result, exit_code=code))
    return code


class _Saver:
    """Writes the result document to ``--output`` (local or s3://): at the end, and while following at most
    every SAVE_INTERVAL seconds."""

    def __init__(self, path: Optional[str]):
        self.path = path
        self._last = 0.0

    def save(self, result: RunResult, throttle: bool = False) -> None:
        if not self.path:
            return
        now = time.monotonic()
        if throttle:
            if now - self._last < SAVE_INTERVAL:
                return
            try:
                result.save(self.path)
            except (SMDebugError, OSError, ValueError) as e:  # the final write reports it
                print(f"smdebug rules run: cannot write {self.path} yet: {e}", file=sys.stderr)
        else:
            result.save(self.path)
        self._last = now


def verdict_table(result: RunResult, exit_code: Optional[int] = None) -> str:
    """The human-readable result: one line per rule, then the run's status and the command's exit code
    (``exit_code`` when it is not the verdict's: the result document could not be written, or Ctrl-C)."""
    from smdebug.cli._common import table

    if result.read_as_ended:
        state = "read as ended (--ended)"
    elif result.training_ended and result.abnormal_ends:
        state = "training did not end normally"
    elif result.training_ended and result.stopped_on_request:
        state = "training stopped on request"
    elif result.training_ended:
        state = "training ended"
    elif result.waiting_for_workers:
        state = "its workers ended, but not as many as its collections say"
    else:
        state = "training still running"
    if result.interrupted:
        state += ", interrupted"
    rows = []
    run_has = []  # what the run has, which every NotEvaluated/NotApplicable detail ends with: said once, below
    for r in result.rules:
        if r.error:
            detail = r.error
        elif r.findings:
            first = r.findings[0]
            more = f" (+{r.findings_total - 1} more)" if r.findings_total > 1 else ""
            detail = f"first at step {first.step}: {first.reason or 'condition met'}{more}"
        else:
            detail, sep, has = (r.detail or "").partition(RUN_HAS)
            if sep and has not in run_has:
                run_has.append(has)
        rows.append((r.name, r.status, r.steps_evaluated, r.tensors_evaluated, detail))
    last = f"last {result.last_step}; " if result.last_step is not None else ""
    # (each line but the table's holds names from the run, which may hold newlines: one_line; the table's
    # cells are made one line by table())
    lines = [one_line(f"{result.trial}: {result.steps_evaluated} steps ({last}{state})"),
             table(("RULE", "STATUS", "STEPS", "TENSORS", "DETAIL"), rows, align_right=(2, 3)),
             *(one_line(f"the run has {has}") for has in run_has)]
    lines.extend(one_line(f"warning: {note} (the verdicts judge what the run holds)") for note in result.hook_failures)
    if result.stopped_on_request:
        again = ("" if any(r.findings for r in result.rules) else
                 "; no rule finds the issue again in what was saved, but a run stopped for an issue is no pass")
        lines.append(one_line(f"stopped: {result.stopped_on_request}: the verdicts judge the run up to there{again}"))
    if result.status == TRAINING_FAILED:
        lines.append("training failed: no rule found an issue in the steps saved before training stopped, but "
                     "it did not end normally (see the warning above): a verdict on a job that died")
    if result.status == IN_PROGRESS and result.not_final:
        lines.append(one_line(f"not final: {result.not_final}"))
    code = result.exit_code if exit_code is None else exit_code
    lines.append(f"result: {result.status} (exit status {code}"
                 + (f": the verdict's is {result.exit_code})" if code != result.exit_code else ")"))
    return "\n".join(lines)


#: how the detail of a rule that judged nothing ends (Evaluation.detail, the runner's not-applicable reason)
RUN_HAS = "; the run has "
