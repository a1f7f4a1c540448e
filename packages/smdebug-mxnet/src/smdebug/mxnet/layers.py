"""What the hook recognises in a Gluon network by type: activation blocks and classification losses.

Activation blocks (``smdebug.core.activations``): ``nn.Activation`` by its ``act_type`` (``relu``, ``tanh``,
``sigmoid``, and ``softrelu``, which is softplus; ``softsign`` is of no kind here), ``nn.LeakyReLU`` and
``nn.PReLU`` (leaky_relu), ``nn.ELU`` and ``nn.SELU`` (elu), ``nn.GELU``, ``nn.Swish`` with ``beta`` 1
(silu). A fused ``activation=`` of ``nn.Dense`` or a convolution is an ``nn.Activation`` child block of it
(``dense0_relu0``), so it is found the same way, its input (the pre-activation) included. Functional calls
(``F.relu(x)`` in ``hybrid_forward``) are no blocks and are not seen. In a hybridized network the inner
blocks' forward hooks do not run, so their tensors cannot be saved at all (see the package README); the
record of the layers found is written all the same.

Classification losses: a ``SoftmaxCrossEntropyLoss`` with sparse labels over the last axis (the default):
its first input is the class scores, its second the class ids, so they are the run's ``predictions`` and
``labels``.
"""

from __future__ import annotations

from typing import Dict, Iterable, List

from mxnet import gluon

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


def activation_layers(blocks: Iterable) -> Dict[str, List[ActivationLayer]]:
    """kind -> the activation blocks among ``blocks`` (the model and every block inside it)."""
    found: Dict[str, List[ActivationLayer]] = {kind: [] for kind in KIND_COLLECTIONS}
    for block in blocks:
        kind = activation_kind(block)
        if kind is None:
            continue
        description = type(block).__name__
        if isinstance(block, nn.Activation):
            description += f"({block._act_type})"
        found[kind].append(ActivationLayer(block.name, description, io_regex(block.name, "input"),
                                           io_regex(block.name, "output")))
    return found


def is_classification_loss(block) -> bool:
    return (isinstance(block, gluon.loss.SoftmaxCrossEntropyLoss) and bool(getattr(block, "_sparse_label", False))
            and getattr(block, "_axis", -1) == -1)
