"""What the Keras and session hooks share: TensorFlow collections, forced saving of log values, and one
writer per device for ``tf.distribute.MirroredStrategy`` (spec §11)."""

from __future__ import annotations

import contextlib
import re

import numpy as np
from typing import Dict, Iterable, Optional, Sequence

from smdebug.core.collection import TRAIN_ONLY_COLLECTIONS
from smdebug.core.hook import BaseHook, logger
from smdebug.core.locations import collections_file_name
from smdebug.core.modes import ModeKeys
from smdebug.core.writer import BackgroundWriter
from smdebug.tensorflow.collection import RUNTIME_FILLED, Collection, _name_of, default_collections
from smdebug.tensorflow.constants import TF_DEFAULT_SAVED_COLLECTIONS

LOSS_RE = re.compile(r"(^|_)loss$")


class TFHookMixin(BaseHook):
    """Behaviour common to :class:`~smdebug.tensorflow.KerasHook` and
    :class:`~smdebug.tensorflow.SessionHook`."""

    framework_name = "tensorflow"
    default_include_collections = tuple(TF_DEFAULT_SAVED_COLLECTIONS)
    collection_class = Collection
    keep_device_suffix_in_reductions = True

    def _setup(self) -> None:
        super()._setup()
        self._mode_set_by_user = False
        self._logged_names = set()  # names saved in the current step (no duplicates in one step)
        self._devices: Sequence[str] = ()  # MirroredStrategy devices of this process (when several)
        self._device_writers: Dict[str, BackgroundWriter] = {}

    def default_collections(self):
        return default_collections()

    def to_numpy(self, value):
        if not isinstance(value, np.ndarray):
            from smdebug.tensorflow.utils import to_numpy

            arr = to_numpy(value)
            if arr is not None:
                return arr
        return super().to_numpy(value)

    # ------------------------------------------------------------------------------------------
    # collections
    # ------------------------------------------------------------------------------------------
    def _prepare_collections(self) -> None:
        # Collections the hook fills with names at run time (metrics from Keras logs, weights as the
        # model is met...) may still be empty: leave them out of this preparation quietly instead of
        # reporting them as misconfigured. Adding a name re-prepares them in.
        token = self._token()
        if token == self._prepared_token:
            return
        empty = [
            n for n in RUNTIME_FILLED
            if n in self.include_collections and self._is_empty(n)
        ]
        if not empty:
            super()._prepare_collections()
            return
        full = self.include_collections
        self.include_collections = [n for n in full if n not in empty]
        try:
            super()._prepare_collections()
        finally:
            # (also when a user's collection that can match nothing was reported: this preparation holds)
            self.include_collections = full
            self._prepared_token = self._token()

    def _prepare_collections_for_tf2(self) -> None:
        """1.0.x's name (KerasHook) for preparing the collections before the first step; the same as
        :meth:`_prepare_collections` here (it raises for a user's collection that can match nothing)."""
        self._prepare_collections()

    def _is_empty(self, name: str) -> bool:
        coll = self.collection_manager.collections.get(name)
        return coll is None or (not coll.has_regex() and not coll.tensor_names)

    def add_to_collection(self, collection_name: str, args) -> None:
        """Add tensors, variables or names (or a list of them) to a collection, creating it if needed."""
        items = args if isinstance(args, (list, tuple, set, frozenset)) else [args]
        super().add_to_collection(collection_name, [_name_of(a) for a in items])

    def set_mode(self, mode) -> None:
        BaseHook.set_mode(self, mode)
        if isinstance(mode, ModeKeys):
            self._mode_set_by_user = True

    def _switch_mode(self, mode: ModeKeys) -> None:
        """Change mode from a framework event (the step of the previous mode ends first)."""
        if self.mode != mode:
            if self._in_step:
                self.end_step()
            BaseHook.set_mode(self, mode)

    def _collection_due(self, name: str) -> bool:
        """Does ``name``'s own schedule say save at the current step (even if it is still empty)?"""
        if name not in self.include_collections or not self._in_step:
            return False
        if self.mode in (ModeKeys.EVAL, ModeKeys.PREDICT) and name in TRAIN_ONLY_COLLECTIONS:
            return False
        coll = self.collection_manager.collections.get(name)
        if coll is None or coll.save_config is None:
            return False
        return coll.save_config.should_save_step(self.mode, self.mode_steps[self.mode])

    def _save_named(self, name: str, value, collection: str, force: bool = False) -> bool:
        """Save ``value`` as ``name`` belonging to ``collection`` if that collection (or any other that
        holds ``name``) is due now, or always with ``force``. The name joins the collection."""
        coll = self.collection_manager.get(collection)
        if not coll.matches(name):
            coll.add_tensor_name(name)
        if name in self._logged_names or not self._in_step or self._disabled:
            return False
        own = force or self._collection_due(collection)
        if not own and not self.is_due(name):
            return False
        if own:
            if not self._is_writer or self.dry_run:
                return False
            if self._writer is None:
                self._start_writing()
                if self._writer is None:
                    return False
            if collection not in self._due:
                self._due = set(self._due) | {collection}
        self._logged_names.add(name)
        return self._record_everywhere(name, value, [coll] if own else ())

    def begin_step(self) -> None:
        self._logged_names = set()
        super().begin_step()

    # ------------------------------------------------------------------------------------------
    # workers: one per device under MirroredStrategy
    # ------------------------------------------------------------------------------------------
    def _set_devices(self, devices: Iterable[str]) -> None:
        devices = tuple(devices)
        if len(devices) < 2:
            devices = ()
        if devices == tuple(self._devices):
            return
        if self.worker is not None and devices:
            logger.warning("smdebug: the hook already writes as %s; a strategy met later (%d devices) is "
                           "not split per device", self.worker, len(devices))
            return
        self._devices = devices

    def _init_worker(self) -> None:
        if not self._devices or self._detect_worker().size > 1:
            self._devices = ()  # several processes: each is one worker, its first replica's values are saved
            super()._init_worker()
            return
        # One process, several replicas: each device is a worker (spec §11); the chief is the
        # lexicographically smallest device name.
        self.rank = 0
        self.worker = min(self._devices)
        self._is_writer = True
        self.num_workers = len(self._devices) if self.include_workers == "all" else 1

    @property
    def chief_device(self) -> Optional[str]:
        return min(self._devices) if self._devices else None

    def _start_writing(self) -> None:
        super()._start_writing()
        if self._writer is not None and self._devices and self.include_workers == "all" and not self._device_writers:
            for dev in self._devices:
                if dev != self.worker:
                    self._device_writers[dev] = BackgroundWriter(self._storage, dev)
            self._export_collections_to_devices()

    def _export_collections(self) -> None:
        super()._export_collections()
        self._export_collections_to_devices()

    def _export_collections_to_devices(self) -> None:
        if not self._device_writers or self._writer is None:
            return
        payload = self.collection_manager.dumps().encode("utf-8")
        for dev, w in self._device_writers.items():
            w.call(self._storage.write_atomic, collections_file_name(dev), payload)

    def _close_open_step(self) -> None:
        if self._open_step is not None:
            for w in self._device_writers.values():
                w.close_step(self._open_step)
        super()._close_open_step()

    def flush(self, timeout: Optional[float] = None) -> bool:
        ok = super().flush(timeout)
        for w in self._device_writers.values():
            ok = w.flush(timeout) and ok
        return ok

    def close(self) -> None:
        if self._device_writers and not self._closed and not self._disabled:
            try:
                if self._in_step:
                    self._finish_step()
                self._close_open_step()
                self._export_collections_to_devices()
                for dev, w in self._device_writers.items():
                    if not w.close():
                        logger.warning("smdebug: some tensors of %s could not be written before close", dev)
            except Exception as e:  # noqa: BLE001
                self._fail("close()", e)
            self._device_writers = {}
        super().close()

    @contextlib.contextmanager
    def _writing_as(self, device: str):
        """Route :meth:`_record` to ``device``'s writer (TensorBoard stays with the chief)."""
        saved_writer, saved_tb = self._writer, self._tb
        self._writer, self._tb = self._device_writers[device], None
        try:
            yield
        finally:
            self._writer, self._tb = saved_writer, saved_tb

    def _record_everywhere(self, name: str, value, force: Sequence = ()) -> bool:
        """A value that belongs to no device (a log value, a reduced loss): the chief's files, and with
        ``include_workers="all"`` every device's."""
        saved = self._record(name, value, force)
        for dev in self._device_writers:
            with self._writing_as(dev):
                self._record(name, value, force)
        return saved

    def _record_replicas(self, name: str, values: Sequence, force: Sequence = ()) -> bool:
        """One value per replica, in the order of the strategy's devices."""
        if not self._devices or len(values) != len(self._devices):
            return self._record(name, values[0], force)
        saved = False
        for dev, value in zip(self._devices, values):
            if dev == self.worker:
                saved = self._record(name, value, force) or saved
            elif dev in self._device_writers:
                with self._writing_as(dev):
                    self._record(name, value, force)
        return saved
