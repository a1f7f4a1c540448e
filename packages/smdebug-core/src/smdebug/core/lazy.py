"""Module attributes loaded on first access (PEP 562), declared as a table.

Packages that must import quickly (``smdebug``, ``smdebug.pytorch``: no framework, no numpy at import) and
modules that keep smdebug 1.0.x's names available without importing their legacy adapters up front
declare ``{public name: "module:attribute"}`` and take the module-level ``__getattr__``/``__dir__`` from
:func:`lazy_exports`::

    __getattr__, __dir__ = lazy_exports(__name__, {"Hook": "smdebug.pytorch.hook:Hook"})

The target is imported on the first look-up of the name and cached in the module, so later look-ups are
plain attribute reads. A target ``"module"`` without ``:attribute`` means the attribute of the same name.

This module imports only the standard library: it runs at ``import smdebug``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Callable, Dict, Mapping, Optional, Tuple

#: the framework-neutral API every framework package (``smdebug.pytorch`` ...) offers as well
FRAMEWORK_NEUTRAL_API: Dict[str, str] = {
    "SaveConfig": "smdebug.core.save_config:SaveConfig",
    "SaveConfigMode": "smdebug.core.save_config:SaveConfigMode",
    "ReductionConfig": "smdebug.core.reduction_config:ReductionConfig",
    "CollectionKeys": "smdebug.core.collection:CollectionKeys",
    "modes": "smdebug.core.modes:ModeKeys",
    "create_trial": "smdebug.trials:create_trial",
}

#: turns the ModuleNotFoundError of a target into the error to raise (e.g. one that says what to install)
OnMissing = Callable[[ModuleNotFoundError, str], BaseException]


def lazy_exports(
    module_name: str, table: Mapping[str, str], on_missing_module: Optional[OnMissing] = None
) -> Tuple[Callable[[str], object], Callable[[], list]]:
    """``(__getattr__, __dir__)`` for the module ``module_name`` serving the names of ``table``.

    ``on_missing_module(error, "package.Name")``: the exception to raise instead of the
    ``ModuleNotFoundError`` of a target that cannot be imported (a framework that is not installed).
    """
    targets = dict(table)

    def __getattr__(name: str):
        target = targets.get(name)
        if target is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        source, _, attr = target.partition(":")
        try:
            module = importlib.import_module(source)
        except ModuleNotFoundError as e:
            if on_missing_module is None:
                raise
            raise on_missing_module(e, f"{module_name}.{name}") from e
        value = getattr(module, attr or name)
        vars(sys.modules[module_name])[name] = value  # later look-ups skip __getattr__
        return value

    def __dir__() -> list:
        return sorted(set(vars(sys.modules[module_name])) | set(targets))

    return __getattr__, __dir__


def framework_package_exports(module_name: str, own: Mapping[str, str]):
    """``(__getattr__, __dir__, __all__)`` of a framework plugin's package (``smdebug.pytorch``...): its own
    names (``own``: Hook, get_hook, Collection...) and :data:`FRAMEWORK_NEUTRAL_API`. A name whose module
    needs the framework, used without the framework installed, raises a ModuleNotFoundError that says
    what to install."""
    from smdebug.core.plugins.missing import missing_framework_error

    table = {**FRAMEWORK_NEUTRAL_API, **own}
    getattr_, dir_ = lazy_exports(module_name, table, on_missing_module=missing_framework_error)
    return getattr_, dir_, ["__version__", *table]
