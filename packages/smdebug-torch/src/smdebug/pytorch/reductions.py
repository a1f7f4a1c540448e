"""Reductions computed with torch on the tensor's device, with smdebug's one definition of each
(population std/variance, vector norms of the flattened tensor), so only a few numbers cross to the
host when a collection asks for reductions instead of raw tensors."""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np
import torch


def _op(x: torch.Tensor, op: str) -> torch.Tensor:
    if op == "min":
        return x.min()
    if op == "max":
        return x.max()
    if op == "mean":
        return x.mean()
    if op == "sum":
        return x.sum()
    if op == "prod":
        return x.prod()
    if op == "median":
        # numpy's median averages the two middle values; torch.median returns the lower one
        flat = x.flatten().sort().values
        n = flat.numel()
        return (flat[(n - 1) // 2] + flat[n // 2]) / 2
    if op == "std":
        return x.std(unbiased=False)
    if op == "variance":
        return x.var(unbiased=False)
    if op == "l1":
        return x.abs().sum()
    if op == "l2":
        return torch.linalg.vector_norm(x.flatten(), 2)
    raise ValueError(f"Unknown reduction {op!r}")


def device_reductions(value, ops: Sequence[Tuple[str, bool]]) -> Optional[Dict[Tuple[str, bool], np.ndarray]]:
    """``{(op, abs): numpy scalar}`` for a floating-point torch tensor, else None (core computes them)."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() == 0:
        return None
    with torch.no_grad():
        x = value.detach()
        if x.dtype in (torch.float16, torch.bfloat16):
            x = x.float()  # accumulate in float32 at least, as the core does
        results = [_op(x.abs() if is_abs else x, op).to(x.dtype) for op, is_abs in ops]
        host = torch.stack(results).cpu().numpy()  # one small transfer for all of them
    return {key: host[i] for i, key in enumerate(ops)}
