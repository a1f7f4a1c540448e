"""Legacy module (smdebug 1.0.x's ``smdebug.core.error_handling_agent``): the decorator 1.0.x wrapped
around its framework callbacks, for code that subclasses a hook and decorates its own overrides.

The project's hooks do not need it: every public hook method guards itself (an internal failure is
logged once and disables the hook; training goes on). This adapter keeps 1.0.x's contract for
decorated functions: with the hook's default configuration (or before any hook exists) an exception is
logged once, with :data:`BASE_ERROR_MESSAGE` and its stack trace, and smdebug is disabled for the rest
of the run (the decorated functions return their default, and the current hook is disabled too); with
a configuration the user chose, the exception is raised as it is, so a deliberate setup that cannot
work is not silently ignored. See docs/compatibility.md.
"""

from __future__ import annotations

import functools

from smdebug.core import singleton
from smdebug.core.logger import get_logger

#: the first line logged when a decorated function failed
BASE_ERROR_MESSAGE = (
    "SMDebug error has occurred, disabling SMDebug for the rest of the training job. Stack trace:"
)


class ErrorHandlingAgent:
    """One per process: ``ErrorHandlingAgent.get_error_handling_agent()``."""

    _error_handling_agent = None

    class _ErrorHandlingAgent:
        def __init__(self):
            self.disable_smdebug = False
            self.logger = get_logger()
            # (the hook assigned, the process's current hook when it was assigned); None: never assigned
            self._assigned = None

        @property
        def hook(self):
            """The hook whose configuration decides: the hook built last in this process, as in 1.0.x, where
            every hook's constructor assigned itself here. An assignment (``agent.hook = h``, ``set_hook``),
            ``None`` included, holds until the next hook is built."""
            current = singleton.current_hook()
            if self._assigned is not None and self._assigned[1] is current:
                return self._assigned[0]
            return current

        @hook.setter
        def hook(self, hook) -> None:
            # Compared by identity with the current hook later: a hook built after this assignment takes over.
            self._assigned = (hook, singleton.current_hook())

        def set_hook(self, hook) -> None:
            self.hook = hook

        def _default_configuration(self) -> bool:
            hook = self.hook
            return hook is None or hook.has_default_configuration()

        def catch_smdebug_errors(self, default_return_val=None):
            """Decorator; ``default_return_val`` is returned after a caught error or once smdebug is
            disabled (a callable is called with the wrapped function's arguments to make it)."""

            def default(args, kwargs):
                return default_return_val(*args, **kwargs) if callable(default_return_val) else default_return_val

            def wrapper(func):
                @functools.wraps(func)
                def guarded(*args, **kwargs):
                    if self.disable_smdebug:
                        return default(args, kwargs)
                    try:
                        return func(*args, **kwargs)
                    except Exception as e:  # noqa: BLE001 - the decorator's whole purpose
                        if not self._default_configuration():
                            raise
                        self.logger.error(BASE_ERROR_MESSAGE)
                        self.logger.exception(e)
                        self.disable_smdebug = True
                        hook = self.hook
                        if hook is not None:
                            hook._disabled = True  # (already logged above: no second report)
                            hook._stretch = None
                        return default(args, kwargs)

                return guarded

            return wrapper

    @classmethod
    def get_error_handling_agent(cls) -> "ErrorHandlingAgent._ErrorHandlingAgent":
        if cls._error_handling_agent is None:
            cls._error_handling_agent = cls._ErrorHandlingAgent()
        return cls._error_handling_agent
