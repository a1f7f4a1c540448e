"""Writes one saved step of one worker: its event file, then its index file.

The index file is written last and atomically, so a step becomes visible to readers only once all its
tensor records are in place (the event file is committed first).

What the index says and what the records say agree: every record carries the step's own global step, mode
and mode step (those of the index), each name is indexed once (a name written twice in a step: its last
record), and an alias (one record indexed under a second name) is declared in its entry (``alias_of``), so
readers refuse any other entry that points at another tensor's record (see index_file).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence

import numpy as np
from crc32c import crc32c

from smdebug.core import helper_pool
from smdebug.core.locations import event_file_name, index_file_name
from smdebug.core.modes import ModeKeys
from smdebug.core.storage.base import Storage, StorageWriter
from smdebug.core.tfevent.index_file import build_index
from smdebug.core.tfevent.records import HEADER_SIZE, encode_record_parts, record_prefix, record_trailer
from smdebug.core.tfevent.tensor_codec import encode_tensor_event_parts


# A tensor body at least this large has its checksum computed on a helper thread while this thread writes
# it: crc32c and file writes both release the GIL, so on two cores a large tensor costs about the longer of
# the two instead of their sum. (Below this, handing work to a thread costs more than it saves.)
PARALLEL_CRC_MIN_BYTES = 1 << 20
_crc_pool_lock = threading.Lock()
_crc_pool: Optional[ThreadPoolExecutor] = None
_crc_pool_pid = 0


def _checksum_pool() -> ThreadPoolExecutor:
    global _crc_pool, _crc_pool_pid
    with _crc_pool_lock:
        # A forked child inherits the executor without its thread: it needs its own.
        if _crc_pool is None or _crc_pool_pid != os.getpid():
            _crc_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smdebug-crc")
            _crc_pool_pid = os.getpid()
        return _crc_pool


class StepWriter:
    def __init__(self, storage: Storage, step: int, worker: str, mode: ModeKeys, mode_step: int):
        self.storage = storage
        self.step = step
        self.worker = worker
        self.mode = mode
        self.mode_step = mode_step
        self.event_key = event_file_name(step, worker)
        self.index_key = index_file_name(step, worker)
        self._events: Optional[StorageWriter] = None
        self._tensors: List[tuple] = []  # (name, start, length) of each record; + (alias_of,) for an alias
        self._shapes: List[dict] = []

    def write_tensor(self, name: str, value: np.ndarray, mode: ModeKeys, mode_step: int, wall_time=None,
                     index: bool = True) -> None:
        """Append a tensor record; ``index=False`` leaves it out of the step's index (readers of the run
        will not see it; tools reading the event file itself will). The record carries the step's mode and
        mode step, those its index gives (``mode``/``mode_step`` are those of the caller, which may have
        switched modes within the step: readers check that an indexed record and its index agree). An
        unindexed record keeps the caller's."""
        if self._events is None:
            self._events = self.storage.open_writer(self.event_key)
        start = self._events.tell()
        if index:
            mode, mode_step = self.mode, self.mode_step
        head, body = encode_tensor_event_parts(name, value, self.step, mode, mode_step, wall_time,
                                               payload_offset=start + HEADER_SIZE)
        if len(body) >= PARALLEL_CRC_MIN_BYTES:
            checksum = helper_pool.submit(_checksum_pool(), crc32c, body, crc32c(head))
            try:
                self._events.write(record_prefix(head, len(body)))
                self._events.write(body)
            finally:
                crc = checksum.result()  # never leave the helper reading a buffer we are done with
            self._events.write(record_trailer(crc))
        else:
            for piece in encode_record_parts(head, body):
                if len(piece):
                    self._events.write(piece)
        if index:
            self._tensors.append((name, start, self._events.tell() - start))

    def write_alias(self, name: str, same_as: str) -> bool:
        """Index ``name`` at the record already written for ``same_as`` in this step (one record, two
        names). False if ``same_as`` has no record here. The entry declares the alias (``alias_of``: the tag
        of the record), so readers accept the other name's record for it and for no other entry."""
        for entry in reversed(self._tensors):
            if entry[0] == same_as:
                tag = entry[3] if len(entry) > 3 else same_as  # (an alias of an alias: the record's own tag)
                if name != tag:
                    self._tensors.append((name, entry[1], entry[2], tag))
                return True
        return False

    def write_shape(self, name: str, shape: Sequence[int], original_name: Optional[str] = None) -> None:
        self._shapes.append(
            {"tensorname": name, "originalname": original_name or name, "shape": [int(d) for d in shape]}
        )

    @property
    def empty(self) -> bool:
        return not self._tensors and not self._shapes

    def close(self) -> None:
        if self._events is not None:
            self._events.commit()
            self._events = None
        if self.empty:
            return
        tensors = self._tensors
        if len({t[0] for t in tensors}) != len(tensors):
            tensors = _last_of_each_name(tensors)
        self.storage.write_atomic(
            self.index_key,
            build_index(self.mode, self.mode_step, self.event_key, tensors, self._shapes, declares_aliases=True),
        )

    def abort(self) -> None:
        if self._events is not None:
            self._events.abort()
            self._events = None


def _last_of_each_name(tensors: List[tuple]) -> List[tuple]:
    """One entry per name, the last (a scalar saved twice in a step: its later value, as readers took it when
    both were indexed), in the order of those entries."""
    last = {t[0]: i for i, t in enumerate(tensors)}
    return [t for i, t in enumerate(tensors) if last[t[0]] == i]
