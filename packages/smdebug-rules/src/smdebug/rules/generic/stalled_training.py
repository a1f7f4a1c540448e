"""StalledTrainingRule: a running job that stopped writing steps."""

from __future__ import annotations

import time
from typing import Optional

from smdebug.core.locations import END_OF_JOB_FILE, index_prefix_for_step
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.params import as_bool, as_float
from smdebug.rules.rule import Rule
from smdebug.core.tensor import StepState


class StalledTrainingRule(Rule):
    """Fires when a run that has not ended wrote no new step for ``threshold`` seconds.

    **Idle time** = now minus the moment the newest step of the run was written. That moment is taken from
    the storage (modification time of the step's newest index file) when the backend reports it, otherwise
    it is the moment this rule first saw the step; before any step exists it is the moment the rule was
    created. A run with its end-of-training marker is never stalled.

    **When it is checked.** The rule runner calls :meth:`check_idle` while it waits for new steps. Run
    step by step (``invoke_rule`` / :meth:`invoke`), the rule waits for a missing step only until the idle
    time reaches ``threshold`` and then fires at that step. It fires once per stall: after a finding it
    stays quiet until a new step appears (and then waits for steps without a time limit).
    :meth:`invoke_at_step` itself never fires -- a step that exists is progress.

    :param threshold: seconds without a new step (> 0). Default ``"1800"``.
    :param stop_training_on_fire: ask the training job to stop when the rule fires (adds a StopTraining
        action, as if ``{"name": "stoptraining"}`` were in the action string). Default ``"False"``.
    :param training_job_name_prefix: which SageMaker training job to stop (the StopTraining action's
        ``training_job_prefix``); stored as ``training_job_name_prefix``. Default None.
    """

    def __init__(self, base_trial, threshold="1800", stop_training_on_fire="False", training_job_name_prefix=None,
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.threshold = as_float(name, "threshold", threshold)
        if not self.threshold > 0 or self.threshold == float("inf"):
            raise SMDebugValueError(f"{name}: threshold must be a positive number of seconds, got {threshold!r}")
        self.stop_training_on_fire = as_bool(name, "stop_training_on_fire", stop_training_on_fire)
        if training_job_name_prefix is not None and not isinstance(training_job_name_prefix, str):
            raise SMDebugValueError(f"{name}: training_job_name_prefix must be a string, got {training_job_name_prefix!r}")
        self.training_job_name_prefix = training_job_name_prefix or None
        if self.stop_training_on_fire:
            self.actions.add_stop_training(self.training_job_name_prefix)
        self._created = time.time()
        self._newest: Optional[int] = None
        self._newest_written = self._created  # wall-clock time the newest step was written
        self._fired_for: object = ()  # newest step when the rule last fired (() = never)

    # --- idle time ----------------------------------------------------------------------------------------
    def _ended(self) -> bool:
        trial = self.base_trial
        return bool(trial.loaded_all_steps) or trial.storage.exists(END_OF_JOB_FILE)

    def _written_at(self, step: int) -> float:
        """When the newest index file of ``step`` was written (now, if the storage cannot tell)."""
        now = time.time()
        storage = self.base_trial.storage
        prefix = index_prefix_for_step(step)
        folder = prefix.rsplit("/", 1)[0]
        try:
            ages = [storage.age(key) for key in storage.list(folder) if key.startswith(prefix)]
        except Exception:  # noqa: BLE001 - a listing problem only costs precision
            ages = []
        ages = [a for a in ages if a is not None]
        return now - min(ages) if ages else now

    def idle_seconds(self) -> float:
        """Seconds since the newest step of the run was written (refreshes the trial)."""
        steps = self.base_trial.steps(show_incomplete_steps=True)
        newest = steps[-1] if steps else None
        if newest != self._newest:
            self._newest = newest
            self._newest_written = self._written_at(newest) if newest is not None else self._created
        return max(0.0, time.time() - self._newest_written)

    def _stall_reason(self) -> Optional[str]:
        """A reason if the run is stalled now and this stall was not reported yet."""
        if self._ended():
            return None
        idle = self.idle_seconds()
        if idle < self.threshold or self._fired_for == self._newest:
            return None
        self._fired_for = self._newest
        after = "before its first step" if self._newest is None else f"after step {self._newest}"
        return f"no new step for {idle:.1f} s {after} (threshold {self.threshold:g} s)"

    def check_idle(self) -> Optional[str]:
        return self._stall_reason()

    # --- step by step -------------------------------------------------------------------------------------
    def invoke(self, step: int) -> None:
        trial = self.base_trial
        if trial.has_passed_step(step) == StepState.NOT_YET_AVAILABLE:  # beyond the steps known so far
            while True:
                reason = self._stall_reason()
                if reason:
                    self.condition_met(step, reason)
                stalled_already = self._fired_for == self._newest
                remaining = None if stalled_already else max(0.05, self.threshold - self.idle_seconds())
                try:
                    trial.wait_for_steps([step], timeout=remaining)
                    break
                except TimeoutError:
                    continue
        super().invoke(step)

    def invoke_at_step(self, step):
        self.mark_evaluated()  # a step that arrived is what this rule judges (it reads no tensor)
        return False
