"""Helpful errors for ``import smdebug.pytorch`` when the plugin that provides it is not installed, and
for ``smdebug.pytorch.Hook`` when the plugin is there but its framework is not.

smdebug-core owns the ``smdebug`` package; ``smdebug.pytorch``, ``smdebug.tensorflow``, ``smdebug.mxnet``,
``smdebug.xgboost`` and ``smdebug.rules`` come from separate distributions. Without them Python would only
say ``No module named 'smdebug.pytorch'``. :func:`install_missing_plugin_finder` appends a finder to the
*end* of ``sys.meta_path``: it is consulted only after every real finder failed, and then raises a
:class:`MissingPluginError` (a ``ModuleNotFoundError``) that names the distribution to install.

This module imports only the standard library: it runs at ``import smdebug``.
"""

from __future__ import annotations

import sys
from typing import Dict, NamedTuple, Optional, Tuple

__all__ = [
    "PLUGIN_PACKAGES",
    "MissingPlugin",
    "MissingPluginError",
    "MissingPluginFinder",
    "MissingFrameworkError",
    "missing_framework_error",
    "install_command",
    "install_missing_plugin_finder",
    "uninstall_missing_plugin_finder",
    "plugin_for_framework_import",
    "missing_plugin_message",
]


class MissingPlugin(NamedTuple):
    """Where a plugin module comes from."""

    distribution: str  #: the distribution that provides the module (``smdebug-torch``)
    extra: str  #: the smdebug-core extra that pulls it in (``torch``)
    framework_imports: Tuple[str, ...] = ()  #: top-level imports of the framework it adapts
    framework: str = ""  #: the framework's name in messages (``PyTorch``)
    framework_install: str = ""  #: what ``pip install`` takes to get a framework this plugin works with


#: module provided by a plugin -> where to get it
PLUGIN_PACKAGES: Dict[str, MissingPlugin] = {
    "smdebug.pytorch": MissingPlugin("smdebug-torch", "torch", ("torch",), "PyTorch", "torch"),
    "smdebug.tensorflow": MissingPlugin("smdebug-tf", "tf", ("tensorflow", "keras"),
                                        "TensorFlow 2.16 or later (with Keras 3)", "tensorflow"),
    # MXNet 1.9 imports only with numpy < 1.24 (it uses np.bool)
    "smdebug.mxnet": MissingPlugin("smdebug-mxnet", "mxnet", ("mxnet",), "MXNet 1.9", "'mxnet>=1.9,<2' 'numpy<1.24'"),
    "smdebug.xgboost": MissingPlugin("smdebug-xgboost", "xgboost", ("xgboost",), "XGBoost", "xgboost"),
    "smdebug.rules": MissingPlugin("smdebug-rules", "rules", ()),
}

#: where the wheels ``--find-links dist`` names come from (the packages are not on PyPI)
WHEELS_NOTE = "dist: the wheels built from the smdebug checkout, as its README's Installing section says"


def install_command(requirement: str) -> str:
    """``pip install`` of one of our distributions: from the wheels built from a checkout."""
    return f"pip install --find-links dist '{requirement}'"


def missing_plugin_message(module: str, plugin: MissingPlugin) -> str:
    return (
        f"{module} is provided by the {plugin.distribution} plugin, which is not installed: "
        f"{install_command(f'smdebug-core[{plugin.extra}]')} ({WHEELS_NOTE})"
    )


class MissingFrameworkError(ModuleNotFoundError):
    """A plugin is installed but the framework it adapts is not (``smdebug.pytorch.Hook`` without torch)."""


def missing_framework_error(error: ModuleNotFoundError, attribute: str) -> ModuleNotFoundError:
    """The error to raise for ``error``, met while loading ``attribute`` (``smdebug.pytorch.Hook``): a
    :class:`MissingFrameworkError` saying what to install when the missing module is the framework of
    that plugin, else ``error`` itself."""
    plugin = PLUGIN_PACKAGES.get(".".join(attribute.split(".")[:2]))
    missing = (error.name or "").split(".")[0]
    if plugin is None or missing not in plugin.framework_imports:
        return error
    return MissingFrameworkError(
        f"{attribute} needs {plugin.framework or missing}, which is not installed ({error}): "
        f"pip install {plugin.framework_install or missing}, or {install_command(plugin.distribution + '[framework]')}",
        name=error.name,
    )


def plugin_for_framework_import(import_name: str) -> Optional[Tuple[str, str]]:
    """``(distribution, extra)`` of the plugin adapting the framework imported as ``import_name``."""
    for plugin in PLUGIN_PACKAGES.values():
        if import_name in plugin.framework_imports:
            return plugin.distribution, plugin.extra
    return None


class MissingPluginError(ModuleNotFoundError):
    """``import smdebug.<plugin module>`` failed because its distribution is not installed.

    ``name`` is left unset on purpose: ``from smdebug import pytorch`` would otherwise swallow this error
    and report a bare "cannot import name". The module is in :attr:`module`.
    """

    def __init__(self, module: str, plugin: MissingPlugin):
        super().__init__(missing_plugin_message(module, plugin))
        self.module = module
        self.distribution = plugin.distribution
        self.extra = plugin.extra


class MissingPluginFinder:
    """A ``sys.meta_path`` finder of last resort for plugin modules (see module docstring)."""

    #: lets install_missing_plugin_finder recognise an instance even across module reloads
    _smdebug_missing_plugin_finder = True

    def __init__(self, packages: Optional[Dict[str, MissingPlugin]] = None):
        self.packages = dict(PLUGIN_PACKAGES if packages is None else packages)

    def find_spec(self, fullname, path=None, target=None):
        plugin = self.packages.get(fullname)
        if plugin is None:
            return None
        if self._found_by_later_finder(fullname, path, target):
            return None  # a finder added after us knows the module: let the import carry on to it
        raise MissingPluginError(fullname, plugin)

    def _found_by_later_finder(self, fullname, path, target) -> bool:
        try:
            later = sys.meta_path[sys.meta_path.index(self) + 1:]
        except ValueError:
            return False
        for finder in later:
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            try:
                if find_spec(fullname, path, target) is not None:
                    return True
            except ImportError:
                continue
        return False

    def invalidate_caches(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<smdebug MissingPluginFinder for {sorted(self.packages)}>"


def _is_ours(finder: object) -> bool:
    return getattr(type(finder), "_smdebug_missing_plugin_finder", False) is True


def install_missing_plugin_finder() -> MissingPluginFinder:
    """Append the finder to the end of ``sys.meta_path`` (once; later calls return the installed one)."""
    for finder in sys.meta_path:
        if _is_ours(finder):
            return finder  # type: ignore[return-value]
    finder = MissingPluginFinder()
    sys.meta_path.append(finder)
    return finder


def uninstall_missing_plugin_finder() -> None:
    """Remove every smdebug missing-plugin finder from ``sys.meta_path``."""
    sys.meta_path[:] = [f for f in sys.meta_path if not _is_ours(f)]
