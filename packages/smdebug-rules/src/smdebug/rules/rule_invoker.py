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

logger = get_logger()


def invoke_rule(rule_obj, start_step: int = 0, end_step: Optional[int] = None, raise_eval_cond: bool = False) -> List[int]:
    """Evaluate ``rule_obj`` at every step from ``start_step`` (to ``end_step``, exclusive, or to the end of
    training). Returns the steps at which the condition was met.

    Steps or tensors that were not saved are skipped with a log line. Unlike the original, reaching the end
    of a finished run ends the loop cleanly instead of letting ``NoMoreData`` escape.
    """
    step = start_step or 0
    fired: List[int] = []
    while end_step is None or step < end_step:
        try:
            rule_obj.invoke(step)
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
    return fired
