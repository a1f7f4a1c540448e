"""Attach the Keras hook to an unmodified script (``smdebug run``; see smdebug.zero_code).

``keras.Model.fit``, ``evaluate`` and ``predict`` are wrapped so that the KerasHook built from the JSON
configuration (``SMDEBUG_CONFIG_FILE_PATH``) joins their callbacks, unless the call already has a KerasHook.
The same hook serves every call of the script (train, then evaluation and prediction steps in their modes).
``smdebug run`` with --out-dir alone asks for the recommended preset (smdebug.zero_code.preset).

smdebug runs :func:`attach` once TensorFlow is imported. A script that imports ``keras`` first imports
TensorFlow (its backend) in the middle of Keras' own import, before ``keras.Model`` exists: the methods are
then wrapped as soon as the module that defines the Model class has been executed.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import sys

from smdebug.core.hook import logger

_MODEL_MODULE = "keras.src.models.model"  # defines keras.Model (Keras 3)
_METHODS = ("fit", "evaluate", "predict")
_state = {"patched": False}


def _with_hook(original):
    signature = inspect.signature(original)

    @functools.wraps(original)
    def method(self, *args, **kwargs):
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)  # let Keras report the bad call
        try:
            callbacks = _add_hook(bound.arguments.get("callbacks"))
        except Exception as e:  # noqa: BLE001 - never break the script
            logger.error("smdebug: could not add the hook to model.%s (%s: %s)", original.__name__,
                         type(e).__name__, e)
            return original(self, *args, **kwargs)
        if callbacks is None:
            return original(self, *args, **kwargs)
        bound.arguments["callbacks"] = callbacks
        return original(*bound.args, **bound.kwargs)

    method._smdebug_original = original
    return method


def _add_hook(callbacks):
    """The callbacks with the configured hook added, or None to leave them as they are."""
    from smdebug.tensorflow.keras import KerasHook
    from smdebug.zero_code.preset import configured_hook

    listed = getattr(callbacks, "callbacks", callbacks)  # a keras CallbackList (fit's validation) or a list
    if listed is not None and not isinstance(listed, (list, tuple)):
        listed = [listed]
    if any(isinstance(c, KerasHook) for c in listed or ()):
        return None
    hook = configured_hook(KerasHook)
    if not isinstance(hook, KerasHook):
        return None  # no configuration (or USE_SMDEBUG=0)
    if callbacks is not None and hasattr(callbacks, "callbacks"):
        return None  # a CallbackList built by Keras without our hook: not ours to change
    return [hook, *(listed or ())]


class _AfterModelModule(importlib.abc.MetaPathFinder):
    """Wraps the Model methods right after ``keras.src.models.model`` has been executed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _MODEL_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                real.exec_module(module)
                _patch_keras_when_ready()

        spec.loader = _Loader()
        return spec


def _patch_keras_when_ready() -> None:
    module = sys.modules.get(_MODEL_MODULE)
    if module is not None and getattr(module, "Model", None) is not None:
        _patch_class(module.Model)


def _patch_class(cls) -> None:
    if _state["patched"]:
        return
    _state["patched"] = True
    for name in _METHODS:
        original = getattr(cls, name)
        if getattr(original, "_smdebug_original", None) is None:
            setattr(cls, name, _with_hook(original))
    logger.info("smdebug: keras.Model.fit/evaluate/predict will run with the smdebug hook")


def attach() -> None:
    module = sys.modules.get(_MODEL_MODULE)
    if module is not None and getattr(module, "Model", None) is not None:
        _patch_class(module.Model)  # Keras is already imported
    elif not any(isinstance(f, _AfterModelModule) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterModelModule())
