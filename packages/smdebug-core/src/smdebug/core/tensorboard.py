"""TensorBoard output: scalars and histograms of saved tensors, one event file per mode.

Files are ``<tensorboard_dir>/<MODE>/<STEP12>_<pid>_<hostname>.tfevents`` (the global step at which
the file was opened), plain TensorFlow records with real CRCs. The hook's file of a mode stays open for
the run and is flushed at every step boundary, so TensorBoard can follow a run live; an export after
the fact (``smdebug export tensorboard``) writes through a :class:`Storage` instead (local or S3), each
file appearing whole when it is closed.

Histogram tags are ``<collection>/<tensor>``, except that a tensor whose name already starts with its
collection's name (``gradient/fc1.weight`` in ``gradients``) keeps its name: the original wrote
``gradients/gradient/fc1.weight``.
"""

from __future__ import annotations

import os
import re
import socket
import time
from typing import Dict, List, Optional

import numpy as np

from smdebug.core.storage.safe_fs import HAVE_DIR_FD, create_new, open_dir_beneath

from smdebug.core.locations import step_str
from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.storage.base import Storage
from smdebug.core.tfevent.proto.event_pb2 import Event
from smdebug.core.tfevent.records import encode_record

_TAG_RE = re.compile(r"[^-/\w.]")


def sanitize_tag(tag: str) -> str:
    return _TAG_RE.sub("_", tag).lstrip("/")


def histogram_tag(collection: str, name: str) -> str:
    """The tag of a histogram of tensor ``name`` saved for ``collection``: ``<collection>/<name>``, or
    ``name`` alone when its first component already names the collection (``gradient/...`` in
    ``gradients``, ``weights/...`` in ``weights``)."""
    head, sep, _ = name.partition("/")
    if sep and head and collection in (head, head + "s", head + "es"):
        return name
    return f"{collection}/{name}"


def _default_bucket_edges() -> np.ndarray:
    # TensorFlow's default histogram buckets: +-1e-12 * 1.1^k up to 1e20, plus 0 and +-DBL_MAX.
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos = np.array(pos)
    big = np.finfo(np.float64).max
    return np.concatenate([[-big], -pos[::-1], [0.0], pos, [big]])


_EDGES = _default_bucket_edges()


def fill_histogram(histo, values: np.ndarray) -> None:
    """Fill a HistogramProto from ``values`` (finite values only)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return
    counts, _ = np.histogram(x, bins=_EDGES)
    nonzero = np.nonzero(counts)[0]
    first, last = max(nonzero[0] - 1, 0), nonzero[-1]
    histo.min = float(x.min())
    histo.max = float(x.max())
    histo.num = float(x.size)
    histo.sum = float(x.sum())
    histo.sum_squares = float(np.dot(x, x))
    histo.bucket_limit.extend(_EDGES[first + 1 : last + 2].tolist())
    histo.bucket.extend(counts[first : last + 1].astype(np.float64).tolist())


def _new_events_file(folder: str, stem: str, folder_fd: Optional[int] = None):
    """A new events file in ``folder`` (never an existing file, never through a link planted there: the
    folder may be shared with other writers); ``folder_fd``: the folder, opened. A taken name gets a numbered
    variant."""
    for n in range(100):
        name = f"{stem}.tfevents" if n == 0 else f"{stem}.{n}.tfevents"
        try:
            if folder_fd is not None:
                return os.fdopen(create_new(name, dir_fd=folder_fd), "wb")
            return os.fdopen(create_new(os.path.join(folder, name)), "wb")
        except FileExistsError:
            continue
    raise FileExistsError(f"no free events file name for {stem} in {folder}")


class TensorBoardWriter:
    """Writes scalar and histogram summaries (the hook: on its writer thread).

    ``storage``: write the files through it (each one appears whole at :meth:`close`) instead of as
    local files flushed as they grow; ``directory`` is then only used in messages.

    ``keep_going`` (the hook's copy): a failure to write (a ``tensorboard_dir`` that is a file or
    ``/dev/null``, no permission, a full disk) stops the TensorBoard files only, with one error naming the
    folder; the calls after it do nothing. It used to reach the hook's writer thread as a failure of the
    run, and the hook stopped saving: a bad TensorBoard folder cost every step of the run itself.
    Without it (``smdebug export``) the failure is raised: the export is the whole job.

    ``beneath``: a folder above ``directory`` below which no link is followed: the run's folder, for the
    TensorBoard folder the hook keeps inside the run (``<out_dir>/tensorboard``), as for the run's other
    folders (a link planted at ``tensorboard`` or ``tensorboard/TRAIN`` made the hook write outside the run).
    Without it, links are followed down to ``directory`` (a folder the user named) and refused below it.
    """

    def __init__(self, directory: str, storage: Optional[Storage] = None, keep_going: bool = False,
                 beneath: Optional[str] = None):
        self.directory = os.path.expanduser(directory)
        self._beneath = os.path.expanduser(beneath) if beneath else self.directory
        self._storage = storage
        self._files: Dict[ModeKeys, object] = {}
        self._keep_going = keep_going
        self.failure: Optional[BaseException] = None  # what stopped a keep_going writer
        #: the first write that failed (without ``keep_going``): tells a failure to write from one to read
        self.write_error: Optional[BaseException] = None
        #: storage keys of the files committed so far (an export that fails takes them back)
        self.committed: List[str] = []
        self._keys: Dict[ModeKeys, str] = {}

    def _guarded(self, fn, *args) -> bool:
        """Run ``fn``; False when it did not run or failed (``keep_going``), else its failure is raised."""
        if self.failure is not None:
            return False
        if not self._keep_going:
            try:
                fn(*args)
            except Exception as e:
                if self.write_error is None:
                    self.write_error = e
                raise
            return True
        try:
            fn(*args)
            return True
        except Exception as e:  # noqa: BLE001 - an auxiliary output never stops the run's own saving
            self.failure = e
            get_logger().error("smdebug: cannot write TensorBoard files to %s (%s: %s). TensorBoard output "
                               "stops; the run itself is still saved.", self.directory, type(e).__name__, e)
            files, self._files = list(self._files.values()), {}
            for f in files:
                try:
                    f.close() if self._storage is None else f.abort()
                except Exception:  # noqa: BLE001 - (the folder is already known to be broken)
                    pass
            return False

    def _file(self, mode: ModeKeys, step: int):
        f = self._files.get(mode)
        if f is None:
            name = f"{step_str(step)}_{os.getpid()}_{socket.gethostname()}.tfevents"
            if self._storage is not None:
                key = self._keys[mode] = f"{mode.name}/{name}"
                f = self._files[mode] = self._storage.open_writer(key)
                return f
            stem = f"{step_str(step)}_{os.getpid()}_{socket.gethostname()}"
            f = self._files[mode] = self._new_local_file(mode, stem)
        return f

    def _new_local_file(self, mode: ModeKeys, stem: str):
        """A new events file in ``<directory>/<MODE>``, its folders made and opened without following a link
        below ``beneath`` (see the class docstring)."""
        folder = os.path.join(self.directory, mode.name)
        if not HAVE_DIR_FD:  # (no descriptor-relative calls on this platform: the folders by name)
            os.makedirs(folder, exist_ok=True)
            return _new_events_file(folder, stem)
        os.makedirs(self._beneath, exist_ok=True)
        parts = [p for p in os.path.relpath(folder, self._beneath).split(os.sep) if p not in ("", ".")]
        root = os.open(self._beneath, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            fd = open_dir_beneath(root, parts, create=True, display=self._beneath)
        finally:
            os.close(root)
        try:
            return _new_events_file(folder, stem, fd)
        finally:
            os.close(fd)

    def _write(self, mode, step, fill, wall_time: Optional[float] = None) -> bool:
        return self._guarded(self._write_event, mode, step, fill, wall_time)

    def _write_event(self, mode, step, fill, wall_time: Optional[float]) -> None:
        ev = Event()
        ev.wall_time = time.time() if wall_time is None else wall_time
        ev.step = step
        fill(ev.summary.value.add())
        self._file(mode, step).write(encode_record(ev.SerializeToString(), compat_footer=False))

    def write_scalar(self, mode: ModeKeys, step: int, tag: str, value, wall_time=None) -> None:
        def fill(v):
            v.tag = sanitize_tag(tag)
            v.simple_value = float(np.asarray(value).reshape(-1)[0])

        self._write(mode, step, fill, wall_time)

    def write_histogram(self, mode: ModeKeys, step: int, tag: str, values: np.ndarray) -> bool:
        """False (nothing written) for what has no histogram: empty, bool or non-numeric values."""
        arr = np.asarray(values)
        if arr.size == 0 or arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
            return False

        def fill(v):
            v.tag = sanitize_tag(tag)
            fill_histogram(v.histo, arr)

        return self._write(mode, step, fill)

    def write_graph(self, mode: ModeKeys, step: int, graph_def: bytes, wall_time=None) -> None:
        """A graph event (``Event.graph_def``: a serialized GraphDef, as TensorBoard's graph view reads)."""
        self._guarded(self._write_graph, mode, step, graph_def, wall_time)

    def _write_graph(self, mode, step, graph_def, wall_time) -> None:
        ev = Event()
        ev.wall_time = time.time() if wall_time is None else wall_time
        ev.step = step
        ev.graph_def = bytes(graph_def)
        self._file(mode, step).write(encode_record(ev.SerializeToString(), compat_footer=False))

    def flush(self) -> None:
        if self._storage is None:
            self._guarded(lambda: [f.flush() for f in self._files.values()])

    def close(self) -> None:
        self._finish(keep=True)

    def abort(self) -> None:
        """Storage files: drop what was written (nothing appears); local files are closed as they are."""
        self._finish(keep=False)

    def _finish(self, keep: bool) -> None:
        self._guarded(self._finish_files, keep)

    def _finish_files(self, keep: bool) -> None:
        files, self._files = list(self._files.items()), {}
        for i, (mode, f) in enumerate(files):
            if self._storage is None:
                f.close()
            elif keep:
                try:
                    f.commit()  # (a full disk fails here: the last bytes are flushed at commit)
                except BaseException:
                    for _mode, rest in files[i + 1:]:  # (else their .tmp files stay behind)
                        rest.abort()
                    raise
                self.committed.append(self._keys[mode])
            else:
                f.abort()
