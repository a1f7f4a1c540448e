"""List, describe and run rules over a run.

  smdebug rules list [--json]
  smdebug rules show vanishing_gradient
  smdebug rules run TRIAL --rule vanishing_gradient --param threshold=1e-6 \\
                          --rule exploding_tensor [--follow] [--stop-training] [--output results.json]
  smdebug rules run TRIAL        # no --rule: the recommended rules for the framework that wrote TRIAL

--param and --action apply to the --rule before them. Exit status of `run`: 0 no issues found, 1 issues
found, 2 error (a rule failed, data unreadable, bad arguments), 3 not evaluated (no rule fired, no error, a
rule found nothing it could evaluate), 4 not final (the run has not ended; no issue so far), 5 training failed
(no issue found, but the training script died).
"""

from __future__ import annotations

# smdebug-rules registers this module as the `smdebug rules` command (plugin.py, smdebug_register_commands):
# smdebug-core imports it only when `smdebug rules ...` runs. It imports nothing heavy; the work is in
# smdebug.rules.cli, imported by run().
import argparse

from smdebug.cli._common import MAX_PAUSE, pause_seconds, wait_seconds

#: findings of one rule printed as they happen; the rest are counted (the verdict table and --output have all)
LIVE_FINDINGS_PER_RULE = 3

#: the longest pause between two looks at a followed run (the core CLI's: time.sleep overflows near 1e300)
MAX_POLL_INTERVAL = MAX_PAUSE


RUN_DESCRIPTION = """\
Evaluate rules over a run, step by step: a finished run, or (--follow) a run while it trains.

Each rule ends with a verdict: IssuesFound (it fired), NoIssuesFound (it judged real data and never
fired), NotEvaluated (the run has nothing the rule can evaluate: the verdict says what it looked for
and what the run has), InProgress (the run has not ended: the verdict is not final) or Error (the rule could not be built or
crashed, or its data cannot be read: the file and the step are named). The run's verdict is the first
of Error, IssuesFound, TrainingFailed, NotEvaluated, InProgress that any rule has (TrainingFailed: the
hook recorded that the training script died -- an unhandled exception, a signal), else NoIssuesFound.

The verdict table goes to stdout (--json prints the result document instead); findings as they
happen (the first few of each rule; -v: every one), progress and logs go to stderr; -q silences all but
--json. TRIAL, --other-trials and --output take
local paths or s3://bucket/prefix."""

RUN_EPILOG = """\
examples:
  smdebug rules run /tmp/run                    # the recommended rules for the run's framework
  smdebug rules run /tmp/run --rule vanishing_gradient --rule exploding_tensor
  smdebug rules run /tmp/run --rule dead_relu --param threshold_layer=30 -o /tmp/run/rule_results.json
  smdebug rules run s3://bucket/run --rule loss_not_decreasing --param num_steps=20 --json
  smdebug rules run /tmp/run --rule exploding_tensor --follow --stop-training --timeout 3600
  smdebug rules run /tmp/run --rule similar_across_runs --other-trials /tmp/run2 -q; echo $?
  smdebug rules run /tmp/run --ended            # a job that crashed or was killed: judge what it wrote

exit status:
  0  no issues found: every rule judged the whole run
  1  issues found
  2  error: a rule could not be built or failed, data cannot be read, bad arguments or unknown rule
  3  not evaluated: no rule fired and none failed, but a rule found nothing it could evaluate
  4  not final (InProgress): no issue so far, but the run has not ended (still training, or waiting for a
     worker the collections name); the table says why. Evaluate again later, or follow it (--follow);
     a run whose job died never ends by itself: --ended judges it as finished
  5  training failed (TrainingFailed): no issue found, but the hook recorded that the training script died
     (an unhandled exception, a signal; `smdebug ls RUN` shows what it wrote): the run is not a healthy one
  130  interrupted (Ctrl-C): the table and the result document show what was evaluated so far

`smdebug rules list` shows every rule, `smdebug rules show NAME` its parameters and formula."""


class _AddRule(argparse.Action):
    def __call__(self, parser, namespace, value, option_string=None):
        rules = getattr(namespace, "rules", None) or []
        rules.append({"name": value, "params": {}, "action": None})
        namespace.rules = rules


class _AddParam(argparse.Action):
    def __call__(self, parser, namespace, value, option_string=None):
        rules = getattr(namespace, "rules", None)
        if not rules:
            parser.error(f"{option_string} {value}: give --rule NAME before its parameters")
        if option_string == "--action":
            rules[-1]["action"] = value
            return
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            parser.error(f"{option_string} {value!r}: use KEY=VALUE")
        rules[-1]["params"][key.strip()] = val


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION")
    lst = sub.add_parser("list", help="every rule of every installed rule pack")
    lst.add_argument("--json", action="store_true", help="print JSON")
    show = sub.add_parser("show", help="a rule's parameters, defaults and description")
    show.add_argument("name", help="rule name (vanishing_gradient or VanishingGradient)")
    show.add_argument("--json", action="store_true", help="print JSON")
    run = sub.add_parser("run", help="evaluate rules over a run (finished, or live with --follow)",
                         description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("trial", metavar="TRIAL", help="the run's directory or s3://bucket/prefix")
    run.add_argument("--rule", dest="rules", action=_AddRule, metavar="NAME", default=None,
                     help="a rule to evaluate (repeatable; vanishing_gradient or VanishingGradient); "
                          "none: the recommended rules for the run's framework")
    run.add_argument("--param", action=_AddParam, metavar="KEY=VALUE", help="parameter of the preceding --rule")
    run.add_argument("--action", action=_AddParam, metavar="JSON",
                     help="action string of the preceding --rule (e.g. '{\"name\": \"stoptraining\"}')")
    run.add_argument("--other-trials", default="", metavar="PATHS",
                     help="comma-separated runs for rules that compare runs (similar_across_runs)")
    run.add_argument("--start-step", type=int, default=0, metavar="N")
    run.add_argument("--end-step", type=int, default=None, metavar="N", help="first step not evaluated")
    run.add_argument("--follow", action="store_true", help="keep evaluating new steps until training ends")
    run.add_argument("--ended", action="store_true",
                     help="the run will not be written to any more (its job crashed or was killed, so it has "
                          "no end marker): judge what it holds as a finished run")
    run.add_argument("--timeout", type=wait_seconds, default=None, metavar="SECONDS",
                     help="stop following after this (inf: no limit)")
    run.add_argument("--poll-interval", type=pause_seconds, default=0.5, metavar="SECONDS",
                     help=f"how often to look for new steps while following (at most {MAX_POLL_INTERVAL:g})")
    run.add_argument("--stop-training", action="store_true",
                     help="stop the training job writing the run as soon as any rule fires")
    run.add_argument("--output", "-o", metavar="FILE",
                     help="write the JSON result document here, a local path or s3://bucket/key (while "
                          "following: rewritten every few seconds)")
    run.add_argument("--json", action="store_true",
                     help="print the JSON result document on stdout instead of the table")
    run.add_argument("--quiet", "-q", action="store_true",
                     help="print nothing (no verdict table, findings or progress); the exit status tells")
    # (SUPPRESS: `smdebug -v rules run` keeps the top-level -v, which a default of False here would undo)
    run.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                     help=f"print every finding as it happens (default: the first {LIVE_FINDINGS_PER_RULE} of each "
                          "rule, then a count), and debug logs, the traceback of a rule that failed among them")
    bar = run.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                     help="always show a progress bar on stderr (default: only on a terminal, after 1 s)")
    bar.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                     help="never show a progress bar")


def run(args) -> int:
    import sys

    from smdebug.rules.cli import run_command

    try:
        code = run_command(args)
        sys.stdout.flush()  # a reader that went away is found here, not at interpreter exit
        return code
    except BrokenPipeError:
        # `smdebug rules show NAME | head`: the reader has what it wanted; stop quietly, like a tool
        # killed by SIGPIPE but without a traceback. Later writes (interpreter exit) go to /dev/null.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
