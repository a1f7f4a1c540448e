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
  (``loss_output_<i>``, one per micro-batch) -- or, when the Trainer computes the loss itself (label
  smoothing, ``compute_loss_func``, a ``compute_loss`` override), the loss ``compute_loss`` returns, with the
  logits and labels it got as the loss's inputs (see ``_TrainerSideLoss``); the learning rate
  (``learning_rate``, ``metrics`` collection); what the Trainer logs (``on_log``: ``loss``, ``grad_norm``...:
  names with "loss" in the ``losses`` collection, the others in ``metrics``); plus everything the hook's
  collections ask for.

The hook comes from ``SmdebugCallback(hook=...)``, or is built from keyword arguments (those of
``smdebug.pytorch.Hook``), or from the JSON configuration (``smdebug run``).
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Optional

import torch
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
# the heads among them that shift the labels by one position themselves (causal language models)
_SHIFTING_HEADS = ("ForCausalLM", "LMHeadModel")
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
        causal = loss_type in _SHIFTING_HEADS if isinstance(loss_type, str) and loss_type else name.endswith(
            _SHIFTING_HEADS)
        return model_loss.ModelLoss("CrossEntropyLoss", loss_inputs.LOGITS, shifts=causal)
    return None


def _running_trainer(callback):
    """The Trainer whose ``__init__`` is calling ``callback.on_init_end`` (callbacks are not given it): the
    frame on the stack whose ``self`` is a transformers Trainer holding ``callback``; None if not found."""
    from transformers import Trainer

    frame = sys._getframe(2)
    for _ in range(64):
        if frame is None:
            break
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Trainer) and callback in getattr(
                getattr(candidate, "callback_handler", None), "callbacks", ()):
            return candidate
        frame = frame.f_back
    return None


def _model_loss_of(outputs) -> Any:
    """The loss a model's output carries, read as the hook reads it (so: the hook saved it already)."""
    return outputs.get("loss") if isinstance(outputs, dict) else getattr(outputs, "loss", None)


class _TrainerSideLoss:
    """Wraps one Trainer's ``compute_loss`` (set on the instance, so it covers a subclass's override, the
    Trainer's label smoothing and ``compute_loss_func``: all run inside it) to save the loss the Trainer
    computed outside the model. The model is then called without ``labels`` and returns no loss, so the
    hook's forward hook saves nothing of it; here the labels are read from ``inputs`` before the call (label
    smoothing and the usual overrides pop them), and the loss and the model's output after, and saved as the
    model's own loss would be (``loss_output_<i>``, logits and labels as ``loss_input_<2i>``/``<2i+1>``).
    When the model did return a loss (it got the labels), the hook saved that one: nothing more is saved.

    Training calls ``compute_loss`` without ``return_outputs``: on a step where something is due, a forward
    hook on the model catches its output for the length of the call. Evaluation and prediction ask for the
    outputs (their step begins at the model's forward, inside the call). Steps with nothing due cost a few
    attribute reads. A failure here is logged once and disables the hook; training goes on."""

    def __init__(self, callback: "SmdebugCallback", original):
        self.callback, self.original = callback, original

    def __call__(self, model, inputs, *args, **kwargs):
        # (the arguments go on as they came: overrides differ in what they accept)
        hook = self.callback.hook
        if hook is None or hook._disabled:
            return self.original(model, inputs, *args, **kwargs)
        return_outputs, labels, caught, handle = False, None, [], None
        try:
            return_outputs = bool(kwargs.get("return_outputs", args[0] if args else False))
            labels = inputs.get(model_loss.LABELS) if isinstance(inputs, Mapping) else None
            if not return_outputs and hook._due and isinstance(model, torch.nn.Module):
                handle = model.register_forward_hook(lambda module, args_, output: caught.append(output))
        except Exception as e:  # noqa: BLE001
            hook._fail("watching the model's output in the Trainer's compute_loss", e)
        try:
            result = self.original(model, inputs, *args, **kwargs)
        finally:
            if handle is not None:
                handle.remove()
        self._save(hook, result, return_outputs, caught, labels)
        return result

    @staticmethod
    def _save(hook, result, return_outputs: bool, caught, labels) -> None:
        if hook._disabled or not hook._due:
            return
        try:
            if return_outputs and isinstance(result, (tuple, list)) and len(result) == 2:
                loss, outputs = result
            else:
                loss, outputs = result, (caught[-1] if caught else None)
            if not isinstance(loss, torch.Tensor) or isinstance(_model_loss_of(outputs), torch.Tensor):
                return  # (no loss; or the model computed it, and the hook's forward hook saved it)
            logits = outputs.get(model_loss.LOGITS) if isinstance(outputs, dict) else getattr(
                outputs, model_loss.LOGITS, None)
            hook._record_output_loss({"loss": loss, model_loss.LOGITS: logits}, {model_loss.LABELS: labels})
        except Exception as e:  # noqa: BLE001
            hook._fail("saving the loss the Trainer's compute_loss returned", e)


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
        self._wrap_compute_loss()
        self.hook._rewire_later()

    def _wrap_compute_loss(self) -> None:
        # (on the instance: every way the Trainer computes a loss goes through its compute_loss)
        trainer = _running_trainer(self)
        if trainer is None:
            return
        current = getattr(trainer, "compute_loss", None)
        if current is None or (isinstance(current, _TrainerSideLoss) and current.callback is self):
            return
        trainer.compute_loss = _TrainerSideLoss(self, current)

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
