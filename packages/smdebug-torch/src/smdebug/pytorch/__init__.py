"""smdebug for PyTorch (the smdebug-torch plugin).

``import smdebug.pytorch as smd`` gives ``smd.Hook``, ``smd.get_hook`` and the framework-neutral API
(``SaveConfig``, ``ReductionConfig``, ``Collection``, ``modes``, ``create_trial``...). Names load on
first access (PEP 562), so importing the package does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdebug.core.lazy import framework_package_exports

from smdebug.pytorch._version import __version__

if TYPE_CHECKING:
    from smdebug.core.collection import CollectionKeys  # noqa: F401
    from smdebug.pytorch.collection import Collection  # noqa: F401
    from smdebug.pytorch.hook import Hook, del_hook, get_hook, set_hook  # noqa: F401
    from smdebug.core.modes import ModeKeys as modes  # noqa: F401
    from smdebug.core.reduction_config import ReductionConfig  # noqa: F401
    from smdebug.core.save_config import SaveConfig, SaveConfigMode  # noqa: F401
    from smdebug.trials import create_trial  # noqa: F401

#: this package's own names -> "module:attribute" they load from (the framework-neutral API comes
#: with them: smdebug.core.lazy.FRAMEWORK_NEUTRAL_API)
__getattr__, __dir__, __all__ = framework_package_exports(__name__, {
    "Hook": "smdebug.pytorch.hook:Hook",
    "get_hook": "smdebug.pytorch.hook:get_hook",
    "set_hook": "smdebug.pytorch.hook:set_hook",
    "del_hook": "smdebug.pytorch.hook:del_hook",
    "Collection": "smdebug.pytorch.collection:Collection",
})
