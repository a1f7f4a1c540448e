"""The ``smdebug`` logger, configured from SMDEBUG_LOG_* environment variables.

SMDEBUG_LOG_LEVEL (debug|info|warning|error|critical|off), SMDEBUG_LOG_PATH (also log to this file, terminal
or read pipe; a FIFO nobody reads, a folder, a missing folder is named in one line on stderr and ignored),
SMDEBUG_LOG_ALL_TO_STDOUT ("false": errors to stderr, the rest to stdout), SMDEBUG_LOG_CONTEXT (a tag
shown in each line; default host:pid). Repeated identical messages are shown at most 3 times.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
import sys
import threading

from smdebug.core.names import printable, terminal_safe

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "off": logging.CRITICAL + 10,
}
_configured = False
_lock = threading.Lock()
MAX_REPEATS = 3


class DuplicateLogFilter(logging.Filter):
    """Stop a message that repeats verbatim from flooding the training log.

    Set on the ``smdebug`` logger (as in smdebug 1.0.x, where it had this name) and on its handlers (for
    records of child loggers, which skip the parent logger's filters); a record is counted once however
    many filters it passes."""

    def __init__(self):
        super().__init__()
        self._counts = {}

    def filter(self, record):
        n = getattr(record, "_smdebug_repeat", None)
        if n is None:
            message = record.getMessage()
            safe = terminal_safe(message)
            # Names from a run reach the log (a damaged file skipped, a tensor's name): an escape sequence
            # in one would act on the terminal or log viewer of whoever reads the run from Python, as the
            # CLI's streams already prevent; a name that is not UTF-8 would make a strict stream raise.
            if safe != message:
                record.msg, record.args = safe, None
                message = safe
            key = (record.levelno, message)
            n = self._counts.get(key, 0) + 1
            if len(self._counts) > 10_000:
                self._counts.clear()
            self._counts[key] = n
            record._smdebug_repeat = n
        return n <= MAX_REPEATS




class _MaxLevelFilter(logging.Filter):
    def __init__(self, max_level):
        super().__init__()
        self.max_level = max_level

    def filter(self, record):
        return record.levelno <= self.max_level


_LOG_FILE_FLAGS = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                   | getattr(os, "O_BINARY", 0))


def _open_log_file(path: str):
    """The file SMDEBUG_LOG_PATH names, opened for appending, or None after one line on stderr.

    A regular file (an existing one, or one created here), a terminal, ``/dev/null`` or a pipe with a reader
    is logged to. It is opened with ``O_NONBLOCK``, so a FIFO nobody reads never blocks the import (opening
    it fails at once); a folder, a missing parent folder, a socket or a permission problem is reported, not
    raised:
    importing smdebug must never fail, nor hang, because of an environment setting."""
    fd = None
    try:
        fd = os.open(path, _LOG_FILE_FLAGS, 0o666)
        st = os.fstat(fd)
        # a regular file; a terminal or /dev/null; a pipe someone reads (/dev/stdout piped on: the open above
        # succeeded, so there is a reader); not a disk or another device written through
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            kind = "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) \
                else "not a regular file"
            raise OSError(f"it is {kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")
    except (OSError, ValueError) as e:  # (ValueError: a NUL in the name)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        if getattr(e, "errno", None) == errno.ENXIO:  # a FIFO nobody reads: O_NONBLOCK refused to wait
            why = "it is a FIFO, not a regular file"
        elif isinstance(e, OSError) and e.strerror:
            why = e.strerror
        else:
            why = str(e)
        shown = printable(path if len(path) <= 300 else path[:300] + "...")
        try:
            if sys.stderr is not None:
                sys.stderr.write(f"smdebug: cannot log to SMDEBUG_LOG_PATH={shown!r}: {why}; logging without the "
                                 "file\n")
                sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken stderr: nothing more to do
            pass
        return None


def _configure(logger: logging.Logger) -> None:
    raw_level = os.environ.get("SMDEBUG_LOG_LEVEL", "info")
    level = _LEVELS.get(raw_level.strip().lower())
    context = os.environ.get("SMDEBUG_LOG_CONTEXT") or f"{socket.gethostname()}:{os.getpid()}"
    # The context is text, not format: a "%" in it ("job 100%") made every record a "Logging error"
    # traceback, its message lost, and "%(process)s" was expanded.
    context = context.replace("%", "%%")
    fmt = logging.Formatter(f"[%(asctime)s.%(msecs)03d {context} %(levelname)s %(filename)s:%(lineno)d] %(message)s",
                            "%Y-%m-%d %H:%M:%S")
    handlers = []
    if os.environ.get("SMDEBUG_LOG_ALL_TO_STDOUT", "true").strip().lower() == "false":
        out = logging.StreamHandler(sys.stdout)
        out.addFilter(_MaxLevelFilter(logging.WARNING))
        err = logging.StreamHandler(sys.stderr)
        err.setLevel(logging.ERROR)
        handlers += [out, err]
    else:
        handlers.append(logging.StreamHandler(sys.stdout))
    log_path = os.environ.get("SMDEBUG_LOG_PATH")
    if log_path:
        log_file = _open_log_file(log_path)
        if log_file is not None:
            handlers.append(logging.StreamHandler(log_file))
    # Two instances: one on the logger (its records), one on the handlers (records of child loggers, which
    # skip the parent's filters); a record the first counted is not counted again by the second.
    logger.addFilter(DuplicateLogFilter())
    repeat = DuplicateLogFilter()
    for h in handlers:
        h.setFormatter(fmt)
        h.addFilter(repeat)
        logger.addHandler(h)
    logger.setLevel(level if level is not None else logging.INFO)
    logger.propagate = False
    if level is None:
        shown = raw_level if len(raw_level) <= 40 else raw_level[:40] + "..."
        logger.warning("smdebug: ignoring SMDEBUG_LOG_LEVEL=%r: not one of %s; using info", shown, ", ".join(_LEVELS))


def get_logger(name: str = "smdebug") -> logging.Logger:
    global _configured
    root = logging.getLogger("smdebug")
    if not _configured:
        with _lock:
            if not _configured:
                _configure(root)
                _configured = True
    return root if name == "smdebug" else logging.getLogger(name if name.startswith("smdebug") else f"smdebug.{name}")


class WarnsOnce:
    """Mixin: ``self._warn_once(key, message, *args)`` logs a warning the first time ``key`` comes up on this
    object, and never again (a condition met at every step is worth one line, not thousands)."""

    def _warn_once(self, key, message: str, *args) -> None:
        warned = self.__dict__.setdefault("_warned", set())
        if key not in warned:
            warned.add(key)
            get_logger().warning(message, *args)
