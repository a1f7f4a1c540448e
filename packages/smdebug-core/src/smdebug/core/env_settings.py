"""Numbers read from ``SMDEBUG_*`` environment variables.

A setting is read where it is used, often at import time; a value that is no number (``64MB``, ``abc``,
empty), not finite (``nan``, ``1e999``) or out of its range must not stop the import, nor a training script
with it: the variable is named in one warning and its default (or the nearest bound) is used instead.
"""

from __future__ import annotations

import math
import os
from typing import Optional, Set, Tuple

from smdebug.core.logger import get_logger

_warned: Set[Tuple[str, str]] = set()


def _warn(name: str, raw: str, why: str, used) -> None:
    if (name, raw) in _warned:
        return
    _warned.add((name, raw))
    shown = raw if len(raw) <= 40 else raw[:40] + "..."
    get_logger().warning("smdebug: ignoring %s=%r: %s; using %s", name, shown, why, used)


def _number(name: str, default, kind: str):
    """The variable's value as a finite number (``float``), or None after a warning; None when unset too."""
    raw = os.environ.get(name)
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        _warn(name, raw, f"not {kind}", default)
        return None
    if not math.isfinite(value):
        _warn(name, raw, "not a finite number", default)
        return None
    return value


def _clamped(name: str, value, minimum, maximum):
    raw = os.environ.get(name, "")
    if minimum is not None and value < minimum:
        _warn(name, raw, f"below its minimum {minimum}", minimum)
        return minimum
    if maximum is not None and value > maximum:
        _warn(name, raw, f"above its maximum {maximum}", maximum)
        return maximum
    return value


def env_float(name: str, default: float, minimum: Optional[float] = None, maximum: Optional[float] = None) -> float:
    """``float(os.environ[name])``, or ``default`` when unset or not a finite number; clamped into
    ``[minimum, maximum]`` (with a warning) when given."""
    value = _number(name, default, "a number")
    return default if value is None else _clamped(name, value, minimum, maximum)


def env_int(name: str, default: int, minimum: Optional[int] = None, maximum: Optional[int] = None) -> int:
    """Like :func:`env_float` for a whole number (``1e9`` is accepted; ``2.5`` is not)."""
    value = _number(name, default, "a whole number")
    if value is None:
        return default
    if value != int(value):
        _warn(name, os.environ.get(name, ""), "not a whole number", default)
        return default
    return _clamped(name, int(value), minimum, maximum)
