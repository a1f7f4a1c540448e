"""smdebug for the Hugging Face Transformers ``Trainer``: ``SmdebugCallback``.

```python
from smdebug.pytorch.transformers import SmdebugCallback

trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[SmdebugCallback(out_dir="/tmp/run")])
```

* Modes: ``train()`` is TRAIN, ``evaluate()`` EVAL, ``predict()`` PREDICT.
* Steps: a TRAIN step is one optimizer step, numbered by ``state.global_step`` (the micro-batches of
  gradient accumulation belong to it); each evaluation/prediction batch is one step of its mode.
* Saved: parameters at the start of the step; gradients just before the optimizer applies them
  (unscaled under fp16 mixed precision, summed over accumulation); the loss the model returns
  (``loss_output_<i>``, one per micro-batch); the learning rate (``learning_rate``, ``metrics``
  collection); what the Trainer logs (``on_log``: ``loss``, ``grad_norm``...: names with "loss" in the
  ``losses`` collection, the others in ``metrics``); plus everything the hook's collections ask for.

The hook comes from ``SmdebugCallback(hook=...)``, or is built from keyword arguments (those of
``smdebug.pytorch.Hook``), or from the JSON configuration (``smdebug run``).
"""

from __future__ import annotations

import sys
from typing import Optional

from transformers import TrainerCallback

from smdebug.core.collection import CollectionKeys
from smdebug.core.modes import ModeKeys
from smdebug.core import loss_inputs
from smdebug.pytorch import _trainer, model_loss
from smdebug.pytorch.hook import Hook

_TRAINER_MODES = {"evaluate": ModeKeys.EVAL, "predict": ModeKeys.PREDICT}


def _loop_mode() -> ModeKeys:
    """EVAL or PREDICT: which Trainer method is running (the callbacks are not told when
    ``evaluate()`` or ``predict()`` begins; their frames on the stack are)."""
    frame = sys._getframe(2)
    for _ in range(64):
        if frame is None:
            break
        mode = _TRAINER_MODES.get(frame.f_code.co_name)
        if mode is not None and type(frame.f_locals.get("self")).__module__.startswith("transformers"):
            return mode
        frame = frame.f_back
    return ModeKeys.EVAL


# the heads whose loss is a cross-entropy over the logits' last axis against the ``labels`` (class ids, -100
# ignored): transformers' ``loss_type`` names, and the class name endings that imply them for models without it
_CROSS_ENTROPY_HEADS = ("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForTokenClassification",
                        "ForMultipleChoice", "ForConditionalGeneration")
_PROBLEM_TYPES = {
    "single_label_classification": model_loss.ModelLoss("CrossEntropyLoss", loss_inputs.LOGITS),
    "multi_label_classification": model_loss.ModelLoss("BCEWithLogitsLoss", loss_inputs.LOGITS),
    "regression": model_loss.ModelLoss("MSELoss", loss_inputs.REGRESSION, squeeze=True),
}


def head_loss(model) -> Optional[model_loss.ModelLoss]:
    """The loss the Hugging Face model's head computes when given ``labels``, by what transformers says of
    the model (``model.loss_type``, ``config.problem_type``, ``config.num_labels``) or its class name; None for
    a head not known here (its loss is then not judged: no record, as before)."""
    loss_type = getattr(model, "loss_type", None)
    name = type(model).__name__
    config = getattr(model, "config", None)
    if loss_type == "ForSequenceClassification" or name.endswith("ForSequenceClassification"):
        problem = getattr(config, "problem_type", None)
        if problem in _PROBLEM_TYPES:
            return _PROBLEM_TYPES[problem]
        # (set at the first forward by the labels: one output is a regression, else a cross-entropy on class
        # ids or a multi-label BCE; both of those want logits)
        if getattr(config, "num_labels", None) == 1:
            return _PROBLEM_TYPES["regression"]
        return model_loss.ModelLoss("CrossEntropyLoss or BCEWithLogitsLoss (config.problem_type)",
                                    loss_inputs.LOGITS)
    if (isinstance(loss_type, str) and loss_type in _CROSS_ENTROPY_HEADS) or name.endswith(_CROSS_ENTROPY_HEADS):
        return model_loss.ModelLoss("CrossEntropyLoss", loss_inputs.LOGITS)
    return None


class SmdebugCallback(TrainerCallback):
    """smdebug's Trainer callback (see the module's docstring): ``SmdebugCallback(hook=None, **hook_kwargs)``."""

    def __init__(self, hook: Optional[Hook] = None, **hook_kwargs):
        self._hook_arg, self._hook_kwargs = hook, hook_kwargs
        self.hook: Optional[Hook] = None
        self._eval_mode: Optional[ModeKeys] = None  # of the evaluation/prediction loop running

    def on_init_end(self, args, state, control, model=None, **kwargs):
        if self.hook is None:
            self.hook = _trainer.resolve_hook(self._hook_arg, self._hook_kwargs)
        if self.hook is None or model is None:
            return
        _trainer.take_over(self.hook, model)
        # TRAIN steps are begun and ended here; evaluation and prediction batches are one forward call
        # each, and begin their steps there, in the mode the model's training flag and the loop tell
        self.hook._follow_trainer((ModeKeys.TRAIN, ModeKeys.GLOBAL))
        self.hook._forward_mode = self._mode_of_forward
        self.hook._loss_in_output = True
        head = head_loss(model)
        if head is not None:
            model_loss.follow(self.hook, head)
        self.hook._rewire_later()

    def _mode_of_forward(self, module) -> Optional[ModeKeys]:
        if module.training:
            self._eval_mode = None
            return ModeKeys.TRAIN
        if self._eval_mode is None:
            self._eval_mode = _loop_mode()
        return self._eval_mode

    def on_step_begin(self, args, state, control, **kwargs):
        if self.hook is not None:
            self.hook.set_mode(ModeKeys.TRAIN)
            self.hook.begin_step(mode_step=state.global_step)

    def on_optimizer_step(self, args, state, control, optimizer=None, **kwargs):
        # the learning rate the optimizer just applied (on_step_end comes after the scheduler's step)
        if self.hook is None or not self.hook._due or optimizer is None:
            return
        self.hook._save_named("learning_rate", float(optimizer.param_groups[0]["lr"]), CollectionKeys.METRICS)

    def on_log(self, args, state, control, logs=None, **kwargs):
        # (the step logged for is still open: training's until the next step begins, evaluate()'s until
        # on_evaluate; the learning rate was saved at the optimizer step)
        if self.hook is not None:
            _trainer.save_logged(self.hook, {k: v for k, v in (logs or {}).items() if k != "learning_rate"})

    def _loop_end(self):
        self._eval_mode = None
        if self.hook is not None and self.hook._in_step:
            self.hook.end_step()

    def on_evaluate(self, args, state, control, **kwargs):
        self._loop_end()

    def on_predict(self, args, state, control, metrics=None, **kwargs):
        self._loop_end()

    def on_train_end(self, args, state, control, **kwargs):
        self._loop_end()
