"""A local disk cache of remote run files, so repeated analysis of a run does not download it again.

Only files that never change once they are visible are cached: index files and (byte ranges of)
event files. Collection files, the end marker and the stop signal are always read from the remote
store.

The cache never serves bytes of another object than the one a reader would get from the store now:

* every entry carries the identity of the object its bytes came from (a digest of its ETag and its
  last-modified time, in whole seconds). A lookup names the identity the store reports now (from a
  listing, or from the first GET of this trial) and only entries of that identity answer it. An
  object rewritten in place (a new job reusing the prefix, even with byte-identical index files and
  so the same ETags) has a new identity, and what was cached for the old one is never served;
* a run's folder is named by a digest of the endpoint, the bucket and the prefix exactly as they are
  read (``a/../b`` and ``a/b`` are two prefixes to S3, and so two folders here), with a readable hint
  in front; an object's folder is named by a digest of its key, so no key is ever turned into a path.

Layout under the cache directory::

    <cache_dir>/<bucket_prefix hint>-<digest of endpoint, bucket, prefix>/
        <kk>/<digest of key>/whole-<identity>                a whole object (index files)
        <kk>/<digest of key>/<identity>-<start>-<end>        bytes [start, end) of an object (event files)

When a listing shows an index object whose identity differs from the cached one, the run was rewritten:
its whole folder is dropped. There is no size limit; delete the directory to reclaim the space.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
from typing import Dict, List, Optional, Tuple

from smdebug.core.storage.safe_fs import open_regular, read_all, write_file_atomic

CACHEABLE_PREFIXES = ("index/", "events/")
_SPAN_RE = re.compile(r"^([0-9a-f]{24})-(\d+)-(\d+)$")
_WHOLE_RE = re.compile(r"^whole-([0-9a-f]{24})$")
_HINT_RE = re.compile(r"[^A-Za-z0-9._-]+")


def cacheable(key: str) -> bool:
    return key.startswith(CACHEABLE_PREFIXES)


def identity(etag: Optional[str], modified: Optional[int]) -> Optional[str]:
    """The identity of one version of an object: its ETag and last-modified time (whole seconds: a
    listing gives milliseconds, a GET's header seconds). None when the store gave no ETag (such an
    object is never cached: it could not be told from its successor)."""
    if not etag:
        return None
    return hashlib.sha256(f"{etag}\0{'' if modified is None else int(modified)}".encode()).hexdigest()[:24]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class DiskCache:
    """The cache of one run. ``namespace``: everything that names the run exactly (endpoint, bucket,
    prefix; only its digest is used); ``hint``: a readable name put in front of the digest."""

    def __init__(self, root: str, namespace: str, hint: str = ""):
        self.root = os.path.abspath(os.path.expanduser(root))
        readable = _HINT_RE.sub("_", hint).strip("._-")[:60] or "run"
        self.dir = os.path.join(self.root, f"{readable}-{_digest(namespace)[:24]}")
        self._lock = threading.Lock()
        # key -> [(identity, start, end, path)], filled from the folder the first time a key is looked up
        self._spans: Dict[str, List[Tuple[str, int, int, str]]] = {}
        self._wholes: Dict[str, Tuple[str, str]] = {}  # key -> (identity, path)
        self._scanned: set = set()
        self.hits = 0
        self.misses = 0

    def _key_dir(self, key: str) -> str:
        d = _digest(key)[:40]
        return os.path.join(self.dir, d[:2], d)

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
            m = _WHOLE_RE.match(n)
            if m:
                self._wholes[key] = (m.group(1), os.path.join(folder, n))
                continue
            m = _SPAN_RE.match(n)
            if m:
                spans.append((m.group(1), int(m.group(2)), int(m.group(3)), os.path.join(folder, n)))
        if spans:
            self._spans[key] = spans

    # --- lookups ------------------------------------------------------------------------------
    def whole_identity(self, key: str) -> Optional[str]:
        """The identity of the whole object cached for ``key``, or None."""
        with self._lock:
            self._scan(key)
            whole = self._wholes.get(key)
        return whole[0] if whole else None

    def has_entries(self, key: str) -> bool:
        """Whether anything at all is cached for ``key`` (of any identity)."""
        if not cacheable(key):
            return False
        with self._lock:
            self._scan(key)
            return key in self._wholes or bool(self._spans.get(key))

    def get(self, key: str, offset: int = 0, length: Optional[int] = None,
            ident: Optional[str] = None) -> Optional[bytes]:
        """Cached bytes of ``key`` ([offset, offset+length) or the rest of the object) taken from the
        object version ``ident`` (the one the store has now), or None. Without ``ident``: None."""
        if not cacheable(key) or ident is None:
            return None
        with self._lock:
            self._scan(key)
            whole = self._wholes.get(key)
            spans = list(self._spans.get(key, ()))
        path, base = None, 0
        if whole is not None and whole[0] == ident:
            path = whole[1]
        elif length is not None:
            for span_ident, start, end, p in spans:
                if span_ident == ident and start <= offset and offset + length <= end:
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
    def put_whole(self, key: str, data: bytes, ident: Optional[str]) -> None:
        if not cacheable(key) or ident is None:
            return
        path = self._write(key, f"whole-{ident}", data)
        if path is not None:
            with self._lock:
                self._scan(key)
                old = self._wholes.get(key)
                self._wholes[key] = (ident, path)
                stale = [s for s in self._spans.get(key, ()) if s[0] != ident]
                if stale:
                    self._spans[key] = [s for s in self._spans[key] if s[0] == ident]
            if old is not None and old[1] != path:
                _remove(old[1])
            for s in stale:
                _remove(s[3])

    def put_span(self, key: str, start: int, data: bytes, ident: Optional[str]) -> None:
        if not cacheable(key) or not data or ident is None:
            return
        end = start + len(data)
        path = self._write(key, f"{ident}-{start}-{end}", data)
        if path is not None:
            with self._lock:
                self._scan(key)
                spans = self._spans.setdefault(key, [])
                # bytes of an earlier version of the object are of no use any more
                stale = [s for s in spans if s[0] != ident]
                spans[:] = [s for s in spans if s[0] == ident and s[3] != path] + [(ident, start, end, path)]
                whole = self._wholes.get(key)
                if whole is not None and whole[0] != ident:
                    del self._wholes[key]
                    stale.append((whole[0], 0, 0, whole[1]))
            for s in stale:
                _remove(s[3])

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


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
