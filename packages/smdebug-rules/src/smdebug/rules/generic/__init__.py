"""Framework-neutral built-in rules (module path kept from smdebug 1.0.x: ``smdebug.rules.generic``)."""

from smdebug.rules.generic.tensor_rules import AllZero, ExplodingTensor, TensorVariance, UnchangedTensor
from smdebug.rules.generic.vanishing_gradient import VanishingGradient

__all__ = ["AllZero", "ExplodingTensor", "TensorVariance", "UnchangedTensor", "VanishingGradient"]
