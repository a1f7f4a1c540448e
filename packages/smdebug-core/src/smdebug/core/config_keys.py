"""Keys of a configuration dict (a reduction config, a save config, a collection) that this version does
not know: an error when given in code, one warning when read from a run's file (red team 10)."""

from __future__ import annotations

from typing import Optional

from smdebug.exceptions import SMDebugValueError

_warned_unknown: set = set()


def check_known_keys(params: dict, known, what: str, source: Optional[str], ignored=()) -> None:
    """Keys of ``params`` outside ``known`` are a mistake that costs what they meant (``{"norms": "l2"}`` in a
    reduction config saved no norm, ``{"save_intervall": 5}`` kept the default schedule), without a word:
    given in code (``source`` None) they are SMDebugValueError naming them; read from a run's file
    (``source``: which, and where in it; a newer writer may add keys) one warning naming them and the file.
    ``ignored``: keys older writers wrote, taken silently."""
    unknown = sorted(str(k)[:100] for k in params if k not in known and k not in ignored)
    if not unknown:
        return
    message = (f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown[:10]))}"
               f"{' and more' if len(unknown) > 10 else ''} in {what}; the keys are {', '.join(known)}")
    if source is None:
        raise SMDebugValueError(message[:1000])
    message += f" (first in {source[:300]})"
    key = (what, tuple(unknown[:10]))  # (once per process, not once per worker's file)
    if key not in _warned_unknown and len(_warned_unknown) < 1000:
        _warned_unknown.add(key)
        from smdebug.core.logger import get_logger

        get_logger().warning("smdebug: ignoring %s", message[:1000])
