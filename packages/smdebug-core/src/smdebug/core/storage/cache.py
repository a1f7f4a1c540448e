"""A local disk cache of remote run files, so repeated analysis of a run does not download it again.

Only files that never change once they are visible are cached: index files and (byte ranges of)
event files. Collection files, the end marker and the stop signal are always read from the remote
store. Layout under the cache directory::

    <cache_dir>/<bucket>/<prefix>/<key>/whole-<etag>        a whole object (index files)
    <cache_dir>/<bucket>/<prefix>/<key>/<start>-<end>       bytes [start, end) of an object (event files)

A run rewritten in place (the same prefix reused by a new job) is noticed when an index object's
ETag in a listing differs from the cached one: the whole cache of that prefix is then dropped.
There is no size limit; delete the directory to reclaim the space.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from typing import Dict, List, Optional, Tuple

from smdebug.core.storage.safe_fs import open_regular, read_all, write_file_atomic

CACHEABLE_PREFIXES = ("index/", "events/")
_SPAN_RE = re.compile(r"^(\d+)-(\d+)$")
_SAFE_ETAG = re.compile(r"[^A-Za-z0-9-]")


def cacheable(key: str) -> bool:
    return key.startswith(CACHEABLE_PREFIXES) and ".." not in key.split("/")


class DiskCache:
    def __init__(self, root: str, namespace: str):
        self.root = os.path.abspath(os.path.expanduser(root))
        parts = [p for p in namespace.split("/") if p and p not in (".", "..")]
        self.dir = os.path.join(self.root, *parts)
        self._lock = threading.Lock()
        # key -> [(start, end, path)], filled from the directory the first time a key is looked up
        self._spans: Dict[str, List[Tuple[int, int, str]]] = {}
        self._wholes: Dict[str, Tuple[str, str]] = {}  # key -> (etag, path)
        self._scanned: set = set()
        self.hits = 0
        self.misses = 0

    def _key_dir(self, key: str) -> str:
        return os.path.join(self.dir, *key.split("/"))

    def _scan(self, key: str) -> None:
        if key in self._scanned:
            return
        self._scanned.add(key)
        folder = self._key_dir(key)
        try:
            names = os.listdir(folder)
        except OSError:
            return
        spans = []
        for n in names:
            if n.startswith("whole-"):
                self._wholes[key] = (n[len("whole-"):], os.path.join(folder, n))
                continue
            m = _SPAN_RE.match(n)
            if m:
                spans.append((int(m.group(1)), int(m.group(2)), os.path.join(folder, n)))
        if spans:
            self._spans[key] = spans

    # --- lookups ------------------------------------------------------------------------------
    def etag(self, key: str) -> Optional[str]:
        with self._lock:
            self._scan(key)
            whole = self._wholes.get(key)
        return whole[0] if whole else None

    def get(self, key: str, offset: int = 0, length: Optional[int] = None,
            etag: Optional[str] = None) -> Optional[bytes]:
        """Cached bytes of ``key`` ([offset, offset+length) or the rest of the object), or None."""
        if not cacheable(key):
            return None
        with self._lock:
            self._scan(key)
            whole = self._wholes.get(key)
            spans = list(self._spans.get(key, ()))
        path, base = None, 0
        if whole is not None and (etag is None or _safe(etag) == whole[0]):
            path = whole[1]
        elif length is not None:
            for start, end, p in spans:
                if start <= offset and offset + length <= end:
                    path, base = p, start
                    break
        if path is None:
            self.misses += 1
            return None
        try:  # (a regular file only: whatever else sits in the cache folder is never read)
            fd, size = open_regular(path)
            try:
                start = offset - base
                data = read_all(fd, max(0, size - start) if length is None else max(0, min(length, size - start)),
                                start)
            finally:
                os.close(fd)
        except OSError:
            self.misses += 1
            return None
        self.hits += 1
        return data

    # --- stores -------------------------------------------------------------------------------
    def put_whole(self, key: str, data: bytes, etag: Optional[str]) -> None:
        if not cacheable(key):
            return
        name = "whole-" + (_safe(etag) if etag else "unknown")
        path = self._write(key, name, data)
        if path is not None:
            with self._lock:
                old = self._wholes.get(key)
                self._wholes[key] = (name[len("whole-"):], path)
            if old is not None and old[1] != path:
                _remove(old[1])

    def put_span(self, key: str, start: int, data: bytes) -> None:
        if not cacheable(key) or not data:
            return
        end = start + len(data)
        path = self._write(key, f"{start}-{end}", data)
        if path is not None:
            with self._lock:
                self._scan(key)
                self._spans.setdefault(key, []).append((start, end, path))

    def _write(self, key: str, name: str, data: bytes) -> Optional[str]:
        path = os.path.join(self._key_dir(key), name)
        try:
            write_file_atomic(path, data)  # (never through a link planted in the cache folder)
            return path
        except OSError:  # a full or read-only cache disk never breaks a read
            return None

    def clear(self) -> None:
        """Drop everything cached for this run (it was rewritten)."""
        with self._lock:
            self._spans.clear()
            self._wholes.clear()
            self._scanned.clear()
            shutil.rmtree(self.dir, ignore_errors=True)


def _safe(etag: str) -> str:
    return _SAFE_ETAG.sub("", etag)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
