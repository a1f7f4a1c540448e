"""smdebug for TensorFlow 2 and Keras 3 (the smdebug-tf plugin).

``import smdebug.tensorflow as smd`` gives ``smd.KerasHook`` (a Keras callback, also for
``GradientTape`` loops), ``smd.SessionHook`` (``tf.compat.v1.train.MonitoredSession``; ``smd.EstimatorHook``
is the same class), ``smd.get_hook`` and the framework-neutral API (``SaveConfig``, ``ReductionConfig``,
``Collection``, ``CollectionKeys``, ``modes``, ``create_trial``...). Names load on first access (PEP
562), so importing the package does not import TensorFlow; without TensorFlow, using a hook raises a
``ModuleNotFoundError`` that says what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smdebug.core.lazy import framework_package_exports

from smdebug.tensorflow._version import __version__

if TYPE_CHECKING:
    from smdebug.core.collection import CollectionKeys  # noqa: F401
    from smdebug.core.modes import ModeKeys as modes  # noqa: F401
    from smdebug.core.reduction_config import ReductionConfig  # noqa: F401
    from smdebug.core.save_config import SaveConfig, SaveConfigMode  # noqa: F401
    from smdebug.tensorflow.api import del_hook, get_hook, set_hook  # noqa: F401
    from smdebug.tensorflow.collection import Collection  # noqa: F401
    from smdebug.tensorflow.keras import KerasHook  # noqa: F401
    from smdebug.tensorflow.session import EstimatorHook, SessionHook  # noqa: F401
    from smdebug.trials import create_trial  # noqa: F401

#: this package's own names -> "module:attribute" they load from (the framework-neutral API comes
#: with them: smdebug.core.lazy.FRAMEWORK_NEUTRAL_API)
__getattr__, __dir__, __all__ = framework_package_exports(__name__, {
    "KerasHook": "smdebug.tensorflow.keras:KerasHook",
    "SessionHook": "smdebug.tensorflow.session:SessionHook",
    "EstimatorHook": "smdebug.tensorflow.session:EstimatorHook",
    "get_hook": "smdebug.tensorflow.api:get_hook",
    "set_hook": "smdebug.tensorflow.api:set_hook",
    "del_hook": "smdebug.tensorflow.api:del_hook",
    "Collection": "smdebug.tensorflow.collection:Collection",
})
