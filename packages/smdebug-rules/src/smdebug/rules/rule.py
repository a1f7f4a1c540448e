"""The base class of every rule: a condition evaluated on a trial, step by step."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import List, Optional

from smdebug.analysis.utils import no_refresh
from smdebug.core.logger import WarnsOnce, get_logger
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import evaluation as _evaluation
from smdebug.rules.evaluation import Evaluation
from smdebug.rules.req_tensors import RequiredTensors


class Rule(WarnsOnce, ABC):
    """Subclass it and implement :meth:`invoke_at_step`.

    ``invoke_at_step`` returns a falsy value when all is well, and ``True`` -- or better, a sentence saying
    what is wrong (``"gradient/fc1_weight: mean |g| = 3e-09 < 1e-07"``) -- when the condition is met. The
    sentence becomes the reason reported by :class:`RuleEvaluationConditionMet`, the rule runner's results
    and the actions' messages.

    Extra constructor parameters should accept strings (SageMaker and the rule runner pass parameters as
    strings; see :mod:`smdebug.rules.params`). ``action_str`` is the JSON action string of the original
    (:mod:`smdebug.rules.action`): the actions run every time the condition is met.

    **Verdicts.** The framework keeps :attr:`evaluation`: the steps at which the rule read real data (a
    value of a tensor), the tensors it read and what it looked for (see :mod:`smdebug.rules.evaluation`).
    A rule that read nothing at any step is reported as *not evaluated*, not as "no issues"; unreadable
    data (a missing or damaged event file, a damaged index file) met while evaluating a step is raised
    even if ``invoke_at_step`` caught it. So skip what was not saved (``except TensorUnavailableForStep``)
    and let everything else propagate. Call :meth:`not_evaluated` when what the step offered is not enough
    to judge, :meth:`mark_evaluated` when the rule judges something other than tensor values.
    """

    def __init__(self, base_trial, other_trials: Optional[List] = None, action_str: Optional[str] = None):
        self.base_trial = base_trial
        self.other_trials = _as_trials(other_trials)
        self.trials = [base_trial, *self.other_trials]
        self.req_tensors = RequiredTensors(base_trial, self.other_trials)
        self.rule_name = type(self).__name__
        self.logger = get_logger()
        self.action_str = action_str
        self.report = {"RuleTriggered": 0, "Violations": 0, "Details": {}, "Datapoints": 0, "RuleParameters": ""}
        #: reason of the last time the condition was met
        self.last_reason: Optional[str] = None
        #: until when (``time.monotonic()``) the rule may wait for another run (``other_trials``) to reach a step:
        #: None, without limit (a rule invoked on its own waits as the original's did). The runner sets it: judging
        #: a run afterwards, the moment it starts (nothing is waited for: a run that never ends, its job killed,
        #: held a comparison for ever); following, its timeout
        self.others_wait_until: Optional[float] = None
        from smdebug.rules.action.actions import Actions  # boto3 is imported only when an action runs

        self.actions = Actions(action_str, rule_name=self.rule_name, trial=base_trial)

    @property
    def evaluation(self) -> Evaluation:
        """What the rule evaluated so far (steps judged on real data, tensors read, what it looked for)."""
        ev = self.__dict__.get("_evaluation")
        if ev is None:  # created on first use: subclasses may set attributes before calling __init__
            ev = self.__dict__["_evaluation"] = Evaluation()
        return ev

    def reached(self, step: int, at: int) -> bool:
        """Whether the step being evaluated, ``step``, is at or past ``at`` (the step of a record the hook kept of
        the run), or is the last step of a finished run: a record dated at a step the run did not save is said
        there rather than never."""
        trial = self.base_trial
        return step >= at or bool(trial.loaded_all_steps and step >= trial.last_complete_step)

    def mark_evaluated(self, *tensor_names: str) -> None:
        """Say that the step being evaluated was judged, on data other than tensor values (or on values
        the rule read at an earlier step). Wins over :meth:`not_evaluated` at the same step."""
        _evaluation.mark_evaluated(tensor_names)

    def not_evaluated(self, reason: str) -> None:
        """Say that what the step offered is not enough to judge (e.g. fewer samples than the rule needs):
        the step does not count as evaluated, and ``reason`` is reported if no step ever does."""
        _evaluation.not_evaluated(reason)

    def not_applicable(self, reason: str) -> None:
        """Say that the run, as read, gives this rule nothing to judge by its nature (the input is no image,
        the run has no validation at all): if no step is ever judged the verdict is ``NotApplicable`` with
        ``reason``, not ``NotEvaluated``. The step does not count as evaluated."""
        _evaluation.not_applicable(reason)

    def caveat(self, reason: Optional[str]) -> None:
        """Say what the rule could not judge although it judged the run (one of its tests not reached): shown as
        the detail of a NoIssuesFound verdict, so that "no issues" does not claim that test. None withdraws it."""
        self.evaluation.caveat = reason

    def others_wait_left(self) -> Optional[float]:
        """Seconds the rule may still wait for another run to reach a step (``others_wait_until``): None, no
        limit; 0, none."""
        if self.others_wait_until is None:
            return None
        return max(0.0, self.others_wait_until - time.monotonic())

    def set_required_tensors(self, step: int) -> None:
        """Optionally declare what the rule needs at ``step`` with ``self.req_tensors.add(...)``."""

    @abstractmethod
    def invoke_at_step(self, step: int):
        """Evaluate the condition at global step ``step``; truthy (ideally a reason string) means met."""

    def check_idle(self) -> Optional[str]:
        """Called by the rule runner while it waits for new steps; return a reason if the condition is met
        without any new step (e.g. training stalled). Most rules only look at steps and keep this no-op."""
        return None

    def invoke(self, step: int) -> None:
        """Wait for ``step``, fetch what the rule declared, evaluate; raise RuleEvaluationConditionMet if met.

        Unreadable data met while evaluating raises its error (MissingEventFile, EventFileCorrupted,
        IndexReaderException: each names the file and the step), whatever ``invoke_at_step`` caught.
        """
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials), self.evaluation.watch(step, self.trials):
            self.req_tensors.clear()
            self.set_required_tensors(step)
            self.req_tensors.fetch()
            met = self.invoke_at_step(step)
        if met:
            self.condition_met(step, met if isinstance(met, str) else None)

    def condition_met(self, step: int, reason: Optional[str] = None, end_of_rule: bool = False) -> None:
        """Record a finding, run the actions and raise :class:`RuleEvaluationConditionMet`.

        Rules that evaluate on their own schedule (not via :meth:`invoke_at_step`) call this directly.
        """
        self.last_reason = reason
        self.report["RuleTriggered"] += 1
        self.report["Violations"] += 1
        self.actions.invoke(step, reason)
        raise RuleEvaluationConditionMet(self.rule_name, step, end_of_rule=end_of_rule, reason=reason)


def _as_trials(other_trials) -> list:
    """``other_trials`` as trials: SageMaker and the command line pass paths (a comma-separated string)."""
    if not other_trials:
        return []
    if isinstance(other_trials, str):
        other_trials = [p.strip() for p in other_trials.split(",") if p.strip()]
    trials = []
    for item in other_trials:
        if isinstance(item, str):
            from smdebug.trials import create_trial

            item = create_trial(item)
        trials.append(item)
    return trials
