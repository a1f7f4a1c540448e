"""smdebug for MXNet Gluon (the smdebug-mxnet plugin).

``import smdebug.mxnet as smd`` gives ``smd.Hook``, ``smd.get_hook`` and the framework-neutral API
(``SaveConfig``, ``ReductionConfig``, ``Collection``, ``CollectionKeys``, ``modes``, ``create_trial``...).
Names load on first access (PEP 562), so importing the package does not import mxnet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdebug.core.lazy import framework_package_exports

from smdebug.mxnet._version import __version__

if TYPE_CHECKING:
    from smdebug.core.collection import CollectionKeys  # noqa: F401
    from smdebug.core.modes import ModeKeys as modes  # noqa: F401
    from smdebug.core.reduction_config import ReductionConfig  # noqa: F401
    from smdebug.core.save_config import SaveConfig, SaveConfigMode  # noqa: F401
    from smdebug.mxnet.collection import Collection  # noqa: F401
    from smdebug.mxnet.hook import Hook, del_hook, get_hook, set_hook  # noqa: F401
    from smdebug.trials import create_trial  # noqa: F401

#: this package's own names -> "module:attribute" they load from (the framework-neutral API comes
#: with them: smdebug.core.lazy.FRAMEWORK_NEUTRAL_API)
__getattr__, __dir__, __all__ = framework_package_exports(__name__, {
    "Hook": "smdebug.mxnet.hook:Hook",
    "get_hook": "smdebug.mxnet.hook:get_hook",
    "set_hook": "smdebug.mxnet.hook:set_hook",
    "del_hook": "smdebug.mxnet.hook:del_hook",
    "Collection": "smdebug.mxnet.collection:Collection",
})
