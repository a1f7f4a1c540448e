"""How fast a layer learns: the relative update of the weight behind a gradient between two of its saves, next to
the other layers' (for rules that read a small gradient as a fault: VanishingGradient, PoorWeightInitialization).

A small gradient is a fault when it stops its layer from learning. Adaptive optimizers (Adam, AdamW, RMSprop,
Adagrad) divide each parameter's step by its own gradient's running scale, so a layer whose gradient is small by
construction (a transformer's separate query and key projections initialised small: each one's gradient is
proportional to the other's weights) keeps pace with the others; plain SGD moves a weight in proportion to its
gradient, and so does Adam once a gradient's entries fall below its epsilon.
"""

from __future__ import annotations

import bisect
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from smdebug.rules.generic.selection import value_at


def weight_of(gradient: str) -> Optional[str]:
    """The parameter a gradient belongs to (the hooks name a gradient after its parameter below one prefix:
    ``gradient/fc1.weight`` -> ``fc1.weight``, ``gradients/dense/kernel`` -> ``dense/kernel``)."""
    return gradient.split("/", 1)[1] if "/" in gradient else None


class LearningPace:
    """Relative updates of the weights behind gradients, read once per (weight, worker, a, b)::

        ratio = ||d - (d . w / ||w||^2) w|| / ||w||      with w = w[a], d = w[b] - w[a]

    the update's part across the weight. Weight decay (``weight_decay`` of SGD, AdamW's decoupled decay) moves
    every weight along itself, towards zero, whatever its gradient: a layer that only decays is not learning."""

    def __init__(self, trial):
        self.trial = trial
        self._ratios: Dict[Tuple[str, Optional[str], int, int], Optional[float]] = {}
        self._intervals: Dict[Tuple[str, int], Optional[Tuple[int, int]]] = {}

    def interval(self, weight: str, step: int) -> Optional[Tuple[int, int]]:
        """The saves ``(a, b)`` of ``weight`` whose difference is its update at ``step``: its save before the step
        and the step (an update that gradients like this one made), or the step and its next save at its first
        save; None when it was not saved at the step or saved once."""
        key = (weight, step)
        if key not in self._intervals:
            found = None
            if self.trial.has_tensor(weight):
                steps = self.trial.tensor(weight).steps()
                at = bisect.bisect_left(steps, step)
                if at < len(steps) and steps[at] == step:
                    if at > 0:
                        found = (steps[at - 1], step)
                    elif len(steps) > 1:
                        found = (step, steps[1])
            if found is None or found[0] < step:  # (the first save's next one may come later on a live run)
                self._intervals[key] = found
            return found
        return self._intervals[key]

    def ratio(self, weight: str, worker: Optional[str], a: int, b: int) -> Optional[float]:
        key = (weight, worker, a, b)
        if key not in self._ratios:
            kwargs = {"worker": worker} if worker else {}
            before, after = value_at(self.trial, weight, a, **kwargs), value_at(self.trial, weight, b, **kwargs)
            ratio = None
            if before is not None and after is not None and np.shape(before) == np.shape(after):
                before = np.asarray(before, dtype=np.float64).ravel()
                squared = float(before @ before)
                if squared > 0 and np.isfinite(squared):
                    update = np.asarray(after, dtype=np.float64).ravel() - before
                    across = update - (float(update @ before) / squared) * before
                    ratio = float(np.linalg.norm(across)) / np.sqrt(squared)
            self._ratios[key] = ratio
        return self._ratios[key]

    def keeps_learning(self, gradient: str, worker: Optional[str], step: int, reference: Mapping[str, Optional[str]],
                       fraction: float) -> bool:
        """Whether the weight behind ``gradient`` (``worker``'s copy; None: as the trial reads it) moved at
        ``step`` at least ``fraction`` of the largest relative update, over the same saves, of the weights behind
        ``reference`` ({gradient: worker}: gradients that are not in question). False whenever that cannot be
        told (``fraction`` 0, weights not saved, saved once or at other steps, no reference that moved: a model
        whose weights all decay to nothing moves each of them alike): the gradient is then judged on its own.

        True also when not one of these weights changed at all over the saves (bit for bit): the optimizer took
        no step there -- a learning rate of 0 (the first step of a warm-up from 0, as the Hugging Face Trainer's
        and ``LinearLR(start_factor=0)``'s), a step GradScaler skipped -- so the step size, not the gradient, kept
        every layer still, and how small a gradient is says nothing of its layer's learning at that step."""
        weight = weight_of(gradient)
        if fraction <= 0 or weight is None:
            return False
        span = self.interval(weight, step)
        if span is None:
            return False
        own = self.ratio(weight, worker, *span)
        others, still = [], [(weight, worker)]
        for other, other_worker in reference.items():
            other_weight = weight_of(other)
            if other_weight and self.interval(other_weight, step) == span:
                r = self.ratio(other_weight, other_worker, *span)
                if r is not None and np.isfinite(r):
                    others.append(r)
                    still.append((other_weight, other_worker))
        largest = max(others) if others else 0.0
        if own == 0 and others and largest == 0 and all(self._unchanged(w, wk, *span) for w, wk in still):
            return True
        return own is not None and largest > 0 and own >= fraction * largest

    def _unchanged(self, weight: str, worker: Optional[str], a: int, b: int) -> bool:
        """Whether ``weight`` is bit-identical at saves ``a`` and ``b`` (a ratio of 0 is also pure decay)."""
        kwargs = {"worker": worker} if worker else {}
        before, after = value_at(self.trial, weight, a, **kwargs), value_at(self.trial, weight, b, **kwargs)
        return before is not None and after is not None and np.array_equal(before, after)
