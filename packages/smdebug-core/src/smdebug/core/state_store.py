"""Step counters that survive a restarted (e.g. spot) training job.

When a checkpoint configuration exists (``CHECKPOINT_CONFIG_FILE_PATH``, default
``/opt/ml/input/config/checkpointconfig.json``, key ``LocalPath``), the hook keeps
``<LocalPath>/metadata.json``: one entry per training run with the latest global step seen and saved
and each mode's step. It is updated when the user's checkpoint files change (anywhere below
``LocalPath``: frameworks often write a folder per checkpoint), so after a restart from a checkpoint the
hook resumes numbering where that checkpoint was taken instead of starting again at step 0 and
overwriting saved steps.

Both files come from outside the training script (the checkpoint folder is synced from S3 after a spot
restart) and are read before the first step, so nothing in them may stop, hang or derail training: they
are read only if they are regular files of sane size (a FIFO is never opened for a blocking read), parsed
with a memory bound, and every value is checked (steps are ints from -1, nothing seen, to a step a run
can hold, :data:`~smdebug.core.locations.MAX_STEP`, with room to go on). Anything wrong is named in one
warning and the state is ignored: the run starts at step 0. The checkpoint folder is walked without
recursion, to a bounded depth and number of entries, and, when walking it is costly (more than a thousand
files, or a slow file system), not at every step but at most about 5% of the time.
"""

from __future__ import annotations

import json
import os
import time
from typing import Dict, List, Optional

from smdebug.core.bounded_json import loads_bounded
from smdebug.core.locations import MAX_STEP
from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.names import clipped, printable
from smdebug.core.storage.safe_fs import read_regular, write_file_atomic

DEFAULT_CHECKPOINT_CONFIG_FILE = "/opt/ml/input/config/checkpointconfig.json"
METADATA_FILENAME = "metadata.json"
# what SageMaker names metadata.json once it has uploaded it (not a checkpoint either)
_NOT_CHECKPOINTS = (METADATA_FILENAME, METADATA_FILENAME + ".sagemaker-uploaded", METADATA_FILENAME + ".tmp")

#: the most bytes read from the checkpoint configuration or from metadata.json (a state of 16 MiB is
#: 100,000 training runs)
MAX_STATE_FILE_BYTES = 16 << 20
#: the largest step a run may resume at: a step a run can hold, with room for 2**32 more steps
MAX_RESUME_STEP = MAX_STEP - (1 << 32)
#: how deep below the checkpoint folder, and how many entries in all, are watched for new checkpoints
MAX_WALK_DEPTH = 64
MAX_WALK_ENTRIES = 100_000
# A walk of a checkpoint folder of up to _WALK_FREE_ENTRIES entries that takes less than _WALK_FREE_S is
# repeated at every step (as in smdebug 1.0.x: a checkpoint is noticed at the next step); after a walk of
# a larger folder, or a slower walk, the next waits _WALK_SHARE times as long as it took.
_WALK_FREE_ENTRIES = 1000
_WALK_FREE_S = 0.25
_WALK_SHARE = 20

_STATE_KEYS = ("training-run", "latest-global-step-seen", "latest-global-step-saved")

logger = get_logger()


def _shown(path: str) -> str:
    return clipped(printable(str(path)), 300)


class BadState(ValueError):
    """What is wrong with a checkpoint configuration or state file (the store warns and ignores it)."""


def _read_json(path: str):
    """The JSON of the regular file ``path``: BadState if it is not one, too large, or not JSON."""
    try:
        raw = read_regular(path, limit=MAX_STATE_FILE_BYTES)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:  # (UnsafeFileError, a FIFO or a folder, is an OSError)
        raise BadState(str(e)) from None
    try:
        return loads_bounded(raw)
    except (ValueError, RecursionError) as e:  # RecursionError: absurd nesting
        raise BadState(f"not valid JSON ({type(e).__name__}: {e})"[:300]) from None


def _is_step(value, lowest: int = -1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lowest <= value <= MAX_RESUME_STEP


def _check_entry(entry, i: int) -> None:
    """BadState naming what is wrong with the state entry ``i``."""
    where = f"entry {i}"
    if not isinstance(entry, dict):
        raise BadState(f"{where} is a {type(entry).__name__}, not an object")
    for key in _STATE_KEYS:
        if key not in entry or key == "latest-global-step-saved" and entry[key] is None:
            continue  # (missing: the defaults of smdebug 1.0.x; no step saved yet: null)
        lowest = 0 if key == "training-run" else -1
        if not _is_step(entry[key], lowest):
            raise BadState(f"{where}: {key!r} is {clipped(repr(entry[key]), 60)}, not an integer from {lowest} "
                           f"to {MAX_RESUME_STEP}")
    modes = entry.get("latest-mode-step")
    if modes is None:
        return
    if not isinstance(modes, dict):
        raise BadState(f"{where}: 'latest-mode-step' is a {type(modes).__name__}, not an object of mode steps")
    for name, value in modes.items():
        if name in ModeKeys.__members__ and value is not None and not _is_step(value):
            raise BadState(f"{where}: the {clipped(name, 40)} step is {clipped(repr(value), 60)}, not an integer "
                           f"from -1 to {MAX_RESUME_STEP}")


class StateStore:
    def __init__(self, read: bool = True):
        """``read=False``: a store that keeps no state (as without a checkpoint configuration)."""
        self.dir: Optional[str] = None
        self.states: List[dict] = []
        self._snapshot = None
        self._changed = False
        self._next_walk = 0.0
        self._warned = set()
        if not read:
            return
        path = os.environ.get("CHECKPOINT_CONFIG_FILE_PATH", DEFAULT_CHECKPOINT_CONFIG_FILE)
        if not path or not os.path.exists(path):
            return
        try:
            config = _read_json(path)
            if not isinstance(config, dict):
                raise BadState(f"it holds a JSON {type(config).__name__}, not an object")
            local = config.get("LocalPath")
            if local is not None and not isinstance(local, str):
                raise BadState(f"LocalPath must be a folder name, not {clipped(repr(local), 60)}")
            if local and "\0" in local:
                raise BadState("LocalPath holds a NUL character")
            if local and os.path.lexists(local) and not os.path.isdir(local):
                raise BadState(f"LocalPath {_shown(local)} is not a folder")
        except (BadState, OSError) as e:
            self._warn("config", "smdebug: ignoring the checkpoint configuration %s (%s): %s; step numbers "
                       "will not resume after a restart", _shown(path), "CHECKPOINT_CONFIG_FILE_PATH", e)
            return
        if not local:
            return
        self.dir = local
        meta = os.path.join(self.dir, METADATA_FILENAME)
        try:
            states = _read_json(meta)
            if not isinstance(states, list):
                raise BadState(f"it holds a JSON {type(states).__name__}, not a list of training runs")
            for i, entry in enumerate(states):
                _check_entry(entry, i)
            self.states = states
        except FileNotFoundError:
            pass
        except (BadState, OSError) as e:
            self._warn("state", "smdebug: ignoring the training state %s: %s; this run's steps start at 0",
                       _shown(meta), e)
        self._snapshot = self._walk_timed()

    def _warn(self, key, message: str, *args) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

    @property
    def active(self) -> bool:
        return self.dir is not None

    @property
    def _checkpoint_dir(self) -> Optional[str]:
        """smdebug 1.0.x's name of :attr:`dir`."""
        return self.dir

    def latest(self) -> Optional[dict]:
        states = [s for s in self.states if isinstance(s, dict)]
        if not states:
            return None
        return max(states, key=lambda s: s.get("latest-global-step-seen", -1) if
                   _is_step(s.get("latest-global-step-seen", -1)) else -1)

    get_last_saved_state = latest  # smdebug 1.0.x's name

    def _checkpoint_files(self):
        """A signature of the checkpoint files below the folder (their names, sizes and modification
        times), None if there is no folder. Walked without recursion and without following links, at most
        :data:`MAX_WALK_DEPTH` folders deep and :data:`MAX_WALK_ENTRIES` entries in all (a warning names
        what was left out); in memory only counts, whatever the number of files."""
        if self.dir is None or not os.path.isdir(self.dir):
            return None
        count = total = mixed = 0
        mask = (1 << 64) - 1
        pending = [(self.dir, 0)]
        while pending:
            folder, depth = pending.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if depth == 0 and (entry.name in _NOT_CHECKPOINTS or entry.name.startswith(
                                METADATA_FILENAME + ".") and entry.name.endswith(".tmp")):
                            continue
                        if count >= MAX_WALK_ENTRIES:
                            self._warn("entries", "smdebug: the checkpoint folder %s holds more than %d entries; "
                                       "new checkpoints are looked for among the first %d only",
                                       _shown(self.dir), MAX_WALK_ENTRIES, MAX_WALK_ENTRIES)
                            return count, total, mixed
                        count += 1
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                if depth + 1 < MAX_WALK_DEPTH:
                                    pending.append((entry.path, depth + 1))
                                else:
                                    self._warn("depth", "smdebug: the checkpoint folder %s is nested more than %d "
                                               "folders deep; checkpoints deeper than that are not looked for",
                                               _shown(self.dir), MAX_WALK_DEPTH)
                                continue
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # removed while we looked
                        h = hash((entry.path, st.st_size, st.st_mtime_ns))
                        total = (total + h) & mask
                        mixed ^= (h * 0x9E3779B97F4A7C15) & mask
            except OSError:
                continue  # a folder that cannot be listed (permissions, removed, a name too long)
        return count, total, mixed

    def _walk_timed(self):
        start = time.monotonic()
        snapshot = self._checkpoint_files()
        took = time.monotonic() - start
        costly = took >= _WALK_FREE_S or (snapshot is not None and snapshot[0] > _WALK_FREE_ENTRIES)
        self._next_walk = start + took * (1 + _WALK_SHARE) if costly else 0.0
        return snapshot

    def checkpoint_updated(self) -> bool:
        """True if checkpoint files were written, changed or removed since the state was last saved (or
        since this store was opened). While a costly walk of the folder is not due, the last answer: a
        checkpoint in a folder of tens of thousands of files is then noticed some steps late, and a restart
        from it resumes numbering those steps further on (steps skipped, never written over)."""
        if self.dir is None:
            return False
        if time.monotonic() >= self._next_walk:
            self._changed = self._walk_timed() != self._snapshot
        return self._changed

    is_checkpoint_updated = checkpoint_updated  # smdebug 1.0.x's name

    def record(self, training_run: int, step_seen: int, step_saved: Optional[int], mode_steps: Dict[ModeKeys, int]):
        entry = {
            "training-run": training_run,
            "latest-global-step-saved": step_saved,
            "latest-global-step-seen": step_seen,
            "latest-mode-step": {m.name: s for m, s in mode_steps.items()},
        }
        self.states = [s for s in self.states if not isinstance(s, dict) or s.get("training-run") != training_run]
        try:
            self.update_state(entry)
        except (OSError, ValueError) as e:  # a read-only folder, a folder at metadata.json, a full disk...
            # (the checkpoint files are the new reference anyway: one attempt per checkpoint, not per step)
            self._snapshot = self._walk_timed()
            self._changed = False
            self._warn("write", "smdebug: cannot save the training state %s: %s; step numbers will not resume "
                       "after a restart from this checkpoint", _shown(os.path.join(self.dir, METADATA_FILENAME)), e)

    def update_state(self, state) -> None:
        """Append ``state`` (JSON-able) to the saved states and write them; the checkpoint files as they
        are now are the new reference for :meth:`checkpoint_updated`."""
        self.states.append(state)
        os.makedirs(self.dir, exist_ok=True)
        # (never through a link planted at the file's name or its temporary name)
        write_file_atomic(os.path.join(self.dir, METADATA_FILENAME), json.dumps(self.states).encode())
        self._snapshot = self._walk_timed()
        self._changed = False
