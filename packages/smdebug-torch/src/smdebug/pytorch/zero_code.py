"""Attach the PyTorch hook to an unmodified script (``smdebug run``; see smdebug.zero_code).

Global module hooks find the model and the losses without the script's help: the first module to start a
forward pass is the outermost one (a model's forward runs its children's inside it), so it is registered as
the model; loss modules (``torch.nn.modules.loss._Loss``) are registered as losses the first time they run.
The hook comes from the JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``); with ``USE_SMDEBUG=0`` nothing
happens. Gradients come from the parameters' hooks (no optimizer registration: that would change the hooks
of an optimizer step already under way).
"""

from __future__ import annotations

import torch
from torch.nn.modules.loss import _Loss

from smdebug.core.hook import logger


def attach() -> None:
    from smdebug.pytorch.hook import get_hook

    hook = get_hook(create_if_not_exists=True)
    if hook is None:
        logger.info("smdebug: no hook configuration (or USE_SMDEBUG=0): running without a hook")
        return
    state = {"model": None, "losses": set()}

    def on_forward_pre(module, inputs):
        try:
            if isinstance(module, _Loss):
                if id(module) not in state["losses"]:
                    state["losses"].add(id(module))
                    hook.register_loss(module)  # its forward hook runs for this very call
            elif state["model"] is None:
                state["model"] = module
                hook.register_module(module)
                hook._on_model_forward_pre(module, inputs)  # the hook just added would only run next call
        except Exception as e:  # noqa: BLE001 - never break the script
            logger.error("smdebug: zero-code attach failed on %s: %s", type(module).__name__, e)
        return None

    torch.nn.modules.module.register_module_forward_pre_hook(on_forward_pre)
    logger.info("smdebug: hook attached to this PyTorch script, saving to %s", hook.out_dir)
