"""Snapshots of the tensors a hook saves, and the reuse of their buffers.

A hook writes in the background, so what it saves must be copied first: training goes on and updates
weights in place. A fresh buffer of many megabytes is new memory to the process (the allocator maps it
from the kernel), and the copy then pays a page fault for every 4 KiB it touches, which halves the speed
of the copy; buffers of a few hundred KiB come from the heap, which fragments as thousands of them are
freed by the writer thread while training allocates more, so the process keeps growing past what is
queued. So a snapshot of 64 KiB or more is a view on a buffer owned by this module; the writer gives the
buffer back once the tensor is on storage, and the next snapshot of the same size (a hook saves the same
tensors step after step) reuses it. Idle buffers are bounded, and a buffer is reused only when nothing
but the known holders refers to it.
"""

from __future__ import annotations

import sys
import threading
from typing import Dict, List, Optional

import numpy as np
from smdebug.core.env_settings import env_int

#: snapshots at least this large are views on pooled buffers (below it the allocator reuses memory well)
POOL_MIN_BYTES = 64 << 10
#: at most this many bytes of idle buffers are kept (on top of a hook's writer budget, which bounds the
#: snapshots in flight)
POOL_MAX_BYTES = env_int("SMDEBUG_SNAPSHOT_POOL_BYTES", 64 << 20, minimum=0)

_lock = threading.Lock()
_idle: Dict[int, List[np.ndarray]] = {}  # nbytes -> idle buffers (1-d uint8 arrays owning their memory)
_idle_bytes = 0
#: snapshots served from an idle buffer (for tests and benchmarks)
reused = 0


def snapshot(value: np.ndarray) -> np.ndarray:
    """A C-ordered copy of ``value`` that the caller owns; large ones live in a poolable buffer."""
    nbytes = value.nbytes
    if nbytes < POOL_MIN_BYTES or value.dtype.hasobject:
        return np.array(value, copy=True, order="C")
    global _idle_bytes, reused
    with _lock:
        buffers = _idle.get(nbytes)
        buffer = buffers.pop() if buffers else None
        if buffer is not None:
            _idle_bytes -= nbytes
            reused += 1
    if buffer is None:
        buffer = np.empty(nbytes, dtype=np.uint8)
    out = buffer.view(value.dtype).reshape(value.shape)
    np.copyto(out, value, casting="no")
    return out


def _pooled_buffer(arr: np.ndarray) -> Optional[np.ndarray]:
    owner = arr.base
    if (
        isinstance(owner, np.ndarray) and owner.dtype == np.uint8 and owner.ndim == 1
        and owner.flags.owndata and owner.nbytes == arr.nbytes and owner.nbytes >= POOL_MIN_BYTES
    ):
        return owner
    return None


def give_back(arr: Optional[np.ndarray], holders: int) -> None:
    """Offer the buffer of a snapshot whose tensor has been written. ``holders``: how many references to
    ``arr`` the caller knows of (its own variables, containers it built), besides this call's argument.

    The buffer is kept only if those are all the references there are, to ``arr`` and to the buffer: if
    anything else still has the array, the buffer is simply left to the garbage collector.
    """
    if arr is None or arr.nbytes < POOL_MIN_BYTES:
        return
    owner = _pooled_buffer(arr)
    if owner is None:
        return
    # getrefcount counts its own argument, and ``arr`` here; ``owner`` is held by arr.base and this frame.
    if sys.getrefcount(arr) > holders + 2 or sys.getrefcount(owner) > 3:
        return
    global _idle_bytes
    nbytes = owner.nbytes
    with _lock:
        if _idle_bytes + nbytes > POOL_MAX_BYTES:
            return
        _idle.setdefault(nbytes, []).append(owner)
        _idle_bytes += nbytes


def clear() -> None:
    """Drop every idle buffer."""
    global _idle_bytes
    with _lock:
        _idle.clear()
        _idle_bytes = 0
