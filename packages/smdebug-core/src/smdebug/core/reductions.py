"""The one definition of every reduction, shared by all frameworks and by the analysis side.

The original computed std/variance and norms differently per framework (unbiased in PyTorch, matrix
norms for 2-D tensors in TF/numpy, an error for >=3-D). We use: population std/variance (ddof=0) and
vector norms of the flattened tensor, for every framework. Results are float64 numpy scalars; the
hook stores each as a 1-element array (the on-disk convention).
"""

from __future__ import annotations

import numpy as np

from smdebug.core.error_base import SMDebugTypeError, SMDebugValueError
from smdebug.core.reduction_config import ALLOWED_NORMS, ALLOWED_REDUCTIONS

from smdebug.core.tfevent.stored_dtypes import stored_form

REDUCTION_PREFIX = "smdebug/reductions/"



class EmptyTensorError(ValueError):
    """A reduction other than a norm asked of a tensor with no values (its min, max, mean... do not exist)."""

def _as_float_array(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return x.astype(np.float64)
    if np.issubdtype(x.dtype, np.floating) and x.dtype.itemsize < 4:
        # float16/bfloat16-as-float16 sums overflow quickly; accumulate in float32 at least.
        return x.astype(np.float32)
    return x


def compute_reduction(value: np.ndarray, op: str, abs: bool = False):
    """Compute reduction or norm ``op`` ("min", "l2", ...) of ``value``; ``abs`` applies |x| first."""
    x = stored_form(np.asarray(value))  # bfloat16, float8, int4...: reduced as the values they are saved as
    if x.dtype.kind in "USO":
        raise SMDebugTypeError(f"Cannot compute reduction {op} of a string tensor")
    x = _as_float_array(x)
    if abs:
        x = np.abs(x)
    if op in ("l1", "l2"):
        flat = x.reshape(-1)
        return np.linalg.norm(flat, ord=1 if op == "l1" else 2)
    if x.size == 0:
        raise EmptyTensorError(f"Cannot compute reduction {op} of an empty tensor")
    if op == "min":
        return np.amin(x)
    if op == "max":
        return np.amax(x)
    if op == "mean":
        return np.mean(x)
    if op in ("std", "variance"):
        # Accumulate in float64: squaring float32 values above ~1e19 overflows (the tensors rules look at
        # are often the ones that blew up). The result keeps the tensor's dtype; inf if it does not fit.
        with np.errstate(over="ignore"):
            result = np.std(x, dtype=np.float64) if op == "std" else np.var(x, dtype=np.float64)
            return result.astype(x.dtype) if x.dtype.kind == "f" else result
    if op == "sum":
        return np.sum(x)
    if op == "prod":
        return np.prod(x)
    if op == "median":
        return np.median(x)
    # (SMDebugValueError, still a ValueError: a user's reduction name, e.g. reduction_value(step, "l9"))
    raise SMDebugValueError(f"Unknown reduction {op!r}; choose from {', '.join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)}")


def reduction_tensor_name(tensor_name: str, op: str, abs: bool, keep_device_suffix: bool = False) -> str:
    """Name under which a reduction is stored: ``smdebug/reductions/[abs_]<op>/<tensor>``.

    Non-TF hooks drop ``:<digits>`` suffixes (as the original did) so names stay stable across devices.
    """
    import re

    name = f"{'abs_' if abs else ''}{op}/{tensor_name}"
    if not keep_device_suffix:
        name = re.sub(r":\d+", "", name)
    return REDUCTION_PREFIX + name


def parse_reduction_tensor_name(name: str):
    """Inverse of :func:`reduction_tensor_name`: returns (tensor name, op, abs) or None."""
    if not name.startswith(REDUCTION_PREFIX):
        return None
    rest = name[len(REDUCTION_PREFIX):]
    op, sep, tname = rest.partition("/")
    if not sep or not tname:
        return None
    is_abs = op.startswith("abs_")
    return tname, (op[4:] if is_abs else op), is_abs
