"""Local file system storage: files are written as ``<name>.tmp`` and renamed when complete."""

from __future__ import annotations

import os
import threading
import time
from typing import List, Optional

from smdebug.core.storage.base import Storage, StorageWriter

TMP_SUFFIX = ".tmp"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
#: ranges at least this large are read through a file map (``read_view``); smaller ones are copied
MAP_MIN_BYTES = 1 << 20
if os.name == "posix":
    import mmap

    # Fault the pages in with the map: the reader checksums every byte right away.
    _MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
else:  # Windows: a mapped file cannot be deleted while mapped; keep plain reads there
    mmap = None
    _MAP_POPULATE = 0


class LocalWriter(StorageWriter):
    __slots__ = ("_final", "_tmp", "_f", "_pos")

    def __init__(self, final_path: str):
        self._final = final_path
        self._tmp = final_path + TMP_SUFFIX
        self._f = open(self._tmp, "wb", buffering=1 << 20)
        self._pos = 0

    def write(self, data: bytes) -> None:
        self._f.write(data)
        self._pos += len(data)

    def tell(self) -> int:
        return self._pos

    def commit(self) -> None:
        self._f.close()
        os.replace(self._tmp, self._final)

    def abort(self) -> None:
        try:
            self._f.close()
        finally:
            try:
                os.remove(self._tmp)
            except FileNotFoundError:
                pass


class LocalStorage(Storage):
    # A trial reads the records of a small step file in one read and keeps it for a while: a rule reads
    # several tensors of each step, and a read costs about as much for the whole file as for one record.
    read_ahead = int(os.environ.get("SMDEBUG_LOCAL_READ_AHEAD", 64 << 10))

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.display_path = self.root
        self._root_sep = os.path.join(self.root, "")  # root + separator: keys are joined by concatenation
        self._made_dirs = set()  # directories known to exist: saves two mkdir calls per saved step

    def _path(self, key: str) -> str:
        # Keys are relative paths inside the run; one that could leave it (an absolute path, "..",
        # NUL) comes from damaged or hostile data and is refused before any file is touched.
        if key.startswith(("/", "\\")) or "\x00" in key or ".." in key or ":" in key:
            parts = key.replace("\\", "/").split("/")
            if (key.startswith(("/", "\\")) or "\x00" in key or ".." in parts
                    or (os.name == "nt" and ":" in key)):
                raise ValueError(f"Refusing a path outside the run directory: {key[:200]!r}")
        return self._root_sep + key if key else self.root

    def list(self, prefix: str, start_after: Optional[str] = None) -> List[str]:
        base = self._path(prefix)
        out: List[str] = []
        self._walk(base, prefix.rstrip("/"), start_after, out)
        return out

    def _walk(self, path: str, key: str, start_after: Optional[str], out: List[str]) -> None:
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        for e in entries:
            child = f"{key}/{e.name}" if key else e.name
            if e.is_dir(follow_symlinks=False):
                # Skip folders whose every key sorts before start_after (zero-padded names sort by step).
                if start_after is not None and child + "/\uffff" <= start_after:
                    continue
                self._walk(e.path, child, start_after, out)
            elif not e.name.endswith(TMP_SUFFIX):
                if start_after is None or child > start_after:
                    out.append(child)

    def read(self, key: str, offset: int = 0, length: Optional[int] = None) -> bytes:
        # os.open/pread rather than open(): no buffered file object per read (a trial reads one small
        # record per tensor value, so this is paid per value).
        fd = os.open(self._path(key), _READ_FLAGS)
        try:
            if length is None:
                size = os.fstat(fd).st_size
                length = max(0, size - offset)
            data = os.pread(fd, length, offset)
            while len(data) < length:  # pread may return less than asked for; a short file ends it
                more = os.pread(fd, length - len(data), offset + len(data))
                if not more:
                    break
                data += more
            return data
        finally:
            os.close(fd)

    def read_view(self, key: str, offset: int, length: int):
        """A large range is mapped, not copied: the values decoded from it are views on the page cache.

        Safe because a run's files are never changed once they have their final name (written under a
        temporary name, then renamed): a map stays valid even if the file is deleted. The range must lie
        inside the file (checked first: touching a map past the end of a file is a fatal signal); a short
        file gives the short bytes, as :meth:`read` does.
        """
        if length < MAP_MIN_BYTES or mmap is None:
            return self.read(key, offset, length)
        fd = os.open(self._path(key), _READ_FLAGS)
        try:
            size = os.fstat(fd).st_size
            if offset + length > size:
                return os.pread(fd, max(0, size - offset), offset)
            start = offset - offset % mmap.ALLOCATIONGRANULARITY
            mapped = mmap.mmap(fd, offset + length - start, flags=mmap.MAP_SHARED | _MAP_POPULATE,
                               prot=mmap.PROT_READ, offset=start)
        finally:
            os.close(fd)  # the map keeps its own reference to the file
        return memoryview(mapped)[offset - start:]

    def read_many(self, requests):
        # Large ranges are tensor records a trial decodes into arrays: map them (see read_view).
        return [self.read(k, o, n) if n is None or n < MAP_MIN_BYTES else self.read_view(k, o, n)
                for k, o, n in requests]

    def exists(self, key: str) -> bool:
        return os.path.exists(self._path(key))

    def has_folder(self, prefix: str) -> bool:
        try:
            with os.scandir(self._path(prefix)) as entries:
                return any(True for _ in entries)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def age(self, key: str) -> Optional[float]:
        try:
            return max(0.0, time.time() - os.stat(self._path(key)).st_mtime)
        except OSError:
            return None

    def open_writer(self, key: str) -> LocalWriter:
        path = self._path(key)
        folder = os.path.dirname(path)
        if folder not in self._made_dirs:
            os.makedirs(folder, exist_ok=True)
            self._made_dirs.add(folder)
        try:
            return LocalWriter(path)
        except FileNotFoundError:  # the folder was removed under us: make it again, once
            self._made_dirs.discard(folder)
            os.makedirs(folder, exist_ok=True)
            return LocalWriter(path)

    def create_exclusive(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Write the content under a private name, then hard-link it into place: the link fails if the
        # file exists, and a reader never sees the file without its content.
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}"
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            os.remove(tmp)

    def remove(self, key: str) -> None:
        try:
            os.remove(self._path(key))
        except FileNotFoundError:
            pass

    def full_path(self, key: str) -> str:
        return self._path(key)
