"""The guard around a hook's public methods: an error inside smdebug never reaches the training loop."""

from __future__ import annotations

import functools

from smdebug.core.logger import get_logger
from smdebug.exceptions import SMDebugError, TrainingStopRequested

logger = get_logger()


def guarded(default=None):
    """Wrap a public hook method so an error inside smdebug never reaches the training loop.

    Misuse of the API (an :class:`SMDebugError` from validating the caller's arguments) is logged and
    the call is skipped; anything else is an internal failure: logged once with its traceback, and the
    hook disables itself for the rest of the run (``hook._fail``).
    """

    def wrap(fn):
        @functools.wraps(fn)
        def inner(self, *args, **kwargs):
            if self._disabled:
                return default
            try:
                return fn(self, *args, **kwargs)
            except TrainingStopRequested:
                raise  # not a failure: a rule asked the loop to stop, and the hook already closed cleanly
            except SMDebugError as e:
                logger.error("smdebug: %s() ignored: %s", fn.__name__, e)
                return default
            except Exception as e:  # noqa: BLE001 - the whole point: never crash training
                self._fail(f"{fn.__name__}()", e)
                return default

        return inner

    return wrap
