"""Activation layers of a Keras model, recognised by type (``smdebug.core.activations``).

* Activation layers: ``Activation(fn)``, ``ReLU`` (``leaky_relu`` when its ``negative_slope`` is not 0),
  ``LeakyReLU``, ``PReLU``, ``ELU``, ``Softmax``. Their inputs (``<layer>/inputs``) and outputs
  (``<layer>/outputs``) join the kind's collection.
* Layers with a fused ``activation=`` (``Dense(8, activation="relu")``, ``Conv2D(..., activation="tanh")``):
  the layer applies the function to its result inside its ``call``, so the layer's output is the activation's
  output and joins the collection. The activation's input (the pre-activation) never leaves the layer: while
  a step is captured the hook wraps the layer's ``activation`` attribute (``capture.patched_layers``) and
  saves what it was given as ``<layer>/activation_inputs``, when the function ran exactly once in the call
  and made the layer's output (as ``Dense`` and the convolutions do). Recurrent layers and cells, whose
  ``activation`` works inside the time loop, are not activation layers.

The function's kind comes from its name (``keras.activations.relu.__name__`` is ``"relu"``; ``"swish"`` is
Keras' other name of ``silu``). Functions of no kind here (``linear``, ``hard_sigmoid``, ``mish``...) and
functions of the user's own are not classified.
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional, Tuple

import keras

from smdebug.core.activations import KIND_COLLECTIONS, ActivationLayer
from smdebug.tensorflow.capture import ACTIVATION_INPUTS, _flatten_layers, layer_name
from smdebug.tensorflow.collection import IO_SUFFIX

_FUNCTION_KINDS = {
    "relu": "relu", "relu6": "relu",
    "leaky_relu": "leaky_relu",
    "elu": "elu", "selu": "elu", "celu": "elu",
    "gelu": "gelu",
    "silu": "silu", "swish": "silu",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "softmax": "softmax", "log_softmax": "softmax",
    "softplus": "softplus",
}
_LAYER_KINDS = (("LeakyReLU", "leaky_relu"), ("PReLU", "leaky_relu"), ("ELU", "elu"), ("Softmax", "softmax"))


def _function_kind(fn) -> Optional[str]:
    return _FUNCTION_KINDS.get(getattr(fn, "__name__", None)) if callable(fn) else None


def _is_recurrent(layer) -> bool:
    return isinstance(layer, keras.layers.RNN) or hasattr(layer, "state_size")


def classify(layer) -> Optional[Tuple[str, bool, str]]:
    """``(kind, fused, description)`` of an activation layer, None for any other layer."""
    cls = type(layer).__name__
    if isinstance(layer, keras.layers.ReLU):
        slope = float(getattr(layer, "negative_slope", 0.0) or 0.0)
        return ("leaky_relu" if slope else "relu"), False, cls
    for name, kind in _LAYER_KINDS:
        layer_cls = getattr(keras.layers, name, None)
        if layer_cls is not None and isinstance(layer, layer_cls):
            return kind, False, cls
    fn = getattr(layer, "activation", None)
    kind = _function_kind(fn)
    if kind is None or _is_recurrent(layer):
        return None
    if isinstance(layer, keras.layers.Activation):
        return kind, False, f"{cls}({fn.__name__})"
    return kind, True, f"{cls}(activation={fn.__name__})"


def io_regex(name: str, kind: str) -> str:
    """The names the hook's recorder gives a layer's ``"inputs"`` or ``"outputs"`` (``<layer>/outputs``, or
    ``<layer>/outputs_<i>`` when there are several)."""
    return "^" + re.escape(name) + "/" + kind + IO_SUFFIX


def activation_layers(model, layer_map: Mapping[int, str]) -> Dict[str, List[ActivationLayer]]:
    """kind -> the activation layers of ``model``, named as the hook names them (``layer_map``: the fallback
    names of :func:`smdebug.tensorflow.capture.layer_names`)."""
    found: Dict[str, List[ActivationLayer]] = {kind: [] for kind in KIND_COLLECTIONS}
    for layer in _flatten_layers(model):
        if layer is model or id(layer) not in layer_map:
            continue
        classified = classify(layer)
        if classified is None:
            continue
        kind, fused, description = classified
        name = layer_name(layer, layer_map[id(layer)])
        inputs = io_regex(name, ACTIVATION_INPUTS if fused else "inputs")
        found[kind].append(ActivationLayer(name, description, inputs, io_regex(name, "outputs")))
    return found


def fused_layers(model) -> List:
    """The layers of ``model`` whose activation is fused into them (their ``activation`` gets probed)."""
    fused = []
    for layer in _flatten_layers(model):
        classified = None if layer is model else classify(layer)
        if classified is not None and classified[1]:
            fused.append(layer)
    return fused
