"""Checks of the arguments a user passes to the reading API (trials, tensors, ``to_dataframe``).

A wrong type used to travel until something deep inside choked on it: ``to_dataframe(tensors=5)`` raised
"'int' object is not iterable" from the table code, ``tensor(["w"])`` "unhashable type: 'list'",
``prev_steps("3")`` a comparison error from ``bisect``; worse, some were taken silently for something else
(``to_dataframe(steps=b"x")`` read step 120, ``steps=[1.7]`` step 1, ``tensors=[5]`` a tensor "5",
``wait_for_steps([9], timeout=nan)`` waited for ever). Each check here raises SMDebugTypeError or
SMDebugValueError naming the argument, what it accepts and what it got, before anything is read.
"""

from __future__ import annotations

import numbers
from typing import List, Optional

import numpy as np

from smdebug.core.error_base import SMDebugTypeError, SMDebugValueError


def _shown(value) -> str:
    text = repr(value)
    return (text if len(text) <= 80 else text[:77] + "...") + f" ({type(value).__name__})"


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def step(value, arg: str = "step") -> int:
    """A step: an integer (``True``, ``1.5``, ``"3"`` and None are not steps)."""
    if not _is_int(value):
        raise SMDebugTypeError(f"{arg}: a step must be an integer, got {_shown(value)}")
    return int(value)


def step_list(value, arg: str) -> List[int]:
    """Several steps: a list, tuple, set, range or integer array of integers. A string is refused (its
    characters, or a bytes object's byte values, are no steps), and so is a lone integer (say ``[5]``)."""
    if isinstance(value, (str, bytes, bytearray, dict)) or _is_int(value) or not iterable(value):
        hint = f" (one step: {arg}=[{int(value)}])" if _is_int(value) else ""
        raise SMDebugTypeError(f"{arg} must be a list of integer steps, got {_shown(value)}{hint}")
    out = []
    for item in value:
        if not _is_int(item):
            raise SMDebugTypeError(f"{arg} must be a list of integer steps; it holds {_shown(item)}")
        out.append(int(item))
    return out


def name(value, arg: str) -> str:
    """A name (of a tensor, a collection, a worker, a reduction): a string."""
    if not isinstance(value, str):
        raise SMDebugTypeError(f"{arg} must be a name (a string), got {_shown(value)}")
    return value


def name_list(value, arg: str, what: str = "name") -> Optional[List[str]]:
    """None, one name, or a list, tuple or set of names (strings; ``[5]`` is no name). ``what``: what one
    name is, for the message ("tensor name or pattern")."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray, dict)) or not iterable(value):
        raise SMDebugTypeError(f"{arg} must be a {what} or a list of them (strings), got {_shown(value)}")
    out = list(value)
    for item in out:
        if not isinstance(item, str):
            raise SMDebugTypeError(f"{arg} must be a {what} or a list of them (strings); it holds {_shown(item)}")
    return out


def flag(value, arg: str) -> bool:
    """A yes/no argument: True or False (0 and 1 too). A string such as ``"false"`` is true to Python,
    which would quietly do the opposite of what was meant."""
    if isinstance(value, (bool, np.bool_)) or (_is_int(value) and value in (0, 1)):
        return bool(value)
    raise SMDebugTypeError(f"{arg} must be True or False, got {_shown(value)}")


def seconds(value, arg: str) -> Optional[float]:
    """None (no limit) or a number of seconds; NaN compares false with every time and waited for ever."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise SMDebugTypeError(f"{arg} must be seconds (a number) or None, got {_shown(value)}")
    if value != value:
        raise SMDebugValueError(f"{arg} is NaN: give seconds, float('inf') (no limit) or None")
    return float(value)


def count(value, arg: str) -> Optional[int]:
    """None or a whole number of at least 0."""
    if value is None:
        return None
    if not _is_int(value):
        raise SMDebugTypeError(f"{arg} must be a whole number (0 or more) or None, got {_shown(value)}")
    if value < 0:
        raise SMDebugValueError(f"{arg} must be 0 or more, got {value}")
    return int(value)


def iterable(value) -> bool:
    """Whether ``for x in value`` works."""
    try:
        iter(value)
    except TypeError:
        return False
    return True
