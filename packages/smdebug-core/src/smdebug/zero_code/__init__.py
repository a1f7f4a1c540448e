"""Zero-code-change: attach a hook to an unmodified training script (what ``smdebug run`` does).

``smdebug run -- python train.py`` starts the script with this package's ``bootstrap`` folder first on
PYTHONPATH; its ``sitecustomize`` calls :func:`install` before the script runs. :func:`install` asks the
framework plugins for their ``zero_code`` attach functions (``FrameworkInfo.zero_code``) and arranges for
each to run right after its framework is imported (or at once if it already is). The attach function builds
the hook from the JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``) the way SageMaker's framework containers
did, and wires it into the framework (PyTorch: global module hooks; XGBoost: the training callback).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import sys
from typing import Callable, Dict

_log = logging.getLogger("smdebug")
_attached: Dict[str, bool] = {}


def _run_attach(framework: str, target: str) -> None:
    if _attached.get(framework):
        return
    _attached[framework] = True
    try:
        from smdebug.core.plugins.info import resolve_target

        attach: Callable[[], None] = resolve_target(target)
        attach()
    except Exception as e:  # noqa: BLE001 - never break the user's script
        _log.error("smdebug: could not attach to %s (%s: %s); the script runs without a hook", framework,
                   type(e).__name__, e)


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs an attach function right after a top-level module has been imported."""

    def __init__(self, module: str, framework: str, target: str):
        self.module, self.framework, self.target = module, framework, target
        self._spec = None

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.module or self._spec is not None:
            return None
        sys.meta_path.remove(self)  # let the normal finders find the real module
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._spec = spec
        real_loader = spec.loader
        finder = self

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return real_loader.create_module(spec)

            def exec_module(self, module):
                real_loader.exec_module(module)
                if finder in sys.meta_path:
                    sys.meta_path.remove(finder)
                _run_attach(finder.framework, finder.target)

        spec.loader = _Loader()
        return spec


def install() -> None:
    """Arrange for every installed framework plugin with a zero-code attach function to attach."""
    from smdebug.core.plugins import frameworks

    for name, info in frameworks().items():
        if not info.zero_code:
            continue
        if info.import_name in sys.modules:
            _run_attach(name, info.zero_code)
        else:
            sys.meta_path.insert(0, _AfterImport(info.import_name, name, info.zero_code))
