"""smdebug for PyTorch Lightning: ``SmdebugCallback``.

```python
from smdebug.pytorch.lightning import SmdebugCallback

trainer = L.Trainer(callbacks=[SmdebugCallback(out_dir="/tmp/run", include_collections=["weights", "gradients"])])
```

* Modes: ``fit`` trains in TRAIN and validates in EVAL; ``validate`` and ``test`` are EVAL; ``predict``
  is PREDICT (the sanity check before fitting is not saved).
* Steps: a TRAIN step is one optimizer step, numbered by the trainer's ``global_step`` (the batches of
  gradient accumulation belong to it); each EVAL/PREDICT batch is one step of its mode. An optimizer step
  an evaluation interrupts is saved up to the evaluation (a step cannot be reopened). Training batches that
  go on with no optimizer step for longer than a step can gather (automatic optimization: more than
  ``accumulate_grad_batches``; manual: more than an epoch's batches, or than the longest stretch between two
  optimizer steps so far) are each a TRAIN step of their own, numbered on from the last, with their
  gradients saved at the batch's end, until an optimizer step comes: a run that never steps its optimizer
  (manual optimization without ``optimizer.step()``) is a series the rules can judge, not one step.
* Saved: parameters at the start of the step, gradients at Lightning's ``on_before_optimizer_step``
  (unscaled under mixed precision), the loss ``training_step`` (``validation_step``, ``test_step``)
  returns (``loss_output_<i>``, one per batch, as the step computed it: not divided by
  ``accumulate_grad_batches``), and each value the module logs with ``self.log``/``self.log_dict`` during
  a step, under its own name (``losses`` collection for names with "loss", ``metrics`` for the others;
  the value of the step's last batch): the value logged, not the epoch aggregate Lightning computes
  from it. Values logged between steps (``on_train_epoch_end``) belong to no step and are not saved;
  ``on_validation_epoch_end``'s go into the loop's last step. Plus everything the hook's collections ask
  for (layer inputs/outputs, activations...). With the default configuration the ``metrics`` collection
  is included too. A step whose batch never went through the module's own ``forward`` (``training_step``
  calling ``self.encoder(x)``, not ``self(x)``) has the batch saved as the model's input
  (``<Model>_input_0``: the first tensor of ``(x, y)``; a dict batch's tensors by key), for the input rules.
* Works with the ``lightning`` package and with ``pytorch_lightning``; with DDP every rank runs the
  callback, and ``include_workers`` decides which ranks write.

The hook comes from ``SmdebugCallback(hook=...)``, or is built from keyword arguments (those of
``smdebug.pytorch.Hook``), or from the JSON configuration (``smdebug run``).
"""

from __future__ import annotations

import importlib
from typing import Mapping, Optional

import torch

from smdebug.core.modes import ModeKeys
from smdebug.pytorch import _trainer
from smdebug.pytorch.hook import Hook

_PACKAGES = ("lightning.pytorch", "pytorch_lightning")


def _bases(package: Optional[str] = None) -> tuple:
    """Lightning's Callback classes: of ``package``, else of both Lightning packages that are installed
    (a callback that is an instance of both works with either package's Trainer)."""
    bases = []
    for name in ((package,) if package else _PACKAGES):
        try:
            bases.append(importlib.import_module(name).Callback)
        except ImportError:
            continue
    if not bases:
        raise ModuleNotFoundError("smdebug.pytorch.lightning needs PyTorch Lightning: "
                                  "pip install 'smdebug-torch[lightning]'")
    return tuple(bases)


class _Follower:
    """smdebug's Lightning callback (see the module's docstring): ``SmdebugCallback(hook=None, **hook_kwargs)``."""

    def __init__(self, hook: Optional[Hook] = None, **hook_kwargs):
        super().__init__()
        self._hook_arg, self._hook_kwargs = hook, hook_kwargs
        self.hook: Optional[Hook] = None
        self._active = False
        self._train_step: Optional[int] = None  # the global step of the TRAIN step open in the hook
        self._last_train_step: Optional[int] = None  # the global step of the last TRAIN step begun
        self._logged: dict = {}  # name -> value the module logged in the open step
        self._forwards_before = 0  # the hook's count of model forward calls when the batch began
        # Batches with no optimizer step (see _no_step_batch): the global step when the batch began, the batches
        # since the last optimizer step, the longest such stretch that ended in one, whether the stretch has
        # gone on too long to be one optimizer step (each batch is then a step), and how far the step numbers
        # run ahead of the global step because of such batches
        self._batch_global_step: Optional[int] = None
        self._batches_without_step = 0
        self._longest_window = 0  # (0: no optimizer step seen yet)
        self._stalled = False
        self._step_offset = 0
        self._gradients_saved = False  # the open TRAIN step has saved its gradients
        self._said_stalled = False
        self._log_wrapper = None

    # -- set-up ------------------------------------------------------------------------------------
    def setup(self, trainer, pl_module, stage: str) -> None:
        if any(isinstance(cb, _Follower) for cb in trainer.callbacks[:trainer.callbacks.index(self)]):
            return  # another smdebug callback came first (e.g. the user's, and zero-code's)
        if self.hook is None:
            self.hook = _trainer.resolve_hook(self._hook_arg, self._hook_kwargs)
        if self.hook is None:
            return
        _trainer.take_over(self.hook, pl_module)
        # Every step is begun and ended here; gradients are saved at on_before_optimizer_step
        self.hook._follow_trainer(tuple(ModeKeys), gradients="manual")
        self._listen_to_log(pl_module)
        self._active = True

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if self._log_wrapper is not None and pl_module.__dict__.get("log") is self._log_wrapper:
            del pl_module.log  # the class's own method again
        self._log_wrapper = None

    def _listen_to_log(self, pl_module) -> None:
        """Keep what the module logs during a step (``self.log``; ``log_dict`` calls it): the
        instance's ``log`` is wrapped until teardown."""
        if self._log_wrapper is not None and pl_module.__dict__.get("log") is self._log_wrapper:
            return
        original, logged = pl_module.log, self._logged

        def log(name, value, *args, **kwargs):
            result = original(name, value, *args, **kwargs)  # (Lightning's own errors are the script's)
            hook = self.hook
            if hook is not None and hook._in_step:
                # (the last value of the step is saved, at its end: see _save_logged)
                logged[name] = value.detach() if isinstance(value, torch.Tensor) else value
            return result

        self._log_wrapper = log
        pl_module.log = log

    def _save_logged(self) -> None:
        if self._logged:
            _trainer.save_logged(self.hook, self._logged)
            self._logged.clear()

    def _end_step(self) -> None:
        if self.hook._in_step:
            self._save_logged()
            self.hook.end_step()
        self._logged.clear()
        self._train_step = None

    # -- training ----------------------------------------------------------------------------------
    def _batch_begins(self) -> None:
        self._forwards_before = self.hook._trainer_forwards

    def _batch_ends(self, batch) -> None:
        # A step whose batch never went through the model's own forward (training_step calling
        # self.encoder(x), not self(x)): the batch is the model's input, which the input rules judge
        if self.hook._trainer_forwards == self._forwards_before:
            self.hook._save_batch_input(batch)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if not self._active:
            return
        self._batch_begins()
        self._batch_global_step = trainer.global_step
        step = trainer.global_step + self._step_offset
        if self._train_step == step and self.hook.mode == ModeKeys.TRAIN and self.hook._in_step:
            return  # another batch of the same optimizer step (gradient accumulation)
        self._end_step()
        if step == self._last_train_step:
            # The optimizer step began before an evaluation, which ended it in the hook (manual optimization
            # stepping across an epoch's end): a step cannot be reopened, and beginning it again would number
            # it one on, and every later step with it. Its batches up to the optimizer step are not saved.
            return
        self.hook.set_mode(ModeKeys.TRAIN)
        self.hook.begin_step(mode_step=step)
        self._train_step = self._last_train_step = step
        self._gradients_saved = False

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        if self._active and self._train_step is not None:
            self.hook._save_gradients(optimizer)
            self._gradients_saved = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self._active:
            return
        stepped = self._batch_global_step is None or trainer.global_step != self._batch_global_step
        if self._train_step is not None:
            # Under automatic optimization Lightning hands callbacks the loss divided by accumulate_grad_batches
            # (what backward ran on); the loss training_step computed is saved
            self._save_loss(outputs, trainer.accumulate_grad_batches if pl_module.automatic_optimization else 1)
            self._batch_ends(batch)
        # (no TRAIN step open: the rest of an optimizer step an evaluation ended; its batches still count)
        if stepped:  # the optimizer stepped: the step is complete
            if not self._stalled:  # (a stretch that stalled was no accumulation window)
                self._longest_window = max(self._longest_window, self._batches_without_step + 1)
            self._batches_without_step = 0
            self._stalled = False
            self._end_step()
        else:
            self._no_step_batch(trainer, pl_module)

    def _no_step_batch(self, trainer, pl_module) -> None:
        """A training batch ended with no optimizer step. Normally it belongs to the optimizer step to come
        (gradient accumulation, Lightning's or a manual loop's). But when no optimizer step comes in more batches
        than one step can gather -- under automatic optimization Lightning's own window,
        ``accumulate_grad_batches``; under manual optimization, where only the module knows, an epoch's batches
        or the longest stretch between optimizer steps seen, whichever is longer -- the global step has stopped
        (``optimizer.step()`` is never called, or always skipped): steps that follow it would make the whole
        rest of training one step, with no gradients and no curve for any rule. From then on, until an
        optimizer step comes, each batch is a TRAIN step, numbered on from the last one (the numbers then run
        ahead of the global step by the batches that did not step), its gradients saved at its end."""
        self._batches_without_step += 1
        if not self._stalled and self._batches_without_step >= self._window(trainer, pl_module):
            self._stalled = True
            if not self._said_stalled:
                self._said_stalled = True
                from smdebug.core.hook import logger

                hint = ("manual optimization: is optimizer.step() called?" if not pl_module.automatic_optimization
                        else "does an optimizer_step override skip the step?")
                logger.warning(
                    "smdebug: %d training batches ran with no optimizer step (trainer.global_step stays %d; %s): "
                    "until one comes, each training batch is a TRAIN step of its own",
                    self._batches_without_step, trainer.global_step, hint)
        if not self._stalled:
            return
        if self._train_step is not None and not self._gradients_saved:
            self.hook._save_gradients()  # (what backward left: no optimizer step will read them)
        self._end_step()
        self._step_offset += 1  # the next batch, at the same global step, begins the next step

    def _window(self, trainer, pl_module) -> float:
        """The most batches one optimizer step can gather (see _no_step_batch)."""
        if pl_module.automatic_optimization:
            return max(1, int(trainer.accumulate_grad_batches))
        epoch = trainer.num_training_batches
        if not isinstance(epoch, (int, float)) or epoch != epoch or epoch == float("inf"):
            # (an iterable dataset of unknown length: only a window seen tells)
            return self._longest_window or float("inf")
        return max(self._longest_window, int(epoch), 1)

    def on_sanity_check_start(self, trainer, pl_module) -> None:
        # (the sanity check is not saved: no step is open while it runs, so neither the module's layers nor its
        # self.log calls save anything; a step left open would take its batches as that step's data)
        if self._active:
            self._end_step()

    def on_train_start(self, trainer, pl_module) -> None:
        # (a second fit() counts its own stretch of batches; the step numbers keep running ahead, if they did)
        self._batch_global_step, self._batches_without_step, self._stalled = None, 0, False

    def on_train_end(self, trainer, pl_module) -> None:
        if self._active:
            self._end_step()

    # -- evaluation and prediction: one step per batch ---------------------------------------------
    def _eval_batch_start(self, trainer, mode) -> None:
        if not self._active or trainer.sanity_checking:
            return
        self._end_step()
        self.hook.set_mode(mode)
        self.hook.begin_step()
        self._batch_begins()

    def _eval_batch_end(self, trainer, outputs, batch) -> None:
        # (the step stays open until the next batch or the end of the loop: what on_*_epoch_end logs
        # goes into the loop's last step)
        if not self._active or trainer.sanity_checking:
            return
        self._save_loss(outputs)
        self._batch_ends(batch)

    def _eval_end(self, trainer) -> None:
        if not self._active or trainer.sanity_checking:
            return
        self._end_step()

    def on_validation_end(self, trainer, pl_module) -> None:
        self._eval_end(trainer)

    def on_test_end(self, trainer, pl_module) -> None:
        self._eval_end(trainer)

    def on_predict_end(self, trainer, pl_module) -> None:
        self._eval_end(trainer)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._eval_batch_start(trainer, ModeKeys.EVAL)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._eval_batch_end(trainer, outputs, batch)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._eval_batch_start(trainer, ModeKeys.EVAL)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._eval_batch_end(trainer, outputs, batch)

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._eval_batch_start(trainer, ModeKeys.PREDICT)

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._eval_batch_end(trainer, None, batch)  # (predictions are not losses)

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self._active:
            self._end_step()

    # -- helpers -----------------------------------------------------------------------------------
    def _save_loss(self, outputs, normalized_by: int = 1) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            loss = loss.detach()
            self.hook.record_tensor_value("loss", loss * normalized_by if normalized_by != 1 else loss)


_classes = {}


def callback_class(package: Optional[str] = None):
    """``SmdebugCallback`` for ``package`` ("lightning.pytorch" or "pytorch_lightning"; default: both
    that are installed)."""
    bases = _bases(package)
    cls = _classes.get(bases)
    if cls is None:
        cls = _classes[bases] = type("SmdebugCallback", (_Follower, *bases), {"__module__": __name__,
                                                                            "__doc__": _Follower.__doc__})
    return cls


def __getattr__(name: str):
    if name == "SmdebugCallback":
        return callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
