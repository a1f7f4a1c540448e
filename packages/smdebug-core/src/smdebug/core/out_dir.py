"""The run directory a hook writes: checking it at construction, and the claim that keeps two processes
that each believe they are the only worker from writing over each other's files.

The claim is a file (:data:`~smdebug.core.locations.CLAIM_FILE`) created atomically in the run: locally it
holds the owner's pid, and a claim whose process is gone is stale; on S3 a conditional PUT creates it, the
owner refreshes it, and one left alone for long enough is stale (see :meth:`OutDirClaim.take_s3`).
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Optional

from smdebug.core.env_settings import env_float
from smdebug.core.locations import CLAIM_FILE, END_OF_JOB_FILE
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import Storage, is_s3_path, parse_s3_path
from smdebug.core.storage.errors import StorageAccessDenied, StorageUnavailable
from smdebug.exceptions import InvalidConfigurationError, SMDebugRuntimeError

#: a claim file holds a pid (and a host); a larger one planted in out_dir is never read whole
_MAX_CLAIM_BYTES = 4096
logger = get_logger()


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


def resolve_tensorboard_dir(out_dir: str, export_tensorboard, tensorboard_dir) -> Optional[str]:
    if tensorboard_dir:
        return tensorboard_dir if is_s3_path(tensorboard_dir) else os.path.expanduser(tensorboard_dir)
    if export_tensorboard:
        return out_dir.rstrip("/") + "/tensorboard"
    return None


def launched_as_one_of_many() -> bool:
    from smdebug.core.plugins.worker_env import worker_from_env

    info = worker_from_env()
    return info is not None and info.size > 1


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutDirClaim:
    """This process's claim on a run directory (``storage``): :meth:`take` (local) or :meth:`take_s3`, then
    :meth:`refresh_due` at step boundaries (S3) and :meth:`release` at close."""

    def __init__(self, storage: Storage, out_dir: str):
        self.storage = storage
        self.out_dir = out_dir
        self.claimed = False
        self.payload = b""
        self._refreshed = 0.0

    def take(self) -> bool:
        """Claim a local run directory; False (with a warning) when a live process holds it."""
        storage = self.storage
        data = str(os.getpid()).encode()
        if storage.create_exclusive(CLAIM_FILE, data):
            self.claimed = True
            return True
        try:
            owner = int(storage.read(CLAIM_FILE, 0, _MAX_CLAIM_BYTES).strip() or 0)
        except FileNotFoundError:
            owner = None  # released since we looked: just try again
        except (OSError, ValueError):
            owner = 0  # unreadable: treat as stale
        if owner and owner != os.getpid() and pid_alive(owner):
            logger.warning(
                "smdebug: another process (pid %s) is already writing to %s as the only worker; this "
                "process (pid %s) will not write. Use a distinct out_dir per process or include_workers='all' "
                "with a distributed runtime.", owner, self.out_dir, os.getpid(),
            )
            return False
        if owner is not None:
            storage.remove(CLAIM_FILE)  # a claim left by a dead process
        self.claimed = storage.create_exclusive(CLAIM_FILE, data)
        if not self.claimed:
            logger.warning("smdebug: another process claimed %s first; this process (pid %s) will not write.",
                           self.out_dir, os.getpid())
        return self.claimed

    def take_s3(self) -> bool:
        """The claim on S3: a conditional PUT (``If-None-Match: *``) creates it atomically.

        A process on another machine cannot be asked whether it is alive, so the owner refreshes its
        claim every ``SMDEBUG_S3_CLAIM_REFRESH`` seconds (60) and a claim left alone for
        ``SMDEBUG_S3_CLAIM_STALE`` seconds (300) is stale; taking it over is a conditional PUT on the
        stale claim's ETag, so two processes cannot both take it over.
        """
        storage = self.storage
        host = socket.gethostname()
        self.payload = json.dumps({"pid": os.getpid(), "host": host}).encode()
        try:
            for _ in range(2):
                if storage.create_exclusive(CLAIM_FILE, self.payload):
                    return self._taken()
                stat = storage.stat(CLAIM_FILE)
                if stat is not None:
                    break
            else:
                return self._taken()  # created and removed under us twice: just write
            etag, age = stat
            try:
                owner = json.loads(storage.read(CLAIM_FILE, 0, _MAX_CLAIM_BYTES))
                owner_pid, owner_host = int(owner.get("pid", 0)), str(owner.get("host", ""))
            except (FileNotFoundError, ValueError, TypeError, AttributeError, StorageAccessDenied):
                owner_pid, owner_host = 0, ""
            if owner_host == host and owner_pid == os.getpid():
                return self._taken()
            stale_after = env_float("SMDEBUG_S3_CLAIM_STALE", 300.0, minimum=0.0)
            alive = age < stale_after and not (owner_host == host and owner_pid and not pid_alive(owner_pid))
            if alive:
                logger.warning(
                    "smdebug: another process (pid %s on %s) is already writing to %s as the only worker; this "
                    "process (pid %s on %s) will not write. Use a distinct out_dir per process or "
                    "include_workers='all' with a distributed runtime.",
                    owner_pid or "?", owner_host or "?", self.out_dir, os.getpid(), host)
                return False
            if storage.replace_if_unchanged(CLAIM_FILE, self.payload, etag):
                return self._taken()
            logger.warning("smdebug: another process claimed %s first; this process (pid %s) will not write.",
                           self.out_dir, os.getpid())
            return False
        except StorageUnavailable as e:
            logger.warning("smdebug: could not claim %s (%s); saving without the claim.", self.out_dir, e)
            return True
        except StorageAccessDenied as e:
            if e.operation == "PutObject":
                raise  # may not write at all: reported once by the caller
            logger.warning("smdebug: could not check the claim on %s (%s); saving without it.", self.out_dir, e)
            return True

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
        if self.claimed:
            try:
                self.storage.remove(CLAIM_FILE)
            except OSError:
                pass
            self.claimed = False
