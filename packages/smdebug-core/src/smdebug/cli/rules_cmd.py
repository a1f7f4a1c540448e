"""List, describe and run rules over a run (needs smdebug-rules).

  smdebug rules list [--json]
  smdebug rules show vanishing_gradient
  smdebug rules run TRIAL --rule vanishing_gradient --param threshold=1e-6 \
                          --rule exploding_tensor [--follow] [--stop-training] [--output results.json]
  smdebug rules run TRIAL        # no --rule: the recommended rules for the framework that wrote TRIAL

--param and --action apply to the --rule before them. Exit status of `run`: 0 no issues found (or the
run is still training and none so far), 1 issues found, 2 error (a rule could not run, bad arguments).
"""

from __future__ import annotations

import argparse


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
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("trial", help="the run's directory or s3:// path")
    run.add_argument("--rule", dest="rules", action=_AddRule, metavar="NAME", default=None,
                     help="a rule to evaluate (repeatable); none: the recommended rules for the run's framework")
    run.add_argument("--param", action=_AddParam, metavar="KEY=VALUE", help="parameter of the preceding --rule")
    run.add_argument("--action", action=_AddParam, metavar="JSON",
                     help="action string of the preceding --rule (e.g. '{\"name\": \"stoptraining\"}')")
    run.add_argument("--other-trials", default="", metavar="PATHS",
                     help="comma-separated runs for rules that compare runs (similar_across_runs)")
    run.add_argument("--start-step", type=int, default=0, metavar="N")
    run.add_argument("--end-step", type=int, default=None, metavar="N", help="first step not evaluated")
    run.add_argument("--follow", action="store_true", help="keep evaluating new steps until training ends")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="stop following after this")
    run.add_argument("--poll-interval", type=float, default=0.5, metavar="SECONDS")
    run.add_argument("--stop-training", action="store_true",
                     help="stop the training job writing the run as soon as any rule fires")
    run.add_argument("--output", "-o", metavar="FILE", help="write the JSON result here (kept up to date)")
    run.add_argument("--json", action="store_true", help="print the JSON result on stdout")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args) -> int:
    try:
        from smdebug.rules.cli import run_command
    except ImportError as e:
        import sys

        print(f"smdebug rules: the rules package is not installed ({e}); pip install 'smdebug-core[rules]'",
              file=sys.stderr)
        return 2
    return run_command(args)
