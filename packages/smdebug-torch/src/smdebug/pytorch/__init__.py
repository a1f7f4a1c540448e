"""smdebug for PyTorch (the smdebug-torch plugin).

``import smdebug.pytorch as smd`` gives ``smd.Hook``, ``smd.get_hook`` and the framework-neutral API
(``SaveConfig``, ``ReductionConfig``, ``Collection``, ``modes``, ``create_trial``...). Names load on
first access (PEP 562), so importing the package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from smdebug.core.plugins.missing import missing_framework_error

from smdebug.pytorch._version import __version__

if TYPE_CHECKING:
    from smdebug.core.collection import CollectionKeys  # noqa: F401
    from smdebug.pytorch.collection import Collection  # noqa: F401
    from smdebug.pytorch.hook import Hook, del_hook, get_hook, set_hook  # noqa: F401
    from smdebug.core.modes import ModeKeys as modes  # noqa: F401
    from smdebug.core.reduction_config import ReductionConfig  # noqa: F401
    from smdebug.core.save_config import SaveConfig, SaveConfigMode  # noqa: F401
    from smdebug.trials import create_trial  # noqa: F401

#: public name -> "module:attribute" it is loaded from
_LAZY = {
    "SaveConfig": "smdebug.core.save_config:SaveConfig",
    "SaveConfigMode": "smdebug.core.save_config:SaveConfigMode",
    "ReductionConfig": "smdebug.core.reduction_config:ReductionConfig",
    "Hook": "smdebug.pytorch.hook:Hook",
    "get_hook": "smdebug.pytorch.hook:get_hook",
    "set_hook": "smdebug.pytorch.hook:set_hook",
    "del_hook": "smdebug.pytorch.hook:del_hook",
    "Collection": "smdebug.pytorch.collection:Collection",
    "CollectionKeys": "smdebug.core.collection:CollectionKeys",
    "modes": "smdebug.core.modes:ModeKeys",
    "create_trial": "smdebug.trials:create_trial",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:  # the framework itself missing: say what to install
        raise missing_framework_error(e, f"{__name__}.{name}") from e
    value = getattr(module, attr)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
