"""Activation layers found by their type: the kinds, the collection each kind fills, and the record of what
a hook found in the model.

Every framework hook walks the registered model once (at registration) and maps each activation layer to a
*kind* by its type (``torch.nn.ReLU`` -> ``"relu"``, a Keras ``Dense(activation="tanh")`` -> ``"tanh"``). The
layer's inputs and outputs then join the kind's collection (``relu_activations``...) whatever the layer is
called, and the hook records what it found in the collections file, under ``_meta.activation_layers``::

    {"relu_activations": [{"name": "block.0.act", "type": "ReLU",
                           "inputs": "^block\\.0\\.act_input_\\d+$", "outputs": "^block\\.0\\.act_output_\\d+$"}],
     "tanh_activations": [], ...}

Every kind has an entry, so a reader can tell "the model has no tanh layer" (an empty list) from "tanh
layers exist but nothing of theirs was saved" (layers listed, no saved tensor matches them) and from "the
hook recorded nothing" (no ``activation_layers`` at all: a run of the original smdebug, or a hook that never
saw a model). ``inputs`` names the tensors holding the activation's *input*: for a layer that applies its
activation inside (a Keras ``Dense(activation="tanh")``) that is the pre-activation the hook captured, not the
layer's input; None where a hook cannot observe it.

Read it with :func:`activation_layers` (a trial or a CollectionManager).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional

from smdebug.core.collection import CollectionKeys
from smdebug.core.logger import get_logger

logger = get_logger()

#: kind -> the collection its layers' inputs and outputs join
KIND_COLLECTIONS: Dict[str, str] = {
    "relu": CollectionKeys.RELU_ACTIVATIONS,  # ReLU, ReLU6: units that can die (output 0 for every input <= 0)
    "leaky_relu": CollectionKeys.LEAKY_RELU_ACTIVATIONS,  # LeakyReLU, PReLU, RReLU
    "elu": CollectionKeys.ELU_ACTIVATIONS,  # ELU, SELU, CELU
    "gelu": CollectionKeys.GELU_ACTIVATIONS,
    "silu": CollectionKeys.SILU_ACTIVATIONS,  # SiLU, a.k.a. swish
    "tanh": CollectionKeys.TANH_ACTIVATIONS,
    "sigmoid": CollectionKeys.SIGMOID_ACTIVATIONS,
    "softmax": CollectionKeys.SOFTMAX_ACTIVATIONS,  # softmax, log-softmax
    "softplus": CollectionKeys.SOFTPLUS_ACTIVATIONS,
}
#: every activation collection, in a fixed order
ACTIVATION_COLLECTIONS = tuple(KIND_COLLECTIONS.values())
#: the key of the record in the collections file's ``_meta``
META_KEY = "activation_layers"


@dataclass(frozen=True)
class ActivationLayer:
    """One activation layer of the model, as the hook names its tensors.

    :param name: the layer's name in tensor names (a PyTorch module's qualified name, a Keras layer path).
    :param type: what the hook recognised (``"ReLU"``, ``"Dense(activation=relu)"``).
    :param inputs: regex (``re.search``) of the saved tensors holding the activation's input; None when it
        cannot be observed.
    :param outputs: regex of the saved tensors holding the activation's output.
    """

    name: str
    type: str
    inputs: Optional[str]
    outputs: Optional[str]

    def input_names(self, names: Iterable[str]) -> List[str]:
        """Those of ``names`` (e.g. ``trial.tensor_names()``) that hold the activation's input."""
        return matching_names(self.inputs, names)

    def output_names(self, names: Iterable[str]) -> List[str]:
        """Those of ``names`` that hold the activation's output."""
        return matching_names(self.outputs, names)

    def regexes(self) -> List[str]:
        return [r for r in (self.inputs, self.outputs) if r]

    def to_json_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "inputs": self.inputs, "outputs": self.outputs}

    @classmethod
    def from_json_dict(cls, d) -> Optional["ActivationLayer"]:
        """None for an entry that is not a valid record (the caller reports it)."""
        if not isinstance(d, Mapping):
            return None
        name, type_, inputs, outputs = d.get("name"), d.get("type"), d.get("inputs"), d.get("outputs")
        if not isinstance(name, str) or not isinstance(type_, str):
            return None
        if not optional_regexes_valid(inputs, outputs):
            return None
        return cls(name, type_, inputs, outputs)


def io_regex(name: str, label: str, index: Optional[int] = None) -> str:
    """Regex of the names the PyTorch and MXNet hooks give a module's (block's) inputs (``label="input"``) or
    outputs: ``<name>_input_<i>``, as in smdebug 1.0.x; only the ``index``-th when given."""
    return "^" + re.escape(name) + "_" + label + "_" + (r"\d+" if index is None else str(index)) + "$"


def optional_regexes_valid(*regexes) -> bool:
    """Whether each of ``regexes`` is None or a string that compiles: the check of the regexes a record of
    the run's ``_meta`` read from a collections file names its tensors by."""
    for regex in regexes:
        if regex is None:
            continue
        if not isinstance(regex, str):
            return False
        try:
            re.compile(regex)
        except re.error:
            return False
    return True


@functools.lru_cache(maxsize=256)
def _meta_pattern(regex: str):
    """``regex`` of a record of the run's ``_meta``, matched in bounded time and compiled at bounded cost (it
    comes from a file, like a collection's ``include_regex``); kept, with its answers, as it is asked again
    at every step a rule judges."""
    from smdebug.core.run_regex import BoundedPatterns, Budget

    return BoundedPatterns([regex], "a record of the run's _meta", budget=Budget("the run's _meta"))


def matching_names(regex: Optional[str], names: Iterable[str]) -> List[str]:
    """The names ``regex`` finds (``re.search``), sorted; none for no regex, or one set aside (too slow to
    match, too costly to compile: logged once). Shared by the records of the run's ``_meta`` (activation
    layers here, losses in ``loss_inputs``) that name their tensors by regex."""
    if not regex:
        return []
    from smdebug.core.run_regex import PatternError

    try:
        patterns = _meta_pattern(regex)
    except PatternError:  # (records are checked with optional_regexes_valid when read: a record made in code)
        return []
    names = names if isinstance(names, list) else list(names)
    # (the last answer is kept: rules ask with the same run's names at every step, and a run of 100,000 names
    # was searched whole for each record at each of them -- probe 17b F11. The pattern is shared by every run
    # of the process: the answer is kept for exactly these names, by their hash -- two runs' names of the same
    # count, first and last differ in between)
    key = (len(names), hash(tuple(names)))
    last = getattr(patterns, "_last_matching", None)
    if last is None or last[0] != key:
        last = patterns._last_matching = (key, sorted(n for n in names if patterns.search(n)))
    return list(last[1])


def record(collection_manager, found: Mapping[str, Iterable[ActivationLayer]]) -> None:
    """Store what a hook found (kind -> layers; kinds not given: none found) in the collections' ``_meta``."""
    unknown = set(found) - set(KIND_COLLECTIONS)
    if unknown:
        raise ValueError(f"unknown activation kinds {sorted(unknown)}; known: {sorted(KIND_COLLECTIONS)}")
    collection_manager.meta[META_KEY] = {
        coll: [layer.to_json_dict() for layer in found.get(kind, ())] for kind, coll in KIND_COLLECTIONS.items()
    }


def add_to_collections(hook, found: Mapping[str, Iterable[ActivationLayer]]) -> None:
    """Make the layers' tensors members of their kind's collection (by regex) and record them: what a
    framework hook calls once it has classified the model's layers."""
    for kind, layers in found.items():
        coll = hook.collection_manager.get(KIND_COLLECTIONS[kind])
        for layer in layers:
            coll.include(layer.regexes())
    record(hook.collection_manager, found)
    hook._prepared_token = None  # the collections changed: re-prepare (and re-attach framework hooks)


def activation_layers(source) -> Optional[Dict[str, List[ActivationLayer]]]:
    """What the hook that wrote a run found: ``{collection: [ActivationLayer, ...]}`` for every activation
    collection the hook knew (an empty list: the model has no layer of that kind; a collection left out: the
    writer did not look for that kind).

    ``source`` is a trial or a CollectionManager. None when the run has no record (see the module
    docstring), or when the record is damaged (logged as a warning: the run is read as if it had none).
    """
    cm = getattr(source, "collection_manager", source)
    raw = getattr(cm, "meta", {}).get(META_KEY)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        logger.warning("smdebug: _meta.%s of the collections file is not an object; ignored", META_KEY)
        return None
    out: Dict[str, List[ActivationLayer]] = {}
    for coll, entries in raw.items():
        if coll not in ACTIVATION_COLLECTIONS:
            continue  # a kind added by a newer writer
        if not isinstance(entries, list):
            logger.warning("smdebug: _meta.%s.%s of the collections file is not a list; ignored", META_KEY, coll)
            return None
        layers = [ActivationLayer.from_json_dict(e) for e in entries]
        if any(layer is None for layer in layers):
            logger.warning("smdebug: _meta.%s.%s of the collections file has an invalid entry; ignored",
                           META_KEY, coll)
            return None
        out[coll] = layers
    return out
