"""What saving one tensor at a step means (a :class:`SavePlan`), given the collections due then, and the
writes that carry it out on the hook's writer thread.

A plan depends only on the tensor's name and the set of due collections, so the hook works it out once
per schedule state (see ``BaseHook._plan``) instead of at every record.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from smdebug.core.collection import NON_HISTOGRAM_COLLECTIONS, SCALAR_COLLECTIONS, Collection
from smdebug.core.logger import get_logger
from smdebug.core.reductions import compute_reduction, reduction_tensor_name
from smdebug.core.snapshot import POOL_MIN_BYTES, give_back
from smdebug.core.tensorboard import histogram_tag

logger = get_logger()


class SavePlan(NamedTuple):
    """What saving one tensor at a step means, given the collections due then."""

    write_raw: bool
    ops: Tuple[Tuple[str, bool], ...]  # reductions to store
    save_shape: bool
    tb: Tuple[bool, Optional[str]]  # TensorBoard: (a scalar?, histogram collection or None)
    member_of: Tuple[set, ...]  # the tensor-name sets of the collections it is saved for


def make_plan(colls: Sequence[Collection], default_reduction_config) -> Optional[SavePlan]:
    """The plan for a tensor saved for ``colls`` (None when there are none)."""
    if not colls:
        return None
    write_raw, ops, save_shape = what_to_write(colls, default_reduction_config)
    return SavePlan(write_raw, ops, save_shape, tb_actions(colls), tuple(c._tensor_names for c in colls))


def what_to_write(colls: Sequence[Collection], default_reduction_config):
    """(raw value?, reductions, shape?) for a tensor saved for ``colls``."""
    write_raw, save_shape = False, False
    ops: List[Tuple[str, bool]] = []
    for c in colls:
        rc = c.reduction_config or default_reduction_config
        # Raw if asked for, or if the config asks for nothing else (no reductions, no shape).
        write_raw = write_raw or rc.save_raw_tensor or not (rc.has_reductions or rc.save_shape)
        for op in rc.reduction_ops():
            if op not in ops:
                ops.append(op)
        save_shape = save_shape or rc.save_shape
    return write_raw, tuple(ops), save_shape


def tb_actions(colls):
    """(write a scalar?, histogram collection name or None) for TensorBoard."""
    scalar = any(c.name in SCALAR_COLLECTIONS for c in colls)
    hist = next((c.name for c in colls if c.save_histogram and c.name not in NON_HISTOGRAM_COLLECTIONS), None)
    return scalar, hist


# --- on the writer thread --------------------------------------------------------------------------
def write_tensor(writer, tb_writer, keep_device_suffix, step, mode, mode_step, name, arr, write_raw, ops, save_shape,
                 tb, reductions=None, shape=None):
    """Carry out a plan for one value (``arr``, or only its ``shape``/device ``reductions``)."""
    if tb is not None and tb_writer is not None and arr is not None:
        scalar, hist = tb
        if scalar and arr.size == 1 and arr.dtype.kind in "iufb":
            tb_writer.write_scalar(mode, step, name, arr)
        elif hist is not None:
            tb_writer.write_histogram(mode, step, histogram_tag(hist, name), arr)
    w = writer.step_writer(step, mode, mode_step)
    if save_shape:
        w.write_shape(name, arr.shape if arr is not None else shape)
    for op, is_abs in ops:
        if reductions is not None and (op, is_abs) in reductions:
            value = reductions[(op, is_abs)]
        else:
            try:
                value = compute_reduction(arr, op, is_abs)
            except (TypeError, ValueError) as e:
                logger.warning("Skipping reduction %s of %s at step %s: %s", op, name, step, e)
                continue
        rname = reduction_tensor_name(name, op, is_abs, keep_device_suffix)
        w.write_tensor(rname, np.array([value]).reshape(1), mode, mode_step)
    if write_raw:
        w.write_tensor(name, arr, mode, mode_step)
    if arr is not None and arr.nbytes >= POOL_MIN_BYTES:
        # Written (the storage copied what it keeps): the snapshot's buffer can serve the next one.
        give_back(arr, holders=2)  # this frame's ``arr`` and the writer's queued arguments


def write_scalar(writer, tb_writer, step, mode, mode_step, name, arr, timestamp):
    if tb_writer is not None:
        tb_writer.write_scalar(mode, step, name, arr, timestamp)
    writer.step_writer(step, mode, mode_step).write_tensor(name, arr, mode, mode_step, timestamp)


def write_alias(writer, step, mode, mode_step, name, same_as) -> None:
    writer.step_writer(step, mode, mode_step).write_alias(name, same_as)
