"""What the Lightning and Hugging Face callbacks share: finding or building the hook, taking over from
the zero-code attach, and saving what the trainer logs."""

from __future__ import annotations

import numbers
from typing import Any, Mapping, Optional

import torch

from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import logger
from smdebug.core.modes import ModeKeys
from smdebug.pytorch.hook import Hook, _unwrap, get_hook


def resolve_hook(hook: Optional[Hook], hook_kwargs: Mapping[str, Any]) -> Optional[Hook]:
    """The callback's hook: the one given, one built from keyword arguments, the process's hook, or
    one built from the JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``, as ``smdebug run`` sets)."""
    if hook is not None:
        if not isinstance(hook, Hook):
            raise TypeError(f"hook must be a smdebug.pytorch.Hook, got {type(hook).__name__}")
        return hook
    if hook_kwargs:
        return Hook(**hook_kwargs)
    found = get_hook()
    if isinstance(found, Hook):
        return found
    found = get_hook(create_if_not_exists=True)
    if found is None:
        logger.warning("smdebug: the callback has no hook (give it one, or out_dir=..., or a JSON configuration "
                       "in SMDEBUG_CONFIG_FILE_PATH); training runs without saving")
    return found


def take_over(hook: Hook, model: torch.nn.Module) -> None:
    """The callback follows ``model`` from now on: the zero-code attach (if it runs) stands down, a step still
    open from before the trainer ran is ended or dropped (see _end_step_before_trainer), and a model the
    zero-code attach registered by its first forward call gives way. A hook with the default configuration
    (losses) saves the trainer's metrics too."""
    from smdebug.pytorch import zero_code

    zero_code.hand_over(hook)
    _end_step_before_trainer(hook, zero_code.steps_before(hook))
    if hook.has_default_hook_configuration() and CollectionKeys.METRICS not in hook.include_collections:
        # (as the Keras hook's defaults: the losses, and the metrics the trainer logs)
        hook.include_collections.append(CollectionKeys.METRICS)
    if hook.model is not None and hook.model is _unwrap(model):
        return  # (Lightning's setup of each validate()/test() after fit: the model the hook follows already)
    if hook.model is not None and getattr(hook.model, "_orig_mod", None) is not model:
        logger.info("smdebug: the trainer's model replaces %s in the hook", hook.model_name)
        hook.remove()
    hook.register_module(model)


def _end_step_before_trainer(hook: Hook, counters) -> None:
    """A step open when the trainer takes over was begun by a module called before training: the zero-code
    attach's first step (a shape check ``model(x[:2])``, a teacher network labelling the data), or the model's
    forward hook. It is not one of the trainer's steps, and left open it took what ran next (Lightning's
    sanity-check batches and ``val_loss``, as TRAIN data) while the trainer's first step, asked as its global
    step 0, collided with it and every TRAIN step was numbered one on. When nothing before it was saved, it is
    discarded (its files are not written) and the step counters go back to where they were before it
    (``counters``: (global step, {mode: step}); None: unknown), so the trainer numbers its steps itself; when
    earlier steps are saved their numbers stand, and the open step is ended here."""
    if counters is None and getattr(hook, "training_run", 0) == 0:
        counters = (hook.init_step, {mode: hook.init_step for mode in ModeKeys})  # (a hook that did not resume)
    with hook._step_lock:
        if not hook._in_step:
            return
        if counters is not None and hook.discard_open_step(*counters):
            logger.info("smdebug: the step begun by %s's call before the trainer took over is not saved; the "
                        "trainer's steps are numbered from its own count", hook.model_name)
            return
    logger.info("smdebug: step %d, begun before the trainer took over, ends here: the trainer's steps follow it",
                hook.step)
    hook.end_step()


def save_logged(hook: Hook, metrics: Optional[Mapping[str, Any]]) -> None:
    """Save what a trainer logged, each value under its own name: names with "loss" in the ``losses``
    collection, the others in ``metrics``; at steps where that collection is due."""
    if not metrics or not hook._due:
        return
    for name, value in metrics.items():
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                continue
            value = value.detach()
        elif not isinstance(value, numbers.Number) or isinstance(value, bool):
            continue
        collection = CollectionKeys.LOSSES if "loss" in name.lower() else CollectionKeys.METRICS
        hook._save_named(str(name), value, collection)
