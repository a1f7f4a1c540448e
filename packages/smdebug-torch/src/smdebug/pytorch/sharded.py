"""Sharded parameters and gradients (``DTensor``: FSDP2's ``fully_shard``, tensor parallelism).

They are saved under the names of the unsharded model, with their full logical shape: on a step where
one is due, every rank all-gathers it (``DTensor.full_tensor()``) and the writing worker(s) save the
result. The gather is a collective, so every rank must take part at the same steps, writers or not:
the ranks follow the save schedule alike, and a rank whose hook failed keeps taking part as a rank that
writes nothing (``Hook._fail``), so that an error on one rank never leaves the others waiting.
"""

from __future__ import annotations

import sys
import torch

_DTENSOR_MODULE = "torch.distributed.tensor"


def _dtensor_class():
    # Importing torch.distributed.tensor takes seconds: if the program has not, no DTensor exists.
    module = sys.modules.get(_DTENSOR_MODULE)
    return getattr(module, "DTensor", None)


def is_sharded(value) -> bool:
    """A DTensor whose value is spread over ranks (any placement other than Replicate)."""
    cls = _dtensor_class()
    if cls is None or not isinstance(value, cls):
        return False
    return not all(p.is_replicate() for p in value.placements)


def is_dtensor(value) -> bool:
    cls = _dtensor_class()
    return cls is not None and isinstance(value, cls)


def full_value(value):
    """The whole logical tensor of a DTensor (a collective when it is sharded), detached."""
    with torch.no_grad():
        if not is_sharded(value):
            return value.to_local().detach()  # replicated: every rank holds the whole value
        return value.full_tensor().detach()


def any_sharded(params) -> bool:
    return any(is_sharded(p) for _, p in params)
