"""The run directory a hook writes: checking it at construction, and the claims that keep two processes
from writing over each other's files.

* A single-worker job claims the run (:data:`~smdebug.core.locations.CLAIM_FILE`): processes that each
  believe they are the only worker write one at a time, the others not at all (a warning).
* A multi-worker job claims each worker name (:func:`worker_claim_key`, ``claims/<worker>.json``): two
  processes that resolve to one name (the same ``SMDEBUG_WORKER_NAME``, a launcher that gives every process
  rank 0) would replace each other's steps file by file. The second one logs one error and its hook is
  disabled; training goes on. Readers never look in ``claims/`` (nor did smdebug 1.0.x's: they list
  ``index/``, ``events/``, ``collections/`` and the end marker).

A claim is created atomically (an exclusive create locally, a conditional PUT ``If-None-Match: *`` on S3)
and holds its owner's pid, host name, pid namespace and process start time; it is removed at close. A
claim left by a process that is gone is stale and taken over, so a restart after a crash is not blocked:

* same machine: the owner's pid is gone, or now belongs to a process started at another time;
* another machine (or pid namespace), where that cannot be asked: the owner refreshes its claim
  (locally every ``SMDEBUG_CLAIM_REFRESH`` seconds, 60, from a small thread; on S3 every
  ``SMDEBUG_S3_CLAIM_REFRESH`` seconds at step boundaries) and a claim left alone for
  ``SMDEBUG_CLAIM_STALE`` (``SMDEBUG_S3_CLAIM_STALE`` on S3) seconds, 300, is stale. A job restarted on
  other machines within that time after a crash finds its names taken: the hooks say so, and removing
  ``claims/`` (or waiting that long) lets the next start write.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import weakref
from typing import Optional

from smdebug.core.env_settings import env_float
from smdebug.core.locations import CLAIM_FILE, END_OF_JOB_FILE
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import Storage, is_s3_path, parse_s3_path
from smdebug.core.storage.errors import StorageAccessDenied, StorageUnavailable
from smdebug.exceptions import InvalidConfigurationError, SMDebugRuntimeError

#: a claim file holds a pid (and a host); a larger one planted in out_dir is never read whole
_MAX_CLAIM_BYTES = 4096
#: the folder of the worker-name claims (readers ignore it)
WORKER_CLAIMS_DIR = "claims"
logger = get_logger()


def worker_claim_key(worker: str) -> str:
    """The claim of one worker name in a multi-worker run (the name as it is in the run's file names)."""
    from smdebug.core.locations import serialize_worker_name

    return f"{WORKER_CLAIMS_DIR}/{serialize_worker_name(worker)}.json"


def _pid_namespace() -> Optional[str]:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def process_start(pid: int) -> Optional[str]:
    """When process ``pid`` started (clock ticks since boot, Linux), or None where that cannot be read:
    tells a live owner from another process that was given its pid later."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read(4096)
        return stat[stat.rindex(b")") + 2:].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return None


def validate_out_dir(out_dir, dry_run) -> str:
    """``out_dir`` as the hook keeps it (absolute local path, or ``s3://bucket/prefix``), created unless a dry
    run. InvalidConfigurationError when it cannot be a run directory; SMDebugRuntimeError when it holds a
    finished run."""
    if out_dir is None or (isinstance(out_dir, str) and not out_dir.strip()):
        raise InvalidConfigurationError("out_dir is required: the directory (or s3:// path) to save to")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise InvalidConfigurationError(f"out_dir must be a path string, got {type(out_dir).__name__}")
    out_dir = os.fsdecode(os.fspath(out_dir)).strip()
    if "\x00" in out_dir:  # (every file call would raise ValueError: embedded null byte)
        raise InvalidConfigurationError(f"out_dir {out_dir!r} contains a NUL character")
    if is_s3_path(out_dir):
        bucket, _ = parse_s3_path(out_dir)
        if not bucket:
            raise InvalidConfigurationError(f"out_dir {out_dir!r} names no bucket: use s3://bucket/prefix")
        return out_dir
    out_dir = os.path.abspath(os.path.expanduser(out_dir))
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InvalidConfigurationError(f"out_dir {out_dir} exists and is not a directory")
    if os.path.islink(out_dir) and not os.path.exists(out_dir):
        raise InvalidConfigurationError(f"out_dir {out_dir} is a symbolic link to nothing (dangling, or a loop)")
    if os.path.realpath(out_dir) == os.path.realpath(os.sep):
        # (a link to / made the hook create /index, /events, /collections and the end marker at the root)
        raise InvalidConfigurationError(f"out_dir {out_dir} is the filesystem root: give a folder for the run")
    if os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE)) and not launched_as_one_of_many():
        # (In a multi-process job a slow worker may start after a fast one finished the run; it is
        # not refused here but at its first write, where non-writers never get.)
        raise SMDebugRuntimeError(
            f"out_dir {out_dir} already holds a finished run ({END_OF_JOB_FILE} exists). "
            "Use a new directory so that run's data is not mixed with this one."
        )
    if not dry_run:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as e:
            raise InvalidConfigurationError(f"Cannot create out_dir {out_dir}: {e.strerror}") from None
        if not os.access(out_dir, os.W_OK | os.X_OK):
            raise InvalidConfigurationError(f"out_dir {out_dir} is not writable")
    return out_dir


def earlier_steps_in(out_dir: str, worker: Optional[str] = None) -> Optional[str]:
    """An index file that a local ``out_dir`` already holds when a hook starts writing there (of ``worker``
    when given, else of any worker), or None. Only the first folder of steps is looked at (a thousand steps
    at most): the check costs a listing or two whatever the size of the old run."""
    from smdebug.core.locations import INDEX_DIR, serialize_worker_name

    ending = f"_{serialize_worker_name(worker)}.json" if worker is not None else ".json"
    index = os.path.join(out_dir, INDEX_DIR)
    try:
        folders = sorted(e.name for e in os.scandir(index) if e.is_dir(follow_symlinks=False))
        for folder in folders[:1]:
            with os.scandir(os.path.join(index, folder)) as entries:
                for entry in entries:
                    if entry.name.endswith(ending) and entry.is_file(follow_symlinks=False):
                        return entry.path
    except OSError:
        return None  # (no index folder yet: a new run; an unreadable one: the readers will say so)
    return None


def warn_of_earlier_steps(out_dir: str, worker: Optional[str] = None, first_step: int = 0,
                          resumed: bool = False) -> None:
    """Say, once, that this hook starts writing into a folder holding the steps of an earlier run that never
    ended, and what will happen to them. ``first_step``: the step this hook writes first; ``resumed``: its
    numbering continues from smdebug's checkpoint record (spot training, ``CHECKPOINT_CONFIG_FILE_PATH``).
    Resumed, its steps continue the run, and the earlier job's steps after the checkpoint are replaced as
    this one writes them. Otherwise the numbering starts again -- a script run again after a crash, and also
    a job resumed with ``torch.load`` alone, which smdebug cannot see -- and its steps replace those with the
    same numbers while the others stay, so the run read back mixes both jobs. smdebug 1.0.x reused such a
    folder in silence (only a finished run is refused)."""
    found = earlier_steps_in(out_dir, worker)
    if found is None:
        return
    where = f"{out_dir} already holds steps of an earlier run that did not end ({os.path.relpath(found, out_dir)}" + (
        f", worker {worker!r})" if worker is not None else ")")
    if resumed:
        logger.warning("smdebug: %s. This job resumed from smdebug's checkpoint record at step %d: its steps "
                       "continue the run, and the earlier job's steps from there on are replaced as it writes them.",
                       where, first_step)
        return
    logger.warning(
        "smdebug: %s. This job's steps start again at step %d: they replace the earlier job's steps with the same "
        "numbers and the others stay, so the run read back mixes both jobs (a job resumed from a checkpoint "
        "continues the numbering only when smdebug's checkpoint config says where it stopped: "
        "CHECKPOINT_CONFIG_FILE_PATH). Give each new run, or resumed job, a new out_dir.", where, first_step)


def resolve_tensorboard_dir(out_dir: str, export_tensorboard, tensorboard_dir) -> Optional[str]:
    if tensorboard_dir:
        return tensorboard_dir if is_s3_path(tensorboard_dir) else os.path.expanduser(tensorboard_dir)
    if export_tensorboard:
        return out_dir.rstrip("/") + "/tensorboard"
    return None


def tensorboard_dir_refusal(out_dir: str, tensorboard_dir: Optional[str]) -> Optional[str]:
    """Why the hook must not write TensorBoard files to ``tensorboard_dir``, or None.

    A folder inside the run's own files (``index/``, ``events/``, ``collections/``, ``workers_ended/``,
    ``claims/``, or at the name of its end-of-job, claim or stop file) is refused: its readers list those
    folders, and a tensorboard_dir at ``training_job_end.ts`` made that name a folder, so the run could
    never be marked finished. Checked for this hook's own out_dir whether or not its folders exist yet,
    and for any other run the path lies in (links followed, as writing would follow them)."""
    from smdebug.core.locations import _RUN_FILES, RUN_FOLDERS, run_output_refusal, run_part_at

    if not tensorboard_dir or is_s3_path(tensorboard_dir):
        return None  # (S3 TensorBoard output is not written at all: said where the writer starts)
    own_parts = set(RUN_FOLDERS) | set(_RUN_FILES) | {WORKER_CLAIMS_DIR}
    if not is_s3_path(out_dir):
        run = os.path.realpath(out_dir)
        rel = os.path.relpath(os.path.realpath(tensorboard_dir), run)
        first = rel.split(os.sep)[0]
        if first in own_parts:
            return run_output_refusal(tensorboard_dir, out_dir, first)
    inside = run_part_at(tensorboard_dir)
    if inside is not None:
        return run_output_refusal(tensorboard_dir, *inside)
    return None


def launched_as_one_of_many() -> bool:
    from smdebug.core.plugins.worker_env import worker_from_env

    info = worker_from_env()
    return info is not None and info.size > 1


#: pids are C ints (Linux hands out at most 2**22); a claim naming a larger one is damaged
_MAX_PID = (1 << 31) - 1


def _claim_pid(value) -> Optional[int]:
    """The pid a claim names: a whole number from 1 to _MAX_PID, as written by a hook (or as the digits of a
    claim of an earlier version); None for anything else. A pid of 10**30 made os.kill raise OverflowError,
    which disabled the hook that met the claim; true or 1.5 named pid 1, alive for ever."""
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 10:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_PID:
        return None
    return value


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):  # (no such pid can exist)
        return False
    return True


# The claims this process holds, by claim file. A claim file names the process, so two hooks of one
# process on one out_dir (a notebook cell run twice, a second hook made by mistake) both take it; this
# tells them apart, to say so.
_HELD_HERE: "weakref.WeakValueDictionary[str, OutDirClaim]" = weakref.WeakValueDictionary()


class OutDirClaim:
    """This process's claim on a run directory (``key`` :data:`CLAIM_FILE`) or on one worker name in it
    (``key`` :func:`worker_claim_key`, ``worker`` the name): :meth:`take` (local) or :meth:`take_s3`, then
    :meth:`refresh_due` at step boundaries (S3) and :meth:`release` at close. After a refusal, ``holder``
    describes the process that holds the claim."""

    def __init__(self, storage: Storage, out_dir: str, key: str = CLAIM_FILE, worker: Optional[str] = None):
        self.storage = storage
        self.out_dir = out_dir
        self.key = key
        self.worker = worker
        self.claimed = False
        self.payload = b""
        self.holder = ""
        self._refreshed = 0.0
        self._keepalive: Optional[threading.Event] = None

    def _identity(self) -> dict:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "ns": _pid_namespace(),
              "started": process_start(os.getpid()), "since": round(time.time(), 3)}
        if self.worker is not None:
            me["worker"] = self.worker
        return me

    def _read_owner(self) -> Optional[dict]:
        """The claim's content: a dict (``{}`` when unreadable or damaged), None when there is none."""
        try:
            raw = self.storage.read(self.key, 0, _MAX_CLAIM_BYTES)
        except FileNotFoundError:
            return None
        except (OSError, StorageAccessDenied):
            return {}
        try:
            text = raw.decode("utf-8").strip()
            if text.isdigit():  # (claims of earlier versions: the pid alone)
                return {"pid": int(text)}
            owner = json.loads(text)
            return owner if isinstance(owner, dict) else {}
        except (ValueError, UnicodeDecodeError, RecursionError):
            return {}

    def _local_age(self) -> float:
        try:
            return max(0.0, time.time() - os.stat(os.path.join(self.out_dir, self.key)).st_mtime)
        except (OSError, ValueError):
            return 0.0

    @staticmethod
    def _is_me(owner: dict) -> bool:
        host = owner.get("host")
        return owner.get("pid") == os.getpid() and (host is None or host == socket.gethostname()) and (
            owner.get("started") in (None, process_start(os.getpid())))

    @staticmethod
    def _alive(owner: dict, age: float, stale_after: float) -> bool:
        """Whether the process ``owner`` describes may still be writing (see the module's docstring)."""
        pid = _claim_pid(owner.get("pid"))
        if pid is None:
            return False  # unreadable or damaged: stale
        host, ns, mine = owner.get("host"), owner.get("ns"), _pid_namespace()
        if host is None or (host == socket.gethostname() and (ns is None or mine is None or ns == mine)):
            if not pid_alive(pid):
                return False
            started = owner.get("started")
            now = process_start(pid)
            return started is None or now is None or str(started) == now
        return age < stale_after

    def describe(self, owner: dict) -> str:
        parts = [f"pid {owner.get('pid', '?')}"]
        if owner.get("host"):
            parts.append(f"on {owner['host']}")
        since = owner.get("since")
        if isinstance(since, (int, float)) and not isinstance(since, bool):
            try:
                parts.append(time.strftime("since %Y-%m-%d %H:%M:%S UTC", time.gmtime(since)))
            except (OverflowError, ValueError, OSError):
                pass
        return " ".join(str(p)[:200] for p in parts)

    def take(self) -> bool:
        """Claim a local run directory or worker name; False when a live process holds it (for the run
        directory, with a warning; for a worker name the hook says it, see ``holder``)."""
        storage = self.storage
        me = self._identity()
        data = json.dumps(me).encode()
        self.payload = data
        stale_after = env_float("SMDEBUG_CLAIM_STALE", 300.0, minimum=0.0)
        for _ in range(3):
            if storage.create_exclusive(self.key, data):
                return self._taken_locally()
            owner = self._read_owner()
            if owner is None:
                continue  # released since we looked: just try again
            if self._is_me(owner):
                other = _HELD_HERE.get(self._here())
                if other is not None and other is not self and other.claimed:
                    # Said, not refused: the other hook is often idle for good (a notebook cell run again,
                    # its hook left unclosed and out of reach), and refusing would leave nothing saved.
                    logger.warning(
                        "smdebug: another hook of this process, not closed, also writes to %s; if both save "
                        "steps they write over each other's files. Close the first one (hook.close()) before "
                        "making another, or give each hook its own out_dir.", self.out_dir)
                return self._taken_locally()
            if self._alive(owner, self._local_age(), stale_after):
                self.holder = self.describe(owner)
                if self.worker is None:
                    logger.warning(
                        "smdebug: another process (pid %s) is already writing to %s as the only worker; this "
                        "process (pid %s) will not write. Use a distinct out_dir per process or "
                        "include_workers='all' with a distributed runtime.", owner.get("pid"), self.out_dir,
                        os.getpid())
                return False
            if self.worker is not None:
                logger.warning("smdebug: taking over the claim of worker %r in %s left by %s, which is gone.",
                               self.worker, self.out_dir, self.describe(owner))
            storage.remove(self.key)  # a claim left by a dead process
        owner = self._read_owner() or {}
        self.holder = self.describe(owner)
        if self.worker is None:
            logger.warning("smdebug: another process claimed %s first; this process (pid %s) will not write.",
                           self.out_dir, os.getpid())
        return False

    def _here(self) -> str:
        return self.storage.full_path(self.key)

    def _taken_locally(self) -> bool:
        self.claimed = True
        _HELD_HERE[self._here()] = self
        # (another machine cannot ask whether we are alive: the claim's age says it; see the docstring)
        every = env_float("SMDEBUG_CLAIM_REFRESH", 60.0, minimum=0.1)
        stop = self._keepalive = threading.Event()
        path = os.path.join(self.out_dir, self.key)

        def keep_alive():
            while not stop.wait(every):
                try:
                    os.utime(path)
                except OSError:
                    return  # removed (released, or the run folder went away)

        threading.Thread(target=keep_alive, name="smdebug-claim", daemon=True).start()
        return True

    def take_s3(self) -> bool:
        """The claim on S3 (the run's or a worker name's): a conditional PUT (``If-None-Match: *``) creates
        it atomically.

        A process on another machine cannot be asked whether it is alive, so the owner refreshes its
        claim every ``SMDEBUG_S3_CLAIM_REFRESH`` seconds (60) and a claim left alone for
        ``SMDEBUG_S3_CLAIM_STALE`` seconds (300) is stale; taking it over is a conditional PUT on the
        stale claim's ETag, so two processes cannot both take it over.
        """
        storage = self.storage
        host = socket.gethostname()
        self.payload = json.dumps(self._identity()).encode()
        key = self.key
        try:
            for _ in range(2):
                if storage.create_exclusive(key, self.payload):
                    return self._taken()
                stat = storage.stat(key)
                if stat is not None:
                    break
            else:
                return self._taken()  # created and removed under us twice: just write
            etag, age = stat
            owner = self._read_owner() or {}
            try:
                owner_pid, owner_host = int(owner.get("pid", 0)), str(owner.get("host", ""))
            except (TypeError, ValueError):
                owner_pid, owner_host = 0, ""
            if owner_host == host and owner_pid == os.getpid():
                return self._taken()
            stale_after = env_float("SMDEBUG_S3_CLAIM_STALE", 300.0, minimum=0.0)
            same_machine = owner_host == host and owner.get("ns") in (None, _pid_namespace())
            alive = age < stale_after and not (same_machine and not self._alive(owner, 0.0, stale_after))
            if alive:
                self.holder = self.describe(owner)
                if self.worker is None:
                    logger.warning(
                        "smdebug: another process (pid %s on %s) is already writing to %s as the only worker; "
                        "this process (pid %s on %s) will not write. Use a distinct out_dir per process or "
                        "include_workers='all' with a distributed runtime.",
                        owner_pid or "?", owner_host or "?", self.out_dir, os.getpid(), host)
                return False
            if storage.replace_if_unchanged(key, self.payload, etag):
                if self.worker is not None:
                    logger.warning("smdebug: taking over the claim of worker %r in %s left by %s, which is gone "
                                   "or stopped refreshing it.", self.worker, self.out_dir, self.describe(owner))
                return self._taken()
            self.holder = self.describe(self._read_owner() or {})
            if self.worker is None:
                logger.warning("smdebug: another process claimed %s first; this process (pid %s) will not write.",
                               self.out_dir, os.getpid())
            return False
        except StorageUnavailable as e:
            logger.warning("smdebug: could not claim %s (%s); saving without the claim.",
                           self._what(), e)
            return True
        except StorageAccessDenied as e:
            if e.operation == "PutObject":
                raise  # may not write at all: reported once by the caller
            logger.warning("smdebug: could not check the claim on %s (%s); saving without it.", self._what(), e)
            return True

    def _what(self) -> str:
        return self.out_dir if self.worker is None else f"worker {self.worker!r} in {self.out_dir}"

    def _taken(self) -> bool:
        self.claimed = True
        self._refreshed = time.monotonic()
        return True

    def refresh_due(self) -> bool:
        """True (once per ``SMDEBUG_S3_CLAIM_REFRESH`` seconds) when the S3 claim must be written again."""
        now = time.monotonic()
        if now - self._refreshed >= env_float("SMDEBUG_S3_CLAIM_REFRESH", 60.0, minimum=0.0):
            self._refreshed = now
            return True
        return False

    def release(self) -> None:
        if self._keepalive is not None:
            self._keepalive.set()
            self._keepalive = None
        if self.claimed:
            if _HELD_HERE.get(self._here()) is self:
                del _HELD_HERE[self._here()]
            try:
                self.storage.remove(self.key)
            except OSError:
                pass
            self.claimed = False
