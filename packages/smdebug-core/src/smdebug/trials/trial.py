"""Reading a run back: steps, modes, workers, collections and tensors, also while it is written.

Opening a trial lists the index files and reads only their ``meta`` (mode and mode step); a step's
tensor payload is parsed when something of that step is asked for, and a tensor value is one ranged
read of one record. So the cost of an analysis grows with what it asks, not with the size of the run.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import time
from collections import OrderedDict, deque
from typing import Deque, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

from smdebug.core import reader_arguments as argcheck
from smdebug.core.collection import Collection
from smdebug.core.collection_manager import (
    MAX_COLLECTIONS_FILE_BYTES,
    MAX_COLLECTIONS_FILE_SETTING,
    CollectionManager,
)
from smdebug.core.env_settings import env_float, env_int
from smdebug.core.locations import (
    COLLECTIONS_DIR,
    END_OF_JOB_FILE,
    INDEX_DIR,
    STOP_SIGNAL_FILE,
    WORKERS_ENDED_DIR,
    index_file_name,
    index_file_problem,
    index_prefix_for_step,
    is_index_file,
    parse_collection_file_name,
    parse_step_file_name,
    serialize_worker_name,
)
from smdebug.core.logger import get_logger
from smdebug.core.stop_signal import MAX_SIGNAL_BYTES
from smdebug.core.hook_failures import read_notes
from smdebug.core.missing_hints import close_names_hint
from smdebug.core.lookalike_names import LookalikeNames
from smdebug.core.modes import ModeKeys
from smdebug.core.names import clipped, did_you_mean, listed, one_line, printable
from smdebug.core.run_regex import PatternError, names_matching
from smdebug.core.storage.base import Storage, is_s3_path, parse_s3_path
from smdebug.core.storage.factory import get_storage
from smdebug.core.storage.errors import UnreadableFileError
from smdebug.core.tensor import StepState, Tensor
from smdebug.core.tfevent.index_file import (
    MAX_INDEX_FILE_BYTES,
    NOT_JSON,
    IndexFile,
    event_file_key,
    parse_index_file,
)
from smdebug.core.tfevent.records import HEADER_SIZE, check_index_length
from smdebug.core.tfevent.tensor_codec import decode_tensor_record
from smdebug.trials.read_cache import ReadIndexFilesCache
from smdebug.trials.read_log import ReadLog
from smdebug.core.skip_notes import SkipNotes
from smdebug.exceptions import (
    CollectionFileCorrupted,
    EventFileCorrupted,
    IndexReaderException,
    InvalidWorker,
    MissingCollectionFiles,
    MissingEventFile,
    NoMoreData,
    NoSmdebugRun,
    SMDebugTypeError,
    SMDebugValueError,
    StepNotYetAvailable,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.trials.run_detection import missing_run_reason

logger = get_logger()

#: an index entry claiming a record longer than this has the record's own header read and compared first
#: (see Trial._check_claimed_length); shorter ones cost at most this much to read whole, then are compared
_CHECK_HEADER_FIRST = 1 << 20


def _index_file_path(trial_path, key: str) -> str:
    """An index file's path as smdebug 1.0.x reported it: the trial path joined with the key for local
    runs, the object key (prefix included) for S3 runs."""
    trial_path = os.fspath(trial_path)
    if is_s3_path(trial_path):
        _, prefix = parse_s3_path(trial_path)
        return prefix.rstrip("/") + "/" + key if prefix.strip("/") else key
    return os.path.join(trial_path, key)




class Trial:
    """A run written by a hook, at a local path or ``s3://bucket/prefix``.

    :param range_steps: ``(begin, end)``: only global steps ``begin <= step < end`` are loaded.
    :param cache: keep fetched tensor values in memory.
    :param wait_for_collections: seconds to wait for the run's collection files to appear, also for a
        run that has not started yet (``float('inf')``: no limit). None (the default): a path holding
        nothing a hook writes raises :class:`~smdebug.exceptions.NoSmdebugRun` at once; a run that has
        started is waited for until its collection files appear or it ends.
    :param skip_damaged: skip corrupt index files with a warning instead of raising.
    :param poll_interval: seconds between looks for new data while waiting.
    :param cache_dir: S3 runs: keep downloaded index files and tensor data in this local directory, so
        opening or analysing the run again does not download them again (see docs/s3.md).
    """

    def __init__(
        self,
        name: str,
        path: str,
        storage: Optional[Storage] = None,
        range_steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
        cache: bool = False,
        wait_for_collections: Optional[float] = None,
        skip_damaged: bool = False,
        poll_interval: float = 2.0,
        cache_dir: Optional[str] = None,
        **_ignored,
    ):
        self.name = name
        self.path = path
        self.storage = storage or get_storage(path, cache_dir=cache_dir)
        self.range_steps = self._validate_range(range_steps)
        # (skip_damaged="no" is true to Python: it turned skipping on; a poll_interval of "x" or NaN failed
        # in time.sleep at the first wait)
        self.cache = argcheck.flag(cache, "cache")
        self.skip_damaged = argcheck.flag(skip_damaged, "skip_damaged")
        self.poll_interval = argcheck.seconds(poll_interval, "poll_interval")
        if self.poll_interval is None or not 0 <= self.poll_interval <= 86400:
            raise SMDebugValueError(f"poll_interval must be seconds from 0 to 86400, got {poll_interval!r}")
        self.dynamic_refresh = True
        self.num_workers = 1
        self.worker_set: Set[str] = set()
        self.collection_manager = CollectionManager()
        self.index_reader = self  # compatibility: the original exposed an index reader object
        self.incomplete_wait_window = env_int("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW", 1000, minimum=0)
        self.missing_event_retry_limit = env_int("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", 100, minimum=0)
        # Fruitless waits for missing event files share one allowance per trial (one file's worth of
        # retries): a live run whose event files were removed would otherwise cost every value its own
        # full wait (100 x 2 s). A file that appears while waited for makes the allowance whole again.
        self._missing_event_waits_left: Optional[int] = None
        #: whether a missing event file of a run that has not ended is waited for (it may still be being
        #: written); one-shot readers (the CLI's ls, show, plot, export, report, a rules run without --follow)
        #: set it False: a crashed run's missing file is said at once, not after 200 s of silence
        self.wait_for_missing_event_files = True
        self._said_waiting = False
        # index files of a live run that did not parse but may still be being written (see _being_written):
        # key -> when this trial first found it so (time.monotonic())
        self._unfinished: Dict[str, float] = {}
        self.end_delay_refresh = env_float("SMDEBUG_TRAINING_END_DELAY_REFRESH", 1.0, minimum=0.0, maximum=3600.0)

        self._missing_workers_note: Optional[str] = None
        self._skip_notes = SkipNotes(str(path))  # skip_damaged: the first damaged files named, the rest counted
        # when this trial first saw every worker of such a run ended (time.monotonic()), and the seconds it
        # still waits before reading the run as ended (see _fewer_workers_all_ended)
        self._all_ended_seen_at: Optional[float] = None
        self._ended_wait_left: Optional[float] = None
        self._tensors: Dict[str, Tensor] = {}
        self._lookalike_names = LookalikeNames(str(path))  # names that print alike are said (once each)
        self._reset_index_state()
        # a job restarted into this run folder (see _check_restart): when the whole index was last listed
        self._full_listing_at = time.monotonic()
        self._restart_check_interval = env_float("SMDEBUG_RESTART_CHECK_INTERVAL", 60.0, minimum=0.0,
                                                 maximum=86400.0)
        self._restart_reloads = 0
        self._unread_below: Set[str] = set()  # the lower-step files the last full listing found unread
        # whether the run had ended when this trial first listed it (then no restart is looked for)
        self._ended_at_first_read: Optional[bool] = None
        self._generation = 0
        self._assumed_ended = False
        self._span_budget = env_int("SMDEBUG_TRIAL_SPAN_CACHE_BYTES", 64 << 20, minimum=0)
        self._read_logs: List[ReadLog] = []  # open read_log() blocks
        self._failure_notes: Optional[List[Tuple[str, bool]]] = None  # see hook_failures()
        #: the collections file the run's collections were read from (its full path; None: none read), which
        #: warnings about the run's records name
        self.collections_file: Optional[str] = None

        self._load_collections(_check_wait(wait_for_collections))
        self.refresh_data()

    # ------------------------------------------------------------------------------------------
    # set-up
    # ------------------------------------------------------------------------------------------
    def _reset_index_state(self) -> None:
        """Forget every index file read (the state built from them), so the next refresh reads the run's
        index from its first step: at construction, and when a job restarted into the run rewrote it."""
        self.loaded_all_steps = False
        self.last_complete_step = -1
        # where the next listing of index files starts (a key); see _update_token
        self._list_token: Optional[str] = None
        self._last_index_key: Optional[str] = None  # the last index file of a complete step read so far
        self._files: Dict[int, Dict[str, IndexFile]] = {}  # global step -> worker -> index file
        self._steps: List[int] = []  # sorted global steps
        self._read_keys = ReadIndexFilesCache()
        self._mode_to_global: Dict[ModeKeys, Dict[int, int]] = {}
        # mode -> its mode steps, sorted (the keys of _mode_to_global[mode]), kept as steps arrive: asking for a
        # mode's steps sorted the whole mapping at each call, and rules ask at every step
        self._mode_steps: Dict[ModeKeys, List[int]] = {}
        self._global_to_mode: Dict[int, Tuple[ModeKeys, int]] = {}
        # global step -> the worker whose index gives the step's mode and mode step (the first by name of
        # those with a file at that step of the run)
        self._mode_owner: Dict[int, str] = {}
        self._warned_mode_disagreement = False
        # Each worker numbers its own global steps (EVAL steps included), so workers that evaluate on one
        # rank only, or train on uneven shards, give one (mode, mode step) different global numbers. Until
        # that is seen, _files is keyed by the files' own steps (no cost for runs whose workers agree). Once
        # it is, _files/_steps hold each file at the global step where the first worker by name has its
        # (mode, mode step) (see _realign), and _own_files/_own_steps keep the files' own numbering, which
        # listing and completeness need (each worker writes its own steps in order).
        self._own_files = self._files
        self._own_steps = self._steps
        self._aligned = False
        self._realign_due = False
        # aligned: worker -> (mode, mode step) -> its file (one worker claims a mode step once)
        self._keys: Dict[str, Dict[Tuple[ModeKeys, int], IndexFile]] = {}
        # aligned: (worker, own step) -> global step of the run (None until the first alignment)
        self._placement: Optional[Dict[Tuple[str, int], int]] = None
        self._declares_aliases = False  # some index file of the run declares its aliases (see index_file)
        self._index_workers: Set[str] = set()  # workers named by index files (any step, in range or not)
        self._tensor_names: Set[str] = set()
        #: (how many names, them sorted): every rule asks for the run's names at every step; sorting 100,000
        #: names at each call made a judgement minutes long (the names only grow)
        self._sorted_names: Tuple[int, List[str]] = (-1, [])
        # tensor name -> sorted global steps with anything of it, kept up to date as index files are parsed,
        # so Tensor.steps() does not scan the whole run (rules ask for it at every step)
        self._tensor_step_index: Dict[str, List[int]] = {}
        # parsed index files not yet in _tensor_step_index (by their step of the run): it is only needed
        # for a tensor's steps, so fetching values step by step (a rule) never pays for building it
        self._step_index_backlog: List[IndexFile] = []
        self._unparsed: Deque[IndexFile] = deque()  # files whose payload was not read yet, in step order
        # Byte spans of event files fetched with read-ahead (remote storage): event key -> [(start, bytes)]
        self._spans: "OrderedDict[str, List[Tuple[int, bytes]]]" = OrderedDict()
        self._span_bytes = 0
        for tensor in self._tensors.values():  # (values cached from the files now replaced)
            tensor._values.clear()

    @staticmethod
    def _validate_range(range_steps):
        if range_steps is None:
            return None
        try:
            begin, end = range_steps
        except (TypeError, ValueError):
            raise SMDebugValueError("range_steps must be a (begin, end) pair") from None
        for v in (begin, end):
            if v is not None and (not isinstance(v, int) or v < 0):
                raise SMDebugValueError(f"range_steps bounds must be non-negative ints or None, got {v!r}")
        if begin is not None and end is not None and end <= begin:
            raise SMDebugValueError(f"range_steps end ({end}) must be greater than begin ({begin})")
        return (begin, end)

    def _in_range(self, step: int) -> bool:
        if self.range_steps is None:
            return True
        begin, end = self.range_steps
        return (begin is None or step >= begin) and (end is None or step < end)

    def _list(self, folder: str, start_after: Optional[str] = None) -> List[str]:
        """The keys under ``folder`` (INDEX_DIR or COLLECTIONS_DIR). A folder that cannot be listed
        (permission denied) raises the documented exception of its files, naming it (skipped with a
        warning under ``skip_damaged``); a run folder that cannot be opened at all is no run."""
        try:
            return self.storage.list(folder, start_after=start_after, skip_unreadable=self.skip_damaged)
        except UnreadableFileError as e:
            if e.filename == getattr(self.storage, "root", None):
                raise NoSmdebugRun(self.path, f"it cannot be opened ({e.reason})", hint="") from None
            error = (CollectionFileCorrupted(str(e), e.filename) if folder == COLLECTIONS_DIR
                     else IndexReaderException(str(e), e.filename))
            self._note_damage(error)
            raise error from None

    def _collection_files(self) -> List[str]:
        return [k for k in self._list(COLLECTIONS_DIR) if re.search(r"_?collections\.json$", k)]

    def _read_collection_file(self, files: List[str]) -> CollectionManager:
        """The collections of the run: the first readable collection file. With ``skip_damaged``,
        damaged files are skipped with a warning (all damaged: no collections, one worker per file)."""
        for k in files:
            try:
                try:
                    raw = self.storage.read_limited(k, MAX_COLLECTIONS_FILE_BYTES, MAX_COLLECTIONS_FILE_SETTING)
                except UnreadableFileError as e:  # unreadable, too large, or not a regular file
                    raise CollectionFileCorrupted(str(e), self.storage.full_path(k)) from None
                except FileNotFoundError:  # removed since the listing: as if it had not been listed
                    logger.warning("Collections file %s vanished while the run was being opened",
                                   self.storage.full_path(k))
                    continue
                manager = self.collection_manager.loads(raw, self.storage.full_path(k))
                self.collections_file = self.storage.full_path(k)
                return manager
            except CollectionFileCorrupted as e:
                if not self.skip_damaged:
                    raise
                self._skip_notes.warn("Skipping damaged collections file: %s", e)
        cm = CollectionManager()
        cm.set_num_workers(len(files))
        return cm

    def _load_collections(self, timeout: Optional[float]) -> None:
        start = time.monotonic()
        warned_at = start
        while True:
            files = self._collection_files()
            if files:
                first = self._read_collection_file(files)
                self.collection_manager = first
                self.num_workers = first.get_num_workers()
                if len(files) >= self.num_workers:
                    break
            elif timeout is None or timeout <= 0:
                # Nobody asked to wait: a path with nothing a hook writes fails now, not never -- at the first
                # look, and at any later one (a run whose files were all removed while it was opened was
                # waited for for ever: the slow vandalism test hung on one)
                reason = missing_run_reason(self.storage, self.path)
                if reason is not None:
                    raise NoSmdebugRun(self.path, reason)
            ended = self.storage.exists(END_OF_JOB_FILE)
            if ended:
                if not files and self._list(INDEX_DIR):
                    # A run whose collections were never exported (e.g. killed early): readable anyway.
                    logger.warning("No collection files in %s; assuming a single worker", self.path)
                    break
                raise MissingCollectionFiles(
                    f"Training has ended but not all collection files were found. {self.path}: found "
                    f"{len(files)} collection file(s), expected {max(self.num_workers, 1)}"
                )
            refused = [] if files else self.storage.refused("")
            if refused:
                # No collections file, and the listing left something out (a link to a folder where the
                # collections or the index go): a damaged run, not one starting; with no end marker
                # either, waiting for its collections would never end.
                raise MissingCollectionFiles(
                    f"{self.path}: no readable collection file; {', '.join(refused[:3])} is not a file or "
                    "folder smdebug reads (it follows no link inside a run)"
                )
            # Some workers' files but not all, in a run that is writing steps: a worker may have died
            # before exporting its collections. Wait a bounded time (even without a timeout), then go on.
            # So too for a run with index files but no collection file at all (a hook exports its
            # collections before its first step's index: they were removed, or the run is damaged):
            # waiting for them until an end marker that may never come hung for good. And for a run holding
            # neither (its events folder alone, or a link in its place): nobody asked to wait, and a hook
            # writes its collections before anything of a step, so none is coming (the slow vandalism test hung).
            limit = timeout
            if limit is None:
                self._list(INDEX_DIR)  # (a link in the index folder's place is noted: the next look names it)
                limit = env_float("SMDEBUG_MISSING_WORKERS_WAIT", 30.0, minimum=0.0)
            if limit is not None and time.monotonic() - start >= limit:
                if files or self._list(INDEX_DIR):
                    logger.warning(
                        "Only %d of %d collection files in %s after %.0fs; continuing with what is there "
                        "(a worker may have died before it saved anything)",
                        len(files), self.num_workers, self.path, limit,
                    )
                    break
                reason = missing_run_reason(self.storage, self.path)
                if reason is not None:
                    raise NoSmdebugRun(self.path, f"{reason} after waiting {limit:g}s", hint="")
                raise MissingCollectionFiles(
                    f"{self.path}: no collection file after waiting {limit:g}s (the run has started, or its "
                    "collections were removed: its workers have saved none)"
                )
            if time.monotonic() - warned_at > 20:
                logger.warning("Waiting for the collection files of %s to appear...", self.path)
                warned_at = time.monotonic()
            time.sleep(min(self.poll_interval, 0.2 if limit is not None else self.poll_interval))
        self.worker_set = set()
        for f in files:
            try:
                self.worker_set.add(parse_collection_file_name(f))
            except IndexReaderException:
                continue

    # ------------------------------------------------------------------------------------------
    # refresh
    # ------------------------------------------------------------------------------------------
    def maybe_refresh(self, name=None) -> None:
        if self.loaded_all_steps or not self.dynamic_refresh:
            return
        self.refresh_data()

    def refresh_data(self) -> None:
        ended = self._assumed_ended or self.storage.exists(END_OF_JOB_FILE)
        if not ended and self.num_workers > 1:
            ended = self._every_worker_ended() or self._fewer_workers_all_ended()
        if self._ended_at_first_read is None:
            self._ended_at_first_read = ended
        if not ended:
            self._check_restart()
        self._read_new_index_files(settled=ended)
        if ended and not self.loaded_all_steps:
            # Give workers that were still finishing a moment, then read once more.
            age = self.storage.age(END_OF_JOB_FILE) if not self._assumed_ended else None
            delay = self.end_delay_refresh - (age or 0.0)
            if delay > 0 and not self._assumed_ended:
                time.sleep(delay)
                self._read_new_index_files(settled=True)
            self.loaded_all_steps = True
            if self._own_steps:
                self.last_complete_step = max(self.last_complete_step, self._own_steps[-1])

    @property
    def skipped_damaged(self) -> int:
        """How many damaged files and steps ``skip_damaged`` skipped so far (only the first 20 are warned of,
        one warning each)."""
        return self._skip_notes.count

    @property
    def missing_workers_note(self) -> Optional[str]:
        """Set when the run's collections say more workers than ever wrote to it and every worker that did
        has ended (see :meth:`refresh_data`): what is wrong, in one sentence. None otherwise."""
        return self._missing_workers_note

    @property
    def ended_wait_left(self) -> Optional[float]:
        """For a run of :attr:`missing_workers_note` not yet read as ended: about how many seconds this trial
        still waits for its missing workers before it reads the run as ended (SMDEBUG_ENDED_WORKERS_WAIT).
        None otherwise."""
        return None if self.loaded_all_steps else self._ended_wait_left

    def _every_worker_ended(self) -> bool:
        """Every one of the run's ``num_workers`` workers has said it ended (``workers_ended/<worker>``, written
        after its last file): the run has ended, end marker or not. The last worker to end writes the marker, but
        a run written by an older version may lack it (two workers ending together could each undo the
        other's write), and a worker killed right after its own marker never writes it; such a run was
        judged InProgress for ever."""
        seen = self.worker_set | self._index_workers
        if len(seen) < self.num_workers:
            return False
        try:
            return None not in self._end_markers(seen).values()
        except IndexReaderException:
            return False

    def _fewer_workers_all_ended(self) -> bool:
        """A run whose collections say ``num_workers`` N, where fewer than N worker names ever wrote
        anything and every one of them has ended (``workers_ended/<worker>``), has no end marker: its last
        worker writes that once N workers ended. Two processes that wrote under one worker name (a launcher
        giving both the same rank or SMDEBUG_WORKER_NAME) make such a run; so does a worker that never
        started. It is said once, plainly (a warning, and :attr:`missing_workers_note`). Such a run is read
        as ended once its last worker ended at least SMDEBUG_ENDED_WORKERS_WAIT seconds ago (default 600): a
        worker that has not written its collections (a hook does before its first step) ten minutes after
        the others ended their training is not coming. Before that it is still training (a late worker is
        waited for; :meth:`treat_as_ended` reads it to its end at once)."""
        if self._assumed_ended:
            return True
        seen = self.worker_set | self._index_workers
        if not seen or len(seen) >= self.num_workers:
            return False
        try:
            markers = list(self._end_markers(seen).values())
        except IndexReaderException:
            return False
        if None in markers:
            self._all_ended_seen_at = self._ended_wait_left = None  # the watch starts again once all ended
            return False  # a worker is still writing
        if self._missing_workers_note is None:
            names = sorted(seen)
            self._missing_workers_note = (
                f"the collections say {self.num_workers} workers, but only {len(names)} worker name"
                f"{'s' if len(names) > 1 else ''} ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}) "
                f"ever wrote to the run, and {'all have' if len(names) > 1 else 'it has'} ended "
                f"({WORKERS_ENDED_DIR}/): two processes may have written under one worker name (their steps "
                "overwrite each other's), or a worker never started")
            logger.warning("%s: %s", self.path, self._missing_workers_note)
        wait = env_float("SMDEBUG_ENDED_WORKERS_WAIT", 600.0, minimum=0.0)
        ages = [self.storage.age(k) for k in markers]
        # A marker is dated by the clock of the machine (or the S3 service) that wrote it. One dated ahead of
        # ours reads as just written for as long as the skew lasts (a year ahead: "still training" for a
        # year), so this trial's own watch counts too: every worker seen ended for the whole wait is ended,
        # whatever the markers' dates say. (A clock behind ours can still end the wait early.)
        now = time.monotonic()
        if self._all_ended_seen_at is None:
            self._all_ended_seen_at = now
        dated = 0.0 if any(a is None for a in ages) else min(ages)
        waited = max(dated, now - self._all_ended_seen_at)
        if waited < wait:
            self._ended_wait_left = wait - waited
            return False
        self._ended_wait_left = None
        logger.warning("%s: reading it as ended (its last worker ended %.0fs ago)", self.path, waited)
        self._assumed_ended = True
        self.loaded_all_steps = False
        return True

    def treat_as_ended(self) -> None:
        """Consider the run finished even without its end marker (e.g. a crashed or killed job):
        waits end instead of polling, and every step seen counts as complete."""
        self._assumed_ended = True
        self.loaded_all_steps = False
        self.refresh_data()

    # ------------------------------------------------------------------------------------------
    # what a reader read (rules: judged data vs nothing to judge vs unreadable data)
    # ------------------------------------------------------------------------------------------
    def read_log(self) -> ReadLog:
        """``with trial.read_log() as log:`` records, while the block runs, every value this trial returns
        and every damaged or missing file it raises for (:class:`~smdebug.trials.read_log.ReadLog`), even
        when the reader catches the exception. Costs nothing while no log is open."""
        return ReadLog(self._read_logs)

    def note_read(self, name: str, step: int) -> None:
        """Tell the open read logs that a value of ``name`` at ``step`` was returned (part of the reader
        interface a Tensor uses, :class:`smdebug.core.tensor.TensorReader`)."""
        for log in self._read_logs:
            log.note_read(name, step)

    def _note_damage(self, error) -> None:
        for log in self._read_logs:
            log.note_damage(error)

    def _read_new_index_files(self, settled: bool = False) -> None:
        start_after = self._list_token
        keys = [
            k for k in self._list_index_keys(start_after, settled)
            if is_index_file(k) and k not in self._read_keys
        ]
        self._read_index_keys(keys, live=not settled)

    def _read_index_keys(self, keys: List[str], live: bool = False) -> None:
        """Read the index files ``keys`` (not read before), then move the listing token on. ``live``: the run has
        not ended (a file that does not parse may still be being written: see _being_written)."""
        if not keys:
            # Nothing new, but the wait for incomplete steps still moves on (as in 1.0.x, at every
            # refresh): a worker that stopped writing is given up on without new files arriving.
            self._update_token()
            return
        parsed: List[Tuple[str, int, str]] = []
        for k in keys:
            try:
                step, worker = parse_step_file_name(k)
                problem = index_file_problem(k, step, worker)
                if problem is not None:
                    raise IndexReaderException(problem, k)
            except IndexReaderException as e:
                if self.skip_damaged:
                    self._skip_notes.warn("Skipping %s", e)
                    self._read_keys.add(k, self._list_token)
                    continue
                error = IndexReaderException(e.message, printable(self.storage.full_path(k)))
                self._note_damage(error)
                raise error from None
            self._index_workers.add(worker)
            if self._in_range(step):
                parsed.append((k, step, worker))
            else:
                self._read_keys.add(k, self._list_token)
        raws = self._read_index_files(parsed)
        try:
            self._add_parsed(parsed, raws, live)
        finally:
            if self._realign_due:  # (also when a damaged file stops the batch: what was added is placed)
                self._realign()
        self._generation += 1
        self._update_token()

    def _add_parsed(self, parsed: List[Tuple[str, int, str]], raws: list, live: bool = False) -> None:
        writing: Set[str] = set()  # workers with a file still being written in this batch
        for (k, step, worker), raw in zip(parsed, raws):
            if isinstance(raw, FileNotFoundError):
                continue  # removed since the listing (not marked read: should it come back, it is read then)
            if worker in writing:
                # (a worker's later steps wait with it, unread: the listing does not move past them, and a
                # step of the worker is never read before an earlier one)
                continue
            try:
                if isinstance(raw, UnreadableFileError):
                    raise IndexReaderException(str(raw), self.storage.full_path(k), step)
                f = self._parse_new(k, step, worker, raw, live)
                if f is None:
                    writing.add(worker)
                    continue
                self._check_mode_step_claim(f)
            except IndexReaderException as e:
                if self.skip_damaged:
                    self._skip_notes.warn("Skipping damaged index file: %s", e)
                    self._read_keys.add(k, self._list_token)
                    continue
                self._note_damage(e)
                raise
            self._add_file(k, f)

    def _parse_new(self, key: str, step: int, worker: str, raw: bytes, live: bool) -> Optional[IndexFile]:
        """Index file ``key`` parsed, or None while it is no JSON document yet but may still be being written
        (_being_written): it is left unread, and read again at the next refresh. Such a file is parsed whole
        now, not lazily, so that a step cut short never joins the trial."""
        recent = live and self._recently_modified(key)
        try:
            f = parse_index_file(self.storage.full_path(key), step, worker, raw, lazy=not recent)
        except IndexReaderException as e:
            if recent and e.message == NOT_JSON and self._being_written(key):
                logger.debug("%s is no JSON document yet (still being written?): read again at the next look",
                             printable(self.storage.full_path(key)))
                return None
            self._unfinished.pop(key, None)
            raise
        self._unfinished.pop(key, None)
        return f

    def _write_wait(self) -> float:
        """How long (seconds) an index file may stay unparsable while it may be being written: the wait for a
        missing event file (SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT looks, poll_interval apart; 200 s by
        default). 0 turns the wait off."""
        return self.missing_event_retry_limit * self.poll_interval

    def _recently_modified(self, key: str) -> bool:
        """Whether index file ``key`` of a local run was modified less than _write_wait() ago (a file that cannot
        be dated counts as recent). S3 objects are never seen half-written, so no S3 object is."""
        if self._write_wait() <= 0 or is_s3_path(str(self.path)):
            return False
        age = self.storage.age(key)
        return age is None or age < self._write_wait()

    def _being_written(self, key: str) -> bool:
        """Whether recently modified index file ``key``, which is no JSON document (empty, cut short), may still
        be being written, so that it is not damage yet. A hook writes its index files whole (a rename), but a
        run folder watched through a copy (cp, scp, rsync --inplace, a network file system) shows a file being
        copied as it grows, for seconds, and in the copier's order, not only at the newest step. A copier's
        writes keep the file's modification time recent; so a file modified recently is waited for, for at most
        _write_wait() seconds by this trial's own clock too (a file dated ahead of it, or written for ever,
        ends the wait as well). A run that has ended is read as it is: no file of it is waited for."""
        first = self._unfinished.setdefault(key, time.monotonic())
        return time.monotonic() - first < self._write_wait()

    def _read_index_files(self, parsed: List[Tuple[str, int, str]]) -> list:
        """The bytes of each index file, or the error reading it raised: UnreadableFileError (not a regular
        file, permission denied, larger than SMDEBUG_MAX_INDEX_FILE_BYTES: refused before it is read) or
        FileNotFoundError (removed since the listing)."""
        if not parsed:
            return []
        return self.storage.read_files([k for k, _, _ in parsed], MAX_INDEX_FILE_BYTES, "SMDEBUG_MAX_INDEX_FILE_BYTES")

    def _list_index_keys(self, start_after: Optional[str], settled: bool) -> List[str]:
        """Index keys after ``start_after``, with no file of a worker missing before its last one listed.

        A directory listing taken while files are being created can miss a file created during it yet
        show one created after it (measured on ext4: a few percent of listings of a live run). The trial
        would then take the later step as complete and list past the missed one forever. Each worker
        writes its index files in step order, so a second listing, begun after the first ended, holds
        every file of a worker up to the last one the first listing showed; later files are left for the
        next refresh, which lists from before them. A run that has ended (``settled``) is listed once.
        """
        keys = self._list(INDEX_DIR, start_after=start_after)
        if settled or not keys:
            return keys
        last: Dict[str, int] = {}
        for k in keys:
            try:
                step, worker = parse_step_file_name(k)
            except IndexReaderException:
                continue  # reported by the caller
            last[worker] = max(step, last.get(worker, -1))
        found = set(keys)
        for k in self._list(INDEX_DIR, start_after=start_after):
            if k in found:
                continue
            try:
                step, worker = parse_step_file_name(k)
            except IndexReaderException:
                continue  # appeared after the first listing: the next refresh reports it
            if step <= last.get(worker, -1):
                found.add(k)
        return sorted(found)

    def _add_file(self, key: str, f: IndexFile) -> None:
        self._read_keys.add(key, self._list_token)
        workers = self._own_files.get(f.step)
        if workers is None:
            workers = self._own_files[f.step] = {}
            bisect.insort(self._own_steps, f.step)
        workers[f.worker] = f
        self._unparsed.append(f)
        if f.declares_aliases:
            self._declares_aliases = True
        if self._aligned:
            self._note_key(f)
            self._realign_due = True
        else:
            self._resolve_mode(f)
        if len(workers) >= self.num_workers and f.step > self.last_complete_step:
            self.last_complete_step = f.step

    def _check_mode_step_claim(self, f: IndexFile) -> None:
        """One worker numbers each mode's steps once: two of its index files claiming one (mode, mode step)
        contradict each other (which global step is TRAIN step 4?). The later one is refused
        (IndexReaderException; skipped with a warning under ``skip_damaged``)."""
        if f.mode == ModeKeys.GLOBAL:
            return
        if self._aligned:
            other_file = self._keys.get(f.worker, {}).get((f.mode, f.mode_step))
            if other_file is not None and other_file.step != f.step:
                raise IndexReaderException(
                    f"Index file claims {f.mode.name} step {f.mode_step}, which the index file of global step "
                    f"{other_file.step} of the same worker ({other_file.key}) claims already", f.key, f.step)
            return
        # (the global step the mode step resolved to: no table of every file's claim is kept)
        other = self._mode_to_global.get(f.mode, {}).get(f.mode_step)
        if other is None or other == f.step:
            return
        other_file = self._files.get(other, {}).get(f.worker)
        if other_file is not None and (other_file.mode, other_file.mode_step) == (f.mode, f.mode_step):
            raise IndexReaderException(
                f"Index file claims {f.mode.name} step {f.mode_step}, which the index file of global step {other} "
                f"of the same worker ({other_file.key}) claims already", f.key, f.step)

    def _resolve_mode(self, f: IndexFile) -> None:
        """The mode and mode step of ``f``'s global step while every worker numbered its steps alike. A file
        whose step another worker's file gives another (mode, mode step), or whose (mode, mode step) another
        worker's file has at another step, shows the workers number their steps differently (validation on
        one rank only, uneven shards): from then on steps are aligned by mode step (_start_aligning)."""
        current = self._global_to_mode.get(f.step)
        if current is None:
            elsewhere = (self._mode_to_global.get(f.mode, {}).get(f.mode_step)
                         if f.mode != ModeKeys.GLOBAL else None)
            if elsewhere is not None and elsewhere != f.step:
                owner = self._mode_owner.get(elsewhere)
                self._start_aligning(f, self._files.get(elsewhere, {}).get(owner))
                return
            self._global_to_mode[f.step] = (f.mode, f.mode_step)
            self._mode_owner[f.step] = f.worker
            self._map_mode(f.step, f.mode, f.mode_step)
            return
        if current == (f.mode, f.mode_step):
            return
        owner = self._mode_owner.get(f.step, f.worker)
        self._start_aligning(f, self._files.get(f.step, {}).get(owner))

    def _start_aligning(self, f: IndexFile, other: Optional[IndexFile]) -> None:
        """Workers number their global steps differently: say so once, and from now on place every file by
        its (mode, mode step) (see _realign, run at the end of this batch of index files)."""
        if not self._warned_mode_disagreement:
            self._warned_mode_disagreement = True
            pair = sorted([(f.worker, f.key, f.step, f.mode, f.mode_step)]
                          + ([(other.worker, other.key, other.step, other.mode, other.mode_step)] if other else []))
            said = "; ".join(f"{key} is global step {step}, {mode.name} step {ms}" for _, key, step, mode, ms in pair)
            logger.warning(
                "Workers disagree on the mode or mode step of a global step of %s (%s): each worker numbers its "
                "own global steps (e.g. evaluation on one worker only). Aligning workers by (mode, mode step): a "
                "file is read at the global step where the first worker by name has its mode step; a mode step "
                "only other workers have takes its own step, or the next one free after their earlier steps "
                "(warned once per run)", self.path, said)
        self._aligned = True
        self._files, self._steps = {}, []  # (_own_files/_own_steps keep the files by their own steps)
        self._keys = {}
        for s in self._own_steps:
            for g in self._own_files[s].values():
                self._note_key(g)
        self._realign_due = True

    def _note_key(self, f: IndexFile) -> None:
        if f.mode != ModeKeys.GLOBAL:
            self._keys.setdefault(f.worker, {})[(f.mode, f.mode_step)] = f

    def _realign(self) -> None:
        """Place every file of the run at a global step of the run, by (mode, mode step), as a function of
        the files read (whatever their order of arrival, the same files give the same places):

        - the first worker by name (of those with index files) keeps its own numbering;
        - another worker's file of a (mode, mode step) already placed joins it there;
        - a (mode, mode step) not placed yet (a worker's extra TRAIN steps on an uneven shard, a mode only
          it ran) is placed by the first worker by name having it, at its own step, or if that is taken,
          at the next free global step after both its own step and that worker's previous file's place;
        - GLOBAL-mode files (no mode) stay at their own step, as they always did.
        """
        self._realign_due = False
        by_worker: Dict[str, List[IndexFile]] = {}
        for s in self._own_steps:
            for w, f in self._own_files[s].items():
                by_worker.setdefault(w, []).append(f)
        workers = sorted(by_worker)
        placed: Dict[Tuple[ModeKeys, int], int] = {}
        taken: Set[int] = set()
        placement: Dict[Tuple[str, int], int] = {}
        files: Dict[int, Dict[str, IndexFile]] = {}
        if workers:
            for f in by_worker[workers[0]]:
                taken.add(f.step)
                if f.mode != ModeKeys.GLOBAL:
                    placed[(f.mode, f.mode_step)] = f.step
        for w in workers[1:]:
            taken.update(f.step for f in by_worker[w] if f.mode == ModeKeys.GLOBAL)
        for w in workers:
            last = -1
            own_globals = []
            for f in by_worker[w]:
                if f.mode == ModeKeys.GLOBAL:
                    own_globals.append(f)
                    continue
                key = (f.mode, f.mode_step)
                g = placed.get(key)
                if g is None:
                    g = max(f.step, last + 1)
                    while g in taken:
                        g += 1
                    taken.add(g)
                    placed[key] = g
                last = max(last, g)
                placement[(w, f.step)] = g
                files.setdefault(g, {})[w] = f
            for f in own_globals:
                g = f.step
                while w in files.get(g, ()):  # (its own keyed file was placed here: the next free step)
                    g += 1
                    while g in taken:
                        g += 1
                taken.add(g)
                placement[(w, f.step)] = g
                files.setdefault(g, {})[w] = f
        # (a live run mostly adds files at the end: when no file read before moved, the tensor step index
        # stays as it is and the new files join it as they are parsed)
        moved = self._placement is None or any(
            self._placement.get(k, g) != g for k, g in placement.items())
        self._placement = placement
        self._files = files
        self._steps = sorted(files)
        self._global_to_mode, self._mode_to_global, self._mode_owner = {}, {}, {}
        self._mode_steps = {}
        for g in self._steps:
            here = files[g]
            owner = min(here)
            f = here[owner]
            self._global_to_mode[g] = (f.mode, f.mode_step)
            self._mode_owner[g] = owner
            self._map_mode(g, f.mode, f.mode_step)
        if moved:  # the tensor step index is by global step of the run: built again from every parsed file
            pending = {id(f) for f in self._unparsed}
            self._tensor_step_index = {}
            self._step_index_backlog = [f for g in self._steps for f in files[g].values() if id(f) not in pending]

    def _placed(self, f: IndexFile) -> int:
        """The global step of the run at which ``f`` is read (its own step unless workers were aligned)."""
        return self._placement.get((f.worker, f.step), f.step) if self._placement is not None else f.step

    def _map_mode(self, step: int, mode: ModeKeys, mode_step: int) -> None:
        if mode == ModeKeys.GLOBAL:
            return
        mapping = self._mode_to_global.setdefault(mode, {})
        if mode_step not in mapping:  # (the first global step claiming a mode step keeps it)
            mapping[mode_step] = step
            bisect.insort(self._mode_steps.setdefault(mode, []), mode_step)  # (mostly an append)

    def _update_token(self) -> None:
        # Re-list from just after the last complete step, so files of partially written later steps
        # are still found when their other workers catch up.
        window = self.incomplete_wait_window
        if self._own_steps and self._own_steps[-1] - self.last_complete_step > window and self.num_workers > 1:
            # Too many incomplete steps: stop waiting for the oldest ones.
            self.last_complete_step = self.last_complete_step + window // 2
            logger.warning(
                "Giving up on incomplete steps up to %d of %s (some workers never wrote them)",
                self.last_complete_step, self.path,
            )
        if self.last_complete_step >= 0:
            self._list_token = index_prefix_for_step(self.last_complete_step + 1)
            files = self._own_files.get(self.last_complete_step)
            if files:
                # As 1.0.x named it: the step's file of the last worker of the run (by name), whichever
                # workers wrote that step (a step given up on may lack it).
                last_worker = max(self.worker_set) if self.worker_set else max(files)
                self._last_index_key = index_file_name(self.last_complete_step, last_worker)

    @property
    def last_index_token(self) -> Optional[str]:
        """The path of the last index file of the last complete step read (as in smdebug 1.0.x: the
        trial's path joined with the file's key; for S3 runs the object key)."""
        if self._last_index_key is None:
            return None
        return _index_file_path(self.path, self._last_index_key)

    @property
    def training_end_delay_refresh(self) -> float:
        """smdebug 1.0.x's name of :attr:`end_delay_refresh`."""
        return self.end_delay_refresh

    @training_end_delay_refresh.setter
    def training_end_delay_refresh(self, seconds: float) -> None:
        self.end_delay_refresh = seconds

    # ------------------------------------------------------------------------------------------
    # payload parsing (lazy)
    # ------------------------------------------------------------------------------------------
    def _parse_pending(self, until_name: Optional[str] = None) -> None:
        """Parse payloads of not-yet-parsed files; stop early once ``until_name`` has been seen."""
        while self._unparsed:
            f = self._unparsed.popleft() if until_name else None
            if f is None:
                pending, self._unparsed = self._unparsed, deque()
                for g in pending:
                    self._absorb(g)
                return
            self._absorb(f)
            if until_name in self._tensor_names:
                return

    def _absorb(self, f: IndexFile) -> None:
        try:
            names = f.tensor_names()
            self._lookalike_names.add(names, self._tensor_names)
            self._tensor_names.update(names)
            self._step_index_backlog.append(f)
        except IndexReaderException as e:
            if not self.skip_damaged:
                self._unparsed.appendleft(f)
                self._note_damage(e)
                raise
            self._skip_notes.warn("Skipping damaged index file: %s", e)
            f.mark_damaged()

    # ------------------------------------------------------------------------------------------
    # steps and modes
    # ------------------------------------------------------------------------------------------
    def _is_complete(self, step: int) -> bool:
        if self._aligned:
            # (last_complete_step counts the files' own steps: a step of the run is complete when each of
            # its files is, or when every worker has a file there)
            files = self._files.get(step, {})
            return (self.loaded_all_steps or len(files) >= self.num_workers
                    or (bool(files) and all(f.step <= self.last_complete_step for f in files.values())))
        return (
            self.loaded_all_steps
            or step <= self.last_complete_step
            or len(self._files.get(step, ())) >= self.num_workers
        )

    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> List[int]:
        show_incomplete_steps = argcheck.flag(show_incomplete_steps, "show_incomplete_steps")
        self.maybe_refresh()
        return self._steps_for(mode, show_incomplete_steps)

    def _steps_for(self, mode, show_incomplete_steps: bool) -> List[int]:
        mode = _mode_arg(mode)
        # (every step listed, or every step complete: copied without a look at each -- rules ask at every step,
        # and a look per step made judging a run of n steps cost n^2: 8 s of 16 for 5,000 steps)
        everything = show_incomplete_steps or self.loaded_all_steps
        if mode == ModeKeys.GLOBAL:
            if everything:
                return list(self._steps)
            if not self._aligned:  # (steps up to the last complete one are complete; only those after need a look)
                cut = bisect.bisect_right(self._steps, self.last_complete_step)
                return self._steps[:cut] + [s for s in self._steps[cut:] if self._is_complete(s)]
            return [s for s in self._steps if self._is_complete(s)]
        if everything:
            return list(self._all_steps(mode))
        mapping = self._mode_to_global.get(mode, {})
        return [ms for ms in self._all_steps(mode) if self._is_complete(mapping[ms])]

    def _all_steps(self, mode: ModeKeys) -> List[int]:
        """Every step of ``mode`` read so far, complete or not, sorted: the trial's own list, not a copy (callers
        must not change it). What steps(show_incomplete_steps=True) copies; a look at its length or its ends
        through it costs nothing, whatever the number of steps."""
        if mode == ModeKeys.GLOBAL:
            return self._steps
        return self._mode_steps.get(mode, [])

    def step_count(self, mode=ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> int:
        """``len(trial.steps(mode, show_incomplete_steps))`` without building the list (after looking for new data,
        as steps() does): with ``show_incomplete_steps`` (or once the run has ended) it costs nothing whatever the
        run's length. Rules that note whether the run grew ask at every step: a copy of every step each time made
        judging a run of n steps cost n^2 (20,000 steps: 45 s)."""
        show_incomplete_steps = argcheck.flag(show_incomplete_steps, "show_incomplete_steps")
        self.maybe_refresh()
        mode = _mode_arg(mode)
        if show_incomplete_steps or self.loaded_all_steps:
            return len(self._all_steps(mode))
        return len(self._steps_for(mode, False))

    def modes(self):
        return {m for m in self._mode_to_global}

    def mode(self, global_step: int) -> Optional[ModeKeys]:
        return self.mode_modestep(global_step)[0]

    def mode_step(self, global_step: int) -> Optional[int]:
        return self.mode_modestep(global_step)[1]

    def mode_modestep(self, global_step: int):
        # (a step that is no integer answered None, "no such step", or True was taken for step 1)
        return self._global_to_mode.get(argcheck.step(global_step, "global_step"), (None, None))

    def global_step(self, mode, mode_step: int) -> Optional[int]:
        mode = _mode_arg(mode)
        mode_step = argcheck.step(mode_step, "mode_step")
        if mode == ModeKeys.GLOBAL:
            return mode_step
        return self._mode_to_global.get(mode, {}).get(mode_step)

    def workers(self) -> List[str]:
        """The run's workers (after looking for new data, as 1.0.x did: workers join a live run)."""
        self.maybe_refresh()
        return sorted(self.worker_set)

    def hook_failures(self) -> List[str]:
        """Why the run may hold less than its training saved, one sentence per worker whose hook left a note
        (:mod:`smdebug.core.hook_failures`): it stopped saving at some step (a full disk, lost credentials,
        an internal error), saved steps never arrived, or its training process did not end normally (an
        unhandled exception, SIGTERM). [] when no hook left one. Read once the run has ended; while it runs,
        read again at each call."""
        return [text for text, _ in self._hook_notes()]

    def abnormal_ends(self) -> List[str]:
        """The notes of :meth:`hook_failures` that say a training process did not end normally: it raised an
        exception nobody caught, or was stopped by SIGTERM, at the step they name. The run's end marker says
        only that nothing more will come; with one of these, its last step is where training died, not where
        it was meant to end. [] for a run whose every process ended normally (or that has not ended)."""
        return [text for text, abnormal in self._hook_notes() if abnormal]

    def stopped_on_request(self) -> Optional[str]:
        """A sentence when training ended because a rule asked it to stop (``smdebug rules run --follow
        --stop-training`` wrote the run's stop signal, ``stop_training.json``, while it trained), None otherwise
        (and while the run has not ended). Such a run ends normally, with its end marker, but at the step where
        it was stopped: tests of "the end of training" or of "the trained model" would judge a model that never
        finished training. A signal written after the end marker (a judgement of the finished run) stopped
        nothing."""
        if not self.loaded_all_steps:
            return None
        try:
            data = self.storage.read(STOP_SIGNAL_FILE, 0, MAX_SIGNAL_BYTES)  # (a huge file there: not read whole)
        except FileNotFoundError:
            return None
        except OSError as e:
            return f"a stop signal ({STOP_SIGNAL_FILE}) is there but could not be read ({type(e).__name__})"
        ended, signalled = self.storage.age(END_OF_JOB_FILE), self.storage.age(STOP_SIGNAL_FILE)
        if ended is not None and signalled is not None and signalled < ended:
            return None  # (written after training had ended)
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            payload = None
        if not isinstance(payload, dict):
            return f"training was stopped on request (its stop signal, {STOP_SIGNAL_FILE}, is unreadable)"
        rule, step = payload.get("rule"), payload.get("step")
        by = f" by rule {clipped(one_line(printable(rule)), 100)}" if isinstance(rule, str) and rule else ""
        at = f" (its finding at step {step})" if isinstance(step, int) and not isinstance(step, bool) else ""
        return f"training was stopped on request{by}{at}, at step {self.last_step()}"

    def _hook_notes(self) -> List[Tuple[str, bool]]:
        if self._failure_notes is not None:
            return self._failure_notes
        notes = read_notes(self.storage)
        if self.loaded_all_steps:
            self._failure_notes = notes
        return notes

    def workers_not_ended(self) -> List[str]:
        """The workers that wrote to the run but have not ended (no ``workers_ended/<worker>`` marker), when
        at least one of its workers has: on a run without its end marker, the ones still training, or whose
        process died. [] when every worker ended, or none did (nothing tells one worker from another then).
        A folder that cannot be listed counts as no marker."""
        try:
            markers = self._end_markers(self.worker_set | self._index_workers)
        except IndexReaderException:
            return []
        missing = [w for w, key in markers.items() if key is None]
        return missing if len(missing) < len(markers) else []

    def _end_markers(self, workers) -> Dict[str, Optional[str]]:
        """``{worker: its workers_ended/ key, or None when it has not ended}`` for ``workers``, sorted
        (IndexReaderException when the folder cannot be listed)."""
        ended_keys = {k.rsplit("/", 1)[-1]: k for k in self._list(WORKERS_ENDED_DIR)}
        return {w: ended_keys.get(serialize_worker_name(w)) for w in sorted(workers)}

    def has_passed_step(self, step: int, mode=ModeKeys.GLOBAL) -> StepState:
        """Whether ``step`` (of ``mode``) is available, will never be, or may still come. Looks for new
        data first (unless refresh is off, see :func:`smdebug.analysis.utils.no_refresh`)."""
        self.maybe_refresh()
        return self._has_passed_step(step, mode)

    def _has_passed_step(self, step: int, mode=ModeKeys.GLOBAL) -> StepState:
        _check_step(step)
        mode = _mode_arg(mode)
        all_steps = self._all_steps(mode)  # (not a copy: this runs for every rule at every step)
        i = bisect.bisect_left(all_steps, step)
        if i < len(all_steps):
            g = all_steps[i] if mode == ModeKeys.GLOBAL else self.global_step(mode, all_steps[i])
            if all_steps[i] > step:
                return StepState.UNAVAILABLE if self.last_complete_step >= g or self.loaded_all_steps else StepState.NOT_YET_AVAILABLE
            return StepState.AVAILABLE if self._is_complete(g) else StepState.NOT_YET_AVAILABLE
        return StepState.UNAVAILABLE if self.loaded_all_steps else StepState.NOT_YET_AVAILABLE

    def last_step(self, mode=ModeKeys.GLOBAL) -> Optional[int]:
        steps = self._all_steps(_mode_arg(mode))
        return steps[-1] if steps else None

    def wait_for_steps(self, required_steps: Sequence[int], mode=ModeKeys.GLOBAL, timeout: Optional[float] = None):
        """Block until every step in ``required_steps`` is available.

        Raises StepUnavailable for a step that will never exist, NoMoreData once the run ended before
        reaching it, and TimeoutError after ``timeout`` seconds (None: no limit).
        """
        start = time.monotonic()
        mode = _mode_arg(mode)
        required_steps = argcheck.step_list(required_steps, "required_steps")
        timeout = argcheck.seconds(timeout, "timeout")
        for step in sorted(required_steps):
            while True:
                state = self._has_passed_step(step, mode)
                if state == StepState.AVAILABLE:
                    break
                if state == StepState.UNAVAILABLE:
                    last = self.last_step(mode)
                    if self.loaded_all_steps and (last is None or step > last):
                        raise NoMoreData(step, mode, last)
                    raise StepUnavailable(step, mode)
                if timeout is not None and time.monotonic() - start >= timeout:
                    raise TimeoutError(f"Step {step} of mode {mode.name} not available after {timeout}s")
                self.refresh_data()
                if self._has_passed_step(step, mode) == StepState.NOT_YET_AVAILABLE:
                    time.sleep(self.poll_interval)

    # ------------------------------------------------------------------------------------------
    # tensors and collections
    # ------------------------------------------------------------------------------------------
    def tensor_names(self, show_prefixed_tensors: bool = False, *, step=None, mode=ModeKeys.GLOBAL,
                     regex=None, collection=None) -> List[str]:
        show_prefixed_tensors = argcheck.flag(show_prefixed_tensors, "show_prefixed_tensors")
        regex = argcheck.name_list(regex, "regex", "regular expression")
        if collection is not None and not isinstance(collection, Collection):
            argcheck.name(collection, "collection")
        self.maybe_refresh()
        mode = _mode_arg(mode)
        if regex is not None and collection is not None:
            raise SMDebugValueError("Pass either regex or collection to tensor_names, not both")
        if step is None and mode == ModeKeys.GLOBAL and regex is None and collection is None:
            self._parse_pending()
            if self._sorted_names[0] != len(self._tensor_names):
                self._sorted_names = (len(self._tensor_names), sorted(self._tensor_names))
            return list(self._sorted_names[1])
        if step is None:
            if mode == ModeKeys.GLOBAL:
                self._parse_pending()
                names = set(self._tensor_names)
            else:
                names = set()
                for g in self._mode_to_global.get(mode, {}).values():
                    for f in self._files[g].values():
                        names.update(self._names_of(f))
        else:
            _check_step(step)
            g = self.global_step(mode, step)
            if g is None or g not in self._files:
                if self._has_passed_step(step, mode) == StepState.NOT_YET_AVAILABLE:
                    raise StepNotYetAvailable(step, mode)
                raise StepUnavailable(step, mode)
            names = set()
            for f in self._files[g].values():
                names.update(self._names_of(f))
        if regex is not None:
            compiled = []
            for r in regex:
                try:
                    compiled.append(re.compile(r))
                except re.error as e:
                    raise SMDebugValueError(f"tensor_names(regex=...): not a regular expression: {r!r}: {e}") from None
            try:  # (each match bounded: the names come from the run, see names_matching)
                names = names_matching(compiled, sorted(names), "tensor_names(regex=...)")
            except PatternError as e:
                raise SMDebugValueError(str(e)) from None
        elif collection is not None:
            coll = collection if isinstance(collection, Collection) else self.collection(collection)
            names = set(coll.members(names))
        if not names and (regex is not None or collection is not None):
            hint = ""
            coll = None
            if collection is not None:
                coll = collection if isinstance(collection, Collection) else self.collection(collection)
            if coll is not None and not coll.has_regex() and not coll.tensor_names:
                # (trial.collection() keeps even a name the run lacks, so emptiness is what tells a typo)
                usable = [c.name for c in self.collections().values() if c.has_regex() or c.tensor_names]
                hint = f": the run has no collection {coll.name!r}" + did_you_mean(coll.name, usable)
            # A collection the run has that holds nothing (metrics never logged, activations of a model
            # without such layers) is an answer, not a mistake: said at debug level, or every rule asking
            # for one printed a warning on a sound run.
            log = logger.debug if coll is not None and not hint else logger.warning
            log("No tensors matched %s%s", regex if regex is not None else collection, hint)
        return sorted(names)

    def _names_of(self, f: IndexFile):
        try:
            return f.tensor_names()
        except IndexReaderException as e:
            if not self.skip_damaged:
                self._note_damage(e)
                raise
            self._skip_notes.warn("Skipping damaged index file: %s", e)
            f.mark_damaged()
            return ()

    def has_tensor(self, tname: str) -> bool:
        if argcheck.name(tname, "tname") in self._tensor_names:
            return True
        self._parse_pending(until_name=tname)
        if tname not in self._tensor_names and not self.loaded_all_steps and self.dynamic_refresh:
            self.refresh_data()
            self._parse_pending(until_name=tname)
        return tname in self._tensor_names

    def tensor(self, tname: str) -> Tensor:
        t = self._tensors.get(argcheck.name(tname, "tname"))
        if t is not None:
            return t
        if not self.has_tensor(tname):
            error = TensorUnavailable(tname)
            error.hint = close_names_hint(tname, self.tensor_names)
            raise error
        t = self._tensors[tname] = Tensor(tname, self, cache=self.cache)
        return t

    def collections(self) -> Dict[str, Collection]:
        return self.collection_manager.get_collections()

    def collection(self, coll_name: str) -> Collection:
        """The named collection. A name the run does not have gives a new empty collection, kept by the
        trial (as in smdebug 1.0.x), so ``trial.collection("mine").include("fc1")`` defines a collection
        for later ``tensor_names(collection="mine")`` calls. The run's files are never changed."""
        return self.collection_manager.get(argcheck.name(coll_name, "coll_name"))

    def _values_of_collection(self, step, mode, names: Iterable[str]) -> List[np.ndarray]:
        def suffix(n):
            m = re.search(r"(\d+)$", n)
            return (int(m.group(1)) if m else -1, n)

        out = []
        for n in sorted(names, key=suffix):
            try:
                out.append(self.tensor(n).value(step, mode))
            except MissingEventFile as e:  # saved, but its file is gone: not the same as "not saved"
                if not self.skip_damaged:
                    raise
                self._skip_notes.warn("Skipping damaged step %s of %s: %s", step, n, e)
            except TensorUnavailableForStep:
                continue
        return out

    def inputs(self, step, mode=ModeKeys.GLOBAL):
        _check_step(step)
        return self._values_of_collection(step, mode, self.tensor_names(collection="inputs"))

    def labels(self, step, mode=ModeKeys.GLOBAL):
        _check_step(step)
        return self._values_of_collection(step, mode, self.tensor_names(regex="^labels"))

    def predictions(self, step, mode=ModeKeys.GLOBAL):
        _check_step(step)
        return self._values_of_collection(step, mode, self.tensor_names(regex="^predictions"))

    def to_dataframe(self, tensors=None, *, collections=None, steps=None, modes=None, workers=None,
                     reductions=None):
        """The run as one long pandas DataFrame: a row per saved (tensor, global step, worker).

        Columns: ``tensor``, ``step`` (global), ``mode`` (TRAIN, EVAL, PREDICT or GLOBAL), ``mode_step``,
        ``worker``, then ``value`` (a float for one-element tensors, else the array), or with
        ``reductions=["l2", "abs_max", ...]`` one float column per reduction instead (stored by the hook
        when it saved one, else computed from the saved value; NaN where neither is there).

        Filters: ``tensors`` (names, or regular expressions matching whole names), ``collections``
        (collection names; with ``tensors``: their union; neither: every tensor), ``steps`` (global steps),
        ``modes`` (ModeKeys or their names), ``workers`` (names; default all). Reads in bulk: a step's
        records are fetched together (see :mod:`smdebug.trials.table`). Needs pandas
        (``pip install 'smdebug-core[analysis]'``); ``Tensor.to_dataframe()`` gives one tensor's values.
        """
        from smdebug.trials.table import long_table, to_pandas

        return to_pandas(long_table(self, tensors, collections, steps=steps, modes=modes, workers=workers,
                                    reductions=reductions))

    # ------------------------------------------------------------------------------------------
    # used by Tensor
    # ------------------------------------------------------------------------------------------
    def _index_steps(self) -> None:
        """Bring _tensor_step_index up to date with the index files parsed so far."""
        backlog, self._step_index_backlog = self._step_index_backlog, []
        index = self._tensor_step_index
        placed = self._placed
        for f in backlog:
            step = placed(f)
            for name in f.tensor_names():
                steps = index.get(name)
                if steps is None:
                    index[name] = [step]
                elif steps[-1] < step:
                    steps.append(step)  # the usual case: files arrive in step order
                else:
                    i = bisect.bisect_left(steps, step)
                    if i == len(steps) or steps[i] != step:
                        steps.insert(i, step)

    # --- what a Tensor reads through (smdebug.core.tensor.TensorReader) -------------------------------
    def tensor_steps(self, name: str, mode, show_incomplete: bool) -> List[int]:
        mode = _mode_arg(mode)
        self._parse_pending()
        if self._step_index_backlog:
            self._index_steps()
        steps = self._tensor_step_index.get(name, ())
        if self._aligned and not (show_incomplete or self.loaded_all_steps):
            steps = [s for s in steps if self._is_complete(s)]
        elif not (show_incomplete or self.loaded_all_steps):
            # Steps up to the last complete one are complete; only the few after it need a look.
            cut = bisect.bisect_right(steps, self.last_complete_step)
            steps = list(steps[:cut]) + [s for s in steps[cut:] if self._is_complete(s)]
        if mode == ModeKeys.GLOBAL:
            return list(steps)
        to_mode = self._global_to_mode
        to_global = self._mode_to_global.get(mode, {})
        # (only the global step a mode step resolves to: a mode step is listed once, as in trial.steps(mode))
        return sorted(ms for g in steps for m, ms in (to_mode.get(g, (None, None)),)
                      if m == mode and to_global.get(ms) == g)

    def _step_files(self, step: int, mode) -> Dict[str, IndexFile]:
        _check_step(step)
        mode = _mode_arg(mode)
        g = step if mode == ModeKeys.GLOBAL else self.global_step(mode, step)
        files = self._files.get(g) if g is not None else None
        if files is None:
            self.maybe_refresh()
            g = step if mode == ModeKeys.GLOBAL else self.global_step(mode, step)
            files = self._files.get(g) if g is not None else None
        if files is None:
            state = self._has_passed_step(step, mode)
            if state == StepState.UNAVAILABLE:
                raise StepUnavailable(step, mode)
            if self.loaded_all_steps:
                raise NoMoreData(step, mode, self.last_step(mode))
            raise StepNotYetAvailable(step, mode)
        return files

    def index_files_with_tensor(self, name: str, step: int, mode) -> List[IndexFile]:
        mode = _mode_arg(mode)
        files = [f for f in self._step_files(step, mode).values() if f.has_tensor(name)]
        if not files:
            raise TensorUnavailableForStep(name, step, mode)
        return files

    def index_file_for(self, name: str, step: int, mode, worker: Optional[str]) -> IndexFile:
        mode = _mode_arg(mode)
        if worker is not None:
            argcheck.name(worker, "worker")
        files = self._step_files(step, mode)
        if worker is None and len(files) == 1:  # one worker: the usual case, no sorting
            for f in files.values():
                if f.has_tensor(name):
                    return f
                raise TensorUnavailableForStep(name, step, mode)
        if worker is not None:
            f = files.get(worker)
            if f is None:
                error = InvalidWorker(worker)
                error.hint = lambda: (f"(not a worker of step {step}, which has {listed(sorted(files))}; the run's "
                                      f"workers: {listed(self.workers())})")
                raise error
            if not f.has_tensor(name):
                raise TensorUnavailableForStep(name, step, mode)
            return f
        for w in sorted(files):
            if files[w].has_tensor(name):
                return files[w]
        raise TensorUnavailableForStep(name, step, mode)

    def _event_path(self, f: IndexFile, name: str = "<any>") -> str:
        key = f.event_key
        if key is not None:
            return key
        if f.event_file is None:
            raise TensorUnavailableForStep(name, f.step, f.mode)  # (an index naming no event file)
        # The index stores the event file relative to the run root (last three path components);
        # anything else was refused when the index file was read.
        key = event_file_key(f.event_file)
        if key is None:
            raise IndexReaderException("Index names a file outside the run's events/", f.key, f.step)
        return key

    def _decode(self, f: IndexFile, name: str, raw: bytes, key: str, location: Tuple[int, int]) -> np.ndarray:
        try:
            if self._declares_aliases or f.strict_aliases:
                # The writer declares its aliases (one record indexed under several names): a record of
                # another tensor is this one's only if its entry says so.
                same_record = lambda tag: f.alias_of(name) == tag  # noqa: E731
                expect = (f.step, f.mode, f.mode_step)
            else:
                # Older writers: a record of a tensor the same index locates here is taken as an alias. Their
                # records may carry another mode than their index (a mode switched within a step): the step
                # is checked only.
                same_record = lambda tag: f.locations.get(tag) == location  # noqa: E731
                expect = (f.step, None, None)
            return decode_tensor_record(raw, None, f.step, name, same_record, expect)
        except EventFileCorrupted as e:
            e.path = self.storage.full_path(key)  # (worked out only when needed: reads are per value)
            raise

    # ------------------------------------------------------------------------------------------
    # a job restarted into the run folder (from a checkpoint) while this trial follows it
    # ------------------------------------------------------------------------------------------
    # Listing resumes after the last complete step read (as in 1.0.x), so a job that restarts from a
    # checkpoint into the same folder rewrites steps this trial read already (same file names, new contents:
    # their records no longer where the old index said, read as "Truncated record" or another tensor's record)
    # and may write steps it never had (another save interval). A trial made now reads the folder as it is;
    # a following trial must agree with it. Checked only while the run is live and cheaply: a read that fails
    # re-reads that step's index file, and the whole index is listed again every
    # SMDEBUG_RESTART_CHECK_INTERVAL seconds (60), or ten times as long as listing it
    # took, if longer. A changed file reloads the whole index (values cached go
    # too); files for steps passed are read as new ones (a slow worker's late files cost no reload).

    def _check_restart(self) -> None:
        if self._list_token is None or time.monotonic() - self._full_listing_at < self._restart_check_interval:
            return
        began = time.monotonic()
        index_keys = self._list(INDEX_DIR)
        # (a run of many files on S3 takes many requests to list: never more than a tenth of the time)
        # (0: at every refresh, as a test or a user that must see restarts at once asks)
        wait = 9 * (time.monotonic() - began) if self._restart_check_interval else 0.0
        self._full_listing_at = time.monotonic() + wait
        unread = set()
        for k in index_keys:
            if k >= self._list_token:
                break
            try:
                step, worker = parse_step_file_name(k)
            except IndexReaderException:
                continue  # (reported when it is read)
            if self._in_range(step) and worker not in self._own_files.get(step, ()) and k not in self._read_keys:
                unread.add(k)
        if unread and unread != self._unread_below:  # (the same damaged files skipped again: not read again)
            # (read as new files: a step inserts among the others; a file also rewritten is found when read)
            (logger.debug if self._restart_reloads else logger.warning)(
                "%s: %d index file(s) appeared for steps this trial had read past, e.g. %s (a job restarted "
                "from a checkpoint into the same folder, or a worker far behind?): reading them",
                printable(str(self.path)), len(unread), printable(min(unread)))
            self._restart_reloads += 1
            self._read_index_keys(sorted(unread - self._unread_below), live=True)
        self._unread_below = unread

    def _rewritten_since_read(self, f: IndexFile) -> bool:
        """Whether the index file ``f`` was read from now says something else (a restarted job rewrote it)."""
        if self._ended_at_first_read:
            return False  # (a run that had ended when this trial first read it: damage is damage)
        key = index_file_name(f.step, f.worker)
        raw = self.storage.read_files([key], MAX_INDEX_FILE_BYTES, "SMDEBUG_MAX_INDEX_FILE_BYTES")[0]
        if isinstance(raw, Exception):
            return False
        try:
            now = parse_index_file(f.key, f.step, f.worker, raw, lazy=False)
            return (now.event_file, now.mode, now.mode_step, now.locations) != (
                f.event_file, f.mode, f.mode_step, f.locations)
        except IndexReaderException:
            return False

    def _reload_index(self, why: str) -> None:
        self._restart_reloads += 1
        logger.warning("%s was written again after this trial read it (%s; a job restarted from a checkpoint "
                       "into the same folder?): reading its index again", printable(str(self.path)), why)
        self._reset_index_state()
        self._generation += 1
        self._full_listing_at = time.monotonic()
        self.refresh_data()

    def _reread_after_rewrite(self, f: IndexFile, error: Exception) -> bool:
        """After ``error`` reading from ``f``: whether ``f`` was rewritten since read (then the index is read
        again and the caller retries once)."""
        if not self._rewritten_since_read(f):
            return False
        logger.debug("reading step %d of %s failed (%s): its index file changed", f.step, f.worker, error)
        self._reload_index(f"the index file of step {f.step} of {printable(f.worker)} changed")
        return True

    def _read_record_once(self, f: IndexFile, name: str, location: Tuple[int, int]) -> np.ndarray:
        try:
            key = self._event_path(f, name)
            start, length = location
            raw = self._read_event_bytes(f, name, key, start, length)
            value = self._decode(f, name, raw, key, location)
        except (IndexReaderException, MissingEventFile) as e:
            if self._read_logs:
                self._note_damage(e)
            raise
        if self._read_logs:
            self.note_read(name, self._placed(f))
        return value

    def read_record(self, f: IndexFile, name: str, location: Tuple[int, int]) -> np.ndarray:
        try:
            return self._read_record_once(f, name, location)
        except (EventFileCorrupted, MissingEventFile) as e:
            if not self._reread_after_rewrite(f, e):
                raise
        again = self.index_file_for(name, self._placed(f), ModeKeys.GLOBAL, f.worker)
        same = f.reductions.get(name, {})
        stored = [k for k, e in same.items() if e.location == location]  # (a stored reduction's record)
        if stored:
            entry = again.reductions.get(name, {}).get(stored[0])
            new_location = entry.location if entry is not None else None
        else:
            new_location = again.location(name)
        if new_location is None:
            raise TensorUnavailableForStep(name, self._placed(f), ModeKeys.GLOBAL)
        return self._read_record_once(again, name, new_location)

    # --- remote reads: one request for neighbouring records ---------------------------------------
    def _span_lookup(self, key: str, start: int, length: int) -> Optional[bytes]:
        spans = self._spans.get(key)
        if not spans:
            return None
        for lo, data in spans:
            if lo <= start and start + length <= lo + len(data):
                self._spans.move_to_end(key)
                return data[start - lo:start - lo + length]
        return None

    def _span_store(self, key: str, lo: int, data: bytes) -> None:
        if len(data) > self._span_budget:
            return
        self._spans.setdefault(key, []).append((lo, data))
        self._spans.move_to_end(key)
        self._span_bytes += len(data)
        while self._span_bytes > self._span_budget and self._spans:
            _, evicted = self._spans.popitem(last=False)
            self._span_bytes -= sum(len(d) for _, d in evicted)

    @staticmethod
    def _neighbourhood(f: IndexFile, start: int, length: int, budget: int) -> Tuple[int, int]:
        """The byte range of the record at ``start`` plus as many neighbouring records of the same event
        file as fit in ``budget`` bytes (the records of one step are contiguous)."""
        extent = f.extent
        if extent is not None and extent[1] - extent[0] <= budget:
            return extent  # the whole (small) step at once
        locations = f.__dict__.get("_sorted_locations")
        if locations is None:  # worked out once per index file: a step is read record by record
            locations = f._sorted_locations = sorted(
                set(f.locations.values())
                | {e.location for reds in f.reductions.values() for e in reds.values() if e.location is not None})
        i = bisect.bisect_left(locations, (start, length))
        lo, hi = start, start + length
        j = i + 1
        while j < len(locations) and locations[j][0] + locations[j][1] - lo <= budget:
            hi = max(hi, locations[j][0] + locations[j][1])
            j += 1
        j = i - 1
        while j >= 0 and hi - locations[j][0] <= budget:
            lo = min(lo, locations[j][0])
            j -= 1
        return lo, hi

    def _read_record_bytes(self, f: IndexFile, key: str, start: int, length: int) -> bytes:
        cached = self._span_lookup(key, start, length)
        if cached is not None:
            return cached
        budget = self.storage.read_ahead
        if budget <= length:
            return self.storage.read_view(key, start, length)  # large records: maybe a map, not a copy
        lo, hi = self._neighbourhood(f, start, length, budget)
        if (lo, hi) == (start, start + length):
            return self.storage.read(key, start, length)
        data = self.storage.read(key, lo, hi - lo)
        self._span_store(key, lo, data)
        return data[start - lo:start - lo + length]

    def _check_claimed_length(self, f: IndexFile, key: str, start: int, length: int) -> None:
        """Before reading a record the index says is large, read its 12-byte header: the index's length must
        be the record's own (EventFileCorrupted naming the file and step if not). A length of gigabytes into
        a sparse event file was read (mapped) whole, 5 GB of memory for a record of a few hundred bytes. A
        small record is read whole and checked by decode_tensor_record (one read, not two). A claim that runs
        past the end of the file costs nothing to read (reads are clamped to the file) and is reported as such
        by the read itself. (One 12-byte read per large record; the end of the claim is looked at only when the
        header disagrees.)"""
        if length <= _CHECK_HEADER_FIRST:
            return
        try:
            check_index_length(self.storage.read(key, start, HEADER_SIZE), start, length,
                               self.storage.full_path(key), f.step)
        except EventFileCorrupted:
            if not self.storage.read(key, start + length - 1, 1):
                return  # a claim past the end of the file: the read says so
            raise

    def _read_event_bytes(self, f: IndexFile, name: str, key: str, start: int, length: int) -> bytes:
        attempts = 0
        while True:
            try:
                self._check_claimed_length(f, key, start, length)
                raw = self._read_record_bytes(f, key, start, length)
                if attempts:  # it came after all: waiting was worth it, the allowance is whole again
                    self._missing_event_waits_left = None
                break
            except UnreadableFileError as e:  # not a regular file, permission denied, an I/O error
                raise EventFileCorrupted(str(e), self.storage.full_path(key), f.step) from None
            except FileNotFoundError:
                attempts += 1
                later_exists = any(
                    s > f.step and f.worker in self._own_files[s]
                    for s in self._own_steps[bisect.bisect_right(self._own_steps, f.step):][:1]
                )
                if self._missing_event_waits_left is None:
                    self._missing_event_waits_left = self.missing_event_retry_limit
                if (not self.wait_for_missing_event_files or self.loaded_all_steps or later_exists
                        or self._assumed_ended or attempts > self.missing_event_retry_limit
                        or self._missing_event_waits_left <= 0 or self.storage.exists(END_OF_JOB_FILE)):
                    raise MissingEventFile(name, f.step, f.mode, self.storage.full_path(key)) from None
                if not self._said_waiting:  # (once per trial: a wait of minutes must not look like a hang)
                    self._said_waiting = True
                    logger.warning(
                        "smdebug: the event file of step %d (%s) is missing while its index is there and the run "
                        "has not ended: waiting up to %gs for it (its writer may still be writing it; a job that "
                        "died never ends its run). SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT=0 does not wait",
                        f.step, printable(self.storage.full_path(key)),
                        self._missing_event_waits_left * self.poll_interval)
                self._missing_event_waits_left -= 1
                time.sleep(self.poll_interval)
        if len(raw) < length:
            raise self._past_end(f, key, start, length, raw)
        return raw

    def _past_end(self, f: IndexFile, key: str, start: int, length: int, raw: bytes) -> EventFileCorrupted:
        """The error for a record the index places past the end of its event file, saying the file's real size:
        it said the record's start offset for the size whenever the file ends before the record begins (an
        emptied file of 0 bytes "has 2733")."""
        size = self._event_file_size(key, start) if not raw else start + len(raw)
        has = f"the file has {size:,} bytes" if size is not None else f"the file ends before byte {start:,}"
        return EventFileCorrupted(
            f"Index points past the end of the event file (wants bytes {start}..{start + length}, {has})",
            self.storage.full_path(key), f.step)

    def _event_file_size(self, key: str, below: int) -> Optional[int]:
        """The size of event file ``key``, known to be at most ``below`` bytes (None: it could not be read). Storage
        says no sizes; reads are clamped to the file, so one-byte reads find its end by bisection (at most 64,
        and only for an error's message)."""
        lo, hi = 0, below  # the size is in [lo, hi]
        try:
            while lo < hi:
                mid = (lo + hi) // 2
                if self.storage.read(key, mid, 1):
                    lo = mid + 1
                else:
                    hi = mid
        except (OSError, UnreadableFileError):
            return None
        return lo

    def read_records(self, name: str, steps: Sequence[int], mode, worker: Optional[str], *,
                     _retry: bool = True) -> List[np.ndarray]:
        """Values of one tensor at many steps, reading neighbouring records in as few requests as possible."""
        mode = _mode_arg(mode)
        tensor = self.tensor(name)
        plan = []
        for s in steps:
            f = self.index_file_for(name, s, mode, worker)
            location = f.location(name)
            if location is None:
                raise TensorUnavailableForStep(name, s, mode, has_reductions=name in f.reductions)
            plan.append((f, location))
        if tensor.cache and all((f.step, f.worker) in tensor._values for f, _ in plan):
            for f, _ in plan:
                self.note_read(name, self._placed(f))
            return [tensor._values[(f.step, f.worker)] for f, _ in plan]
        try:
            return self._read_planned(tensor, name, steps, mode, worker, plan)
        except (IndexReaderException, MissingEventFile) as e:
            # (only the failing step's index is looked at again: a damaged live run of many steps must not
            # cost a read of every index file per failed values())
            failed = [f for f, _ in plan if f.step == getattr(e, "step", None)][:1]
            if _retry and isinstance(e, (EventFileCorrupted, MissingEventFile)) and failed and \
                    self._reread_after_rewrite(failed[0], e):
                return self.read_records(name, steps, mode, worker, _retry=False)  # (the index read again)
            if self._read_logs:
                self._note_damage(e)
            raise

    def _read_planned(self, tensor: Tensor, name: str, steps: Sequence[int], mode, worker: Optional[str],
                      plan: List[Tuple[IndexFile, Tuple[int, int]]]) -> List[np.ndarray]:
        requests = [(self._event_path(f, name), loc[0], loc[1]) for f, loc in plan]
        raws: List[Optional[bytes]] = [self._span_lookup(*r) for r in requests]
        missing = [i for i, raw in enumerate(raws) if raw is None]
        try:
            for i in missing:
                self._check_claimed_length(plan[i][0], *requests[i])
            for i, raw in zip(missing, self.storage.read_many([requests[i] for i in missing]) if missing else []):
                raws[i] = raw
        except (FileNotFoundError, UnreadableFileError):  # (one value at a time says which step, and how)
            return [tensor.value(s, mode, worker) for s in steps]
        out = []
        for (f, e), raw, (key, start, length) in zip(plan, raws, requests):
            if len(raw) < length:
                raise self._past_end(f, key, start, length, raw)
            value = self._decode(f, name, raw, key, (start, length))
            if tensor.cache:
                tensor._values[(f.step, f.worker)] = value
            if self._read_logs:
                self.note_read(name, self._placed(f))
            out.append(value)
        return out

    # ------------------------------------------------------------------------------------------
    def __eq__(self, other):
        return isinstance(other, Trial) and (self.name, self.path) == (other.name, other.path)

    def __hash__(self):
        return hash((self.name, self.path))

    def __repr__(self):
        return (
            f"<{type(self).__name__} name={self.name} path={self.path} steps={len(self._steps)} "
            f"workers={self.workers()} ended={self.loaded_all_steps}>"
        )


class LocalTrial(Trial):
    """A trial on the local file system. ``LocalTrial(name, dirname)`` as in smdebug 1.0.x: ``dirname`` is
    that version's name of ``path``."""

    def __init__(self, name: str, path=None, *args, dirname=None, **kwargs):
        super().__init__(name, _one_of(path, dirname, "path", "dirname"), *args, **kwargs)


class S3Trial(Trial):
    """A trial on S3. ``S3Trial(name, bucket_name=..., prefix_name=...)`` as in smdebug 1.0.x, or
    ``S3Trial(name, "s3://bucket/prefix")``."""

    def __init__(self, name: str, path=None, *args, bucket_name=None, prefix_name=None, **kwargs):
        if bucket_name is not None:
            if path is not None:
                raise SMDebugValueError("Pass either path or bucket_name/prefix_name, not both")
            path = f"s3://{bucket_name}/{(prefix_name or '').lstrip('/')}"
        super().__init__(name, path, *args, **kwargs)


def _check_wait(seconds) -> Optional[float]:
    """``wait_for_collections``: None, or seconds (inf: no limit). NaN compared false with every time
    and waited for ever."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer, np.floating)):
        raise SMDebugTypeError(f"wait_for_collections must be seconds (a number) or None, got {seconds!r}")
    if seconds != seconds:
        raise SMDebugValueError("wait_for_collections is NaN: give seconds, float('inf') (no limit) or None")
    return float(seconds)


def _mode_arg(mode) -> ModeKeys:
    """A mode argument as a ModeKeys (its name in any case, or its value, is accepted as ``to_dataframe``
    accepts them): ``steps(mode="train")`` answered [] and ``value(1, mode="TRAIN")`` "not saved", a
    mode that was no mode taken for one with no data. None is the default, GLOBAL (it answered nothing, as
    a mode without steps). Anything else is SMDebugValueError."""
    if isinstance(mode, ModeKeys):
        return mode
    return ModeKeys.GLOBAL if mode is None else ModeKeys.parse(mode)


def _check_step(step) -> None:
    """Steps are integers (a string or None compared with the run's steps raised a bare TypeError)."""
    argcheck.step(step)


def _one_of(value, alias, name: str, alias_name: str):
    if value is not None and alias is not None:
        raise SMDebugValueError(f"Pass either {name} or {alias_name}, not both")
    value = value if value is not None else alias
    if value is None:
        raise SMDebugValueError(f"{name} is required")
    return value
