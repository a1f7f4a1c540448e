"""The base class of every rule: a condition evaluated on a trial, step by step."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import List, Optional

from smdebug.analysis.utils import no_refresh
from smdebug.core.logger import get_logger
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules.req_tensors import RequiredTensors


class Rule(ABC):
    """Subclass it and implement :meth:`invoke_at_step`; return a truthy value when the condition is met.

    Extra constructor parameters should accept strings (rule runners pass parameters as strings).
    ``action_str`` is accepted for compatibility; actions arrive with the rule runner.
    """

    def __init__(self, base_trial, other_trials: Optional[List] = None, action_str: Optional[str] = None):
        self.base_trial = base_trial
        self.other_trials = list(other_trials or [])
        self.trials = [base_trial, *self.other_trials]
        self.req_tensors = RequiredTensors(base_trial, self.other_trials)
        self.rule_name = type(self).__name__
        self.logger = get_logger()
        self.action_str = action_str
        self.report = {"RuleTriggered": 0, "Violations": 0, "Details": {}, "Datapoints": 0, "RuleParameters": ""}

    def set_required_tensors(self, step: int) -> None:
        """Optionally declare what the rule needs at ``step`` with ``self.req_tensors.add(...)``."""

    @abstractmethod
    def invoke_at_step(self, step: int):
        """Evaluate the condition at global step ``step``; truthy means the condition is met."""

    def invoke(self, step: int) -> None:
        """Wait for ``step``, fetch what the rule declared, evaluate; raise RuleEvaluationConditionMet if met."""
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            self.req_tensors.clear()
            self.set_required_tensors(step)
            self.req_tensors.fetch()
            met = self.invoke_at_step(step)
        if met:
            self.report["RuleTriggered"] += 1
            self.report["Violations"] += 1
            raise RuleEvaluationConditionMet(self.rule_name, step)
