"""Scalars a hook saved as running means, and where their running restarts.

Keras reports a training loss and metrics as the mean over the epoch so far (the ``loss`` of its progress bar),
reset when each epoch begins; the Keras hook saves those values as Keras gives them, as the original smdebug did.
A curve of such values is smooth within an epoch and jumps where the mean restarts, so rules that judge a
minibatch loss's noise or trend would misread it. The hook records which names are running means in a mode and
the mode steps at which their means restarted (``_meta.running_means``)::

    {"TRAIN": {"names": ["loss", "accuracy"], "resets": [0, 63, 126], "upto": 150}}

``upto``: the last mode step the record covers (the hook rewrites it as epochs begin; a reader that read it while
the run was training knows nothing of later restarts, so it takes saves after ``upto`` as saved). With every save
known to be the mean of the steps since the last restart, a reader recovers the mean of the steps between two
saves exactly (:func:`steps_mean`): each step's own value when every step is saved.
"""

from __future__ import annotations

import bisect
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from smdebug.core.logger import get_logger
from smdebug.core.names import clipped
from smdebug.core.run_info import is_step

RUNNING_MEANS_KEY = "running_means"

#: the most restarts and names a record may hold (an epoch each: runs of millions of epochs do not exist)
MAX_RESETS = 1 << 20
MAX_NAMES = 10_000


class Restarts(NamedTuple):
    """Where a running mean restarted: ``steps`` (sorted mode steps), known up to mode step ``upto``."""

    steps: List[int]
    upto: int


def record(collection_manager, mode_name: str, names: Sequence[str], resets: Sequence[int], upto: int) -> None:
    """Record that ``names`` saved in mode ``mode_name`` are running means restarted at mode steps ``resets``, as
    known at mode step ``upto``."""
    records = collection_manager.meta.setdefault(RUNNING_MEANS_KEY, {})
    records[mode_name] = {"names": sorted(set(names)), "resets": sorted(set(int(r) for r in resets)),
                          "upto": int(upto)}


def resets_of(source, name: str, mode_name: str) -> Optional[Restarts]:
    """Where ``name``'s running mean restarted in mode ``mode_name``, or None when the run does not say the tensor
    is a running mean there (most tensors; runs of the original smdebug). ``source``: a trial or its
    CollectionManager. A record that is not the shape hooks write is said once and read as absent."""
    cm = getattr(source, "collection_manager", source)
    records = getattr(cm, "meta", {}).get(RUNNING_MEANS_KEY)
    if records is None:
        return None
    if not isinstance(records, dict):
        return _said(cm, f"not a mapping of modes: {clipped(repr(records), 60)}")
    entry = records.get(mode_name)
    if entry is None:
        return None
    parsed = _parsed(entry)
    if isinstance(parsed, str):
        return _said(cm, f"{mode_name}: {parsed}")
    return Restarts(parsed[1], parsed[2]) if name in parsed[0] else None


def _said(cm, problem: str) -> None:
    if not getattr(cm, "_running_means_said", False):  # (once per run read)
        cm._running_means_said = True
        get_logger().warning(f"smdebug: the run's _meta.{RUNNING_MEANS_KEY} is not a record of running means "
                             f"({problem}); its scalars are read as saved")
    return None


def _parsed(entry) -> Union[str, Tuple[frozenset, List[int], int]]:
    """(names, sorted restart steps, upto), or what is wrong with the entry."""
    if not isinstance(entry, dict):
        return f"not names and restart steps: {clipped(repr(entry), 60)}"
    names, resets, upto = entry.get("names"), entry.get("resets"), entry.get("upto")
    if not (isinstance(names, list) and isinstance(resets, list)):
        return "names and resets must be lists"
    if len(names) > MAX_NAMES or len(resets) > MAX_RESETS:
        return f"more than {MAX_NAMES:,} names or {MAX_RESETS:,} restarts"
    for n in names:
        if not isinstance(n, str):
            return f"a name that is no string: {clipped(repr(n), 60)}"
    for r in resets:
        if not is_step(r):
            return f"a restart that is no step: {clipped(repr(r), 60)}"
    if not is_step(upto):
        return f"a last step covered that is no step: {clipped(repr(upto), 60)}"
    return frozenset(names), sorted(set(resets)), upto


def steps_mean(restarts: Restarts, step: int, value: float, previous: Optional[Dict[str, float]]) -> float:
    """The mean of the steps since the previous save, from running means: ``value`` is the running mean at mode
    step ``step``; ``previous`` is ``{"step": s, "value": m}`` of the save before it (None for the first). Within
    one run of the mean (no restart between the two saves) the steps ``s+1..step`` average
    ``(k * value - j * m) / (k - j)``, ``k`` and ``j`` the steps each mean covers; after a restart the value is
    already the mean of the steps since it. Steps are weighed alike (Keras weighs a loss by its batch's size: a
    short last batch of an epoch is read a little off, nothing else). A save after the record's ``upto``, or before
    its first restart, is read as saved: where the mean restarted there, the record does not say."""
    if step > restarts.upto:
        return value
    i = bisect.bisect_right(restarts.steps, step) - 1
    if i < 0:
        return value
    start = restarts.steps[i]
    if previous is None or previous["step"] < start or previous["step"] >= step:
        return value
    k, j = step - start + 1, previous["step"] - start + 1
    return (k * value - j * previous["value"]) / (k - j)
