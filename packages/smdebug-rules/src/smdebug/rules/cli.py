"""``smdebug rules list|show|run``: the command-line face of the registry and the runner.

The arguments are defined in smdebug-core (smdebug/cli/rules_cmd.py) so ``smdebug --help`` works without
this package; this module does the work. Progress goes to stderr, results to stdout/--output.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from typing import Optional

from smdebug.exceptions import SMDebugError
from smdebug.rules.registry import find_rule, list_rules, rule_parameters
from smdebug.rules.results import ERROR, EXIT_CODES, Finding, RuleResult, RunResult
from smdebug.rules.runner import run_rules


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
    """Human-readable progress on stderr: every finding as it happens, a step counter at most once a second."""

    def __init__(self, quiet: bool, stream=sys.stderr):
        self.quiet = quiet
        self.stream = stream
        self._last = 0.0

    def event(self, event: str, rule: RuleResult, finding: Optional[Finding]) -> None:
        if self.quiet:
            return
        if event == "finding":
            where = f"step {finding.step}" + (f" ({finding.mode} {finding.mode_step})" if finding.mode else "")
            print(f"\r[{rule.name}] issue at {where}: {finding.reason or 'condition met'}", file=self.stream)
        elif event == "error":
            print(f"\r[{rule.name}] error: {rule.error}", file=self.stream)

    def progress(self, result: RunResult) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < 1.0:
            return
        self._last = now
        print(f"\revaluated {result.steps_evaluated} steps (last {result.last_step})", end="", file=self.stream,
              flush=True)


def _run(args) -> int:
    progress = _Progress(args.quiet)
    # no --rule: the recommended rules of the run's framework (run_rules picks them once the run is open)
    requests = [(r["name"], r["params"], r["action"]) for r in args.rules] if args.rules else None
    others = [p.strip() for p in args.other_trials.split(",") if p.strip()]
    output = args.output

    def on_event(event, rule, finding):
        progress.event(event, rule, finding)

    def on_progress(result):
        progress.progress(result)

    if not args.quiet:
        mode = "following" if args.follow else "evaluating"
        names = ", ".join(r["name"] for r in args.rules) if args.rules else "the recommended rules"
        print(f"{mode} {names} on {args.trial}", file=sys.stderr)
    try:
        result = run_rules(args.trial, requests, other_trials=others, start_step=args.start_step,
                           end_step=args.end_step, follow=args.follow, timeout=args.timeout,
                           poll_interval=args.poll_interval, stop_training_on_issue=args.stop_training,
                           on_event=on_event, on_progress=on_progress)
    except (SMDebugError, OSError) as e:
        print(f"\nsmdebug rules run: {e}", file=sys.stderr)
        return EXIT_CODES[ERROR]
    if output:
        result.save(output)
    if args.json:
        print(result.to_json())
    if not args.quiet:
        _summary(result)
    return result.exit_code


def _summary(result: RunResult) -> None:
    out = sys.stderr
    state = "training ended" if result.training_ended else "training still running"
    print(f"\r{result.steps_evaluated} steps evaluated (last step {result.last_step}; {state})", file=out)
    width = max(len(r.name) for r in result.rules)
    for r in result.rules:
        detail = ""
        if r.error:
            detail = r.error
        elif r.findings:
            first = r.findings[0]
            more = f" (+{r.findings_total - 1} more)" if r.findings_total > 1 else ""
            detail = f"first at step {first.step}: {first.reason or 'condition met'}{more}"
        print(f"  {r.name.ljust(width)}  {r.status:<14} {detail}", file=out)
    print(f"result: {result.status}", file=out)
