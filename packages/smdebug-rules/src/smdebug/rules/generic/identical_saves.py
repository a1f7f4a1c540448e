"""Stretches of bit-identical saves of a parameter: "no optimizer step between these saves" told apart from
"the parameter stopped changing".

A hook step is a forward call of the registered model (PyTorch, MXNet) or a batch (Keras), not an optimizer
step: gradient accumulation, a model called several times per update (siamese, triplet and multi-view code, a
WGAN critic called on real, fake and interpolated batches, SAM's two passes) and skipped steps (a GradScaler
overflow) all save a parameter unchanged at consecutive steps while training is healthy. WeightUpdateRatio and
UnchangedTensor both ask this before calling such a stretch a fault."""

from __future__ import annotations

import bisect
import hashlib
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.rules.generic.loss_rules import mode_label
from smdebug.rules.generic.selection import value_at


class IdenticalSaves:
    """Digests of a trial's saved parameter values, cached, and the stretch test over them."""

    def __init__(self, trial):
        self.base_trial = trial
        self._cache: Dict[Tuple[str, Optional[str], ModeKeys], Dict[int, Optional[bytes]]] = {}

    def _digest(self, name: str, worker: Optional[str], mode: ModeKeys, step: int) -> Optional[bytes]:
        """A digest of ``worker``'s value of the weight at mode step ``step`` (None when no value was saved
        there)."""
        cache = self._cache.setdefault((name, worker, mode), {})
        if step not in cache:
            value = value_at(self.base_trial, name, step, mode=mode, worker=worker)
            if value is None:
                cache[step] = None
            else:
                value = np.ascontiguousarray(value)
                cache[step] = hashlib.sha1(repr((value.dtype.str, value.shape)).encode()
                                           + value.tobytes()).digest()
        return cache[step]

    def same(self, name: str, worker: Optional[str], mode: ModeKeys, a: int, b: int) -> Optional[bool]:
        """Whether ``worker``'s values of the weight at mode steps ``a`` and ``b`` are bit-identical (None when
        either was not saved as a value)."""
        first, last = self._digest(name, worker, mode, a), self._digest(name, worker, mode, b)
        return None if first is None or last is None else first == last

    def no_optimizer_step(self, name: str, worker: Optional[str], mode: ModeKeys, steps: List[int], p: int,
                          s: int) -> Optional[str]:
        """Whether an update of exactly 0 (bit-identical weights at ``p`` and ``s``) reads as "no optimizer step
        between these saves" rather than as a tiny step: the weight is identical over a stretch of consecutive saves
        (the *stretch* holding ``p..s``; ``steps``: every mode step the weight was saved at, in order) and moves at
        other saves of the run. That is gradient accumulation (one optimizer step every k forward calls, each a hook
        step), a model called several times per update (siamese and multi-view code, an RL rollout before one update),
        a skipped step (a ``GradScaler`` skipping an overflow). It does when the weight moves at a save after the
        stretch; when the stretch reaches the last save, only once training has ended (a run followed while it trains
        may move at its next save) and only if the weight moved before it and the stretch spans no more steps than the
        longest stretch without a move that ended (the run's own period between optimizer steps): a weight that stops
        moving for good (steps no longer taken) is judged as before. A weight that never moves over the run is judged
        as before too: an optimizer that never steps, one over a copy of the model, a learning rate so small that
        float rounding cancels the update. The saves compared are ``worker``'s. Returns how (for the log), or None."""
        i, j = bisect.bisect_left(steps, p), bisect.bisect_left(steps, s)
        if i >= len(steps) or steps[i] != p or j >= len(steps) or steps[j] != s:
            return None
        same = self._digest(name, worker, mode, s)
        if same is None or any(self._digest(name, worker, mode, steps[k]) != same for k in range(i, j)):
            return None
        end = j
        while end + 1 < len(steps) and self._digest(name, worker, mode, steps[end + 1]) == same:
            end += 1
        if end + 1 < len(steps):
            if self._digest(name, worker, mode, steps[end + 1]) is None:
                return None
            return f"moves again at {mode_label(mode)} {steps[end + 1]}"
        if not self.base_trial.loaded_all_steps:
            return None
        start = i
        while start > 0 and self._digest(name, worker, mode, steps[start - 1]) == same:
            start -= 1
        if start == 0:
            return None  # never moved over the run
        # the stretches of identical saves before this one (each ended by a move): the run's period
        longest, k = 0, 0
        while k < start:
            first = k
            digest = self._digest(name, worker, mode, steps[first])
            while k + 1 < start and self._digest(name, worker, mode, steps[k + 1]) == digest:
                k += 1
            longest = max(longest, steps[k] - steps[first])
            k += 1
        if steps[end] - steps[start] <= longest:
            return (f"identical over {mode_label(mode)}s {steps[start]}-{steps[end]}, no longer than the run's "
                    f"longest stretch without a move ({longest} steps)")
        return None
