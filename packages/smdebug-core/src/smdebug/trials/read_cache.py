"""The memo of index files a trial has already read (so a refresh never reads one twice)."""

from __future__ import annotations

from bisect import bisect_left
from typing import Optional


class ReadIndexFilesCache:
    """Keys of the index files read so far.

    A trial lists index files after a start key (just before the first step that is not complete yet);
    keys before that start key are never listed again, so once the memo holds more than
    ``cache_limit`` keys, the ones sorting before the start key are dropped. ``cache_limit`` is soft:
    while no start key is known (nothing complete yet) nothing can be dropped.
    (The class keeps the name and interface of smdebug 1.0.x's ``smdebug.core.index_reader``.)
    """

    def __init__(self, cache_limit: int = 1000):
        self.lookup_set = set()
        self.cache_limit = cache_limit

    def has_not_read(self, index_file: str) -> bool:
        return index_file not in self.lookup_set

    def __contains__(self, index_file: str) -> bool:
        return index_file in self.lookup_set

    def __len__(self) -> int:
        return len(self.lookup_set)

    def add(self, index_file: str, start_after_key: Optional[str]) -> None:
        if len(self.lookup_set) > self.cache_limit:
            self._evict(start_after_key)
        self.lookup_set.add(index_file)

    def _evict(self, start_after_key: Optional[str]) -> None:
        if not start_after_key:
            return
        keys = sorted(self.lookup_set)
        for key in keys[:bisect_left(keys, start_after_key)]:
            self.lookup_set.discard(key)
