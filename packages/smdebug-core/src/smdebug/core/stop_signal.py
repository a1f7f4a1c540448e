"""The stop signal: how a rule (the rule runner's StopTraining action) asks a training job to stop.

The runner writes ``stop_training.json`` at the root of the run directory; every hook writing to that
directory looks for it at step boundaries (at most every ``SMDEBUG_STOP_CHECK_INTERVAL`` seconds, so the
check costs nothing measurable) and stops the training loop the framework's own way. Working through the
run directory means it works for any process layout (local, several workers, another machine via S3)
without a side channel.
"""

from __future__ import annotations

import json
import os
import time
from typing import Optional

from smdebug.core.locations import STOP_SIGNAL_FILE
from smdebug.core.logger import get_logger
from smdebug.core.storage.base import get_storage, is_s3_path

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
    except ValueError:
        return {"reason": "stop requested (unreadable stop signal)"}


class StopSignalWatcher:
    """Polls a run directory for the stop signal, at most once per ``interval`` seconds."""

    def __init__(self, out_dir: str, interval: Optional[float] = None):
        self.out_dir = out_dir
        if interval is None:
            default = "5" if is_s3_path(out_dir) else "0.5"  # an S3 HEAD costs a round trip
            interval = float(os.environ.get("SMDEBUG_STOP_CHECK_INTERVAL", default))
        self.interval = interval
        self.started_at = time.time()
        self._next_check = 0.0
        self._storage = None

    def poll(self) -> Optional[dict]:
        now = time.monotonic()
        if now < self._next_check:
            return None
        self._next_check = now + self.interval
        if self._storage is None:
            self._storage = get_storage(self.out_dir)
        if not self._storage.exists(STOP_SIGNAL_FILE):
            return None
        signal = read_stop_signal(self.out_dir)
        if signal is None:
            return None
        written = signal.get("time")
        if isinstance(written, (int, float)) and written < self.started_at - _STALE_SLACK_S:
            logger.warning("smdebug: ignoring a stop signal left in %s by an earlier run", self.out_dir)
            self._next_check = float("inf")
            return None
        return signal


def describe(signal: dict) -> str:
    """One line for logs and exceptions: who asked to stop, and why."""
    rule = signal.get("rule") or "a rule"
    step = signal.get("step")
    reason = signal.get("reason")
    text = f"{rule} asked to stop training" + (f" (condition met at step {step})" if step is not None else "")
    return f"{text}: {reason}" if reason else text
