"""Whether a weight's values are still a fresh random initialisation, judged from the values and the shape alone.

The frameworks' default initialisations of dense and convolution kernels are i.i.d. uniform on a symmetric interval
fixed by the kernel's shape:

* PyTorch ``nn.Linear`` / ``nn.Conv*`` (``reset_parameters``: ``kaiming_uniform_(a=sqrt(5))``):
  U(-1/sqrt(fan_in), +1/sqrt(fan_in)), the weight laid out ``(out, in, *kernel)``, ``fan_in = in * prod(kernel)``;
* Keras ``Dense`` / ``Conv*`` (``glorot_uniform``): U(-sqrt(6/(fan_in+fan_out)), +...), the kernel laid out
  ``(*kernel, in, out)``, ``fan_in = in * prod(kernel)``, ``fan_out = out * prod(kernel)``;
* Glorot uniform in PyTorch's layout (``nn.init.xavier_uniform_``, the usual explicit choice).

A weight is at one of them when every value lies within its bound (training moves the values near the edges out
of it almost surely: a bell-shaped sample of the same spread has 8% of its values beyond ``sqrt(3) * std``) and a
Kolmogorov-Smirnov test against that uniform does not reject. Trained (pretrained) weights fail one or the other by
far; a weight frozen before it was ever trained passes both. Normal initialisations (``nn.Embedding``, the
``normal_(0, 0.02)`` of transformer code) are not tested: nothing here tells them from trained weights.
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

import numpy as np

#: fewest values a weight needs to be judged: with 256 values a bell-shaped sample of the uniform's spread has all
#: of them within the bound with probability 0.917**256 ~ 2e-10, and the KS test resolves a gap of ~0.12 between
#: the sample's distribution and the uniform's; with a few dozen values (a small bias, a 4x4 kernel) a trained
#: weight could pass both by chance
MIN_VALUES = 256
#: the KS test's significance: a weight truly at its initialisation is taken for a trained one once in 1000
KS_ALPHA = 1e-3
#: values the KS test reads at most (every k-th value: i.i.d. values stay i.i.d.); sorting a 16M-value kernel
#: at every judged run would cost more than the rest of the rule
MAX_VALUES = 1 << 16
#: relative slack on the bound: float32 draws of U(-b, b), b computed in float64, stay within a float32 rounding
BOUND_SLACK = 1e-6
#: (the values' precision, its slack): a model cast to bfloat16 or float16 after its initialisation rounds each
#: draw to the nearest value of that type, which can lie above the bound by half a unit in the last place (up to
#: 2**-8 of it for bfloat16, 2**-11 for float16); the slack is one unit, to be safe
_LOW_PRECISION = (("bfloat16", 2.0 ** -7), ("float16", 2.0 ** -10))


def uniform_initialisations(shape: Tuple[int, ...]) -> List[Tuple[str, float]]:
    """``[(what, bound)]``: the standard uniform initialisations a weight of ``shape`` could have been drawn from,
    each U(-bound, +bound); [] for fewer than two dimensions (a bias's bound depends on its layer's kernel)."""
    if len(shape) < 2 or any(int(d) <= 0 for d in shape):
        return []
    shape = tuple(int(d) for d in shape)
    receptive = math.prod(shape[2:])  # PyTorch: (out, in, *kernel)
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    k_receptive = math.prod(shape[:-2])  # Keras: (*kernel, in, out)
    k_in, k_out = shape[-2] * k_receptive, shape[-1] * k_receptive
    found: List[Tuple[str, float]] = []
    for what, bound in (("PyTorch's default for nn.Linear/nn.Conv, U(+-1/sqrt(fan_in))", 1 / math.sqrt(fan_in)),
                        ("Keras' default glorot_uniform", math.sqrt(6 / (k_in + k_out))),
                        ("glorot (xavier) uniform", math.sqrt(6 / (fan_in + fan_out)))):
        if all(not math.isclose(bound, b, rel_tol=1e-12) for _, b in found):
            found.append((what, bound))
    return found


def ks_uniform_pvalue(values: np.ndarray, bound: float) -> float:
    """The p-value of the one-sample Kolmogorov-Smirnov test of ``values`` against U(-bound, +bound), from the
    asymptotic Kolmogorov distribution with Stephens' small-sample correction (good to a few percent from n = 5 on,
    far more than a test at 1e-3 needs)."""
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = x.size
    cdf = np.clip((x + bound) / (2 * bound), 0.0, 1.0)
    i = np.arange(1, n + 1, dtype=np.float64)
    d = max(float(np.max(i / n - cdf)), float(np.max(cdf - (i - 1) / n)))
    lam = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    if lam < 0.2:
        return 1.0  # (the series below converges slowly there; Q(0.2) = 1 to 12 digits)
    k = np.arange(1, 101, dtype=np.float64)
    p = 2 * float(np.sum((-1) ** (k - 1) * np.exp(-2 * k * k * lam * lam)))
    return min(1.0, max(0.0, p))


def _slack(flat: np.ndarray) -> float:
    """The relative slack on the bound for these values: a low precision's when every value is exactly one of
    that type's (a float32 draw is also a bfloat16 value with probability 2**-16, so 256 of them never are)."""
    with np.errstate(over="ignore", invalid="ignore"):  # (values beyond a type's range are not of it)
        values = flat.astype(np.float32)
        if np.array_equal(values, flat) and not np.any(values.view(np.uint32) & np.uint32(0xFFFF)):
            return _LOW_PRECISION[0][1]
        if np.array_equal(values.astype(np.float16).astype(np.float64), flat):
            return _LOW_PRECISION[1][1]
    return BOUND_SLACK


def random_initialisation(value) -> Optional[str]:
    """Which standard uniform initialisation ``value`` (a weight's saved values, with their shape) still holds,
    said for a message (``"every value within +-0.125 ... (KS p = 0.43)"``); None when none, or when the weight
    has too few values or non-finite ones to tell."""
    value = np.asarray(value)
    if value.size < MIN_VALUES or not np.issubdtype(value.dtype, np.floating):
        return None
    flat = value.astype(np.float64, copy=False).ravel()
    if not np.all(np.isfinite(flat)):
        return None
    largest = float(np.max(np.abs(flat)))
    slack = _slack(flat)
    sample = flat[::max(1, flat.size // MAX_VALUES)]
    for what, bound in uniform_initialisations(value.shape):
        if largest > bound * (1 + slack):
            continue
        p = ks_uniform_pvalue(sample, bound)
        if p >= KS_ALPHA:
            return f"every value within +-{bound:.4g} and uniform on it ({what}; KS p = {p:.2g})"
    return None
