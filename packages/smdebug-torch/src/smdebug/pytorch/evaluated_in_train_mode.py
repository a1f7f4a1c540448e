"""Telling a loop that validates with the model left in ``train()`` mode.

A validation pass written as ``with torch.no_grad(): model(x_val)`` without ``model.eval()`` runs Dropout at
random and BatchNorm on the batch's own statistics, which it also folds into the running statistics the model
keeps for inference: the validation scores are noisy and biased, and the validation data leaks into the model.
The hook reads the mode of a forward call from the model's training flag, so these passes are filed as
training steps: the run seems to have no validation at all, and every rule that judges one passes it.

The evidence is forward calls of the model without gradients (``torch.no_grad()``, ``torch.inference_mode()``)
while ``model.training`` is True, between forwards that train (gradients on, the model in train mode), after a
stretch of at least :data:`MIN_TRAINING_FORWARDS` training forwards: a validation pass comes after an epoch's
batches, and runs :data:`MIN_NO_GRADIENT_FORWARDS` batches at least (a GAN's generator showing its progress on
one batch of fixed noise is no validation). A dry run before training (a dummy batch to find shapes, a model
summary) is no validation, and nor are
no-gradient forwards that are part of each training iteration: a GAN's generator making fakes for the critic's
step (``with torch.no_grad(): fake = G(z)``, BatchNorm meant to be in train mode), pseudo-labels or consistency
targets of the unlabelled batch about to be trained on.
A model with nothing that behaves differently in ``train()`` mode (no Dropout, no BatchNorm keeping running
statistics) is not concerned: evaluating it in either mode gives the same answer. No-gradient forwards at the
end of training with no training after them (``torch.optim.swa_utils.update_bn`` recomputing BatchNorm's
statistics) are not this. Said once in the training log and recorded in the run
(``_meta.evaluated_in_train_mode``) for the rules to report.

Cheap: one look at the model's training flag and the grad mode per forward call, until said or until the model
is found to have nothing mode-dependent (and a method call for the first training forwards after each stretch).
"""

from __future__ import annotations

from typing import List

import torch

from smdebug.core.run_info import EVALUATED_IN_TRAIN_MODE_KEY

#: how many of the model's mode-dependent modules the record names
_MAX_NAMED = 10
#: no-gradient forwards a stretch needs to count: a validation pass runs several batches, while a GAN that shows
#: its progress (``with torch.no_grad(): netG(fixed_noise)`` every few hundred iterations, in train() mode as
#: PyTorch's DCGAN tutorial does) runs one
MIN_NO_GRADIENT_FORWARDS = 2
#: consecutive training forwards that must come before a stretch of no-gradient forwards for it to count: an
#: epoch's batches come before a validation pass, while a method that runs the model without gradients as part of
#: each training iteration (a GAN's fakes, pseudo-labels or consistency targets of unlabelled data) has one to
#: three training forwards between such calls
MIN_TRAINING_FORWARDS = 4


def mode_dependent_modules(model: torch.nn.Module) -> List[str]:
    """The names of ``model``'s modules that compute differently in ``train()`` mode: dropout of a non-zero
    rate, and normalisation layers that keep running statistics (BatchNorm; InstanceNorm with
    ``track_running_stats``)."""
    from torch.nn.modules.batchnorm import _BatchNorm
    from torch.nn.modules.dropout import _DropoutNd
    from torch.nn.modules.instancenorm import _InstanceNorm

    found = []
    for name, module in model.named_modules():
        if isinstance(module, _DropoutNd):
            dependent = float(getattr(module, "p", 0.0)) > 0.0
        elif isinstance(module, (_BatchNorm, _InstanceNorm)):
            dependent = bool(getattr(module, "track_running_stats", False))
        else:
            continue
        if dependent:
            found.append(name or type(module).__name__)
    return found


class EvaluatedInTrainMode:
    def __init__(self, hook):
        self.hook = hook
        #: still looking (False once said, or once the model has nothing mode-dependent)
        self.armed = True
        #: the hook must see the next forward that trains (a stretch of no-gradient forwards is open, or fewer
        #: than MIN_TRAINING_FORWARDS training forwards followed the last one)
        self.watching = True
        self._run = 0  # consecutive training forwards (gradients on, train() mode), up to MIN_TRAINING_FORWARDS
        self._stretch = 0  # no-gradient forwards in train() mode since the last training forward
        self._counts = False  # whether the open stretch began after MIN_TRAINING_FORWARDS training forwards
        self._modules = None  # (the model's mode-dependent modules, looked up at the first such forward)

    def on_forward(self, module: torch.nn.Module) -> None:
        """(a forward call of the registered model in train() mode, when ``watching`` or with gradients off)"""
        if not torch.is_grad_enabled():
            if self._stretch == 0:
                # (before any training: a dry run; within a training iteration: a GAN's fakes, pseudo-labels)
                self._counts = self._run >= MIN_TRAINING_FORWARDS
                self._run = 0
            self._stretch += 1
            self.watching = True
            if self._counts and self._modules is None:
                self._modules = mode_dependent_modules(module)
                if not self._modules:
                    self.armed = False  # nothing behaves differently in train() mode: nothing to say
            return
        if _in_backward():
            return  # (a checkpointed forward recomputed during backward: part of training itself)
        forwards, counts = self._stretch, self._counts
        self._stretch, self._counts = 0, False
        self._run = min(self._run + 1, MIN_TRAINING_FORWARDS)
        self.watching = self._run < MIN_TRAINING_FORWARDS
        if not (forwards >= MIN_NO_GRADIENT_FORWARDS and counts):
            return
        self.armed = False
        hook = self.hook
        if hook._disabled:
            return
        step = int(hook.step) + 1  # (this forward call begins the next step)
        hook.collection_manager.meta[EVALUATED_IN_TRAIN_MODE_KEY] = {
            "step": step, "forwards": forwards, "modules": self._modules[:_MAX_NAMED]}
        named = ", ".join(self._modules[:3]) + (", ..." if len(self._modules) > 3 else "")
        hook._warn_once(
            "evaluated-in-train-mode", "smdebug: the model ran %d forward pass(es) without gradients while in train() "
            "mode (model.training is True) before training went on at step %d: a validation under torch.no_grad() "
            "without model.eval()? Its Dropout/BatchNorm layers (%s) then behave as in training (BatchNorm also learns "
            "the validation data's statistics), and the hook files these passes as training steps. Call "
            "model.eval() before validating and model.train() after.", forwards, step, named)


def _in_backward() -> bool:
    current = getattr(torch._C, "_current_graph_task_id", None)
    try:
        return current is not None and current() != -1
    except Exception:  # noqa: BLE001 - an internal that may change: assume not
        return False
