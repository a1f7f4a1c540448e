"""What the hook needs to know about ``torch.compile`` (TorchDynamo), without importing it.

Importing ``torch._dynamo`` takes seconds, so nothing here imports it: until the program imports it
(``torch.compile`` does), nothing can be compiled and every hook runs as plain Python. Once it is
loaded, the torch callbacks that do the hook's real work (begin a step, save parameters) must never be
traced: dynamo would compile their frames, and break its graphs on their locks and numpy arrays. Those
callbacks run where PyTorch calls them eagerly even for a compiled model (the hooks of the module that
``torch.compile`` wraps, optimizer hooks, gradient hooks), wrapped in :func:`torch.compiler.disable` so
that dynamo runs them as they are. The hooks of modules *inside* a compiled forward are traced: they
take :func:`is_compiling`'s branch, which only hands the tensors to the graph's outputs (see
``Hook._io_hook``).

A graph keeps the module hooks it was traced with, so the hook must have the right ones attached when
dynamo *begins* to trace, which no callback of the model tells in time for every way of compiling (a
compiled function calling the model, a recompilation, a resumed frame after a graph break): dynamo's own
compile callbacks do (:func:`watch_compiles`). ``torch._dynamo.reset()`` removes them; the hook's full
step path puts them back, and its quiet path is not taken while they are missing (:func:`compiles_watched`).
"""

from __future__ import annotations

import sys
import weakref
from typing import Callable

import torch

from smdebug.core.after_import import call_after_import

# (torch.compiler.is_compiling: torch 2.3 and later; nothing older can trace these hooks without breaking)
is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

_DYNAMO = "torch._dynamo"
_loaded = [False]
_waiting: "weakref.WeakSet" = weakref.WeakSet()  # objects told when dynamo loads (_on_dynamo_loaded)
_watching = [False]
_compile_watchers: "weakref.WeakSet" = weakref.WeakSet()  # objects told when dynamo compiles (_on_compile)
_start_callbacks = [None]  # dynamo's list of compile-start callbacks, once ours is in it


def dynamo_loaded() -> bool:
    return _loaded[0]


def _on_load() -> None:
    _loaded[0] = True
    for obj in list(_waiting):
        obj._on_dynamo_loaded()
    if _compile_watchers:
        watch_compiles()


def watch_compiles(obj=None) -> bool:
    """From now on, call ``obj._on_compile(True)`` when dynamo begins to compile a frame (before it
    traces anything) and ``obj._on_compile(False)`` when it is done; returns whether compiles are watched
    (False: torch has no compile callbacks, or dynamo is not loaded, so nothing can be compiled yet).
    Called again with no object, puts the callbacks back if ``torch._dynamo.reset()`` took them away."""
    if obj is not None:
        _compile_watchers.add(obj)
    if not _loaded[0]:
        return False
    handler = getattr(sys.modules.get(_DYNAMO), "callback_handler", None)
    if handler is None or not hasattr(handler, "register_end_callback"):
        return False
    if _compile_started not in handler.start_callbacks:
        handler.register_start_callback(_compile_started)
        handler.register_end_callback(_compile_ended)
        _start_callbacks[0] = handler.start_callbacks
    return True


def compiles_watched() -> bool:
    """Whether a compile would be told to the watchers (``torch._dynamo.reset()`` clears the callbacks);
    true while dynamo is not loaded: then nothing can be compiled."""
    if not _loaded[0]:
        return True
    callbacks = _start_callbacks[0]
    return callbacks is not None and _compile_started in callbacks


def _from_dynamo(args) -> bool:
    # (compiles of frames dynamo traces, not backward graphs compiled lazily or autotuning; torch versions
    # whose callbacks take no argument have only those)
    trigger = getattr(args, "callback_trigger", None)
    return trigger is None or getattr(trigger, "name", "DYNAMO") == "DYNAMO"


def _compile_started(args=None) -> None:
    if _from_dynamo(args):
        for obj in list(_compile_watchers):
            obj._on_compile(True)


def _compile_ended(args=None) -> None:
    if _from_dynamo(args):
        for obj in list(_compile_watchers):
            obj._on_compile(False)


def notify_when_loaded(obj) -> None:
    """Call ``obj._on_dynamo_loaded()`` when ``torch._dynamo`` is imported (not at all if it already is)."""
    if _loaded[0]:
        return
    _waiting.add(obj)
    if not _watching[0]:
        _watching[0] = True
        call_after_import(_DYNAMO, _on_load)


def eager(fn: Callable) -> Callable:
    """``fn``, made to run as plain Python when called from code dynamo is compiling (once dynamo is
    loaded; before that nothing is compiled and ``fn`` is returned unchanged)."""
    if not _loaded[0]:
        return fn
    return torch.compiler.disable(fn)


def runs_compiled(module: torch.nn.Module) -> bool:
    """Whether this call of ``module`` (asked from its forward pre-hook) runs its forward compiled:
    ``torch.compile(module)``, ``module.compile()``, a forward replaced by a compiled one (Lightning
    does so with ``trainer.fit(torch.compile(model))``), or a call from inside a compiled module."""
    if not _loaded[0]:
        return False
    attrs = module.__dict__
    if attrs.get("_compiled_call_impl") is not None or hasattr(attrs.get("forward"), "_torchdynamo_orig_callable"):
        return True
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return bool(getattr(eval_frame, "_in_optimized_module", False))
