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
    ``require_evaluation=True`` raises :class:`~smdebug.rules.evaluation.RuleNotEvaluated` instead.
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
        detail = evaluation.detail(rule_obj.base_trial)
        if require_evaluation:
            raise RuleNotEvaluated(rule_obj.rule_name, detail)
        logger.warning("%s evaluated nothing from step %s: %s", rule_obj.rule_name, start_step or 0, detail)
    return fired
