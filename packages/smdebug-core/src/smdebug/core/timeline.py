"""Trace events a training script records with ``hook.record_trace_events(...)``, saved in the Chrome
trace-event format (open them in Perfetto or chrome://tracing) at the path smdebug 1.0.x used:
``<run>/framework/pevents/<YYYYMMDDHH>/<end time in µs>_<rank>-<host>_pythontimeline.json``.

Events are kept in memory and written, one file at a time, every ``MAX_EVENTS_PER_FILE`` events and
when the hook closes; each file is written atomically through the run's storage (local or S3).
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from numbers import Real
from typing import Dict, List

from smdebug.core.storage.base import Storage
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError

TIMELINE_DIR = "framework/pevents"
TIMELINE_SUFFIX = "pythontimeline.json"
MAX_EVENTS_PER_FILE = 10_000
_PHASES = set("BEXiIbnecsftPNODMCRV")  # the trace-event format's phase letters
#: a time beyond this (about 290,000 years) has no microsecond count in 64 bits
_MAX_SECONDS = 9.2e12


class TraceTimeline:
    def __init__(self, storage: Storage, rank: int):
        self._storage = storage
        self._node = f"{rank}-{socket.gethostname()}".replace("_", "-")
        self._events: List[dict] = []
        self._pids: Dict[str, int] = {}  # training phase -> its row ("process") in the viewer
        self._lock = threading.Lock()

    def record(self, timestamp, training_phase: str = "", op_name: str = "", phase: str = "X", duration=1,
               **kwargs) -> None:
        """One event: ``timestamp`` and ``duration`` in seconds; ``phase`` a trace-event phase letter ("X": a
        complete event, "B"/"E": begin/end); extra keyword arguments are kept as the event's args (``pid``,
        ``tid`` set the thread it is shown on)."""
        timestamp = _seconds("timestamp", timestamp)
        duration = _seconds("duration", duration)
        if duration < 0:
            raise SMDebugValueError(f"duration must be a non-negative number of seconds, got {duration!r}")
        if not isinstance(phase, str) or phase not in _PHASES:
            raise SMDebugValueError(f"phase must be a trace-event phase letter such as 'X', 'B' or 'E', got "
                                    f"{_clip(phase)}")
        training_phase, op_name = _text("training_phase", training_phase), _text("op_name", op_name)
        tid = kwargs.pop("tid", threading.get_ident())
        if not isinstance(tid, (int, str)) or isinstance(tid, bool):
            tid = _text("tid", tid)
        args = {k: _jsonable(v) for k, v in kwargs.items()}
        with self._lock:
            pid = self._pids.get(training_phase)
            if pid is None:
                pid = self._pids[training_phase] = len(self._pids)
                self._events.append({"name": "process_name", "ph": "M", "pid": pid,
                                     "args": {"name": training_phase or "smdebug"}})
            event = {"name": op_name, "ph": phase, "ts": int(round(timestamp * 1e6)), "pid": pid, "tid": tid,
                     "args": args}
            if phase == "X":
                event["dur"] = int(round(duration * 1e6))
            self._events.append(event)
            full = len(self._events) >= MAX_EVENTS_PER_FILE
        if full:
            self.flush()

    def flush(self) -> None:
        """Write the events recorded since the last flush to a file of their own."""
        with self._lock:
            events = self._events
            if all(e["ph"] == "M" for e in events):
                return
            # the next file repeats the rows' names, so each file opens on its own
            self._events = [e for e in events if e["ph"] == "M"]
        now = time.time()
        key = (f"{TIMELINE_DIR}/{time.strftime('%Y%m%d%H', time.gmtime(now))}/"
               f"{int(now * 1e6)}_{self._node}_{TIMELINE_SUFFIX}")
        self._storage.write_atomic(key, json.dumps(events).encode("utf-8"))

    close = flush


def _clip(value) -> str:
    try:
        shown = repr(value)
    except Exception:  # noqa: BLE001 - a user's object
        shown = f"a {type(value).__name__}"
    return shown if len(shown) <= 200 else shown[:200] + "..."


def _seconds(what: str, value) -> float:
    """A finite real number of seconds (NaN or infinity cannot be an event's time: the conversion to
    microseconds raised, on the training thread, and disabled the hook)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise SMDebugTypeError(f"{what} must be a number of seconds, got {_clip(value)}")
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise SMDebugTypeError(f"{what} must be a number of seconds, got {_clip(value)}") from None
    if not math.isfinite(seconds) or abs(seconds) > _MAX_SECONDS:
        raise SMDebugValueError(f"{what} must be a finite number of seconds, got {seconds!r}")
    return seconds


def _text(what: str, value) -> str:
    try:
        return str(value)
    except Exception as e:  # noqa: BLE001 - a user's object whose __str__ raises
        raise SMDebugTypeError(f"{what} cannot be turned into text ({type(e).__name__})") from None


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # (json.dumps would write NaN/Infinity: not JSON, and trace viewers refuse the file)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - a user's object whose __str__ raises
        return f"<{type(value).__name__}>"
