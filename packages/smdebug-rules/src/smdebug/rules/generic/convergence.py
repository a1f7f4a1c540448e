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

from typing import Dict, Optional, Tuple

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
        earlier = [n for n in (self.norm(gradient, g, worker) for g in steps if g < first) if n is not None]
        during = [self.norm(gradient, g, worker) for g in steps if first <= g <= last]
        if not earlier or not during or any(n is None for n in during):
            return None
        largest, now = max(earlier), max(during)
        if largest > 0 and now <= fraction * largest:
            return f"gradient norm {now:.3g} <= {fraction:g} x its earlier {largest:.3g}"
        return None
