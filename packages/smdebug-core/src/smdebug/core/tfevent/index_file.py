"""Index files: one JSON object per (global step, worker) saying where each tensor's record is.

```
{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "events/000000000003/000000000003_worker_0.tfevents",
          "declares_aliases": true},
 "tensor_payload": [{"tensorname": "w", "start_idx": 0, "length": 118},
                    {"tensorname": "w2", "start_idx": 0, "length": 118, "alias_of": "w"}, ...],
 "shape_payload": [{"tensorname": "w", "originalname": "w", "shape": [2, 3]}, ...]}
```

``declares_aliases`` (written since this project's index files mark aliases): every entry whose record is
another tensor's (the writer's aliases, one record indexed under several names) says so with ``alias_of``
(the tag of the record). A reader then accepts a record of another name only for such an entry. Files
without the mark (smdebug 1.0.x, older writers of this project) keep the old, permissive rule: a record of
another tensor indexed at the same location is taken as an alias. Readers that do not know these keys
(smdebug 1.0.x) ignore them. A name is indexed at most once per file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import chain
from math import prod
from operator import add
from typing import Dict, Optional, Tuple

from smdebug.core.bounded_json import JsonTooLarge, loads_bounded
from smdebug.core.env_settings import env_int
from smdebug.core.logger import get_logger
from smdebug.core.locations import EVENTS_DIR, MAX_STEP, parse_step_file_name, step_str
from smdebug.core.modes import ModeKeys
from smdebug.core.reductions import REDUCTION_PREFIX, parse_reduction_tensor_name
from smdebug.exceptions import IndexReaderException

logger = get_logger()


@dataclass(slots=True)
class IndexEntry:
    """Everything one index file says about one tensor. (slots: a run's index holds millions of them.)"""

    location: Optional[Tuple[int, int]] = None  # (start, length) in the event file
    shape: Optional[Tuple[int, ...]] = None
    original_name: Optional[str] = None


def build_index(mode: ModeKeys, mode_step: int, event_file: Optional[str], tensors, shapes,
                declares_aliases: bool = False) -> bytes:
    """An index document. ``tensors``: dicts ``{"tensorname", "start_idx", "length"}`` (``"alias_of"``) or,
    from the writer, ``(name, start, length)`` tuples (``(name, start, length, alias_of)`` for an alias);
    ``shapes``: dicts ``{"tensorname", "originalname", "shape"}``. ``declares_aliases``: mark the file as
    one whose aliases all say so (see the module's docstring)."""
    meta = {"mode": mode.name, "mode_step": mode_step}
    if event_file is not None and tensors:
        meta["event_file_name"] = event_file
    if declares_aliases:
        meta[DECLARES_ALIASES] = True
    if tensors and isinstance(tensors[0], tuple):
        # A step's index is written for every saved step: the entries are formatted directly (the same
        # text json.dumps gives for them, names escaped by json's own encoder) rather than built as dicts.
        payload = ", ".join([_ENTRY % (_json_string(t[0]), t[1], t[2]) if len(t) == 3 else
                             _ALIAS_ENTRY % (_json_string(t[0]), t[1], t[2], _json_string(t[3])) for t in tensors])
        text = f'{{"meta": {json.dumps(meta, separators=_SEPARATORS)}, "tensor_payload": [{payload}]'
        if shapes:
            text += ', "shape_payload": ' + json.dumps(shapes, separators=_SEPARATORS)
        return (text + "}").encode("utf-8")
    doc = {"meta": meta, "tensor_payload": list(tensors)}
    if shapes:
        doc["shape_payload"] = shapes
    return json.dumps(doc, separators=_SEPARATORS).encode("utf-8")


_SEPARATORS = (", ", ": ")
_ENTRY = '{"tensorname": %s, "start_idx": %d, "length": %d}'
_ALIAS_ENTRY = '{"tensorname": %s, "start_idx": %d, "length": %d, "alias_of": %s}'
#: meta key of index files whose aliases are all declared (entries with ``alias_of``)
DECLARES_ALIASES = "declares_aliases"
ALIAS_OF = "alias_of"
_json_string = json.encoder.encode_basestring_ascii  # what json.dumps uses for strings (ensure_ascii)


# The writer always puts "meta" first; reading it with a regex lets a trial learn every step's mode
# without parsing each file's (possibly large) payload until a tensor of that step is asked for.
_META_RE = re.compile(rb'^\s*\{\s*"meta"\s*:\s*(\{[^{}]*\})')


@dataclass
class IndexFile:
    """One index file. Its payload is parsed on first use, so opening a trial costs little.

    Parsed, it keeps plain dicts (record locations, shapes, stored reductions): a run's index holds an
    entry per tensor and step, and a trial reads it per value. :attr:`entries` (IndexEntry objects that
    merge a tensor's location and shape) is built from them only when asked for.
    """

    key: str
    step: int
    worker: str
    mode: ModeKeys
    mode_step: int
    event_file: Optional[str]
    _raw: Optional[bytes] = None
    #: tensor name -> (start, length) of its record in the event file
    _locations: Optional[Dict[str, Tuple[int, int]]] = field(default=None, repr=False)
    #: tensor name -> (shape, original name)
    _shapes: Optional[Dict[str, Tuple[Tuple[int, ...], str]]] = field(default=None, repr=False)
    _reductions: Optional[Dict[str, Dict[Tuple[str, bool], IndexEntry]]] = field(default=None, repr=False)
    #: the event file's key relative to the run root (see event_file_key), worked out once
    event_key: Optional[str] = field(default=None, repr=False)
    _entries: Optional[Dict[str, IndexEntry]] = field(default=None, repr=False)
    #: (first byte, end) of all the records this file locates (None: none), for reading a step at once
    _extent: Optional[Tuple[int, int]] = field(default=None, repr=False)
    #: the file's meta says its writer declares every alias (``alias_of``): a record of another tensor is
    #: accepted only for a declared alias, and a name indexed twice is damage
    declares_aliases: bool = False
    #: tensor name -> the tag of the record it is an alias of (declared aliases; parsed with the payload)
    _aliases: Optional[Dict[str, str]] = field(default=None, repr=False)

    def __post_init__(self):
        if self.event_key is None and self.event_file is not None:
            self.event_key = event_file_key(self.event_file)

    def _parse(self) -> None:
        doc = _load_json(self._raw, self.key, self.step)
        marked = b'"alias_of"' in self._raw
        self._locations, self._shapes, self._reductions, self._extent, self._aliases = _parse_payload(
            doc, self.key, self.step, self.declares_aliases, marked)
        self._raw = None

    def mark_damaged(self) -> None:
        """Treat the file as holding nothing (``skip_damaged``)."""
        self._locations, self._shapes, self._reductions, self._entries, self._raw = {}, {}, {}, {}, None
        self._extent = None
        self._aliases = {}

    def alias_of(self, name: str) -> Optional[str]:
        """The tag of the record ``name`` is a declared alias of (None: not declared an alias)."""
        if self._locations is None:
            self._parse()
        return self._aliases.get(name) if self._aliases else None

    @property
    def strict_aliases(self) -> bool:
        """Whether only declared aliases may point at another tensor's record (see the module docstring)."""
        if self._locations is None:
            self._parse()
        return self.declares_aliases or bool(self._aliases)

    @property
    def parsed(self) -> bool:
        return self._locations is not None

    def location(self, name: str) -> Optional[Tuple[int, int]]:
        """(start, length) of the tensor's record, or None (no raw value at this step)."""
        if self._locations is None:
            self._parse()
        return self._locations.get(name)

    @property
    def extent(self) -> Optional[Tuple[int, int]]:
        """(first byte, end) of the records this file locates, raw tensors and reductions (None: none)."""
        if self._locations is None:
            self._parse()
        return self._extent

    @property
    def locations(self) -> Dict[str, Tuple[int, int]]:
        if self._locations is None:
            self._parse()
        return self._locations

    @property
    def entries(self) -> Dict[str, IndexEntry]:
        """Tensor name -> entry, for raw tensors and shapes."""
        if self._entries is None:
            if self._locations is None:
                self._parse()
            entries = {name: IndexEntry(location) for name, location in self._locations.items()}
            for name, (shape, original) in self._shapes.items():
                entry = entries.get(name)
                if entry is None:
                    entry = entries[name] = IndexEntry()
                entry.shape, entry.original_name = shape, original
            self._entries = entries
        return self._entries

    @property
    def reductions(self) -> Dict[str, Dict[Tuple[str, bool], IndexEntry]]:
        """Tensor name -> {(reduction, abs): entry} for reductions stored at this step."""
        if self._reductions is None:
            self._parse()
        return self._reductions

    def tensor_names(self):
        """Names of tensors with anything (raw, shape or a reduction) in this file."""
        if self._locations is None:
            self._parse()
        names = self._locations.keys()
        if self._shapes:
            names = names | self._shapes.keys()
        if self._reductions:
            names = names | self._reductions.keys()
        return names

    def has_tensor(self, name: str) -> bool:
        if self._locations is None:
            self._parse()
        return name in self._locations or name in self._reductions or name in self._shapes


#: An index file larger than this is refused unparsed: parsing JSON takes many times the file's size in
#: memory, and a step of 100,000 tensors makes an index of about 10 MB.
MAX_INDEX_FILE_BYTES = env_int("SMDEBUG_MAX_INDEX_FILE_BYTES", 256 << 20, minimum=1)


#: what an index file that is no JSON document at all is called (empty, cut short, garbage): also how a file still
#: being written in place looks (a copier's mirror of a live run), which a live trial waits for (trials.trial)
NOT_JSON = "Empty/Corrupt Index File"


def _load_json(raw: bytes, key: str, step: int) -> dict:
    if len(raw) > MAX_INDEX_FILE_BYTES:
        raise IndexReaderException(
            f"Index file of {len(raw)} bytes is larger than SMDEBUG_MAX_INDEX_FILE_BYTES ({MAX_INDEX_FILE_BYTES})",
            key, step)
    try:
        doc = loads_bounded(raw)
    except JsonTooLarge as e:
        raise IndexReaderException(f"Index file refused: {e}", key, step) from None
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: absurdly deep nesting
        raise IndexReaderException(NOT_JSON, key, step) from None
    if not isinstance(doc, dict):
        raise IndexReaderException("Index file does not hold a JSON object", key, step)
    return doc


def _parse_meta(meta, key: str, step: int, worker: str):
    if not isinstance(meta, dict) or not meta:
        raise IndexReaderException("Index file has no meta", key, step)
    try:
        mode = ModeKeys[meta["mode"]]
        mode_step = meta["mode_step"]
    except (KeyError, TypeError):
        raise IndexReaderException(f"Index file has an invalid meta {_short(meta)}", key, step) from None
    # Writers put an int there (the original's too). int() read 30.7, "30" and true as steps 30, 30 and 1, the
    # last then blamed on a clash with step 1's index file instead of the bad value.
    if type(mode_step) is not int:
        raise IndexReaderException(f"Index meta.mode_step must be an integer, not {_short(mode_step)}", key, step)
    if not -MAX_STEP <= mode_step <= MAX_STEP:  # (steps are int64: 10**30 would overflow every reader)
        raise IndexReaderException(f"Index meta.mode_step {_short(mode_step)} is out of range", key, step)
    event_file = meta.get("event_file_name")
    if event_file == "":
        # Written by index files that locate no record in an event file (the original's own test helpers
        # write them): steps and modes are all a reader can take from them.
        event_file = None
    if event_file is not None:
        if not isinstance(event_file, str):
            raise IndexReaderException("Index meta.event_file_name must be a string", key, step)
        if event_file_key(event_file) is None:
            # Readers only ever open events/<step>/<file>.tfevents inside the run: an index naming
            # anything else ("../../etc/passwd", an absolute path) is damaged or hostile.
            raise IndexReaderException(
                f"Index meta.event_file_name {event_file[:200]!r} could name a file outside the run", key, step)
        if not _names_events_of_step(event_file, step, worker):
            # Every writer puts a worker's records of a step in that worker's event file of the step: an index
            # naming another file would give that file's records (another step's or worker's, or not records
            # at all) as this worker's values of this step.
            raise IndexReaderException(
                f"Index meta.event_file_name {event_file[:200]!r} is not the event file of step {step} of "
                f"worker {worker[:100]!r} ({EVENTS_DIR}/{step_str(step)}/...)", key, step)
    return mode, mode_step, event_file


def _declares_aliases(meta) -> bool:
    return meta.get(DECLARES_ALIASES) is True


def _names_events_of_step(event_file: str, step: int, worker: str) -> bool:
    folder_and_name = event_file_key(event_file).split("/")
    if len(folder_and_name) != 3 or folder_and_name[0] != EVENTS_DIR or not folder_and_name[2].endswith(".tfevents"):
        return False
    try:
        return folder_and_name[1] == step_str(step) and parse_step_file_name(folder_and_name[2]) == (step, worker)
    except IndexReaderException:
        return False


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def event_file_key(event_file: str) -> Optional[str]:
    """The key (relative to the run root) of the event file an index names, or None if it could name
    something outside the run (``..``, an absolute path, a drive, NUL). The original stored the path
    relative to the run root; only its last three components count (``events/<STEP12>/<file>``)."""
    parts = event_file.replace("\\", "/").split("/")[-3:]
    for p in parts:
        if p in ("", ".", "..") or "\x00" in p or ":" in p:
            return None
    return "/".join(parts)


def _parse_payload(doc: dict, key: str, step: int, strict: bool = False, marked: bool = True):
    """(locations, shapes, reductions, extent, aliases) of an index document (see IndexFile). This runs once
    per index file a trial reads, so the common case (well-formed entries, no reductions) is checked in bulk.
    ``strict``: the file declares its aliases (a name listed twice is damage); ``marked``: the document may
    hold ``alias_of`` keys (False: its text has none, so the entries need no second look)."""
    if "tensor_payload" not in doc and "shape_payload" not in doc:
        raise IndexReaderException("Index file has neither tensor_payload nor shape_payload", key, step)
    shapes: Dict[str, Tuple[Tuple[int, ...], str]] = {}
    reductions: Dict[str, Dict[Tuple[str, bool], IndexEntry]] = {}
    extent = None
    aliases: Dict[str, str] = {}
    try:
        payload = doc.get("tensor_payload") or []
        locations = {item["tensorname"]: (item["start_idx"], item["length"]) for item in payload}
        if len(locations) != len(payload):
            _duplicate_names(payload, key, step, strict)  # (later entries of a name win, as in the original)
        if marked:
            for item in payload:
                target = item.get(ALIAS_OF)
                if target is not None:
                    if not isinstance(target, str):
                        raise TypeError(f"alias_of {_short(target)} is not a string")
                    target.encode("utf-8")
                    aliases[item["tensorname"]] = target
        if locations:
            starts, lengths = zip(*locations.values())
            try:
                # (joining fails unless every name is a string; the joined names also show at once
                # whether any is a stored reduction)
                joined = "\0".join(locations)
            except TypeError:
                joined = None
            if joined is None or set(map(type, chain(starts, lengths))) != _INT:
                locations = _checked_locations(locations)
                starts, lengths = zip(*locations.values())
                joined = "\0".join(locations)
            elif min(starts) < 0 or min(lengths) <= 0:
                raise ValueError("a record location is negative or empty")
            extent = (min(starts), max(map(add, starts, lengths)))
            # Names are text: a lone surrogate ("\udcff" in the JSON) cannot be printed, drawn or written.
            joined.encode("utf-8")
            if REDUCTION_PREFIX in joined:
                _split_reductions(locations, reductions)
        # The original kept only the shape when a tensor had both a location and a shape (dropping the
        # location); we keep both.
        for item in doc.get("shape_payload") or []:
            name = item["tensorname"]
            if not isinstance(name, str):
                raise TypeError(f"tensor name {_short(name)} is not a string")
            name.encode("utf-8")
            shape = item["shape"]
            # (a list of sizes, as numpy gives them: a string would be read digit by digit, and numpy
            # holds shapes as int64 with at most 64 dimensions)
            if not isinstance(shape, list) or len(shape) > _MAX_DIMS:
                raise ValueError(f"shape {_short(shape)} of {_short(name)} is not a list of at most "
                                 f"{_MAX_DIMS} sizes")
            shape = tuple(int(d) for d in shape)
            if any(not 0 <= d <= MAX_STEP for d in shape):
                raise ValueError(f"shape {_short(shape)} of {_short(name)} has a negative or too large size")
            if len(shape) > 1 and prod(shape) > MAX_STEP:
                # (no array holds more than 2**63 - 1 elements: numpy, and every reader taking the size from
                # the shape, would overflow; tensor.shape() gave it as the tensor's shape)
                raise ValueError(f"shape {_short(shape)} of {_short(name)} has more elements than any tensor")
            shapes[name] = (shape, item.get("originalname", name))
    except UnicodeEncodeError:
        raise IndexReaderException("Index file has a tensor name that is not valid text (a lone surrogate)",
                                   key, step) from None
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise IndexReaderException(f"Index file has a malformed payload entry ({e})", key, step) from None
    return locations, shapes, reductions, extent, aliases


def _duplicate_names(payload, key: str, step: int, strict: bool) -> None:
    """A name listed twice in one index file: which entry is the tensor's? An index whose writer declares
    its aliases never lists a name twice (IndexReaderException). Older writers did, for a scalar saved
    twice in one step (the later entry is the later value, and readers took it): warned once per run."""
    seen = set()
    for item in payload:
        name = item["tensorname"]
        try:
            if name in seen:
                break
        except TypeError:  # (an unhashable name: reported as malformed by the caller's checks)
            raise TypeError(f"tensor name {_short(name)} is not a string") from None
        seen.add(name)
    else:
        return
    if strict:
        raise IndexReaderException(
            f"Index file lists tensor {_short(name)} more than once (which entry is its record?)", key, step)
    run = key.rsplit("/index/", 1)[0] if "/index/" in key else key
    if run not in _warned_duplicates:
        if len(_warned_duplicates) < 1000:
            _warned_duplicates.add(run)
        logger.warning("Index file %s lists tensor %s more than once; the last entry is used (as smdebug 1.0.x "
                       "did; warned once per run)", key, _short(name))


_warned_duplicates: set = set()
_INT = {int}
_MAX_DIMS = 64


def _checked_locations(locations):
    """The slow path: names must be strings, locations non-negative ints (numbers given as floats or
    strings are converted, as before)."""
    checked = {}
    for name, (start, length) in locations.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor name {name!r} is not a string")
        start, length = int(start), int(length)
        if start < 0 or length <= 0:
            raise ValueError(f"bad location {start}+{length}")
        checked[name] = (start, length)
    return checked


def _split_reductions(locations, reductions) -> None:
    for name in [n for n in locations if n.startswith(REDUCTION_PREFIX)]:
        parsed = parse_reduction_tensor_name(name)
        if parsed is not None:
            tname, op, is_abs = parsed
            reductions.setdefault(tname, {})[(op, is_abs)] = IndexEntry(locations.pop(name))


#: the keys of an index document: each may be there once (see :func:`_key_given_twice`)
_DOCUMENT_KEYS = (b'"meta"', b'"tensor_payload"', b'"shape_payload"')


def _key_given_twice(raw: bytes) -> Optional[str]:
    """A key of the document given twice, or None. JSON parsers disagree on which of two equal keys counts
    (Python's json takes the last, the meta read by _META_RE is the first): a file with two "meta" or two
    "tensor_payload" shows one step to this reader and another to the next tool. No writer writes one.
    (Counted in the text first, which costs a scan; only a count above one is looked at as a key.)"""
    for key in _DOCUMENT_KEYS:
        if raw.count(key) > 1 and len(re.findall(re.escape(key) + rb"\s*:", raw)) > 1:
            return key.decode()
    return None


def parse_index_file(key: str, step: int, worker: str, raw: bytes, lazy: bool = True) -> IndexFile:
    twice = _key_given_twice(raw) if len(raw) <= MAX_INDEX_FILE_BYTES else None
    if twice is not None:
        raise IndexReaderException(f"Index file gives {twice} more than once (which one is the step's?)", key, step)
    m = _META_RE.match(raw) if lazy and len(raw) <= MAX_INDEX_FILE_BYTES else None
    meta = None
    if m is not None:
        try:
            meta = json.loads(m.group(1))
        except (ValueError, RecursionError):  # (the full read below says what is wrong with it)
            meta = None
    if meta is None:
        doc = _load_json(raw, key, step)
        mode, mode_step, event_file = _parse_meta(doc.get("meta"), key, step, worker)
        declares = _declares_aliases(doc["meta"])
        locations, shapes, reductions, extent, aliases = _parse_payload(doc, key, step, declares,
                                                                        b'"alias_of"' in raw)
        return IndexFile(key, step, worker, mode, mode_step, event_file, None, locations, shapes, reductions,
                         _extent=extent, declares_aliases=declares, _aliases=aliases)
    mode, mode_step, event_file = _parse_meta(meta, key, step, worker)
    return IndexFile(key, step, worker, mode, mode_step, event_file, raw, None,
                     declares_aliases=_declares_aliases(meta))

