"""A set of collections plus the run metadata stored beside them (``_meta``: ``num_workers``, and what the
hook knows about the run, e.g. ``framework`` and ``activation_layers``; see :attr:`CollectionManager.meta`)."""

from __future__ import annotations

import json
from typing import Dict, Optional

from smdebug.core.env_settings import env_int
from smdebug.core.run_regex import Budget
from smdebug.core.bounded_json import JsonTooLarge, loads_bounded
from smdebug.core.collection import Collection, _Mutations
from smdebug.core.logger import get_logger
from smdebug.core.names import clipped
from smdebug.core.locations import COLLECTIONS_DIR, DEFAULT_COLLECTIONS_FILE_NAME
from smdebug.exceptions import CollectionFileCorrupted, SMDebugTypeError

_TOP_LEVEL_KEYS = {"collections", "_meta"}
#: A collections file larger than this is refused unread (CollectionFileCorrupted): parsing JSON takes
#: several times the file's size in memory, and a model of 100,000 tensors listed by name in a few
#: collections makes a file of a few MB.
MAX_COLLECTIONS_FILE_BYTES = env_int("SMDEBUG_MAX_COLLECTIONS_FILE_BYTES", 64 << 20, minimum=1)
MAX_COLLECTIONS_FILE_SETTING = "SMDEBUG_MAX_COLLECTIONS_FILE_BYTES"
#: workers a collections file may say the run has. Each worker writes its own collections and index files, so
#: a run of this many would hold tens of millions of files; a count beyond it (10^18) comes from damage, and
#: taken as written it kept every step of a live run "not complete yet" (waiting for workers that cannot
#: exist) and made a finished one fail only after listing for them.
MAX_NUM_WORKERS = 1 << 24


class CollectionManager:
    collection_class = Collection

    def __init__(self, collections: Optional[Dict[str, Collection]] = None, create_default: bool = False):
        self.collections: Dict[str, Collection] = dict(collections or {})
        self._num_workers = 1
        #: ``_meta`` entries besides ``num_workers``, kept as read (plain JSON values): a newer writer's keys
        #: survive a round trip. The original's reader takes ``_meta`` as a whole, so keys added here are safe.
        #: Readers of a key validate it themselves (``smdebug.core.run_info``, ``smdebug.core.activations``).
        self.meta: Dict[str, object] = {}
        if create_default:
            self.get("default")

    # --- access -----------------------------------------------------------------------------
    def get(self, name: str, create: bool = True) -> Collection:
        coll = self.collections.get(name)
        if coll is None:
            if not create:
                raise KeyError(name)
            coll = self.collection_class(name)
            self.collections[name] = coll
            _Mutations.count += 1
        return coll

    def create_collection(self, name: str) -> Collection:
        """Add an empty collection ``name`` unless there is one; returns it."""
        return self.get(name)

    def add(self, coll) -> None:
        if isinstance(coll, str):
            coll = self.collection_class(coll)
        if not isinstance(coll, Collection):
            raise SMDebugTypeError(f"Expected a Collection, got {type(coll).__name__}")
        self.collections[coll.name] = coll
        _Mutations.count += 1

    def get_collections(self) -> Dict[str, Collection]:
        return self.collections

    def __contains__(self, name) -> bool:
        return name in self.collections

    def __iter__(self):
        return iter(self.collections.values())

    def __len__(self):
        return len(self.collections)

    # --- metadata ---------------------------------------------------------------------------
    def get_num_workers(self) -> int:
        return self._num_workers

    def set_num_workers(self, n: int) -> None:
        self._num_workers = int(n)

    # --- serialisation ----------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        return {
            "collections": {name: c.to_json_dict() for name, c in sorted(self.collections.items())},
            "_meta": {"num_workers": self._num_workers, **self.meta},
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json_dict())

    def export(self, out_dir, collections_file_name: str = DEFAULT_COLLECTIONS_FILE_NAME) -> None:
        """Write the collections file ``collections/000000000/<collections_file_name>`` of the run at
        ``out_dir`` (a directory or ``s3://bucket/prefix``), atomically. Hooks do this themselves; this
        is for tools that build or rewrite runs."""
        from smdebug.core.storage.factory import get_storage

        get_storage(out_dir).write_atomic(f"{COLLECTIONS_DIR}/{collections_file_name}", self.dumps().encode("utf-8"))

    @classmethod
    def load(cls, filename, collection_class=None) -> "CollectionManager":
        """Read a collections file (a local path or ``s3://bucket/key``)."""
        from smdebug.core.storage.factory import storage_for_file

        from smdebug.core.storage.errors import UnreadableFileError

        storage, name = storage_for_file(filename)
        try:
            raw = storage.read_limited(name, MAX_COLLECTIONS_FILE_BYTES, MAX_COLLECTIONS_FILE_SETTING)
        except UnreadableFileError as e:
            raise CollectionFileCorrupted(str(e), storage.full_path(name)) from None
        manager = cls.loads(raw, storage.full_path(name))
        if collection_class is not None:
            manager.collection_class = collection_class
        return manager

    @classmethod
    def loads(cls, text, path=None) -> "CollectionManager":
        try:
            data = loads_bounded(text)
        except JsonTooLarge as e:
            raise CollectionFileCorrupted(f"Collections file refused: {e}", path) from None
        except (ValueError, UnicodeDecodeError, RecursionError) as e:  # RecursionError: absurd nesting
            raise CollectionFileCorrupted(f"Collections file is not valid JSON: {type(e).__name__}: {e}"[:500],
                                          path) from None
        if not isinstance(data, dict):
            raise CollectionFileCorrupted("Collections file must hold a JSON object", path)
        unknown = set(data) - _TOP_LEVEL_KEYS
        if unknown:
            raise CollectionFileCorrupted(f"Collections file has unknown top-level keys {sorted(unknown)}", path)
        colls = data.get("collections")
        if colls is None:
            colls = {}
        if not isinstance(colls, dict):
            raise CollectionFileCorrupted("'collections' must be an object of name -> collection", path)
        cm = cls()
        budget = Budget(str(path) if path else "the collections file")  # (its patterns are untrusted)
        for name, params in colls.items():
            cm.collections[name] = cls.collection_class.from_dict(params, path, budget=budget)
        meta = data.get("_meta") or {}
        cm._num_workers = _num_workers(meta.get("num_workers", 1) if isinstance(meta, dict) else 1, path)
        if isinstance(meta, dict):
            cm.meta = _plausible_meta({k: v for k, v in meta.items() if k != "num_workers"}, path)
        return cm

    def __eq__(self, other):
        if not isinstance(other, CollectionManager):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return f"<CollectionManager collections={sorted(self.collections)} num_workers={self._num_workers}>"


#: the largest whole number and the longest string a ``_meta`` record of a hook holds (steps, fold counts and
#: times fit in 64 bits; names and regexes are far shorter). A record past them comes from damage or an
#: attacker: every reader that quoted it (a 20 MB framework name, a 4,000-digit fold count) printed it whole.
_META_INT_LIMIT = 1 << 63
_META_STRING_LIMIT = 64 * 1024


def _plausible_meta(meta: Dict[str, object], path) -> Dict[str, object]:
    """``meta`` without the records that hold a value no hook writes (a whole number beyond 64 bits, a string
    over 64 KiB): each dropped one is logged, and readers then see the record as absent, as in a run
    written before the record existed."""
    kept = {}
    for key, value in meta.items():
        why = _implausible(value)
        if why is None:
            kept[key] = value
        else:
            get_logger().warning(f"smdebug: _meta.{clipped(str(key), 100)} of {path or 'a collections file'} holds "
                                 f"{why}, which no hook writes; ignored")
    return kept


def _implausible(value) -> Optional[str]:
    """What in a parsed JSON value is out of a hook's range (see _META_INT_LIMIT), or None. Iterative: the
    file's nesting is bounded only by the parser's recursion limit."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not -_META_INT_LIMIT <= item < _META_INT_LIMIT:
            return f"a whole number of {len(str(abs(item)))} digits"
        if isinstance(item, str) and len(item) > _META_STRING_LIMIT:
            return f"a string of {len(item):,} characters"
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


def _num_workers(value, path) -> int:
    """The ``_meta.num_workers`` of a collections file: a whole number from 1 to MAX_NUM_WORKERS, as writers
    write it. ``true`` (a bool is an int to Python: read as 1 worker) and ``2.7`` (read as 2) were taken."""
    shown = repr(value)[:100]
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # (1e3: JSON tools may write whole numbers so)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CollectionFileCorrupted(f"_meta.num_workers must be a whole number, got {shown}", path)
    if value < 1:
        raise CollectionFileCorrupted(f"_meta.num_workers must be >= 1, got {value}", path)
    if value > MAX_NUM_WORKERS:
        raise CollectionFileCorrupted(
            f"_meta.num_workers is {shown}, more workers than any run holds (at most {MAX_NUM_WORKERS:,}): "
            "the file is damaged", path)
    return value
