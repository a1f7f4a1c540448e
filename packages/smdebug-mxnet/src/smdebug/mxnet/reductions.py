"""Reductions computed with MXNet NDArray operators where the array lives, with smdebug's one
definition of each (population std/variance, vector norms of the flattened tensor), so only a few
numbers are copied to the host when a collection asks for reductions instead of raw tensors."""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import mxnet as mx
import numpy as np

nd = mx.nd


def _op(x, op: str):
    """``op`` of the flat 1-D array ``x`` as a 1-element NDArray."""
    if op == "min":
        return nd.min(x)
    if op == "max":
        return nd.max(x)
    if op == "mean":
        return nd.mean(x)
    if op == "sum":
        return nd.sum(x)
    if op == "prod":
        return nd.prod(x)
    if op in ("std", "variance"):
        var = nd.mean(nd.square(x - nd.mean(x)))
        return nd.sqrt(var) if op == "std" else var
    if op == "l1":
        return nd.sum(nd.abs(x))
    if op == "l2":
        return nd.norm(x)
    if op == "median":
        # as numpy: the mean of the two middle values for an even count
        s = nd.sort(x)
        n = x.shape[0]
        return (s[(n - 1) // 2] + s[n // 2]) / 2
    raise ValueError(f"Unknown reduction {op!r}")


def device_reductions(value, ops: Sequence[Tuple[str, bool]]) -> Optional[Dict[Tuple[str, bool], np.ndarray]]:
    """``{(op, abs): numpy scalar}`` for a dense floating-point NDArray, else None (core computes them)."""
    if not isinstance(value, nd.NDArray) or value.stype != "default" or value.size == 0:
        return None
    dtype = np.dtype(value.dtype)
    if dtype.kind != "f":
        return None
    with mx.autograd.pause():  # never part of the user's graph
        x = value.reshape((-1,))
        if dtype.itemsize < 4:
            x = x.astype("float32")  # accumulate in float32 at least, as the core does
        results = [_op(nd.abs(x) if is_abs else x, op).reshape((1,)) for op, is_abs in ops]
        host = nd.concat(*results, dim=0).asnumpy()  # one small copy for all of them
    return {key: host[i] for i, key in enumerate(ops)}
