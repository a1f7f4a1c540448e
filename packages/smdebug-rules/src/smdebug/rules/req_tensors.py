"""The tensors a rule needs at a step, declared before the rule runs and fetched in one go."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set

from smdebug.exceptions import TensorUnavailable
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.selection import NamePattern


class RequiredTensorsForTrial:
    """Tensor name -> steps needed, for one trial."""

    def __init__(self, trial):
        self.trial = trial
        self._steps: Dict[str, Set[int]] = {}

    def add(self, name: str, steps: Iterable[int], should_match_regex: bool = False) -> None:
        steps = set(steps)
        if should_match_regex:
            pattern = NamePattern(name)
            matched = [tname for tname in self.trial.tensor_names() if pattern.search(tname)]
            looking_for(f"tensors matching {name!r}", matched)
            for tname in matched:
                self._steps.setdefault(tname, set()).update(steps)
            return
        found = self.trial.has_tensor(name)
        looking_for(f"tensor {name!r}", [name] if found else [])
        if not found:
            raise TensorUnavailable(name)
        self._steps.setdefault(name, set()).update(steps)

    def get_names(self) -> List[str]:
        return sorted(self._steps)

    def get_tensor_steps(self, name: str) -> List[int]:
        return sorted(self._steps.get(name, ()))

    def get(self):
        return [self.trial.tensor(n) for n in self.get_names()]

    def fetch(self) -> None:
        """Wait for the needed steps, then read every needed value (raises like ``Tensor.value``; a rule
        reading them is evaluated on real data)."""
        all_steps = sorted(set().union(*self._steps.values())) if self._steps else []
        if all_steps:
            self.trial.wait_for_steps(all_steps)
        for name, steps in self._steps.items():
            tensor = self.trial.tensor(name)
            for step in sorted(steps):
                tensor.value(step)

    def clear(self) -> None:
        self._steps.clear()


class RequiredTensors:
    """Required tensors of a rule across its base trial and other trials."""

    def __init__(self, base_trial, other_trials: Optional[list] = None):
        self.base_trial = base_trial
        self.other_trials = list(other_trials or [])
        self._per_trial = {t: RequiredTensorsForTrial(t) for t in [base_trial, *self.other_trials]}

    def _for(self, trial) -> RequiredTensorsForTrial:
        return self._per_trial[trial if trial is not None else self.base_trial]

    def add(self, name: str, steps: Iterable[int], trial=None, should_match_regex: bool = False) -> None:
        self._for(trial).add(name, steps, should_match_regex)

    def get_names(self, trial=None) -> List[str]:
        return self._for(trial).get_names()

    def get_tensor_steps(self, name: str, trial=None) -> List[int]:
        return self._for(trial).get_tensor_steps(name)

    def get(self, trial=None):
        return self._for(trial).get()

    def fetch(self) -> None:
        for required in self._per_trial.values():
            required.fetch()

    def clear(self) -> None:
        for required in self._per_trial.values():
            required.clear()
