"""Which modules' inputs and outputs the hook captures — decided here, and only here.

A module's tensors are named ``<module>_input_<i>`` / ``<module>_output_<i>`` (the model by its class,
submodules by their qualified name); a module is hooked when a collection the caller asks about can match
those names. Collections name modules by regex, or by ``Collection.add_module_tensors`` (resolved to
regexes when the hook prepares its collections).

The modules of a parametrization (``torch.nn.utils.parametrize``: weight norm, spectral norm, orthogonal...)
get no name (:func:`unnamed_modules`), so they are never hooked: they are not layers of the model but the
computation of a parameter from its real parameters (``...parametrizations.weight.original0``, saved with the
weights), and their inputs and outputs, named ``...parametrizations.weight_input_0``, would copy those
parameters, and the weight computed from them, into the ``weights`` collection at every save.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Mapping, Tuple

import torch


def unnamed_modules(model: torch.nn.Module) -> set:
    """The modules of ``model`` the hook gives no name, so no inputs or outputs: those of its
    parametrizations (see the module docstring)."""
    try:
        from torch.nn.utils.parametrize import ParametrizationList
    except ImportError:  # (a torch without parametrizations)
        return set()
    out = set()
    for module in model.modules():
        if isinstance(module, ParametrizationList):
            out.update(module.modules())
    return out


def io_targets(model: torch.nn.Module, names: Mapping[torch.nn.Module, str],
               wanted: Callable[[str], bool]) -> Dict[torch.nn.Module, Tuple[bool, bool]]:
    """``{module: (inputs, outputs)}`` for the modules of ``model`` whose inputs and/or outputs
    ``wanted(tensor name)`` accepts (the hook asks "may a collection ever save it" or "is it due now")."""
    targets = {}
    for module in model.modules():
        name = names.get(module)
        if name is None:
            continue
        inputs, outputs = wanted(f"{name}_input_0"), wanted(f"{name}_output_0")
        if inputs or outputs:
            targets[module] = (inputs, outputs)
    return targets


def tensors(value) -> List[torch.Tensor]:
    """Every tensor in a (nested) tuple/list/dict/dataclass/namedtuple, in order.

    Plain code on purpose: dynamo traces it inside compiled forwards (see ``Hook._on_forward``)."""
    if isinstance(value, torch.Tensor):
        return [value]
    found: List[torch.Tensor] = []
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        for v in value:
            found.extend(tensors(v))
    elif isinstance(value, dict):  # (HF ModelOutput is an OrderedDict of its fields that are set)
        for v in value.values():
            found.extend(tensors(v))
    elif hasattr(value, "_fields"):  # namedtuple
        for f in value._fields:
            found.extend(tensors(getattr(value, f)))
    elif hasattr(value, "__dataclass_fields__"):
        for f in value.__dataclass_fields__:
            found.extend(tensors(getattr(value, f)))
    return found


#: keyword arguments that are the targets of a loss the model computes, not the model's inputs
TARGET_KEYWORDS = ("labels",)


def keyword_tensors(kwargs: Mapping) -> List[Tuple[str, torch.Tensor]]:
    """(keyword, tensor) for each keyword argument that is a tensor of one dimension or more (nested values are
    not looked into: a model's keyword inputs are tensors, ``input_ids=``, ``pixel_values=``; a 0-d tensor is a
    count or flag, such as the Trainer's ``num_items_in_batch``, not data)."""
    return [(k, v) for k, v in kwargs.items() if isinstance(v, torch.Tensor) and v.dim() > 0
            and isinstance(k, str) and k.isidentifier()]


def keyword_input_regex(name: str) -> str:
    """Regex of the model's keyword inputs for the ``inputs`` collection: ``<name>_input_<keyword>``, the
    targets (``labels``) excluded: they are no input the input rules should judge."""
    targets = "|".join(TARGET_KEYWORDS)
    return "^" + re.escape(name) + r"_input_(?!(?:" + targets + r")(?:_\d+)?$)[A-Za-z_]\w*$"
