"""Entry point of smdebug-rules (group ``smdebug.rules``, name ``builtin``).

Imported during plugin discovery: it imports nothing but smdebug's plugin API. Rules are registered as
``"module:Class"`` strings (:class:`~smdebug.core.plugins.RuleInfo`) and imported only when used.
"""

from typing import Tuple

from smdebug.core.plugins import RuleInfo, hookimpl

PACK = "builtin"

#: the rules of this pack; filled by a later issue
RULES: Tuple[RuleInfo, ...] = ()


@hookimpl
def smdebug_register_rules(register):
    for rule in RULES:
        register(rule)
