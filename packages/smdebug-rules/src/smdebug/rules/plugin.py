"""Entry point of smdebug-rules (group ``smdebug.rules``, name ``builtin``).

Imported during plugin discovery: it imports nothing but smdebug's plugin API. Rules are registered as
``"module:Class"`` strings (:class:`~smdebug.core.plugins.RuleInfo`) and imported only when used.
"""

from typing import Tuple

from smdebug.core.plugins import RuleInfo, hookimpl

PACK = "builtin"

_GENERIC = "smdebug.rules.generic"

#: the rules of this pack, as import strings (imported only when a rule is used)
RULES: Tuple[RuleInfo, ...] = (
    RuleInfo("VanishingGradient", f"{_GENERIC}:VanishingGradient", PACK, "mean |gradient| below a threshold"),
    RuleInfo("ExplodingTensor", f"{_GENERIC}:ExplodingTensor", PACK, "NaN or infinite values"),
    RuleInfo("AllZero", f"{_GENERIC}:AllZero", PACK, "tensors (almost) entirely zero"),
    RuleInfo("UnchangedTensor", f"{_GENERIC}:UnchangedTensor", PACK, "tensors that stopped changing"),
    RuleInfo("TensorVariance", f"{_GENERIC}:TensorVariance", PACK, "variance outside [min, max]"),
)


@hookimpl
def smdebug_register_rules(register):
    for rule in RULES:
        register(rule)
