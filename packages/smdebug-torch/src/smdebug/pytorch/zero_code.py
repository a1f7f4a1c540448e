"""Attach the PyTorch hook to an unmodified script (``smdebug run``; see smdebug.zero_code).

Plain PyTorch loops: a global module forward pre-hook finds the model and the losses without the script's
help: the first module to start a forward pass is the outermost one (a model's forward runs its children's
inside it), so it is registered as the model; loss modules (``torch.nn.modules.loss._Loss``) are registered
as losses the first time they run. Once the model starts its second forward call (a whole step has run,
its losses with it), the global hook is removed: it would otherwise cost time at every module call.

Trainers take over from it: Lightning asks for smdebug's callback through its callbacks-factory entry
points (``smdebug.pytorch.trainer_factories``), and Hugging Face Transformers' ``CallbackHandler`` gets
the callback added (it is patched right after ``transformers.trainer_callback`` is imported); the
callbacks register the trainer's model and remove the global hook before the trainer's first forward call.
A module the script ran before that (a shape check ``model(x[:2])``, a teacher network labelling the data)
began the first step here; that step is the trainer's to drop (smdebug.pytorch._trainer.take_over), so the
trainer's steps keep its own numbers. Only a single such call: a module called again before the trainer
took over began saved steps of its own, which stay, and the trainer's steps are numbered after them.

The hook comes from the JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``), with the recommended preset when
``smdebug run`` asks for it (smdebug.zero_code.preset); with ``USE_SMDEBUG=0`` nothing
happens.
"""

from __future__ import annotations

import functools
import warnings

import torch
from torch.nn.modules.loss import _Loss

from smdebug.core.after_import import call_after_import
from smdebug.core.hook import logger
from smdebug.pytorch import _dynamo

# (counters: the hook's step counters just before the first module's first call began a step, see steps_before)
_state = {"hook": None, "first": None, "handle": None, "counters": None}


def attached() -> bool:
    """True when ``smdebug run`` attached a hook to this process."""
    return _state["hook"] is not None


def steps_before(hook):
    """(global step, {mode: mode step}) of ``hook`` just before the zero-code attach began its first step (at
    the first module's first call), or None if it began none: what a trainer callback that takes over restores
    when it drops that step (see smdebug.pytorch._trainer.take_over)."""
    return _state["counters"] if _state["hook"] is hook else None


def hand_over(hook) -> None:
    """A trainer callback follows the model from now on: the global module hook goes."""
    handle, _state["handle"] = _state["handle"], None
    if handle is not None:
        handle.remove()


def attach() -> None:
    from smdebug.pytorch.hook import Hook
    from smdebug.zero_code.preset import configured_hook

    hook = configured_hook(Hook)
    if hook is None:
        logger.info("smdebug: no hook configuration (or USE_SMDEBUG=0): running without a hook")
        return
    _state["hook"] = hook
    # torch.compile warns that global hooks also fire for its wrapper module: this one knows (it registers
    # what the wrapper wraps), and is gone after the first step
    warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
    _state["handle"] = torch.nn.modules.module.register_module_forward_pre_hook(_on_forward_pre)
    call_after_import("transformers.trainer_callback", _patch_transformers)
    logger.info("smdebug: hook attached to this PyTorch script, saving to %s", hook.out_dir)


def _on_forward_pre(module, inputs):
    if _dynamo.is_compiling():
        return None  # (inside a compiled forward: the modules were met before, eagerly)
    hook = _state["hook"]
    try:
        if isinstance(module, _Loss):
            if module not in hook._loss_modules:
                hook.register_loss(module)  # its forward hook is attached for this very call if due
        elif _state["first"] is None:
            _state["first"] = module
            _state["counters"] = (hook.step, dict(hook.mode_steps))
            hook.register_module(module)
            if module is hook.model:
                # the pre-hook just added runs from the next call on; this call is the first step
                hook._on_model_forward_pre(module, inputs)
        elif module is _state["first"]:
            hand_over(hook)  # the model's second call: one whole step has run, its losses were met
    except Exception as e:  # noqa: BLE001 - never break the script
        logger.error("smdebug: zero-code attach failed on %s: %s", type(module).__name__, e)
    return None


def _patch_transformers() -> None:
    """Give every Hugging Face Trainer smdebug's callback (unless the script added one)."""
    from transformers import trainer_callback

    handler = getattr(trainer_callback, "CallbackHandler", None)
    if handler is None:  # being imported right now (torch was imported from inside it): wait for its user
        call_after_import("transformers.trainer", _patch_transformers)
        return
    if getattr(handler, "_smdebug_patched", False):
        return
    original = handler.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        try:
            from smdebug.pytorch.transformers import SmdebugCallback

            if _state["hook"] is not None and not any(isinstance(cb, SmdebugCallback) for cb in self.callbacks):
                self.add_callback(SmdebugCallback(hook=_state["hook"]))
        except Exception as e:  # noqa: BLE001
            logger.error("smdebug: could not add the callback to the Hugging Face Trainer: %s", e)

    handler.__init__ = __init__
    handler._smdebug_patched = True
