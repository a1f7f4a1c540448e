"""Built-in smdebug rules (the smdebug-rules plugin).

Skeleton: ``Rule``, ``invoke_rule``, ``RequiredTensors`` and the built-in rules are added by a later issue.
"""

from smdebug.rules._version import __version__

__all__ = ["__version__"]
