"""What the hook recognises in a Gluon network by type: activation blocks and classification losses.

Activation blocks (``smdebug.core.activations``): ``nn.Activation`` by its ``act_type`` (``relu``, ``tanh``,
``sigmoid``, and ``softrelu``, which is softplus; ``softsign`` is of no kind here), ``nn.LeakyReLU`` and
``nn.PReLU`` (leaky_relu), ``nn.ELU`` and ``nn.SELU`` (elu), ``nn.GELU``, ``nn.Swish`` with ``beta`` 1
(silu). A fused ``activation=`` of ``nn.Dense`` or a convolution is an ``nn.Activation`` child block of it
(``dense0_relu0``), so it is found the same way, its input (the pre-activation) included. Functional calls
(``F.relu(x)`` in ``hybrid_forward``) are no blocks and are not seen. In a hybridized network the inner
blocks' forward hooks do not run; the activation blocks' tensors are then read from MXNet's operator monitor
instead, under the names it gives the activation's graph node (:func:`graph_names`): a layer's record matches
both names, so the rules find its tensors whether or not the network was hybridized.

Classification losses: a ``SoftmaxCrossEntropyLoss`` with sparse labels over the last axis (the default):
its first input is the class scores, its second the class ids, so they are the run's ``predictions`` and
``labels``; a ``SigmoidBinaryCrossEntropyLoss``: its first input is one score per target (a logit, or a
probability with ``from_sigmoid=True``, as the loss record says), its second the 0/1 targets, a binary
classifier's (the rules read the score by what the loss expects, as PyTorch's ``BCEWithLogitsLoss``). Every loss block's inputs are the run's ``loss_inputs``, recorded with what the loss expects of
them (:func:`loss_expects`).
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

from mxnet import gluon

from smdebug.core import loss_inputs
from smdebug.core.activations import KIND_COLLECTIONS, ActivationLayer, io_regex

nn = gluon.nn
_ACT_TYPES = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "softrelu": "softplus"}
_CLASSES = tuple((getattr(nn, name), kind) for name, kind in (
    ("LeakyReLU", "leaky_relu"), ("PReLU", "leaky_relu"), ("ELU", "elu"), ("SELU", "elu"), ("GELU", "gelu"),
) if hasattr(nn, name))


def activation_kind(block):
    if isinstance(block, nn.Activation):
        return _ACT_TYPES.get(getattr(block, "_act_type", None))
    swish = getattr(nn, "Swish", None)
    if swish is not None and isinstance(block, swish):
        return "silu" if float(getattr(block, "_beta", 1.0)) == 1.0 else None
    for cls, kind in _CLASSES:
        if isinstance(block, cls):
            return kind
    return None


#: blocks whose ``hybrid_forward`` computes the activation in one operator it names ``fwd``: in a hybridized
#: network that graph node is ``<block.name>_fwd``, and MXNet's operator monitor names its output
#: ``<node>_output`` and its input ``<node>_<argument>`` (``Activation``'s ``input0``, ``LeakyReLU``'s
#: ``data``). ``nn.ELU`` (an unnamed node) and ``nn.Swish`` (three nodes, none its output) are not listed:
#: in a hybridized network their tensors are not seen.
_GRAPH_INPUT_ARGUMENT = (("Activation", "input0"), ("LeakyReLU", "data"), ("PReLU", "data"), ("SELU", "data"),
                         ("GELU", "data"))
_GRAPH_NODES = tuple((getattr(nn, name), argument) for name, argument in _GRAPH_INPUT_ARGUMENT if hasattr(nn, name))


def graph_names(block) -> Optional[Tuple[str, str]]:
    """``(input name, output name)`` MXNet's operator monitor gives the activation of ``block`` in a hybridized
    network; None for a block whose activation is not one named operator."""
    for cls, argument in _GRAPH_NODES:
        if isinstance(block, cls):
            return f"{block.name}_fwd_{argument}", f"{block.name}_fwd_output"
    return None


def _either(*regexes: str) -> str:
    """One regex matching what any of the anchored ``regexes`` matches."""
    return "^(?:" + "|".join(r[1:-1] for r in regexes) + ")$"


def activation_layers(blocks: Iterable) -> Dict[str, List[ActivationLayer]]:
    """kind -> the activation blocks among ``blocks`` (the model and every block inside it). A layer's tensors
    are its block's inputs/outputs (``<name>_input_0``) and, for one whose activation is a single graph node,
    that node's input and output as the operator monitor names them in a hybridized network."""
    found: Dict[str, List[ActivationLayer]] = {kind: [] for kind in KIND_COLLECTIONS}
    for block in blocks:
        kind = activation_kind(block)
        if kind is None:
            continue
        description = type(block).__name__
        if isinstance(block, nn.Activation):
            description += f"({block._act_type})"
        inputs, outputs = io_regex(block.name, "input"), io_regex(block.name, "output")
        graph = graph_names(block)
        if graph is not None:
            inputs = _either(inputs, "^" + re.escape(graph[0]) + "$")
            outputs = _either(outputs, "^" + re.escape(graph[1]) + "$")
        found[kind].append(ActivationLayer(block.name, description, inputs, outputs))
    return found


def loss_expects(block) -> str:
    """What a Gluon loss block expects of its first input (smdebug.core.loss_inputs), from its class and flags:
    ``SoftmaxCrossEntropyLoss`` applies log-softmax itself unless ``from_logits=True`` (its input is then
    log-probabilities already); ``SigmoidBinaryCrossEntropyLoss`` applies sigmoid unless ``from_sigmoid=True``;
    ``KLDivLoss`` takes log-probabilities with ``from_logits=True`` (its default), else applies log-softmax."""
    loss = gluon.loss
    if isinstance(block, loss.SoftmaxCrossEntropyLoss):
        return loss_inputs.LOG_PROBABILITIES if getattr(block, "_from_logits", False) else loss_inputs.LOGITS
    if isinstance(block, loss.SigmoidBinaryCrossEntropyLoss):
        return loss_inputs.PROBABILITIES if getattr(block, "_from_sigmoid", False) else loss_inputs.LOGITS
    if isinstance(block, loss.KLDivLoss):
        return loss_inputs.LOG_PROBABILITIES if getattr(block, "_from_logits", True) else loss_inputs.LOGITS
    if isinstance(block, (loss.L2Loss, loss.L1Loss, loss.HuberLoss)):
        return loss_inputs.REGRESSION
    return loss_inputs.OTHER


def describe_loss(block, name: Optional[str] = None) -> loss_inputs.LossInputs:
    """The record of a loss block the hook names ``name`` (its Gluon name by default): its inputs are
    ``<name>_input_0`` (the prediction) and ``_input_1``."""
    name = name or block.name
    return loss_inputs.LossInputs(name, type(block).__name__, loss_expects(block),
                                  io_regex(name, "input", 0), io_regex(name, "input", 1))


def is_classification_loss(block) -> bool:
    """Whether ``block``'s inputs are (scores, class ids or 0/1 targets): the run's predictions and labels."""
    loss = gluon.loss
    if isinstance(block, loss.SigmoidBinaryCrossEntropyLoss):
        return True
    return (isinstance(block, loss.SoftmaxCrossEntropyLoss) and bool(getattr(block, "_sparse_label", False))
            and getattr(block, "_axis", -1) == -1)
