"""Rules: conditions evaluated over a trial, step by step (the smdebug-rules plugin).

``from smdebug.rules.rule import Rule`` and ``from smdebug.rules.rule_invoker import invoke_rule`` work as in
smdebug 1.0.x. :func:`list_rules` shows every rule of every installed rule pack; :func:`run_rules` (also
``smdebug rules run``) evaluates rules by name over a finished run or follows a live one.
"""

from smdebug.core.lazy import lazy_exports
from smdebug.rules._version import __version__
from smdebug.rules.evaluation import RuleNotEvaluated
from smdebug.rules.registry import build_rule, find_rule, list_rules
from smdebug.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial
from smdebug.rules.rule import Rule
from smdebug.rules.runner import run_rules

__all__ = ["__version__", "Rule", "invoke_rule", "RequiredTensors", "RequiredTensorsForTrial", "list_rules",
           "find_rule", "build_rule", "run_rules", "RuleNotEvaluated"]


# imported on first use, so `python -m smdebug.rules.rule_invoker` (the original's command line) does not find
# its own module already imported by this package
__getattr__, __dir__ = lazy_exports(__name__, {"invoke_rule": "smdebug.rules.rule_invoker"})
