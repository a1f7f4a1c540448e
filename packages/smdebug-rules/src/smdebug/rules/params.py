"""Rule parameters arrive as strings (SageMaker's RuleParameters, the command line); convert them with
errors that name the rule and the parameter."""

from __future__ import annotations

from typing import List, Optional

from smdebug.core.names import shown
from smdebug.exceptions import SMDebugValueError


def as_list(rule: str, name: str, value) -> List[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SMDebugValueError(f"{rule}: {name} must be a comma-separated string or a list of strings, got {value!r}")


def as_float(rule: str, name: str, value, allow_none: bool = False) -> Optional[float]:
    if value is None or (allow_none and isinstance(value, str) and value.strip().lower() in ("", "none")):
        if allow_none:
            return None
        raise SMDebugValueError(f"{rule}: {name} is required")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SMDebugValueError(f"{rule}: {name} must be a number, got {value!r}") from None
    if number != number:
        # (every comparison with NaN is false: a NaN threshold would make its rule pass everything)
        raise SMDebugValueError(f"{rule}: {name} must be a number, got NaN")
    if number in (float("inf"), float("-inf")):
        # ("1e400" and "inf" parse as infinity: VanishingGradient then fired on every gradient, "< threshold inf")
        raise SMDebugValueError(f"{rule}: {name} must be a finite number, got {shown(value, 60)}")
    return number



def as_int(rule: str, name: str, value, minimum: Optional[int] = None) -> int:
    try:
        result = int(str(value).strip()) if isinstance(value, str) else int(value)
        if isinstance(value, float) and value != result:
            raise ValueError
    except (TypeError, ValueError):
        raise SMDebugValueError(f"{rule}: {name} must be an integer, got {value!r}") from None
    if minimum is not None and result < minimum:
        raise SMDebugValueError(f"{rule}: {name} must be >= {minimum}, got {result}")
    return result


def as_bool(rule: str, name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    if value in (0, 1):
        return bool(value)
    raise SMDebugValueError(f"{rule}: {name} must be true or false, got {value!r}")


def as_float_list(rule: str, name: str, value) -> List[float]:
    """A comma-separated string (or a list) of numbers as floats."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    items = value if isinstance(value, (list, tuple)) else as_list(rule, name, value)
    out = []
    for item in items:
        try:
            number = float(item)
        except (TypeError, ValueError):
            raise SMDebugValueError(f"{rule}: {name} must be a comma-separated list of numbers, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise SMDebugValueError(f"{rule}: {name} must be a comma-separated list of finite numbers, got "
                                    f"{shown(item, 60)}")
        out.append(number)
    return out


def as_int_list(rule: str, name: str, value) -> List[int]:
    """A comma-separated string (or a list) of integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    items = value if isinstance(value, (list, tuple)) else as_list(rule, name, value)
    out = []
    for item in items:
        try:
            number = int(item.strip()) if isinstance(item, str) else int(item)
            if isinstance(item, float) and item != number:
                raise ValueError
        except (TypeError, ValueError):
            raise SMDebugValueError(f"{rule}: {name} must be a comma-separated list of integers, got {value!r}") from None
        out.append(number)
    return out


def as_optional_int(rule: str, name: str, value, minimum: Optional[int] = None) -> Optional[int]:
    """Like :func:`as_int`, but None, "" and "None" (any case) give None."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    return as_int(rule, name, value, minimum=minimum)


def in_range(rule: str, name: str, value: float, minimum: Optional[float] = None,
             maximum: Optional[float] = None) -> float:
    """``value`` itself if ``minimum <= value <= maximum`` (bounds optional); else SMDebugValueError."""
    if value != value or (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        low = "-inf" if minimum is None else f"{minimum:g}"
        high = "inf" if maximum is None else f"{maximum:g}"
        raise SMDebugValueError(f"{rule}: {name} must be in [{low}, {high}], got {value:g}")
    return value
