"""Running a rule over the steps of a trial."""

from __future__ import annotations

from typing import List, Optional

from smdebug.core.logger import get_logger
from smdebug.exceptions import (
    NoMoreData,
    NoMoreProfilerData,
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.evaluation import UNREADABLE, RuleNotEvaluated

logger = get_logger()


def invoke_rule(rule_obj, start_step: int = 0, end_step: Optional[int] = None, raise_eval_cond: bool = False,
                require_evaluation: bool = False) -> List[int]:
    """Evaluate ``rule_obj`` at every step from ``start_step`` (to ``end_step``, exclusive, or to the end of
    training). Returns the steps at which the condition was met.

    Steps or tensors that were not saved are skipped with a log line. Unreadable data (a missing or damaged
    event file, a damaged index file) raises its error, which names the file and the step. Unlike the
    original, reaching the end of a finished run ends the loop cleanly instead of letting ``NoMoreData``
    escape.

    An empty list means either "evaluated, never met" or "found nothing to evaluate": after the call,
    ``rule_obj.evaluation.steps`` counts the steps judged on real data (``.detail(trial)`` says what the
    rule looked for and what the run has). A call that evaluated nothing logs a warning, and with
    ``require_evaluation=True`` raises :class:`~smdebug.rules.evaluation.RuleNotEvaluated` instead -- unless the
    rule said the run gives it nothing to judge by its nature (``evaluation.not_applicable_reason()``: no image
    input, no validation), which is a verdict (``run_rules``' NotApplicable), logged at info level.
    """
    step = start_step or 0
    fired: List[int] = []
    evaluation = getattr(rule_obj, "evaluation", None)
    before = evaluation.steps if evaluation is not None else 0
    while end_step is None or step < end_step:
        try:
            rule_obj.invoke(step)
        except UNREADABLE:
            raise  # the data is there and cannot be read: never a skip (MissingEventFile is a TensorUnavailableForStep)
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable) as e:
            logger.debug("%s: skipping step %s: %s", rule_obj.rule_name, step, e)
        except RuleEvaluationConditionMet as e:
            fired.append(step)
            if raise_eval_cond:
                raise
            logger.info("%s: condition met at step %s", rule_obj.rule_name, step)
            if e.end_of_rule:
                break
        except NoMoreData:
            logger.info("%s: training ended; evaluated up to step %s", rule_obj.rule_name, step - 1)
            break
        except NoMoreProfilerData:
            break
        step += 1
    if evaluation is not None and not fired and evaluation.steps == before:
        inapplicable = evaluation.not_applicable_reason()
        if inapplicable:
            # a verdict, not a failure to evaluate: the run was read and has nothing of this kind (as run_rules
            # says NotApplicable)
            logger.info("%s does not apply to this run: %s", rule_obj.rule_name, inapplicable)
            return fired
        detail = evaluation.detail(rule_obj.base_trial)
        if require_evaluation:
            raise RuleNotEvaluated(rule_obj.rule_name, detail)
        logger.warning("%s evaluated nothing from step %s: %s", rule_obj.rule_name, start_step or 0, detail)
    return fired


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m smdebug.rules.rule_invoker --trial-dir P --rule-name N [--other-trials P1,P2]
    [--start-step S] [--end-step E] [--raise-rule-eval-cond-exception B] [--PARAM VALUE ...]``: the command
    line of smdebug's first releases, kept for scripts that still call it (``smdebug rules run`` is the
    command of this project). Rule parameters are the remaining ``--name value`` pairs, passed as strings.
    Exit status 0 (evaluated, whatever the verdict), 1 (the condition was met and the flag asked to raise),
    2 (bad arguments, unknown rule, unreadable data)."""
    import argparse
    import sys

    from smdebug.exceptions import SMDebugError
    from smdebug.rules.params import as_bool
    from smdebug.rules.registry import build_rule
    from smdebug.trials import create_trial

    parser = argparse.ArgumentParser(prog="python -m smdebug.rules.rule_invoker",
                                     description="Evaluate one rule over a run (see `smdebug rules run`).")
    parser.add_argument("--trial-dir", required=True)
    parser.add_argument("--rule-name", required=True)
    parser.add_argument("--other-trials", default="")
    parser.add_argument("--start-step", type=int, default=0)
    parser.add_argument("--end-step", type=int, default=None)
    parser.add_argument("--raise-rule-eval-cond-exception", default="False")
    args, rest = parser.parse_known_args(argv)
    params = {}
    while rest:
        key = rest.pop(0)
        if not key.startswith("--") or not rest or rest[0].startswith("--"):
            parser.error(f"rule parameters come as --name value pairs, got {key!r}")
        params[key[2:].replace("-", "_")] = rest.pop(0)
    range_steps = (args.start_step, args.end_step) if (args.start_step or args.end_step is not None) else None
    try:
        raise_cond = as_bool("rule_invoker", "raise_rule_eval_cond_exception", args.raise_rule_eval_cond_exception)
        trial = create_trial(args.trial_dir, range_steps=range_steps)
        others = [create_trial(p.strip(), range_steps=range_steps) for p in args.other_trials.split(",") if p.strip()]
        rule = build_rule(args.rule_name, trial, params, other_trials=others)
        fired = invoke_rule(rule, start_step=args.start_step, end_step=args.end_step, raise_eval_cond=raise_cond)
    except RuleEvaluationConditionMet as e:
        print(e, file=sys.stderr)
        return 1
    except SMDebugError as e:
        print(f"rule_invoker: {e}", file=sys.stderr)
        return 2
    print(f"{rule.rule_name}: condition met at steps {fired}" if fired else
          f"{rule.rule_name}: condition not met ({rule.evaluation.steps} steps evaluated)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
