"""Which tensors a rule inspects: the union of named collections and regexes."""

from __future__ import annotations

import re
from typing import List

from smdebug.exceptions import TensorUnavailableForStep


def select_tensors(trial, collection_names: List[str], tensor_regex: List[str]) -> List[str]:
    names = set()
    for coll in collection_names:
        names.update(trial.tensor_names(collection=coll))
    if tensor_regex:
        compiled = [re.compile(r) for r in tensor_regex]
        names.update(n for n in trial.tensor_names() if any(c.search(n) for c in compiled))
    return sorted(names)


def value_at(trial, name: str, step: int):
    """The tensor's value at ``step``, or None if it was not saved there."""
    tensor = trial.tensor(name)
    try:
        return tensor.value(step)
    except TensorUnavailableForStep:
        return None


def scalar(value) -> float:
    """A reduction as a float (stored reductions are 1-element arrays, computed ones numpy scalars)."""
    import numpy as np

    return float(np.asarray(value).reshape(-1)[0])
