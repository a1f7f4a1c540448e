"""Legacy module (smdebug 1.0.x's ``smdebug.core.index_reader``): listing a run's index files, over the
project's storage (``smdebug.core.storage``). Reading a run is ``smdebug.trials.create_trial``'s job.
Not part of the modern API; see smdebug.core.legacy and docs/compatibility.md."""

from __future__ import annotations

from typing import List, Optional, Tuple

from smdebug.core.locations import INDEX_DIR, is_index_file
from smdebug.core.storage.base import as_path_str
from smdebug.core.storage.factory import get_storage
from smdebug.trials.read_cache import ReadIndexFilesCache  # noqa: F401 - re-exported


class IndexReader:
    """The index files of the run at ``path`` (a directory or ``s3://bucket/prefix``)."""

    def __init__(self, path):
        self.path = as_path_str(path)
        self._storage = get_storage(self.path)

    def list_index_files(self, start_after_key: Optional[str] = None) -> Tuple[List[str], Optional[str]]:
        """``(index file paths in step order, the last one)``; ``start_after_key`` (a path returned
        before) lists only those after it."""
        start_after = self._key(start_after_key) if start_after_key else None
        keys = [k for k in self._storage.list(INDEX_DIR, start_after=start_after) if is_index_file(k)]
        paths = [self._storage.full_path(k) for k in keys]
        return paths, (paths[-1] if paths else start_after_key)

    def _key(self, path: str) -> str:
        root = self._storage.full_path("").rstrip("/") + "/"
        return path[len(root):] if path.startswith(root) else path


class LocalIndexReader(IndexReader):
    pass


class S3IndexReader(IndexReader):
    pass
