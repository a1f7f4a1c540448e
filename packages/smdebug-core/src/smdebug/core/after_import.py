"""Run a function right after a module has been imported (or at once if it already is).

Used where smdebug must adapt to a library the program may or may not import, without importing it
itself: the zero-code attach functions run after their framework is imported, and the PyTorch hook
prepares for ``torch.compile`` only once ``torch._dynamo`` is loaded (importing it costs seconds).

A finder on ``sys.meta_path`` watches for the module's import; it costs nothing at other imports
beyond a string comparison, and removes itself once the module has been imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys
import threading
from typing import Callable, Dict, List

_log = logging.getLogger("smdebug")
_lock = threading.Lock()
#: module name -> callbacks waiting for its import
_waiting: Dict[str, List[Callable[[], None]]] = {}


def call_after_import(module: str, callback: Callable[[], None]) -> None:
    """Call ``callback()`` once ``module`` (a full dotted name) has been imported; at once if it is in
    ``sys.modules`` already. A callback's exception is logged, never raised into the importing code.

    A module that is being imported right now (in ``sys.modules`` but not finished) counts as imported:
    callers that need the finished module wait for a submodule it imports late instead.
    """
    if module in sys.modules:
        _run(module, callback)
        return
    with _lock:
        first = module not in _waiting
        _waiting.setdefault(module, []).append(callback)
    if first:
        sys.meta_path.insert(0, _AfterImport(module))


def _run(module: str, callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception as e:  # noqa: BLE001 - never break the program's import
        _log.error("smdebug: a set-up step after importing %s failed (%s: %s)", module, type(e).__name__, e)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds the watched module with the other finders, then runs the callbacks after its loader."""

    def __init__(self, module: str):
        self.module = module
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.module or self._busy:
            return None
        self._busy = True  # importlib.util.find_spec below comes back through this finder
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self)
        return spec

    def done(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        with _lock:
            callbacks = _waiting.pop(self.module, [])
        for callback in callbacks:
            _run(self.module, callback)


class _Loader(importlib.abc.Loader):
    def __init__(self, real, finder: _AfterImport):
        self.real, self.finder = real, finder

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        self.real.exec_module(module)
        self.finder.done()

    def __getattr__(self, name):  # get_resource_reader, is_package, get_code...: the real loader's
        return getattr(self.real, name)
