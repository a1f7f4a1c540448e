"""The loss a model computes inside its own ``forward`` (a Hugging Face model given ``labels=``), described so
that the rules can judge it as they judge a registered loss module.

Such a model runs no loss module the hook could watch; what the loss got is still visible around the model's
call: the ``labels`` keyword argument and the ``logits`` of the output. A trainer callback that knows which loss
the model's head applies (:mod:`smdebug.pytorch.transformers`) gives the hook a :class:`ModelLoss`; the hook
then saves, next to the returned loss (``loss_output_<i>``), the logits as ``loss_input_<2i>`` and the labels as
``loss_input_<2i+1>``, and records the loss in ``_meta.losses`` (:mod:`smdebug.core.loss_inputs`) under the name
``loss``, as it does for a loss module named ``loss``.

When a Hugging Face Trainer computes the loss outside the model (label smoothing, ``compute_loss_func``, a
``compute_loss`` override), the model gets no labels and returns no loss; the callback then hands the hook the
loss, logits and labels ``compute_loss`` saw, which are saved under the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

import torch

from smdebug.core import loss_inputs
from smdebug.core.activations import io_regex
from smdebug.core.collection import CollectionKeys

#: the name the model's own loss has in the run (its tensors: loss_output_<i>, loss_input_<i>)
NAME = "loss"
LABELS = "labels"
LOGITS = "logits"


@dataclass(frozen=True)
class ModelLoss:
    """:param type: what the run's record calls the loss (``CrossEntropyLoss``...).
    :param expects: what it expects of the logits, one of :data:`smdebug.core.loss_inputs.EXPECTS`.
    :param squeeze: the head squeezes logits and labels before the loss (a one-output regression head:
        ``(N, 1)`` logits against ``(N,)`` labels would otherwise read as a broadcast).
    :param shifts: the head shifts the labels by one position itself, to score each position's logits against
        the next token (a causal language model: ``labels`` are meant to be the ``input_ids``)."""

    type: str
    expects: str
    squeeze: bool = False
    shifts: bool = False

    def record(self) -> loss_inputs.LossInputs:
        return loss_inputs.LossInputs(NAME, self.type, self.expects, io_regex(NAME, "input", 0),
                                      io_regex(NAME, "input", 1))

    @staticmethod
    def regex_probes() -> Tuple[str, str]:
        """The names of the first call's loss inputs (the hook asks whether they are due)."""
        return (f"{NAME}_input_0", f"{NAME}_input_1")

    def inputs(self, outputs, kwargs: Mapping) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
        """(logits, labels) of one forward call, as the loss got them; None when either is missing (the labels
        went in positionally, or the output has no logits)."""
        labels = kwargs.get(LABELS)
        logits = outputs.get(LOGITS) if isinstance(outputs, dict) else getattr(outputs, LOGITS, None)
        if not isinstance(labels, torch.Tensor) or not isinstance(logits, torch.Tensor):
            return None
        if self.squeeze:
            return logits.squeeze(), labels.squeeze()
        return logits, labels


#: the fewest label positions compared before labels shifted twice are said (see :func:`shifted_twice`)
MIN_SHIFT_POSITIONS = 64
#: the share of them that must be the next input token (and at most half the same one)
SHIFTED_SHARE = 0.95


def shifted_twice(labels, input_ids, ignore_index: int = -100) -> Optional[Tuple[int, float, float]]:
    """For a model whose head shifts its labels itself: (positions compared, the share of them whose label is
    the next input token, the share whose label is the input token at the same position), comparing each label
    that is not ``ignore_index`` with the ``input_ids`` of its row; None when the two cannot be compared (not two
    integer tensors of one shape, rows of fewer than two tokens).

    Labels made as ``labels[:, :-1] = input_ids[:, 1:]`` for such a model are shifted twice: it learns to
    predict the token after next, and its loss still falls (a language has structure two tokens ahead)."""
    if not (isinstance(labels, torch.Tensor) and isinstance(input_ids, torch.Tensor)):
        return None
    if labels.shape != input_ids.shape or labels.dim() < 1 or labels.shape[-1] < 2:
        return None
    if labels.is_floating_point() or input_ids.is_floating_point():
        return None
    labels, input_ids = labels.detach(), input_ids.detach()
    head, ahead = labels[..., :-1], input_ids[..., 1:]
    kept = head != ignore_index
    compared = int(kept.sum())
    if compared == 0:
        return None
    next_share = float(((head == ahead) & kept).sum()) / compared
    same_share = float(((head == input_ids[..., :-1]) & kept).sum()) / compared
    return compared, next_share, same_share


def follow(hook, loss: ModelLoss) -> None:
    """Tell ``hook`` that its model computes ``loss`` itself (see the module's docstring). A loss on logits
    (a cross-entropy, a BCE with logits) is a classifier's: its logits and labels are also the ``predictions``
    and ``labels`` collections, as a registered classification loss module's inputs are, so the class rules
    (ClassImbalance, Confusion) judge them."""
    hook._model_loss = loss
    hook._loss_in_output = True
    loss_inputs.add_loss(hook, loss.record())
    if loss.expects == loss_inputs.LOGITS:
        hook.get_collection(CollectionKeys.PREDICTIONS).include(io_regex(NAME, "input", 0))
        hook.get_collection(CollectionKeys.LABELS).include(io_regex(NAME, "input", 1))
    hook._rewire_later()
