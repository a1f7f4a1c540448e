"""Writes one saved step of one worker: its event file, then its index file.

The index file is written last and atomically, so a step becomes visible to readers only once all its
tensor records are in place (the event file is committed first).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence

import numpy as np
from crc32c import crc32c

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
        self._tensors: List[tuple] = []  # (name, start, length) of each record
        self._shapes: List[dict] = []

    def write_tensor(self, name: str, value: np.ndarray, mode: ModeKeys, mode_step: int, wall_time=None,
                     index: bool = True) -> None:
        """Append a tensor record; ``index=False`` leaves it out of the step's index (readers of the run
        will not see it; tools reading the event file itself will)."""
        if self._events is None:
            self._events = self.storage.open_writer(self.event_key)
        start = self._events.tell()
        head, body = encode_tensor_event_parts(name, value, self.step, mode, mode_step, wall_time,
                                               payload_offset=start + HEADER_SIZE)
        if len(body) >= PARALLEL_CRC_MIN_BYTES:
            checksum = _checksum_pool().submit(crc32c, body, crc32c(head))
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
        names). False if ``same_as`` has no record here."""
        for tname, start, length in reversed(self._tensors):
            if tname == same_as:
                self._tensors.append((name, start, length))
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
        self.storage.write_atomic(
            self.index_key,
            build_index(self.mode, self.mode_step, self.event_key, self._tensors, self._shapes),
        )

    def abort(self) -> None:
        if self._events is not None:
            self._events.abort()
            self._events = None
