"""smdebug: a debugger for machine-learning training.

``smdebug`` is shared by several distributions: smdebug-core owns this package and framework plugins
add ``smdebug.pytorch``, ``smdebug.tensorflow``, ``smdebug.mxnet``, ``smdebug.xgboost`` and
``smdebug.rules``. Importing ``smdebug`` is cheap: the names below load on first use, and plugins are
discovered only when something needs them.
"""

__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from smdebug._version import __version__  # noqa: E402

from smdebug.core.lazy import lazy_exports  # noqa: E402

_LAZY = {
    "modes": "smdebug.core.modes:ModeKeys",
    "ModeKeys": "smdebug.core.modes:ModeKeys",
    "SaveConfig": "smdebug.core.save_config:SaveConfig",
    "SaveConfigMode": "smdebug.core.save_config:SaveConfigMode",
    "ReductionConfig": "smdebug.core.reduction_config:ReductionConfig",
    "CollectionKeys": "smdebug.core.collection:CollectionKeys",
    "Collection": "smdebug.core.collection:Collection",
    "create_trial": "smdebug.trials:create_trial",
    "hookimpl": "smdebug.core.plugins:hookimpl",
}
__all__ = ["__version__", *_LAZY]
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def _install_missing_plugin_finder():
    try:
        from smdebug.core.plugins.missing import install_missing_plugin_finder
    except ImportError:
        return
    install_missing_plugin_finder()


_install_missing_plugin_finder()
