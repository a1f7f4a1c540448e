"""The class weights a run was trained with: imbalance the training already compensates.

A classifier of imbalanced data is usually trained with weights that make the rare classes count more:
PyTorch's ``CrossEntropyLoss(weight=...)`` / ``BCEWithLogitsLoss(pos_weight=...)``, Keras'
``Model.fit(class_weight=...)``, XGBoost's ``scale_pos_weight``. Only the hook sees them, so every framework
hook records them in the collections file, under ``_meta.class_weights``, a list of entries::

    [{"source": "CrossEntropyLoss(weight=...)", "weights": {"0": 1.0, "1": 19.0},
      "targets": "^CrossEntropyLoss_input_1$"}]

``weights`` maps a class id (as a string: JSON keys) to its weight; a class not listed weighs 1.
``targets`` is the regex (``re.search``; matched by :meth:`ClassWeights.applies_to`, in bounded time) of the
saved label tensors the weights apply to, or null when they apply to every label tensor of the run (Keras'
``class_weight``, XGBoost's ``scale_pos_weight``). A rule (ClassImbalance) then judges the
*weighted* class counts: what the optimiser is actually shown.

Writers: :func:`record_class_weights` (a hook, at any time before it closes: the collections file is
written again when the hook closes). Readers: :func:`recorded_class_weights` (a trial or a CollectionManager).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Union

from smdebug.core.activations import matching_names, optional_regexes_valid
from smdebug.core.logger import get_logger

logger = get_logger()

#: the key of the record in the collections file's ``_meta``
META_KEY = "class_weights"
#: the most classes an entry keeps (a weight vector of an extreme classification is not worth the file)
MAX_CLASSES = 100_000


@dataclass(frozen=True)
class ClassWeights:
    """One set of class weights of the run.

    :param source: what set them, as the user wrote it (``"CrossEntropyLoss(weight=...)"``,
        ``"scale_pos_weight"``, ``"class_weight of Model.fit"``).
    :param weights: class id -> weight (> 0, finite); a class not listed weighs 1.
    :param targets: regex of the label tensors they apply to; None: every label tensor of the run.
    """

    source: str
    weights: Dict[int, float] = field(default_factory=dict)
    targets: Optional[str] = None

    def weight(self, class_id: int) -> float:
        return self.weights.get(int(class_id), 1.0)

    def applies_to(self, name: str) -> bool:
        """Whether these weights apply to the label tensor ``name`` (``targets`` found in it, ``re.search``).
        Use this, not ``re.search(targets, name)``: ``targets`` comes from the run's collections file, and a
        pattern such as ``^(a+)+$`` against a label named ``aaa...a!`` backtracks for hours in ``re``; here
        it is matched in bounded time (a pattern too slow to match is set aside with one warning and applies
        to nothing, as a collection's patterns are)."""
        if self.targets is None:
            return True
        return bool(matching_names(self.targets, [name]))

    def to_json_dict(self) -> dict:
        return {"source": self.source, "weights": {str(k): v for k, v in sorted(self.weights.items())},
                "targets": self.targets}

    @classmethod
    def from_json_dict(cls, d) -> Optional["ClassWeights"]:
        """None for an entry that is not a valid record."""
        if not isinstance(d, Mapping):
            return None
        source, raw, targets = d.get("source"), d.get("weights"), d.get("targets")
        if not isinstance(source, str) or not source or not isinstance(raw, Mapping):
            return None
        if targets is not None and (not isinstance(targets, str) or not optional_regexes_valid(targets)):
            return None
        weights = _checked(raw.items())
        return None if weights is None else cls(source, weights, targets)


def _class_id(key) -> Optional[int]:
    """A class id >= 0 from a key: an int, an integral float, or a string of decimal digits (JSON keys)."""
    if isinstance(key, bool):
        return None
    if isinstance(key, int):
        return key if key >= 0 else None
    if isinstance(key, float):
        return int(key) if key.is_integer() and key >= 0 else None
    if isinstance(key, str) and key.isdigit() and key.isascii() and len(key) <= 12:
        return int(key)
    return None


def _checked(items) -> Optional[Dict[int, float]]:
    """``{class id: weight}`` from (key, value) pairs, or None when one is not a class id >= 0 with a finite
    weight >= 0 (or there are more than :data:`MAX_CLASSES`)."""
    weights: Dict[int, float] = {}
    for key, value in items:
        if len(weights) >= MAX_CLASSES or isinstance(value, bool):
            return None
        class_id = _class_id(key)
        try:
            weight = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
        if class_id is None or not math.isfinite(weight) or weight < 0:
            return None
        weights[class_id] = weight
    return weights


def as_weights(weights: Union[Mapping, Sequence, None]) -> Optional[Dict[int, float]]:
    """``{class id: weight}`` from a mapping (``{1: 19.0}``) or a sequence indexed by class (``[1.0, 19.0]``,
    a 1-D array or tensor converted with ``tolist()``); None when it is not one."""
    if weights is None:
        return None
    if hasattr(weights, "tolist") and not isinstance(weights, Mapping):
        weights = weights.tolist()
    if isinstance(weights, Mapping):
        return _checked(weights.items())
    if isinstance(weights, (list, tuple)):
        return _checked(enumerate(weights))
    return None


def record_class_weights(hook, weights, source: str, targets: Optional[str] = None) -> bool:
    """Add class weights to the run's record (replacing an entry of the same ``source`` and ``targets``):
    what a framework hook calls when it learns them. ``weights``: see :func:`as_weights`. All weights
    equal to 1 record nothing (and remove that entry). Returns whether an entry is recorded; never raises
    for bad weights (logged at debug level: the hook must not break training)."""
    checked = as_weights(weights)
    if checked is None or not isinstance(source, str) or not source:
        logger.debug("smdebug: class weights from %s not recorded (not a list or mapping of weights)", source)
        return False
    meta = hook.collection_manager.meta
    kept = [e for e in meta.get(META_KEY) or [] if isinstance(e, Mapping)
            and not (e.get("source") == source and e.get("targets") == targets)]
    recorded = any(w != 1.0 for w in checked.values())
    if recorded:
        kept.append(ClassWeights(source, checked, targets).to_json_dict())
    if kept:
        meta[META_KEY] = kept
    else:
        meta.pop(META_KEY, None)
    return recorded


def forget_class_weights(hook, targets: Optional[str]) -> None:
    """Remove the entries that apply to the label tensors ``targets`` (a loss registered again, now
    without weights or with others)."""
    meta = hook.collection_manager.meta
    kept = [e for e in meta.get(META_KEY) or [] if isinstance(e, Mapping) and e.get("targets") != targets]
    if kept:
        meta[META_KEY] = kept
    else:
        meta.pop(META_KEY, None)


def recorded_class_weights(source) -> List[ClassWeights]:
    """The class weights the hook that wrote a run recorded (``source``: a trial or a CollectionManager);
    an empty list when it recorded none (invalid entries are skipped, logged once per call)."""
    cm = getattr(source, "collection_manager", source)
    raw = getattr(cm, "meta", {}).get(META_KEY)
    if not isinstance(raw, list):
        return []
    entries = [ClassWeights.from_json_dict(e) for e in raw]
    if any(e is None for e in entries):
        logger.warning("smdebug: _meta.%s of the collections file has an invalid entry; ignored", META_KEY)
    return [e for e in entries if e is not None]
