"""The storage interface used by writers and readers. Keys are '/'-separated paths relative to a run."""

from __future__ import annotations

import abc
import os
from typing import List, Optional, Sequence, Tuple

from smdebug.core.lazy import lazy_exports


class StorageWriter(abc.ABC):
    """A file being written. Nothing is visible under its final key until :meth:`commit`."""

    @abc.abstractmethod
    def write(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def tell(self) -> int: ...

    @abc.abstractmethod
    def commit(self) -> None:
        """Make the file visible under its final key (atomically)."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Drop what was written."""


class Storage(abc.ABC):
    """A run's root directory on some backend."""

    #: a path users recognise, for messages (``/tmp/run`` or ``s3://bucket/prefix/``)
    display_path: str
    #: a hook's BackgroundWriter drops new steps instead of waiting when its byte budget is used up
    #: (remote stores, whose outages must not stall training); local disks apply back-pressure
    drop_when_full: bool = False
    #: bytes a trial may read around one requested record to get its neighbours in the same request
    read_ahead: int = 0

    @abc.abstractmethod
    def list(self, prefix: str, start_after: Optional[str] = None, skip_unreadable: bool = False) -> List[str]:
        """Sorted keys of committed files under ``prefix`` (recursive), strictly after ``start_after``.
        A folder that cannot be listed raises :class:`~smdebug.core.storage.errors.UnreadableFileError`
        naming it, or with ``skip_unreadable`` is left out with a warning (backends without such folders
        ignore the flag)."""

    @abc.abstractmethod
    def read(self, key: str, offset: int = 0, length: Optional[int] = None) -> bytes:
        """Bytes of a file, or of ``[offset, offset+length)``. FileNotFoundError if missing."""

    def read_limited(self, key: str, limit: int, setting: str = "") -> bytes:
        """The whole file, unless it holds more than ``limit`` bytes: then
        :class:`~smdebug.core.storage.errors.FileTooLarge` (``setting``: the knob that raises the limit,
        named in the message), having read at most ``limit + 1`` bytes. For files a reader parses whole
        (index, collections, rule results): their size is bounded before any memory is spent on them."""
        from smdebug.core.storage.errors import FileTooLarge

        data = self.read(key, 0, limit + 1)
        if len(data) > limit:
            raise FileTooLarge(self.full_path(key), None, limit, setting)
        return data

    def read_files(self, keys: Sequence[str], limit: int, setting: str = "") -> list:
        """Whole files (see :meth:`read_limited`), each as its bytes or as the error reading it raised
        (FileNotFoundError: gone since it was listed; UnreadableFileError: there but unreadable or too
        large), so that one bad file does not hide the others. Remote backends fetch them in parallel."""
        from smdebug.core.storage.errors import UnreadableFileError

        out: list = []
        for key in keys:
            try:
                out.append(self.read_limited(key, limit, setting))
            except (FileNotFoundError, UnreadableFileError) as e:
                out.append(e)
        return out

    def read_view(self, key: str, offset: int, length: int):
        """Like :meth:`read` of a range, but may return a read-only buffer (e.g. a memoryview of a file
        map) instead of a copy: for large records, whose bytes a reader hands out as array views."""
        return self.read(key, offset, length)

    def read_many(self, requests: Sequence[Tuple[str, int, Optional[int]]]) -> List[bytes]:
        """Several reads; backends with per-request latency override this to batch and parallelise."""
        return [self.read(k, o, n) for k, o, n in requests]

    @abc.abstractmethod
    def exists(self, key: str) -> bool: ...

    def has_folder(self, prefix: str) -> bool:
        """Whether anything lies under the folder ``prefix`` (cheaper than listing it on every backend)."""
        return bool(self.list(prefix))

    def refused(self, prefix: str) -> List[str]:
        """Keys under ``prefix`` that listing came upon but leaves out (a link to a folder, a folder that
        cannot be listed or lies too deep): something stands there that will never be read. None on
        backends without such objects."""
        return []

    def age(self, key: str) -> Optional[float]:
        """Seconds since ``key`` was last modified, or None if unknown."""
        return None

    @abc.abstractmethod
    def open_writer(self, key: str) -> StorageWriter: ...

    def write_atomic(self, key: str, data: bytes) -> None:
        w = self.open_writer(key)
        try:
            w.write(data)
        except BaseException:
            w.abort()
            raise
        w.commit()

    @abc.abstractmethod
    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Create ``key`` only if it does not exist; True if we created it."""

    @abc.abstractmethod
    def remove(self, key: str) -> None: ...

    def full_path(self, key: str) -> str:
        return self.display_path.rstrip("/") + "/" + key

    def serve_background_writer(self) -> None:
        """Called on the thread of a hook's BackgroundWriter. Remote backends let writes from that
        thread retry transient failures for as long as it takes (until :meth:`cancel_pending`)."""

    def cancel_pending(self) -> None:
        """Stop retrying writes in progress; they fail at once (the hook is closing)."""

    @property
    def outage(self) -> Optional[str]:
        """What is failing while the backend cannot be reached, else None."""
        return None


def as_path_str(path) -> str:
    """``path`` as a string: strings as they are, path-like objects (``pathlib.Path``, ``py.path.local``)
    through ``os.fspath``. Anything else is a TypeError naming what was passed."""
    if isinstance(path, str):
        return path
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return path
    raise TypeError(f"Expected a path (str or os.PathLike), got {type(path).__name__}")


def is_s3_path(path) -> bool:
    return isinstance(path, str) and path.strip().startswith("s3://")


def parse_s3_path(path: str) -> Tuple[str, str]:
    rest = as_path_str(path).strip()[len("s3://"):]
    bucket, _, key = rest.partition("/")
    return bucket, key


def s3_object_problem(path: str) -> Optional[str]:
    """What keeps ``s3://bucket/key`` from naming one object to write, or None: a missing bucket, a missing
    key, a key that ends in ``/`` (a prefix, not an object)."""
    bucket, key = parse_s3_path(path)
    if not bucket:
        return "no bucket name (give s3://bucket/path/file.json)"
    if not key.strip("/") or key.endswith("/"):
        return f"no object key after the bucket (give s3://{bucket}/path/file.json)"
    return None


# get_storage and storage_for_file were defined here before the backends' factory moved to
# smdebug.core.storage.factory: code that imports them from here still finds them (loaded on use, so
# this interface module does not import its own implementations).
__getattr__, __dir__ = lazy_exports(__name__, {"get_storage": "smdebug.core.storage.factory",
                                              "storage_for_file": "smdebug.core.storage.factory"})
