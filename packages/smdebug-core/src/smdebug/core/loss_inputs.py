"""The losses a run was trained with: what each one expects of the model's output, and where its inputs are.

A loss is computed from two tensors, the model's output as the loss gets it (the *prediction*) and the
*target*. Whether that output is right depends on the loss: a cross-entropy that applies softmax itself wants
logits, PyTorch's NLLLoss wants log-probabilities, a Keras cross-entropy built with ``from_logits=False``
wants probabilities, a squared error wants values on the targets' scale. Only the hook knows which loss the
user chose (a PyTorch module's class, a Gluon block's flags, the loss a Keras model was compiled with), so
every framework hook records it in the collections file, under ``_meta.losses``::

    [{"name": "CrossEntropyLoss", "type": "CrossEntropyLoss", "expects": "logits",
      "predictions": "^CrossEntropyLoss_input_0$", "targets": "^CrossEntropyLoss_input_1$"}]

and puts both tensors in the ``loss_inputs`` collection, whatever the loss, so that a rule (ImproperOutput)
can judge every loss and not only the classification losses whose inputs are also ``predictions`` and
``labels``. What a loss expects is one of :data:`EXPECTS`. A run without the record (the original smdebug's,
an older writer's) returns None from :func:`recorded_losses`; readers then fall back on tensor names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence

from smdebug.core.activations import matching_names, optional_regexes_valid
from smdebug.core.collection import CollectionKeys
from smdebug.core.logger import get_logger

logger = get_logger()

#: the key of the record in the collections file's ``_meta``
META_KEY = "losses"

LOGITS = "logits"  # raw scores: the loss applies softmax/sigmoid (or log-softmax) itself
LOG_PROBABILITIES = "log_probabilities"  # the output of a log-softmax: every value <= 0
PROBABILITIES = "probabilities"  # the output of a softmax/sigmoid: every value in [0, 1]
REGRESSION = "regression"  # values on the targets' scale (squared, absolute, Huber errors)
OTHER = "other"  # anything else (ranking, contrastive, custom): nothing to say about the output's range
EXPECTS = (LOGITS, LOG_PROBABILITIES, PROBABILITIES, REGRESSION, OTHER)

#: the most losses a record may list. A hook records one entry per loss the model trains with (a multi-task
#: model some tens); a longer list is damage or an attack, and every rule that judges losses reads each
#: listed loss's tensors at every step (20,000 copies of one entry: a 0.8 s judgement took 47 s). Also within
#: what the readers keep of the records' patterns (two each; see activations._meta_pattern).
MAX_LOSSES = 100


@dataclass(frozen=True)
class LossInputs:
    """One loss of the run.

    :param name: how the hook names the loss (the prefix of its tensors in PyTorch and MXNet).
    :param type: the framework's name of the loss (``"CrossEntropyLoss"``, ``"SparseCategoricalCrossentropy"``).
    :param expects: what the loss expects of the model's output, one of :data:`EXPECTS`.
    :param predictions: regex (``re.search``) of the saved tensors holding the loss's first input.
    :param targets: regex of the saved tensors holding its targets; None where the hook cannot see them.
    """

    name: str
    type: str
    expects: str
    predictions: str
    targets: Optional[str] = None

    def prediction_names(self, names: Sequence[str]) -> List[str]:
        return matching_names(self.predictions, names)

    def target_names(self, names: Sequence[str]) -> List[str]:
        return matching_names(self.targets, names)

    def regexes(self) -> List[str]:
        return [r for r in (self.predictions, self.targets) if r]

    def to_json_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "expects": self.expects, "predictions": self.predictions,
                "targets": self.targets}

    @classmethod
    def from_json_dict(cls, d) -> Optional["LossInputs"]:
        """None for an entry that is not a valid record (the caller reports it)."""
        if not isinstance(d, Mapping):
            return None
        name, type_, expects = d.get("name"), d.get("type"), d.get("expects")
        predictions, targets = d.get("predictions"), d.get("targets")
        if not all(isinstance(v, str) and v for v in (name, type_, predictions)) or expects not in EXPECTS:
            return None
        if not optional_regexes_valid(predictions, targets):
            return None
        return cls(name, type_, expects, predictions, targets)


def add_loss(hook, loss: LossInputs) -> None:
    """Make the loss's inputs members of ``loss_inputs`` and add it to the record (replacing an entry of the
    same name): what a framework hook calls when it learns which loss the model is trained with."""
    coll = hook.collection_manager.get(CollectionKeys.LOSS_INPUTS)
    coll.include(loss.regexes())
    kept = [e for e in hook.collection_manager.meta.get(META_KEY) or [] if isinstance(e, Mapping)
            and e.get("name") != loss.name]
    hook.collection_manager.meta[META_KEY] = [*kept, loss.to_json_dict()]
    hook._prepared_token = None  # the collections changed: re-prepare (and re-attach framework hooks)


def recorded_losses(source) -> Optional[List[LossInputs]]:
    """The losses the hook that wrote a run recorded (``source``: a trial or a CollectionManager); an empty
    list when it recorded that it knew of none, None when the run has no record (or a damaged one, logged:
    also one listing more than :data:`MAX_LOSSES` losses)."""
    cm = getattr(source, "collection_manager", source)
    raw = getattr(cm, "meta", {}).get(META_KEY)
    if raw is None:
        return None
    if not isinstance(raw, list):
        logger.warning("smdebug: _meta.%s of the collections file is not a list; ignored", META_KEY)
        return None
    if len(raw) > MAX_LOSSES:
        _too_many_said(cm, len(raw), getattr(source, "collections_file", None))
        return None
    losses = [LossInputs.from_json_dict(e) for e in raw]
    if any(loss is None for loss in losses):
        logger.warning("smdebug: _meta.%s of the collections file has an invalid entry; ignored", META_KEY)
        return None
    return losses


def _too_many_said(cm, count: int, path: Optional[str]) -> None:
    """Warn, once per run read, that its record lists more losses than any hook writes (the record is then read
    as absent: readers fall back on tensor names, as for a run written before the record existed)."""
    if getattr(cm, "_too_many_losses_said", False):
        return
    cm._too_many_losses_said = True
    logger.warning("smdebug: _meta.%s of %s lists %s losses, more than a hook records (at most %s); ignored",
                   META_KEY, path or "the collections file", f"{count:,}", f"{MAX_LOSSES:,}")
