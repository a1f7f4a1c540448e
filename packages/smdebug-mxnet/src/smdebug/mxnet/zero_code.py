"""Attach the MXNet hook to an unmodified Gluon script (``smdebug run``; see smdebug.zero_code).

``gluon.Block.__call__`` is wrapped to find the model and the losses without the script's help: the first
block called from outside any other block is the model (its children run inside its call); loss blocks
(``gluon.loss.Loss``) called from outside a block are the losses. They are registered before their call
runs, so that call is already recorded. The hook comes from the JSON configuration
(``SMDEBUG_CONFIG_FILE_PATH``), with the recommended preset when ``smdebug run`` asks for it
(smdebug.zero_code.preset); with ``USE_SMDEBUG=0`` nothing happens.
"""

from __future__ import annotations

import functools
import threading

from mxnet import gluon

from smdebug.core.hook import logger


def attach() -> None:
    from smdebug.mxnet.hook import Hook
    from smdebug.zero_code.preset import configured_hook

    hook = configured_hook(Hook)
    if hook is None:
        logger.info("smdebug: no hook configuration (or USE_SMDEBUG=0): running without a hook")
        return
    original = gluon.Block.__call__
    local = threading.local()
    seen = set()

    @functools.wraps(original)
    def __call__(self, *args, **kwargs):
        depth = getattr(local, "depth", 0)
        if depth == 0 and id(self) not in seen:
            seen.add(id(self))
            try:
                if isinstance(self, gluon.loss.Loss) or hook.model is None:
                    hook.register_block(self)
            except Exception as e:  # noqa: BLE001 - never break the script
                logger.error("smdebug: zero-code attach failed on %s: %s", type(self).__name__, e)
        local.depth = depth + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            local.depth = depth

    gluon.Block.__call__ = __call__
    logger.info("smdebug: hook attached to this MXNet script, saving to %s", hook.out_dir)
