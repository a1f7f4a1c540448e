"""What the hook recognises in a PyTorch model by type: activation modules, classification losses and what
each loss expects of the model's output.

Activation modules (instances of these ``torch.nn`` classes or of subclasses of them) have their inputs
and outputs in the kind's collection (``smdebug.core.activations``), whatever the module is called:

==============  ======================================
kind            torch.nn classes
==============  ======================================
relu            ReLU, ReLU6, Hardswish
leaky_relu      LeakyReLU, PReLU, RReLU
elu             ELU, SELU, CELU
gelu            GELU
silu            SiLU, Mish
tanh            Tanh, Hardtanh
sigmoid         Sigmoid, Hardsigmoid
softmax         Softmax, LogSoftmax, Softmax2d
softplus        Softplus
==============  ======================================

The kind says what a rule can judge of the layer. Hardswish is 0, with no gradient, for every input at or
below -3, so its units can die as a ReLU's (DeadRelu); Mish is a smooth self-gated unit like SiLU. Hardtanh
and Hardsigmoid are flat, with no gradient, outside ``[min_val, max_val]`` and ``[-3, 3]``: SaturatedActivation
judges them with those bounds, read from the recorded type (``"Hardtanh(min_val=-1, max_val=1)"``,
``"Hardsigmoid"``), not with the wider ones of a smooth tanh or sigmoid. (ReLU6 is a subclass of Hardtanh in
PyTorch; it stays a ReLU.)

Only modules are seen: ``torch.nn.functional.relu(x)`` or ``torch.tanh(x)`` inside a ``forward`` runs no
module hook, so it is in no collection (use an ``nn.ReLU()`` module where a rule should see it).

Classification losses: their first input is the prediction (scores, logits or log-probabilities over the
classes, the class being the argmax over the last axis) and their second the class ids, so the loss module's
inputs are the run's ``predictions`` and ``labels``. Only losses where that holds for sure are listed; a
``BCEWithLogitsLoss`` is not (its predictions are logits of one class, which the classification rules would
read as class ids), nor are regression losses. The classification rules take the class axis to be the last
one: right for the usual ``(batch, classes)`` scores, not for per-pixel ``(batch, classes, H, W)`` scores.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import torch

from smdebug.core import loss_inputs
from smdebug.core.activations import ActivationLayer, io_regex

_KINDS = (
    # (first match wins: ReLU6 subclasses Hardtanh, so the ReLUs come before it)
    (("ReLU", "ReLU6", "Hardswish"), "relu"),
    (("LeakyReLU", "PReLU", "RReLU"), "leaky_relu"),
    (("ELU", "SELU", "CELU"), "elu"),
    (("GELU",), "gelu"),
    (("SiLU", "Mish"), "silu"),
    (("Tanh", "Hardtanh"), "tanh"),
    (("Sigmoid", "Hardsigmoid"), "sigmoid"),
    (("Softmax", "LogSoftmax", "Softmax2d"), "softmax"),
    (("Softplus",), "softplus"),
)
_CLASSES = tuple((tuple(getattr(torch.nn, n) for n in names if hasattr(torch.nn, n)), kind) for names, kind in _KINDS)
#: (prediction: scores over classes, or one probability for BCELoss; target: class ids or 0/1)
CLASSIFICATION_LOSSES = tuple(getattr(torch.nn, n) for n in ("CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
                                                           "MultiMarginLoss")
                              if hasattr(torch.nn, n))


def activation_kind(module) -> Optional[str]:
    for classes, kind in _CLASSES:
        if isinstance(module, classes):
            return kind
    return None


def _recorded_type(module, kind: str) -> str:
    """The type recorded for an activation module: its class name, with the bounds of its flat regions for a
    Hardtanh (they are the module's own: SaturatedActivation reads them back)."""
    name = type(module).__name__
    if kind == "tanh" and isinstance(module, getattr(torch.nn, "Hardtanh", ())):
        return f"{name}(min_val={float(module.min_val)!r}, max_val={float(module.max_val)!r})"
    return name


def activation_layers(model: torch.nn.Module, name_of: Callable[[torch.nn.Module], Optional[str]]
                      ) -> Dict[str, List[ActivationLayer]]:
    """kind -> the activation modules of ``model`` (each once, also when used at several places)."""
    found: Dict[str, List[ActivationLayer]] = {kind: [] for _, kind in _KINDS}
    for module in model.modules():  # (each module once, however often the model uses it)
        kind = activation_kind(module)
        if kind is None:
            continue
        name = name_of(module)
        if name is None:
            continue
        found[kind].append(ActivationLayer(name, _recorded_type(module, kind), io_regex(name, "input"),
                                           io_regex(name, "output")))
    return found


def is_classification_loss(loss_module) -> bool:
    return isinstance(loss_module, CLASSIFICATION_LOSSES)


# What each torch.nn loss expects of its first input (smdebug.core.loss_inputs); a loss not listed: OTHER.
_EXPECTS = (
    (("CrossEntropyLoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss"), loss_inputs.LOGITS),
    # (KLDivLoss: its input is log-probabilities; CTCLoss: log_probs, (T, N, C), from log_softmax, as NLLLoss's)
    (("NLLLoss", "KLDivLoss", "CTCLoss"), loss_inputs.LOG_PROBABILITIES),
    (("BCELoss",), loss_inputs.PROBABILITIES),
    (("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"), loss_inputs.REGRESSION),
)
_EXPECTS_CLASSES = tuple((tuple(getattr(torch.nn, n) for n in names if hasattr(torch.nn, n)), expects)
                         for names, expects in _EXPECTS)


def loss_expects(loss_module) -> str:
    for classes, expects in _EXPECTS_CLASSES:
        if isinstance(loss_module, classes):
            return expects
    return loss_inputs.OTHER


#: loss classes whose first input's meaning is set by a flag of the module: the flag is recorded with the type
#: (``"PoissonNLLLoss(log_input=True)"``): PoissonNLLLoss takes log-rates (``log_input=True``, its default) or
#: rates; KLDivLoss takes log-probabilities, and its targets are log-probabilities too with ``log_target=True``
_FLAGS = (("PoissonNLLLoss", "log_input"), ("KLDivLoss", "log_target"))
_FLAG_CLASSES = tuple((getattr(torch.nn, n), flag) for n, flag in _FLAGS if hasattr(torch.nn, n))


def loss_type(loss_module) -> str:
    """The type recorded for a loss module: its class name, with the flag that says what its inputs are for
    the losses of :data:`_FLAGS` (read by ImproperOutput)."""
    name = type(loss_module).__name__
    for cls, flag in _FLAG_CLASSES:
        if isinstance(loss_module, cls) and isinstance(getattr(loss_module, flag, None), bool):
            return f"{name}({flag}={getattr(loss_module, flag)})"
    return name


def describe_loss(loss_module, name: str) -> loss_inputs.LossInputs:
    """The record of a loss module the hook names ``name``: its inputs are ``<name>_input_0`` (the
    prediction) and ``<name>_input_1`` (the targets)."""
    return loss_inputs.LossInputs(name, loss_type(loss_module), loss_expects(loss_module),
                                  io_regex(name, "input", 0), io_regex(name, "input", 1))
