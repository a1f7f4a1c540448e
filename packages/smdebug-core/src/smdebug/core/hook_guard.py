"""The guard around a hook's public methods: an error inside smdebug never reaches the training loop."""

from __future__ import annotations

import functools

from smdebug.core.logger import get_logger
from smdebug.exceptions import SMDebugError, TrainingStopRequested

logger = get_logger()


def refuse_after_close(hook, name: str) -> None:
    """A saving call after ``close()``: the run is finished (marked ended, its worker claim released), so
    the call is refused, said once per hook. It used to reopen writing, which found the end marker and
    blamed "another process", or went nowhere without a word."""
    if hook.__dict__.get("_said_closed"):
        return
    hook._said_closed = True
    logger.warning("smdebug: %s() called after the hook was closed; %s is a finished run and nothing more is "
                   "saved to it (this and later calls are ignored; create a new hook to save more).",
                   name, hook.out_dir)


def guarded(default=None):
    """Wrap a public hook method so an error inside smdebug never reaches the training loop.

    Misuse of the API (an :class:`SMDebugError` from validating the caller's arguments, on the caller's
    thread, before anything is queued) is logged once per method and message and the call is skipped; anything
    else is an internal failure: logged once with its traceback, and the hook disables itself for the rest of
    the run (``hook._fail``). A call after ``close()`` is refused (said once per hook).
    """

    def wrap(fn):
        @functools.wraps(fn)
        def inner(self, *args, **kwargs):
            if self._disabled:
                return default
            if self._closed:
                refuse_after_close(self, fn.__name__)
                return default
            try:
                return fn(self, *args, **kwargs)
            except TrainingStopRequested:
                raise  # not a failure: a rule asked the loop to stop, and the hook already closed cleanly
            except SMDebugError as e:
                # Said once per call and message (the message names what was refused): a bad argument
                # repeated at every step is one line, not thousands; the hook goes on.
                warned = self.__dict__.setdefault("_ignored_calls", set())
                key = (fn.__name__, str(e)[:500])
                if key not in warned:
                    if len(warned) < 10_000:
                        warned.add(key)
                    logger.error("smdebug: %s() ignored: %s", fn.__name__, e)
                return default
            except Exception as e:  # noqa: BLE001 - the whole point: never crash training
                self._fail(f"{fn.__name__}()", e)
                return default

        return inner

    return wrap
