"""Closing hooks when the process ends: at interpreter exit, and on SIGTERM (what schedulers, ``docker
stop`` and ``kill`` send), so the steps in flight are written and the run is marked as ended.

A hook closed this way also learns *how* the process ended (:func:`abnormal_end`): an exception nobody
caught, Ctrl-C, or SIGTERM. The end marker alone made a job that died of an XGBoostError at round 126 read
"training ended" and be judged "no issues": the hook says so in the run (see :mod:`smdebug.core.hook_failures`).

A hook calls :func:`track` when it is built and :func:`untrack` once closed.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from typing import List, Optional

from smdebug.core.names import clipped

#: hooks not yet closed, closed by the SIGTERM handler below
_open_hooks: "weakref.WeakSet" = weakref.WeakSet()
_sigterm_pid: List[Optional[int]] = [None]  # the process that installed the handler
#: the exception that ended the main program, as one line (set by :func:`_note_unhandled`)
_unhandled: List[Optional[str]] = [None]
_previous_excepthook: List[object] = [None]
_TEXT_LIMIT = 300


def track(hook) -> None:
    """Close ``hook`` (its ``_atexit_close``, which never raises) at exit and on SIGTERM."""
    atexit.register(hook._atexit_close)
    _open_hooks.add(hook)
    _install_sigterm_handler()
    _install_excepthook()


def abnormal_end() -> Optional[str]:
    """How the program is ending, when it is not ending normally, as a predicate ("raised an unhandled
    ValueError: ...", "was interrupted (KeyboardInterrupt)"); None for a normal end (the script returned, or called sys.exit).
    Meant for at-exit code: the exception is known once the interpreter has reported it."""
    return _unhandled[0]


def _describe_exception(exc_type, exc) -> str:
    name = getattr(exc_type, "__name__", None) or type(exc).__name__
    if isinstance(exc, KeyboardInterrupt):
        return "was interrupted (KeyboardInterrupt)"
    try:
        text = clipped(" ".join(str(exc).split()), _TEXT_LIMIT)
    except Exception:  # noqa: BLE001 - an exception whose str() raises is still named
        text = ""
    return f"raised an unhandled {name}" + (f": {text}" if text else "")


def _note_unhandled(exc_type, exc, tb) -> None:
    """sys.excepthook: remember the exception that ends the program, then report it as before. Python
    calls it for an exception that reaches the top of the main program, just before the at-exit close.
    (Notebooks report their cells' errors their own way and never call it: an error shown in a cell that
    the user went on from is not taken for the end of the program.)"""
    try:
        _unhandled[0] = _describe_exception(exc_type, exc)
    except Exception:  # noqa: BLE001 - reporting the user's error comes first
        pass
    previous = _previous_excepthook[0] or sys.__excepthook__
    previous(exc_type, exc, tb)


def _install_excepthook() -> None:
    if sys.excepthook is _note_unhandled:
        return
    _previous_excepthook[0] = sys.excepthook
    sys.excepthook = _note_unhandled


def untrack(hook) -> None:
    try:
        atexit.unregister(hook._atexit_close)
    except Exception:  # noqa: BLE001 - interpreter shutting down
        pass


def _on_sigterm(signum, frame) -> None:
    """Close every open hook, then die of SIGTERM as the sender expects."""
    if os.getpid() == _sigterm_pid[0]:  # not in a forked child (DataLoader workers inherit handlers)
        for hook in list(_open_hooks):
            try:
                hook._ended_by = "was stopped by SIGTERM (a scheduler, a timeout, docker stop or kill)"
                hook.close()
            except Exception:  # noqa: BLE001 - dying anyway: close the others
                pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _default_sigterm_in_child() -> None:
    """After ``os.fork`` (DataLoader workers, multiprocessing pools), in the child: give SIGTERM back its
    default action. A Python-level handler runs only when the child's main thread next executes Python
    code. A pool worker waits for work in a semaphore while its framework's own threads (MXNet's engine,
    started in the worker) run; when SIGTERM lands on one of those threads the worker never wakes, so
    ``Pool.terminate()`` (Gluon's DataLoader when it is deleted) waited forever. The child writes
    nothing through the parent's hooks, so there is nothing for the handler to close there."""
    if _sigterm_pid[0] is None:
        return
    _sigterm_pid[0] = None
    try:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError, RuntimeError):
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_sigterm_in_child)


def _install_sigterm_handler() -> None:
    """Install :func:`_on_sigterm` unless the program handles SIGTERM itself (its handler usually ends
    with ``sys.exit``, which runs the at-exit close) or ``SMDEBUG_HANDLE_SIGTERM=false``."""
    if os.environ.get("SMDEBUG_HANDLE_SIGTERM", "true").strip().lower() in ("0", "false", "no", "off"):
        return
    if not hasattr(signal, "SIGTERM") or threading.current_thread() is not threading.main_thread():
        return
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is _on_sigterm and _sigterm_pid[0] == os.getpid():
            return
        if current not in (signal.SIG_DFL, None, _on_sigterm):
            return
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, RuntimeError):
        return
    _sigterm_pid[0] = os.getpid()
