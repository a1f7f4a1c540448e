"""Rules: conditions evaluated over a trial (the smdebug-rules plugin).

``from smdebug.rules.rule import Rule`` and ``from smdebug.rules.rule_invoker import invoke_rule`` work as in
smdebug 1.0.x; the same names are available here. The built-in rules and the rule runner come next.
"""

from smdebug.rules._version import __version__
from smdebug.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial
from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import invoke_rule

__all__ = ["__version__", "Rule", "invoke_rule", "RequiredTensors", "RequiredTensorsForTrial"]
