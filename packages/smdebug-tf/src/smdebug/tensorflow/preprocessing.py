"""The rescaling a Keras model applies to its input itself (``smdebug.core.input_scaling``).

Keras' image idiom feeds raw pixels (0-255) and starts the model with ``Rescaling(1/255)``, or with an adapted
``Normalization``. The hook saves the input as given; this module works out what the first layer that learns sees
instead: the affine map ``x * scale + offset`` (per channel of the last axis) made by the layers at the head of a
single-input model, up to the first layer that is neither a rescaling nor a layer that keeps the values' scale
(augmentation: flips, rotations, crops, resizing; the input layer).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

#: layers that move or resample values but keep their scale (a mean over many pixels stays what it was)
_SCALE_KEEPING = frozenset({
    "InputLayer", "RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation", "RandomCrop", "CenterCrop",
    "Resizing", "Dropout", "GaussianNoise", "SpatialDropout2D",
})
#: Keras' Normalization divides by max(sqrt(variance), this)
_NORMALIZATION_EPSILON = 1e-7


def _head(model) -> List:
    """The layers of ``model`` in the order its one input goes through them, nested ``Sequential`` models (an
    augmentation block) flattened, as long as each takes the output of the one before (the layers of a model that
    branches after its input are no chain)."""
    inputs = getattr(model, "inputs", None) or []
    if len(inputs) != 1:
        return []
    chain: List = []
    expected = inputs[0]
    for layer in model.layers:
        if type(layer).__name__ == "InputLayer":
            continue
        try:
            if layer.input is not expected:
                break
            expected = layer.output
        except (AttributeError, ValueError):  # (a layer called more than once, or never: no single input)
            break
        inner = getattr(layer, "layers", None)
        if type(layer).__name__ == "Sequential" and inner:
            chain.extend(_flat(inner))  # (a chain by construction)
        else:
            chain.append(layer)
    return chain


def _flat(layers) -> List:
    out: List = []
    for layer in layers:
        inner = getattr(layer, "layers", None)
        out.extend(_flat(inner) if type(layer).__name__ == "Sequential" and inner else [layer])
    return out


def input_scaling(model) -> Optional[Tuple[np.ndarray, np.ndarray, List[str]]]:
    """``(scale, offset, layer names)`` of the affine map the layers at the head of ``model`` apply to its one
    input before anything else (see the module), None when they apply none (or it cannot be told)."""
    scale, offset, names = np.ones(1), np.zeros(1), []
    for layer in _head(model):
        kind = type(layer).__name__
        if kind == "Rescaling":
            s = np.ravel(np.asarray(layer.scale, dtype=np.float64))
            o = np.ravel(np.asarray(layer.offset, dtype=np.float64))
            scale, offset = scale * s, offset * s + o
        elif kind == "Normalization" and not getattr(layer, "invert", False) and tuple(
                getattr(layer, "axis", (-1,)) or ()) in ((-1,), ()):
            mean = np.ravel(np.asarray(layer.mean, dtype=np.float64))
            std = np.maximum(np.sqrt(np.ravel(np.asarray(layer.variance, dtype=np.float64))), _NORMALIZATION_EPSILON)
            scale, offset = scale / std, (offset - mean) / std
        elif kind in _SCALE_KEEPING:
            continue
        else:
            break
        names.append(f"{kind} '{layer.name}'")
    if not names or not (np.all(np.isfinite(scale)) and np.all(np.isfinite(offset))):
        return None
    return scale, offset, names
