"""How the model itself rescales its input before its first layer that learns.

Keras' documented image idiom feeds the model raw pixels (``image_dataset_from_directory`` yields 0-255) and
puts ``Rescaling(1/255)`` -- or an adapted ``Normalization`` -- as the model's first layer. The hook saves the
model's input as given, so a rule that judges the input's scale (CheckInputImages) would call those pixels
unnormalised while the first convolution sees them in [0, 1]. Only the hook sees the layers, so it records the
affine map they apply, per channel of the input's last axis, in the collections file under
``_meta.input_scaling``::

    {"inputs": {"scale": [0.00392], "offset": [0.0], "layers": ["rescaling"]}}

keyed by the saved input tensor; ``scale`` and ``offset`` hold one value (every channel) or one per channel of the
last axis, and the input the first layer that learns sees is ``x * scale + offset``. ``layers`` names the layers
that make the map, for messages.

Writers: :func:`record_input_scaling` (a hook, before it closes: the collections file is written again then).
Readers: :func:`recorded_input_scaling` (a trial or a CollectionManager).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

#: the key of the record in the collections file's ``_meta``
META_KEY = "input_scaling"
#: the most channels a map keeps (a per-feature map of a wide table is not worth the file)
MAX_CHANNELS = 4096
#: the most layer names kept per map, and their length (they are quoted in messages)
_MAX_LAYERS, _MAX_NAME = 16, 200


@dataclass(frozen=True)
class InputScaling:
    """The affine map ``x * scale + offset`` a model applies to one of its inputs (per channel of its last axis,
    or one value for every channel), and the layers that apply it."""

    scale: Tuple[float, ...]
    offset: Tuple[float, ...]
    layers: Tuple[str, ...]

    def channel_means(self, means: np.ndarray) -> Optional[np.ndarray]:
        """``means`` (one per channel of the last axis, or one for the whole input) as the first layer that
        learns sees them; None when the map's channels do not fit them."""
        scale, offset = np.asarray(self.scale), np.asarray(self.offset)
        if scale.size not in (1, means.size) or offset.size not in (1, means.size):
            return None
        return means * scale + offset

    def describe(self) -> str:
        return ", ".join(self.layers)

    def to_json_dict(self) -> dict:
        return {"scale": list(self.scale), "offset": list(self.offset), "layers": list(self.layers)}

    @classmethod
    def from_json_dict(cls, entry) -> Optional["InputScaling"]:
        """An entry of the record, None when it is not a valid one (the record is a run's file)."""
        if not isinstance(entry, dict):
            return None
        scale, offset = _numbers(entry.get("scale")), _numbers(entry.get("offset"))
        layers = entry.get("layers")
        if scale is None or offset is None or not isinstance(layers, list) or not layers:
            return None
        if not all(isinstance(n, str) for n in layers):
            return None
        return cls(scale, offset, tuple(n[:_MAX_NAME] for n in layers[:_MAX_LAYERS]))


def _numbers(values) -> Optional[Tuple[float, ...]]:
    if not isinstance(values, list) or not 1 <= len(values) <= MAX_CHANNELS:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        return None
    return tuple(float(v) for v in values)


def record_input_scaling(hook, input_name: str, scale: Sequence[float], offset: Sequence[float],
                         layers: Sequence[str]) -> bool:
    """Record that the model maps its input ``input_name`` to ``x * scale + offset`` (see the module) before its
    first layer that learns; an identity map, or one that is not finite, records nothing and removes an earlier
    entry. Returns whether an entry is recorded; never raises for bad values (the hook must not break
    training)."""
    meta = hook.collection_manager.meta
    record = meta.get(META_KEY)
    record = dict(record) if isinstance(record, dict) else {}
    try:
        entry = InputScaling.from_json_dict({"scale": [float(v) for v in np.ravel(scale)],
                                             "offset": [float(v) for v in np.ravel(offset)],
                                             "layers": [str(n) for n in layers]})
    except (TypeError, ValueError):  # (values that are no numbers)
        entry = None
    identity = entry is not None and all(s == 1.0 for s in entry.scale) and all(o == 0.0 for o in entry.offset)
    if entry is None or identity:
        record.pop(input_name, None)
    else:
        record[input_name] = entry.to_json_dict()
    if record:
        meta[META_KEY] = record
    else:
        meta.pop(META_KEY, None)
    return entry is not None and not identity


def recorded_input_scaling(source, input_name: str) -> Optional[InputScaling]:
    """The map the hook that wrote a run recorded for its input tensor ``input_name`` (``source``: a trial or a
    CollectionManager); None when it recorded none, or no valid one (then the input is judged as saved)."""
    cm = getattr(source, "collection_manager", source)
    raw = getattr(cm, "meta", {}).get(META_KEY)
    return InputScaling.from_json_dict(raw.get(input_name)) if isinstance(raw, dict) else None
