"""Telling a loop that trains with the model left in ``eval()`` mode.

Until the script calls ``set_mode``, the hook reads the mode of each forward call from the model's training
flag (see the hook). A loop that called ``model.eval()`` (a validation helper) and never ``model.train()`` again
trains on: its steps are saved as EVAL steps, no gradient is due, and the rules that need training data say
they could not judge, with nothing saying why. Dropout and BatchNorm behave as in evaluation, which is the bug
itself. An optimizer stepping the model during such a step is the evidence: said once in the training log and
recorded in the run (``_meta.trained_in_eval``) for the rules to say.

Listened to only at steps where the hook saves something and while it follows the training flag: steps with
nothing due pay nothing.
"""

from __future__ import annotations

from smdebug.core.modes import ModeKeys
from smdebug.core.run_info import TRAINED_IN_EVAL_KEY


class TrainedInEval:
    def __init__(self, hook):
        self.hook = hook
        self._handle = None
        self.found = False

    def listen(self, on: bool) -> None:
        on = on and not self.found
        if on and self._handle is None:
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            self._handle = register_optimizer_step_pre_hook(self._on_step)
        elif not on and self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _on_step(self, optimizer, args, kwargs):
        hook = self.hook
        if hook.mode is not ModeKeys.EVAL or hook._modes_by_flag is None or hook._disabled or self.found:
            return None
        try:
            if not hook._grads._ours(optimizer):
                return None  # (another model's optimizer)
            self.found = True
            hook.collection_manager.meta[TRAINED_IN_EVAL_KEY] = {"step": int(hook.step)}
            hook._warn_once(
                "trained-in-eval", "smdebug: an optimizer stepped the model at step %d while the model was in eval() "
                "mode (model.training is False) and the script has not called hook.set_mode: the hook reads the mode "
                "from the model's training flag, so these steps are saved as EVAL steps and no rule judges them as "
                "training. Was model.eval() left on while training? Call model.train() before training (dropout and "
                "BatchNorm also behave as in evaluation), or name the modes with hook.set_mode.", hook.step)
            self.listen(False)
        except Exception as e:  # noqa: BLE001
            hook._fail("the optimizer step hook", e)
        return None
