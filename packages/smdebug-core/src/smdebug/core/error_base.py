"""The roots of smdebug's exception hierarchy.

They live below every other module (this one imports nothing), so that the lowest layers, such as
:mod:`smdebug.core.modes`, may raise them while :mod:`smdebug.exceptions`, which defines the errors
that name modes, builds on those layers without an import cycle. Import them from
:mod:`smdebug.exceptions`, which re-exports them: that is the public place.
"""


class SMDebugError(Exception):
    """Base class of every error smdebug raises on purpose."""


class SMDebugTypeError(SMDebugError, TypeError):
    pass


class SMDebugValueError(SMDebugError, ValueError):
    pass


class SMDebugRuntimeError(SMDebugError, RuntimeError):
    pass


class SMDebugNotImplementedError(SMDebugError, NotImplementedError):
    pass


# Tracebacks, reprs and pickles name the public module, as before these classes moved here.
for _cls in (SMDebugError, SMDebugTypeError, SMDebugValueError, SMDebugRuntimeError, SMDebugNotImplementedError):
    _cls.__module__ = "smdebug.exceptions"
del _cls
