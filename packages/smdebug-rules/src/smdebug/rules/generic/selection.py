"""Which tensors a rule inspects: the union of named collections and regexes."""

from __future__ import annotations

import re
from typing import Dict, Iterable, List

from smdebug.exceptions import TensorUnavailableForStep


def select_tensors(trial, collection_names: List[str], tensor_regex: List[str]) -> List[str]:
    names = set()
    for coll in collection_names:
        names.update(trial.tensor_names(collection=coll))
    if tensor_regex:
        compiled = [re.compile(r) for r in tensor_regex]
        names.update(n for n in trial.tensor_names() if any(c.search(n) for c in compiled))
    return sorted(names)


def collection_tensors(trial, collection_names: Iterable[str], role: str = "") -> Dict[str, str]:
    """``{tensor name: collection}`` for the saved tensors of ``collection_names`` (collections the run does
    not have hold nothing).

    ``role`` (``"inputs"`` or ``"outputs"``) narrows an activation collection (``relu_activations``...) to the
    inputs or the outputs of its layers, as the hook recorded them (``smdebug.core.activations``); without
    that record (a run of the original smdebug) the collection's tensors are all taken.
    """
    from smdebug.core.activations import activation_layers

    collections = trial.collections()
    layers = activation_layers(trial) if role else None
    names = None
    out: Dict[str, str] = {}
    for cname in collection_names:
        coll = collections.get(cname)
        if coll is None:
            continue
        if names is None:
            names = trial.tensor_names()
        recorded = layers.get(cname) if layers is not None else None
        if recorded is not None:
            for layer in recorded:
                found = layer.input_names(names) if role == "inputs" else layer.output_names(names)
                out.update((n, cname) for n in found if n not in out)
        else:
            out.update((n, cname) for n in names if n not in out and coll.matches(n))
    return out


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
