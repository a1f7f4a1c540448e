"""Training modes. Values are part of the on-disk format (event plugin metadata)."""

from enum import Enum

from smdebug.core.error_base import SMDebugValueError


class ModeKeys(Enum):
    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4

    # Members are singletons compared by identity, so identity hashing is consistent with equality.
    # Enum's own __hash__ is a Python function, and a hook looks its mode up several times per step.
    __hash__ = object.__hash__

    @classmethod
    def parse(cls, value) -> "ModeKeys":
        """Accept a ModeKeys, its name (any case) or its integer value."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        elif isinstance(value, int) and not isinstance(value, bool):  # (True is no mode)
            try:
                return cls(value)
            except ValueError:
                pass
        raise SMDebugValueError(f"Invalid mode {value!r}; expected one of {[m.name for m in cls]}")


ALLOWED_MODES = list(ModeKeys)
ALLOWED_MODE_NAMES = [m.name for m in ModeKeys]
MODE_STEP_PLUGIN_NAME = "mode_step"
MODE_PLUGIN_NAME = "mode"
