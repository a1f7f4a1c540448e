"""The stop signal: how a rule (the rule runner's StopTraining action) asks a training job to stop.

The runner writes ``stop_training.json`` at the root of the run directory; every hook writing to that
directory looks for it at step boundaries and stops the training loop the framework's own way. Working
through the run directory means it works for any process layout (local, several workers, another
machine via S3) without a side channel.

How often: a local run is looked at every step boundary, at most once a millisecond, with one
``access()`` of a path worked out once: training stops at the first boundary after the signal is
written (for steps of a millisecond or more: every real training step), and a step pays a clock read
or one system call, about a microsecond. An S3 run costs a request per look, so it is looked at from a
thread of its own every 5 seconds. ``SMDEBUG_STOP_CHECK_INTERVAL`` (seconds) sets either interval;
0 looks at every boundary.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Optional

from smdebug.core.env_settings import env_float
from smdebug.core.locations import STOP_SIGNAL_FILE
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import is_s3_path
from smdebug.core.storage.factory import get_storage

logger = get_logger()

# A signal written this long before the hook started belongs to an earlier run in the same directory.
_STALE_SLACK_S = 5.0


def write_stop_signal(out_dir: str, rule: str = "", step: Optional[int] = None, reason: Optional[str] = None) -> None:
    """Ask the training job writing to ``out_dir`` to stop at its next step boundary."""
    payload = {"rule": rule, "step": step, "reason": reason, "time": time.time()}
    get_storage(out_dir).write_atomic(STOP_SIGNAL_FILE, json.dumps(payload).encode())


#: a stop signal is a small JSON object; what lies beyond this many bytes is not read
MAX_SIGNAL_BYTES = 1 << 16


def read_stop_signal(out_dir: str) -> Optional[dict]:
    """The signal in ``out_dir``, or None. A damaged signal still counts as a request to stop."""
    storage = get_storage(out_dir)
    try:
        data = storage.read(STOP_SIGNAL_FILE, 0, MAX_SIGNAL_BYTES)  # (a huge file planted there: not read whole)
    except FileNotFoundError:
        return None
    try:
        payload = json.loads(data)
        return payload if isinstance(payload, dict) else {"reason": "stop requested"}
    except (ValueError, RecursionError):  # (RecursionError: absurdly nested JSON)
        return {"reason": "stop requested (unreadable stop signal)"}


class StopSignalWatcher:
    """Looks for the stop signal of a run directory, at most once per ``interval`` seconds (local runs:
    a millisecond, one ``access()`` per look; S3: 5 s, a HEAD request)."""

    def __init__(self, out_dir: str, interval: Optional[float] = None):
        self.out_dir = out_dir
        s3 = is_s3_path(out_dir)
        if interval is None:
            default = 5.0 if s3 else 0.001  # an S3 HEAD costs a round trip; a local look a microsecond
            interval = env_float("SMDEBUG_STOP_CHECK_INTERVAL", default, minimum=0.0)
        self.interval = interval
        self.started_at = time.time()
        self._next_check = 0.0
        self._storage = None
        # local: the signal's full path, so a look is one access() (no exception raised when it is absent)
        self._path = None if s3 else os.path.join(os.path.abspath(os.path.expanduser(out_dir)), STOP_SIGNAL_FILE)
        self._stale = None  # (mtime_ns, time in the payload) of a signal left by an earlier run

    def poll(self) -> Optional[dict]:
        if self.interval > 0:
            now = time.monotonic()
            if now < self._next_check:
                return None
            self._next_check = now + self.interval
        if self._path is not None:
            if not os.access(self._path, os.F_OK):  # no signal: the usual case
                return None
            try:
                mtime = os.stat(self._path).st_mtime_ns
            except OSError:  # removed in between
                return None
            if self._stale is not None and self._stale[0] == mtime:
                return None  # the old signal, already ignored: not read again at every step
        else:
            if self._storage is None:
                self._storage = get_storage(self.out_dir)
            if not self._storage.exists(STOP_SIGNAL_FILE):
                return None
            mtime = None
        signal = read_stop_signal(self.out_dir)
        if signal is None:
            return None
        written = signal.get("time")
        if not isinstance(written, (int, float)) or isinstance(written, bool):
            # No time in it (damaged, or not written by smdebug): when the file was written says whether it
            # is a leftover of an earlier run (a file planted before the hook started does not stop it).
            written = mtime / 1e9 if mtime is not None else self._written_at()
        if isinstance(written, (int, float)) and written < self.started_at - _STALE_SLACK_S:
            if self._stale is None or self._stale[1] != written:
                logger.warning("smdebug: ignoring a stop signal left in %s by an earlier run", self.out_dir)
            self._stale = (mtime, written)
            return None
        return signal


    def _written_at(self) -> Optional[float]:
        if self._storage is None:
            self._storage = get_storage(self.out_dir)
        age = self._storage.age(STOP_SIGNAL_FILE)
        return None if age is None else time.time() - age


def describe(signal: dict) -> str:
    """One line for logs and exceptions: who asked to stop, and why. (The signal is a file anyone could write:
    its values are clipped and made one line; a 10,000-character rule name filled the log.)"""
    from smdebug.core.names import clipped, one_line

    def said(value, limit):
        return clipped(one_line(value if isinstance(value, str) else repr(value)), limit)

    rule = said(signal.get("rule"), 100) if signal.get("rule") else "a rule"
    step = signal.get("step")
    reason = signal.get("reason")
    text = f"{rule} asked to stop training" + (f" (condition met at step {said(step, 30)})" if step is not None else "")
    return f"{text}: {said(reason, 1000)}" if reason else text


def make_stop_watcher(out_dir: str):
    """What a hook polls at step boundaries: the watcher itself for a local run; for S3, a poller that
    looks on a thread of its own."""
    watcher = StopSignalWatcher(out_dir)
    return BackgroundStopPoller(watcher) if is_s3_path(out_dir) else watcher


class BackgroundStopPoller:
    """Looks for the stop signal on a thread of its own, so an S3 request (or an S3 outage) never
    delays a training step; the step boundary only reads what the thread found."""

    def __init__(self, watcher: StopSignalWatcher):
        self.watcher = watcher
        self.signal: Optional[dict] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def poll(self) -> Optional[dict]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="smdebug-stop-signal", daemon=True)
            self._thread.start()
        return self.signal

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                signal = self.watcher.poll()
            except Exception as e:  # noqa: BLE001 - S3 unreachable: look again later
                logger.debug("smdebug: could not look for a stop signal in %s: %s", self.watcher.out_dir, e)
                signal = None
            if signal is not None:
                self.signal = signal
                return
            self._stop.wait(max(self.watcher.interval, 0.05))

    def stop(self) -> None:
        self._stop.set()
