"""The hook the rule tests write their runs with (numpy values, no framework)."""

import time

import numpy as np

from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook
from smdebug import SaveConfig


class NumpyHook(BaseHook):
    framework_name = "rules-test"

    def default_collections(self):
        return [
            Collection("weights", include_regex=["^w"]),
            Collection("gradients", include_regex=["^gradient/"]),
            Collection("losses", include_regex=["loss"]),
        ]


def write_run(path, grad_means, close=True, delay=0.0):
    """A run of ``len(grad_means)`` steps: ``gradient/w`` (4 values equal to ``grad_means[step]``) and a falling
    ``loss``, saved at every step; ``close=False`` leaves it unfinished (no end marker)."""
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                     include_collections=["gradients", "losses"])
    for step, mean in enumerate(grad_means):
        hook.begin_step()
        hook.record("gradient/w", np.full((2, 2), mean, np.float32))
        hook.record("loss", np.float32(2.0 - 0.1 * step))
        hook.end_step()
        if delay:
            hook.flush()
            time.sleep(delay)
    if close:
        hook.close()
    return str(path)
