"""Framework-neutral built-in rules (module path kept from smdebug 1.0.x: ``smdebug.rules.generic``).

Each rule lives in a small module of this package; ``from smdebug.rules.generic import DeadRelu`` imports
only that module (the list comes from the pack's registration in :mod:`smdebug.rules.plugin`).
"""

import importlib

from smdebug.rules.plugin import RULES

_MODULES = {info.name: info.target.split(":")[0] for info in RULES}

__all__ = sorted(_MODULES)


def __getattr__(name):
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
