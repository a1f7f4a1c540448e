"""Whether a weight has converged: its gradient is negligible next to its own earlier gradients (for rules that
read a small gradient or a tiny update as a fault: WeightUpdateRatio, VanishingGradient).

This is the relative first-order stopping test of numerical optimisation, ``||g_k|| <= tol * ||g_0||`` (Nocedal &
Wright, *Numerical Optimization*, ch. 3), taken against the largest earlier gradient rather than the first (a
gradient that starts at zero gives no scale). An optimizer's step scales with the gradient (``lr * g`` for SGD) or
stops once its tolerance is met (L-BFGS, line searches), so a gradient four orders of magnitude below its size
earlier in the run leaves the optimizer nothing to apply: a tiny gradient or update is what a converged weight
shows. A gradient that was small from the start (a vanishing one: saturated or badly scaled layers) never shrank
from a larger size of its own, so the test does not hold for it.
"""

from __future__ import annotations

import bisect
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.rules.generic.selection import reduction_at, scalar

#: default share of its largest earlier norm below which a gradient has converged (the rules'
#: ``converged_gradient_fraction``): it matches WeightUpdateRatio's small_threshold of 1e-8, four to five orders of
#: magnitude below ordinary update ratios (1e-4 to 1e-3), so a gradient shrunk by 1e-4 is what takes an SGD update
#: down to that threshold
CONVERGED_GRADIENT_FRACTION = "0.0001"


class GradientConvergence:
    """L2 norms of a run's gradients, each read once per (gradient, global step, worker), and the stopping test
    on them."""

    def __init__(self, trial):
        self.trial = trial
        self._norms: Dict[Tuple[str, int, Optional[str]], Optional[float]] = {}
        #: (gradient, worker) -> (its saved global steps read so far, the largest norm up to each of them, 0 while
        #: none had one): the largest earlier norm before any step by bisection, each save read once
        self._largest: Dict[Tuple[str, Optional[str]], Tuple[List[int], List[float]]] = {}

    def norm(self, gradient: str, step: int, worker: Optional[str]) -> Optional[float]:
        """The L2 norm of ``worker``'s gradient at global ``step`` (None: as the trial reads it), from its value
        or a stored ``l2`` reduction; None when neither was saved there or it is not finite."""
        key = (gradient, step, worker)
        if key not in self._norms:
            norm = reduction_at(self.trial, gradient, step, "l2", worker=worker)
            norm = scalar(norm) if norm is not None else None
            self._norms[key] = norm if norm is not None and np.isfinite(norm) else None
        return self._norms[key]

    def converged(self, gradient: str, worker: Optional[str], first: int, last: int, fraction: float
                  ) -> Optional[str]:
        """Whether every save of ``gradient`` (``worker``'s) at global steps ``first..last`` (at least one) has
        an L2 norm of at most ``fraction`` times the largest one saved before ``first``. Returns how (for a log
        or a finding), or None when it has not converged or nothing tells (``fraction`` 0, no earlier save, a
        save with no norm: only a mean reduction saved)."""
        if not fraction > 0:
            return None
        steps = self.trial.tensor(gradient).steps()
        start, end = bisect.bisect_left(steps, first), bisect.bisect_right(steps, last)
        during = [self.norm(gradient, g, worker) for g in steps[start:end]]
        if not during or any(n is None for n in during):
            return None
        # (0 when no earlier save had a norm: nothing to compare with)
        largest, now = self._largest_before(gradient, worker, steps, start), max(during)
        if largest > 0 and now <= fraction * largest:
            return f"gradient norm {now:.3g} <= {fraction:g} x its earlier {largest:.3g}"
        return None

    def _largest_before(self, gradient: str, worker: Optional[str], steps: List[int], count: int) -> float:
        """The largest norm of ``gradient`` (``worker``'s) over its first ``count`` saves ``steps`` (0 when none
        had one), from running maxima kept as the run is read (a run followed while it trains gains saves)."""
        seen, maxima = self._largest.setdefault((gradient, worker), ([], []))
        if seen != steps[:len(seen)]:  # (not a prefix of the saves now: read afresh)
            seen.clear()
            maxima.clear()
        for g in steps[len(seen):count]:
            norm = self.norm(gradient, g, worker)
            maxima.append(max(maxima[-1] if maxima else 0.0, norm if norm is not None else 0.0))
            seen.append(g)
        return maxima[count - 1] if count > 0 else 0.0
