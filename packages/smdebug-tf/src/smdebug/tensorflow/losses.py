"""What the loss a Keras model was compiled with expects of the model's output (``smdebug.core.loss_inputs``).

Keras computes the loss from the model's output and the targets, which the hook saves as ``predictions`` and
``labels``; what that output must be depends on the loss and on how it was built: a cross-entropy made with
``from_logits=True`` applies softmax/sigmoid itself and wants logits, the default (``from_logits=False``) wants
probabilities and clips anything else into (0, 1), a squared or absolute error wants values on the targets'
scale. The loss is read from ``model.loss`` (what ``compile(loss=...)`` was given: a name, a ``keras.losses``
object or a function, or one of those per output, as a list or a dict by output name).
"""

from __future__ import annotations

import functools
import re
from typing import List, Optional, Tuple

from smdebug.core import loss_inputs

#: (names, lower-case with no underscores, of Keras losses and their functions) -> what they expect
_CROSS_ENTROPIES = {"sparsecategoricalcrossentropy", "categoricalcrossentropy", "binarycrossentropy",
                    "binaryfocalcrossentropy", "categoricalfocalcrossentropy"}
_ON_PROBABILITIES = {"kldivergence", "kld", "kullbackleiblerdivergence", "kldiv"}
_REGRESSION = {"meansquarederror", "mse", "meanabsoluteerror", "mae", "huber", "huberloss", "logcosh",
               "meansquaredlogarithmicerror", "msle", "meanabsolutepercentageerror", "mape"}


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _name_and_logits(loss) -> Tuple[Optional[str], bool]:
    """(the loss's name, whether it was built with from_logits=True) for a name, Loss object or function."""
    if isinstance(loss, str):
        return loss, False
    if isinstance(loss, functools.partial):
        name, from_logits = _name_and_logits(loss.func)
        return name, bool(loss.keywords.get("from_logits", from_logits))
    fn = getattr(loss, "fn", None)
    if callable(fn) and type(loss).__name__ == "LossFunctionWrapper":  # a function wrapped by Keras itself
        return getattr(fn, "__name__", None), bool(getattr(loss, "_fn_kwargs", {}).get("from_logits", False))
    get_config = getattr(loss, "get_config", None)
    if callable(get_config) and not isinstance(loss, type):
        try:
            config = get_config() or {}
        except Exception:  # noqa: BLE001 - a user's Loss whose config cannot be built
            config = {}
        return type(loss).__name__, bool(config.get("from_logits", False))
    return getattr(loss, "__name__", None), False


def loss_expects(loss) -> Tuple[str, str]:
    """(type, what it expects) of one Keras loss."""
    name, from_logits = _name_and_logits(loss)
    if not name:
        return type(loss).__name__, loss_inputs.OTHER
    key = _key(name)
    if key in _CROSS_ENTROPIES:
        return name, loss_inputs.LOGITS if from_logits else loss_inputs.PROBABILITIES
    if key in _ON_PROBABILITIES:
        return name, loss_inputs.PROBABILITIES
    if key in _REGRESSION:
        return name, loss_inputs.REGRESSION
    return name, loss_inputs.OTHER


def _output_names(model) -> Optional[List[str]]:
    """The names of the model's outputs, in order (None when it cannot say: a subclassed model never built)."""
    try:
        outputs = getattr(model, "outputs", None)
        names = getattr(model, "output_names", None)
    except Exception:  # noqa: BLE001 - a subclassed model that was never built has no outputs to list
        return None
    if not isinstance(outputs, (list, tuple)):
        return None
    if isinstance(names, (list, tuple)) and len(names) == len(outputs) and all(isinstance(n, str) for n in names):
        return list(names)
    return [getattr(o, "name", f"output_{i}") for i, o in enumerate(outputs)]


def describe_losses(model) -> List[loss_inputs.LossInputs]:
    """The records of the losses ``model`` was compiled with: one for a model with one output and one loss;
    one per output for a model with several outputs and a loss for each (a list in the outputs' order, or a
    dict by output name); none when the mapping is unclear (one loss for several outputs)."""
    loss = getattr(model, "loss", None)
    if loss is None:
        return []
    names = _output_names(model)
    if names is None or len(names) <= 1:
        if isinstance(loss, dict):
            loss = next(iter(loss.values())) if len(loss) == 1 else None
        elif isinstance(loss, (list, tuple)):
            loss = loss[0] if len(loss) == 1 else None
        if loss is None:
            return []
        type_, expects = loss_expects(loss)
        # (the hook names a model's one output "predictions" and its one target "labels": utils.structure_names)
        return [loss_inputs.LossInputs("loss", type_, expects, r"^predictions$", r"^labels$")]
    if isinstance(loss, dict):
        per_output = [(i, name, loss.get(name)) for i, name in enumerate(names)]
    elif isinstance(loss, (list, tuple)) and len(loss) == len(names):
        per_output = [(i, name, loss[i]) for i, name in enumerate(names)]
    else:
        return []  # one loss for every output: Keras applies it to each, but nothing says to which tensor
    described = []
    for i, name, output_loss in per_output:
        if output_loss is None:
            continue
        type_, expects = loss_expects(output_loss)
        # the hook names the i-th of several outputs "predictions_<i>" (a list) or "predictions/<name>" (a
        # dict), and its targets likewise by how fit() was given them (utils.structure_names)
        key = re.escape(name)
        described.append(loss_inputs.LossInputs(f"{name}_loss", type_, expects, rf"^predictions(_{i}|/{key})$",
                                                rf"^labels(_{i}|/{key})$"))
    return described
