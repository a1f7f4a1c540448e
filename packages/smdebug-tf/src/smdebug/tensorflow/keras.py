"""The Keras hook: a Keras 3 callback for ``model.fit/evaluate/predict`` that also serves custom
``GradientTape`` loops.

How tensors that only exist inside a compiled step (gradients, layer inputs/outputs, the model's inputs,
labels and predictions) are saved without slowing down steps that save nothing:

* At ``on_train_begin`` (``on_test_begin``, ``on_predict_begin``) the hook replaces
  ``model.train_function`` (``test_function``, ``predict_function``) — the attribute Keras calls once
  per batch — by a thin wrapper, and puts Keras' own function back at the end.
* At each batch begin the hook starts a step and decides, from the save configs, whether anything
  that lives in the graph is due. If not, the wrapper calls Keras' own compiled function: the step
  costs a few Python calls more than without the hook.
* If something is due, the wrapper takes the batch from the iterator and runs a second compiled
  function instead: the model's own ``train_step`` (so overridden ``train_step`` methods work) traced
  while a recorder is active, which returns the due tensors as extra outputs. Layer calls are seen
  through ``Layer.__call__``, gradients through the optimizer's ``apply`` (unscaled under mixed
  precision). One such function is traced per distinct set of captured tensors and cached.
* Weights, biases and optimizer variables are read from the variables at batch begin (before the
  update of that batch, so they match that step's gradients); losses and metrics from the function's
  outputs. Both only when due.
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from smdebug.core import activations, class_weights, input_scaling, loss_inputs, run_info, running_means
from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import BaseHook, logger
from smdebug.core.modes import ModeKeys
from smdebug.core.names import shown
from smdebug.exceptions import SMDebugTypeError
from smdebug.tensorflow import capture, layers, losses, preprocessing
from smdebug.tensorflow.base import LOSS_RE, TFHookMixin
from smdebug.tensorflow.utils import device_reductions, flatten_tensors, is_bias, structure_names, variable_name

#: collections whose tensors the hook reads outside the compiled step
_HOST_COLLECTIONS = frozenset({
    CollectionKeys.LOSSES, CollectionKeys.METRICS, CollectionKeys.SM_METRICS, CollectionKeys.SCALARS,
    CollectionKeys.WEIGHTS, CollectionKeys.BIASES, CollectionKeys.OPTIMIZER_VARIABLES,
})
_DISCOVER = "discover"
_KINDS = {  # kind -> (model attribute Keras calls per batch, step method, mode)
    "train": ("train_function", "train_step", ModeKeys.TRAIN),
    "test": ("test_function", "test_step", ModeKeys.EVAL),
    "predict": ("predict_function", "predict_step", ModeKeys.PREDICT),
}


def _reduce_per_replica(values, strategy, reduction):
    try:
        from keras.src.backend.tensorflow.trainer import reduce_per_replica
    except ImportError:  # pragma: no cover - a Keras without it: only the default strategy works
        return values
    return reduce_per_replica(values, strategy, reduction=reduction)


def _strategy_devices(model) -> Tuple[str, ...]:
    """The devices of the model's distribution strategy in this process (none for the default one)."""
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or not tf.distribute.has_strategy() and strategy is tf.distribute.get_strategy():
        return ()
    try:
        return tuple(strategy.extended.worker_devices)
    except (RuntimeError, AttributeError, NotImplementedError):
        return ()


def _keras_train_step(model) -> bool:
    """Whether ``model`` trains with Keras's own ``train_step`` (whose logs are the epoch's running means), not
    one a subclass wrote."""
    step = getattr(type(model), "train_step", None)
    return getattr(step, "__module__", "").split(".")[0] == "keras"


def _flat_logs(logs):
    """A (nested) logs dict's values with their names, flattened as Keras does (compile_metrics nests)."""
    for key, value in logs.items():
        if isinstance(value, dict):
            yield from _flat_logs(value)
        else:
            yield key, value


def _callback(fn):
    """Keras callback methods: any internal failure disables the hook, never the training."""

    @functools.wraps(fn)
    def inner(self, *args, **kwargs):
        if self._disabled:
            return None
        try:
            return fn(self, *args, **kwargs)
        except Exception as e:  # noqa: BLE001
            self._fail(f"KerasHook.{fn.__name__}()", e)
            return None

    return inner


def _divided(value, scale):
    """A gradient of a scaled loss, unscaled (in float32: a float16 gradient divided by 32768 would underflow)."""
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)
    return tf.cast(value, tf.float32) / tf.cast(scale, tf.float32)


class _WrappedTape:
    """A ``tf.GradientTape`` that reports to the hook (see :meth:`KerasHook.wrap_tape`).

    It passes for the tape it wraps: ``isinstance(t, tf.GradientTape)`` holds and the tape's own attributes
    (``_tape``, ``_persistent``...) are the wrapped tape's. Code that rebuilds a tape from another, as
    ``hvd.DistributedGradientTape(tape)`` does after the ``with`` block, then gets a working tape of the
    wrapped tape's class (its gradients are not seen by this wrapper: ``wrap_optimizer`` sees them).
    """

    def __init__(self, hook: "KerasHook", tape):
        self._smdebug_hook = hook
        self._smdebug_tape = tape

    @property
    def __class__(self):
        return type(self._smdebug_tape)

    def __enter__(self):
        self._smdebug_hook._tape_enter()
        self._smdebug_tape.__enter__()
        return self

    def __exit__(self, *exc):
        result = self._smdebug_tape.__exit__(*exc)
        self._smdebug_hook._tape_exit()
        return result

    def gradient(self, target, sources, output_gradients=None, **kwargs):
        grads = self._smdebug_tape.gradient(target, sources, output_gradients=output_gradients, **kwargs)
        self._smdebug_hook._tape_gradient(target, sources, grads)
        return grads

    def __getattr__(self, name):
        return getattr(self._smdebug_tape, name)


#: how the class weights of ``Model.fit`` are named in the run's record (``_meta.class_weights``)
FIT_CLASS_WEIGHT = "class_weight of Model.fit"
#: how per-row weights (``fit(sample_weight=...)``, a dataset of ``(x, y, w)``) are named in that record: each
#: class's mean row weight, entered for the label tensor the rows weight
FIT_SAMPLE_WEIGHT = "sample weights of Model.fit (sample_weight, or the data's (x, y, w))"
#: the key under which a capture returns a label tensor's row weights (``<prefix><label name>``): never saved
_ROW_WEIGHTS = "__smdebug_row_weights__/"
#: the run's record (``_meta``) of the custom-loop parts the hook met only while a ``tf.function`` was traced
#: (``wrap_tape``, ``wrap_optimizer``): a run that has them saved nothing of its training steps through them
TRACED_ONLY_META_KEY = run_info.TRACED_ONLY_KEY
#: the most class ids per-class row weights are kept for (as smdebug.core.class_weights keeps)
_MAX_WEIGHTED_CLASSES = class_weights.MAX_CLASSES


def _class_ids_of_rows(labels) -> Optional[np.ndarray]:
    """The class id of each label of a saved batch (``(n,)``/``(n, 1)`` ids, one-hot ``(n, C)`` rows, ids per
    position ``(n, T)``), None when they are no class ids (values of a regression, soft labels)."""
    y = np.asarray(labels)
    if y.dtype.kind not in "fiub" or not y.size:
        return None
    if y.ndim >= 2 and y.shape[-1] > 1 and np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=-1) == 1):
        y = np.argmax(y, axis=-1)  # one-hot
    elif y.ndim >= 2 and y.shape[-1] == 1:
        y = y.reshape(y.shape[:-1])
    if not np.all(np.isfinite(y) & (y >= 0) & (y == np.round(y))) or y.max() >= _MAX_WEIGHTED_CLASSES:
        return None
    return y.astype(np.int64)


def _row_weights_of(ids: np.ndarray, weights) -> Optional[np.ndarray]:
    """One weight per class id of ``ids`` from a batch's sample weights: one per id (the same shape, or an
    axis of 1 more), or one per row repeated over a row's positions; None when they do not fit, or are not
    finite weights >= 0."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == ids.ndim + 1 and w.shape[-1] == 1:
        w = w.reshape(w.shape[:-1])
    if w.shape != ids.shape:
        if w.ndim != 1 or not ids.ndim or w.shape[0] != ids.shape[0]:
            return None
        w = np.broadcast_to(w.reshape((-1,) + (1,) * (ids.ndim - 1)), ids.shape)
    if not np.all(np.isfinite(w) & (w >= 0)):
        return None
    return w.reshape(-1)


def _offer_row_weights(rec, y, w) -> None:
    """Return a training batch's sample weights with each label tensor saved at the step (as
    ``<_ROW_WEIGHTS><label name>``): the hook turns them into each class's mean weight. One weight tensor for
    several outputs weights each of them; a list or dict of them pairs with the outputs by position or key."""
    single = not isinstance(w, (list, tuple, dict))
    weights = {} if single else dict(structure_names("labels", w))
    for name, _ in structure_names("labels", y):
        weight = w if single else weights.get(name)
        if name in rec.tensors and weight is not None:
            rec.tensors[_ROW_WEIGHTS + name] = weight


class KerasHook(keras.callbacks.Callback, TFHookMixin):
    """smdebug's hook for Keras 3 on TensorFlow: ``model.fit(..., callbacks=[hook])``.

    Also for custom training loops: ``hook.wrap_tape(tf.GradientTape())``, ``hook.wrap_optimizer(opt)``,
    ``hook.register_model(model)``.
    """

    @functools.wraps(BaseHook.__init__)  # (BaseHook's arguments and signature)
    def __init__(self, *args, **kwargs):
        keras.callbacks.Callback.__init__(self)  # (Callback comes first in the MRO; it takes no arguments)
        BaseHook.__init__(self, *args, **kwargs)

    def _setup(self) -> None:
        super()._setup()
        self._registered = None  # the model whose names are known
        self._fused_layers: List = []  # its layers with a fused activation= (probed while capturing)
        self._layer_map: Dict[int, str] = {}
        self._variables: List[Tuple[str, object]] = []
        self._n_weights = -1
        self._opt_names: Dict[int, str] = {}
        self._installed: Dict[str, Tuple[object, Callable]] = {}
        self._keras_depth = 0  # inside fit/evaluate/predict
        self._fit_depth = 0
        self._kind: Optional[str] = None
        self._capture_now = None  # frozenset of names to capture in this step, _DISCOVER, or None
        self._offered: Dict[str, set] = {}  # kind -> every in-graph tensor name a step offered
        self._capture_fns: Dict[tuple, Callable] = {}
        self._tape_stack: Optional[contextlib.ExitStack] = None
        self._tape_recorder: Optional[capture.Recorder] = None
        self._tape_passthrough = False
        self._scaled_losses: List[tuple] = []  # (scaled loss, loss, scale) of this tape step's scale_loss calls
        self._warned = set()
        self._wrapped_optimizers = []
        self._graph_written = False
        self._loss_described = None  # what _record_loss last recorded
        self._step_loss = None  # what _record_step_loss last recorded (a loss computed in a custom train_step)
        self._capture_optimizer = None  # the model's optimizer when the capture functions were traced
        self._tape_losses: Dict[int, object] = {}  # id -> Keras Loss object given to register_loss
        self._user_eval_from = None  # the EVAL step count when set_mode(EVAL) was called in a custom loop
        self._implicit_step = False  # the open step was begun by a value saved between steps (EVAL/PREDICT)
        self._implicit_names: set = set()  # names saved in that step
        self._step_mode = None  # the mode of the last step begun
        # custom loops: one small trainable variable of the registered model, its value and the TRAIN step count
        # when last looked at (see _check_unseen_training)
        self._watched: Optional[Tuple[object, np.ndarray, int]] = None
        self._training_steps = 0  # steps begun in TRAIN (or GLOBAL) mode
        # Keras's training logs are means over the epoch so far (smdebug.core.running_means): the TRAIN mode
        # steps where an epoch of fit began, and the names of the logs saved, recorded in the run
        self._epoch_begun = False
        self._running_resets: List[int] = []
        self._running_names: set = set()
        # per-row weights of this fit's saved training batches: label name -> (sum of weights, rows) per class
        self._row_weights: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        self._row_weights_recorded: set = set()  # the label names with an entry of FIT_SAMPLE_WEIGHT
        self._fit_class_weight = False  # the running fit was given class_weight (its rows carry those weights)

    # ------------------------------------------------------------------------------------------
    # model registration and names
    # ------------------------------------------------------------------------------------------
    def set_model(self, model):
        keras.callbacks.Callback.set_model(self, model)

    def register_model(self, model) -> None:
        """Tell the hook which model a custom training loop trains: its weights, biases and layers get
        their names (``<layer path>/<variable>``, ``<layer path>/inputs|outputs``). ``fit`` does this
        by itself."""
        if not isinstance(model, keras.layers.Layer):
            raise SMDebugTypeError(f"register_model expects a Keras model or layer, got {type(model).__name__}")
        keras.callbacks.Callback.set_model(self, model)
        self._register(model)
        self._watch_model()

    def register_loss(self, loss, name: str = "loss"):
        """Tell the hook which loss a custom training loop trains with (``fit`` learns it from ``compile``): a
        Keras loss object (``keras.losses.SparseCategoricalCrossentropy(from_logits=True)``), a Keras loss name
        or function (``"mse"``, ``keras.losses.mean_squared_error``), or your own function. What it expects of
        the model's output (logits, probabilities, values on the targets' scale) is recorded in the run
        (``smdebug.core.loss_inputs``), with ``predictions`` as its first input and ``labels`` as its targets,
        so that rules such as ImproperOutput can judge it. For a Keras loss object, its first call inside a
        ``wrap_tape`` step that is due saves its targets as ``labels`` and its first input as ``predictions``;
        for a function, save them yourself (``hook.save_tensor("labels", y, "labels")``). Returns ``loss``
        unchanged. One loss, for a model with one output."""
        if not (isinstance(loss, str) or callable(loss)):
            raise SMDebugTypeError(f"register_loss expects a Keras loss, a loss name or a function, got "
                                   f"{type(loss).__name__}")
        if not isinstance(name, str) or not name:
            raise SMDebugTypeError("register_loss needs a non-empty name")
        if self._disabled:
            return loss
        try:
            type_, expects = losses.loss_expects(loss)
            loss_inputs.add_loss(self, loss_inputs.LossInputs(name, type_, expects, r"^predictions$", r"^labels$"))
            if isinstance(loss, keras.losses.Loss):
                self._tape_losses[id(loss)] = loss
        except Exception as e:  # noqa: BLE001
            self._fail("register_loss()", e)
        return loss

    def _register(self, model) -> None:
        if model is None:
            return
        if model is self._registered and len(model.weights) == self._n_weights:
            return
        if model is not self._registered:
            self._capture_fns.clear()
            self._offered.clear()
        self._registered = model
        self._layer_map = capture.layer_names(model)
        activations.add_to_collections(self, layers.activation_layers(model, self._layer_map))
        self._fused_layers = layers.fused_layers(model)
        self._record_input_scaling(model)
        self._variables = []
        for v in model.weights:
            name = variable_name(v)
            coll = CollectionKeys.BIASES if is_bias(name) else CollectionKeys.WEIGHTS
            self.collection_manager.get(coll).add_tensor_name(name)
            self._variables.append((name, v))
        self._n_weights = len(model.weights)
        self._set_devices(_strategy_devices(model))
        self._prepared_token = None
        if self._in_step and self._is_writer and self.worker is not None:
            # names met in the middle of a step (a model built by its first call) count at once
            self._refresh_collections()
            self._due = set(self._due) | self._compute_due()
            if self._due and self._writer is None and not self.dry_run:
                self._start_writing()

    def _record_input_scaling(self, model) -> None:
        """Record the rescaling the model's first layers apply to its input (``Rescaling(1/255)``, an adapted
        ``Normalization``: smdebug.core.input_scaling), so that rules judge the input's scale as the first layer
        that learns sees it. A model of several inputs, or none at its head, records nothing."""
        try:
            found = preprocessing.input_scaling(model)
            if found is None:
                input_scaling.record_input_scaling(self, "inputs", [1.0], [0.0], [])
            else:
                input_scaling.record_input_scaling(self, "inputs", *found)
        except Exception as e:  # noqa: BLE001 - a model the walk does not understand records nothing
            logger.debug("smdebug: the input rescaling of %s not recorded: %s", type(model).__name__, e)

    # ------------------------------------------------------------------------------------------
    # stop signal: Keras stops its loops through model.stop_training
    # ------------------------------------------------------------------------------------------
    def _fail(self, where: str, exc: BaseException) -> None:
        super()._fail(where, exc)
        for kind in list(_KINDS):  # Keras' own step functions back at once
            try:
                self._uninstall(kind)
            except Exception:  # noqa: BLE001
                pass

    def _on_stop_requested(self, signal: dict) -> None:
        if self._keras_depth > 0 and self.model is not None:
            logger.warning("smdebug: stopping model.fit after this batch (%s)", self.stop_reason)
            self.model.stop_training = True
            if hasattr(self.model, "stop_evaluating"):
                self.model.stop_evaluating = True
            return
        super()._on_stop_requested(signal)

    # ------------------------------------------------------------------------------------------
    # modes and steps of custom loops
    # ------------------------------------------------------------------------------------------
    def set_mode(self, mode) -> None:
        """Switch to ``smd.modes.TRAIN``/``EVAL``/``PREDICT``/``GLOBAL``. In a custom loop (outside
        ``fit``/``evaluate``/``predict``, whose modes are set by Keras) a change of mode ends the step in
        progress (a ``wrap_tape`` step stays open until the next one begins): what is saved after it belongs to
        a step of the new mode, never to the last training step."""
        custom_loop = isinstance(mode, ModeKeys) and mode != self.mode and self._keras_depth == 0 and not self._disabled
        if custom_loop:
            self._check_unseen_training()
        if custom_loop and self._in_step and self._tape_stack is None:
            self.end_step()
        if custom_loop and not self._in_step and self._pending_names():
            # values saved between steps wait for the next step, which is of the new mode: they get a step of
            # the mode they were saved in instead
            self.begin_step()
            self.end_step()
        if custom_loop and self._user_eval_from is not None and self.mode == ModeKeys.EVAL \
                and self.mode_steps[ModeKeys.EVAL] == self._user_eval_from:
            self._warn_once("eval-nothing-saved", "smdebug: EVAL mode was set but nothing was saved in it, so the run "
                            "has no validation; save the validation loss after set_mode(modes.EVAL): "
                            "hook.save_tensor(\"loss\", val_loss, \"losses\")")
        TFHookMixin.set_mode(self, mode)
        if custom_loop:
            self._user_eval_from = self.mode_steps[ModeKeys.EVAL] if mode == ModeKeys.EVAL else None

    def begin_step(self, *args, **kwargs) -> None:
        self._implicit_step = False
        TFHookMixin.begin_step(self, *args, **kwargs)
        self._step_mode = self.mode
        if self.mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL):
            self._training_steps += 1

    def _pending_names(self) -> set:
        """The names of the values saved between steps that wait for the next step to begin."""
        return {args[0] for args in self._pending_scalars} | {name for name, _ in self._pending_user_tensors}

    def _step_for_user_value(self, name: str) -> None:
        """Keep a value saved in a custom loop (``save_tensor``, ``save_scalar``, in a mode set with ``set_mode``)
        in a step of that mode, and lose none:

        * In EVAL or PREDICT mode, a value saved between steps begins a step of that mode, and a name saved again
          in that step begins the next one: evaluation needs no tape, and each evaluated loss becomes an EVAL
          step.
        * In TRAIN mode, a value saved between steps waits for the next step the loop begins (``begin_step``,
          ``wrap_tape``), as before. But a loop whose training steps the hook does not see (a ``tf.function``
          step) saves the same name again before any step begins, or changes the mode: such values get TRAIN
          steps of their own, one per value, as in EVAL. A value that would join the last step (still being
          written) while that step is of another mode begins a step too.

        Steps the loop marks itself (``begin_step``, ``wrap_tape``) are left alone."""
        if (self._disabled or self._keras_depth > 0 or self._tape_stack is not None or not self._mode_set_by_user
                or self.mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)):
            return
        if self._in_step:
            if self._implicit_step and name in self._implicit_names:
                self._begin_implicit_step()
            return
        if self.mode != ModeKeys.TRAIN:
            self._begin_implicit_step()
        elif name in self._pending_names():
            self._begin_implicit_step(self._pending_names())  # (holds the values waiting; this one, the next)
            self._begin_implicit_step()
        elif self._open_step is not None and self._step_mode != self.mode:
            self._begin_implicit_step()  # (the last step, of another mode, would take it)

    def _begin_implicit_step(self, names=()) -> None:
        self.begin_step()
        if self._in_step:
            self._implicit_step = True
            self._implicit_names = set(names)

    def save_tensor(self, tensor_name: str, tensor_value, collections_to_write="default") -> None:
        """Save a tensor of the user's into one or more collections (created if missing): written at the
        current step if one of those collections is due (or at the next step if called between steps).

        In a custom loop, after ``set_mode(smd.modes.EVAL)`` (or PREDICT), a value saved between steps begins
        a step of that mode, and saving the same name again the next one: a validation loss saved with
        ``hook.save_tensor("loss", val_loss, "losses")`` is an EVAL step. In TRAIN mode it waits for the next
        step the loop begins, unless none begins before the name is saved again or the mode changes (see
        :meth:`_step_for_user_value`)."""
        try:
            self._step_for_user_value(tensor_name)
        except Exception as e:  # noqa: BLE001
            self._fail("save_tensor()", e)
        if self._implicit_step and isinstance(tensor_name, str):
            self._implicit_names.add(tensor_name)
        TFHookMixin.save_tensor(self, tensor_name, tensor_value, collections_to_write)

    def save_scalar(self, name: str, value, sm_metric: bool = False, timestamp: Optional[float] = None) -> None:
        """Save a scalar as ``scalar/<name>`` at the current step, whatever the save schedule says (between
        steps of a custom loop it is kept for a step of the mode it was saved in, as ``save_tensor``'s values
        are: see :meth:`_step_for_user_value`)."""
        full = "scalar/" + name if isinstance(name, str) else name
        try:
            self._step_for_user_value(full)
        except Exception as e:  # noqa: BLE001
            self._fail("save_scalar()", e)
        if self._implicit_step and isinstance(full, str):
            self._implicit_names.add(full)
        TFHookMixin.save_scalar(self, name, value, sm_metric=sm_metric, timestamp=timestamp)

    # ------------------------------------------------------------------------------------------
    # Keras callbacks
    # ------------------------------------------------------------------------------------------
    @_callback
    def on_train_begin(self, logs=None):
        self._keras_depth += 1
        self._fit_depth += 1
        self._start_loop("train")
        self._record_class_weight()
        self._forget_row_weights()  # (each fit's own: a fit without sample weights after one with them)

    @_callback
    def on_train_end(self, logs=None):
        self._keras_depth = max(0, self._keras_depth - 1)
        self._fit_depth = max(0, self._fit_depth - 1)
        self._end_loop("train")

    @_callback
    def on_epoch_begin(self, epoch, logs=None):
        # Keras resets its metrics (the loss's too) as an epoch begins; a train_step of the script's own may
        # return values that are no running means, so only Keras's own step is recorded as one
        self._epoch_begun = self._fit_depth > 0 and _keras_train_step(self.model)

    @_callback
    def on_test_begin(self, logs=None):
        self._keras_depth += 1
        self._start_loop("test")

    @_callback
    def on_test_end(self, logs=None):
        if logs and self._in_step and self.mode == ModeKeys.EVAL:
            # The evaluation's final loss and metrics, whatever the schedule: val_<name> during fit.
            prefix = "val_" if self._fit_depth > 0 else ""
            for key, value in _flat_logs(logs):  # each under val_: a nested metric would shadow training's
                self._save_log(prefix + key, value, force=True)
        self._keras_depth = max(0, self._keras_depth - 1)
        self._end_loop("test")

    @_callback
    def on_predict_begin(self, logs=None):
        self._keras_depth += 1
        self._start_loop("predict")

    @_callback
    def on_predict_end(self, logs=None):
        self._keras_depth = max(0, self._keras_depth - 1)
        self._end_loop("predict")

    @_callback
    def on_train_batch_begin(self, batch, logs=None):
        self._begin_batch("train")

    @_callback
    def on_test_batch_begin(self, batch, logs=None):
        self._begin_batch("test")

    @_callback
    def on_predict_batch_begin(self, batch, logs=None):
        self._begin_batch("predict")

    # on_*_batch_end are deliberately not implemented: a callback that has them makes Keras convert the
    # logs to Python floats after every batch (a device sync) and turns off its asynchronous dispatch.
    # The wrapper around the step function sees the logs instead, and reads them only when due.

    def _start_loop(self, kind: str) -> None:
        self._register(self.model)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not self._capture_optimizer:
            # compiled again: the capture functions traced the old optimizer (and a new one must build its
            # variables in a first trace)
            self._capture_fns.clear()
            self._capture_optimizer = optimizer
        self._record_loss(self.model)
        self._install(kind)

    def _record_loss(self, model) -> None:
        """Record what the loss the model was compiled with expects of its output (smdebug.core.loss_inputs),
        once per compiled loss (fit/evaluate may follow a new compile)."""
        described = losses.describe_losses(model) if model is not None else []
        if described and described != self._loss_described:
            self._loss_described = described
            for loss in described:
                loss_inputs.add_loss(self, loss)

    def _record_step_loss(self, loss) -> None:
        """Record the loss a custom ``train_step``/``test_step`` computes by hand (a Keras Loss object it calls on
        the batch's labels or the model's output: see ``capture.Recorder.on_loss_object_call``) as
        ``register_loss`` would: its class and flags (``from_logits``), with ``predictions`` and ``labels``,
        which the capture made what the loss was given."""
        type_, expects = losses.loss_expects(loss)
        record = loss_inputs.LossInputs("loss", type_, expects, r"^predictions$", r"^labels$")
        if record != self._step_loss:  # (each trace finds it again: recorded once, or again if it changed)
            self._step_loss = record
            loss_inputs.add_loss(self, record)

    def _record_class_weight(self) -> None:
        """Record ``Model.fit(class_weight=...)`` (smdebug.core.class_weights): imbalance the training already
        compensates, which ClassImbalance then judges by weighted counts. Keras keeps it in fit's arguments
        only (it becomes per-sample weights inside the data pipeline), so it is read from the running
        ``fit`` call of this model on the stack; a fit without it forgets an earlier fit's."""
        import sys

        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "fit" and frame.f_locals.get("self") is self.model:
                weights = frame.f_locals.get("class_weight")
                self._fit_class_weight = bool(weights)
                if weights:
                    class_weights.record_class_weights(self, weights, FIT_CLASS_WEIGHT)
                else:
                    class_weights.record_class_weights(self, {}, FIT_CLASS_WEIGHT)  # (removes the entry)
                return
            frame = frame.f_back

    def _count_row_weights(self, extras) -> None:
        """Fold the sample weights of a saved training batch (``fit(sample_weight=...)``, a dataset of ``(x, y,
        w)``) into each class's mean row weight, recorded as the class weights of its label tensor
        (smdebug.core.class_weights, as the XGBoost hook records a DMatrix's row weights): ClassImbalance then
        judges the weighted counts, so an imbalance the weights compensate is no alarm. Not for a fit given
        ``class_weight``: Keras turns it into these row weights, and it is recorded as itself. Never raises."""
        if self._fit_class_weight:
            return
        try:
            for key in [k for k in extras[0] if k.startswith(_ROW_WEIGHTS)]:
                name = key[len(_ROW_WEIGHTS):]
                for replica in extras:
                    ids = _class_ids_of_rows(np.asarray(replica[name])) if name in replica else None
                    w = _row_weights_of(ids, np.asarray(replica[key])) if ids is not None else None
                    if w is None:
                        continue
                    ids = ids.reshape(-1)
                    sums, rows = np.bincount(ids, weights=w), np.bincount(ids)
                    if name in self._row_weights:
                        old_sums, old_rows = self._row_weights[name]
                        n = max(len(sums), len(old_sums))
                        sums = np.pad(sums, (0, n - len(sums))) + np.pad(old_sums, (0, n - len(old_sums)))
                        rows = np.pad(rows, (0, n - len(rows))) + np.pad(old_rows, (0, n - len(old_rows)))
                    self._row_weights[name] = (sums, rows)
                if name in self._row_weights:
                    self._record_row_weights(name)
        except Exception as e:  # noqa: BLE001 - the record is left as it was; training goes on
            logger.debug("smdebug: sample weights not recorded as class weights (%s)", e)

    def _record_row_weights(self, name: str) -> None:
        sums, rows = self._row_weights[name]
        weights = {int(c): float(sums[c] / rows[c]) for c in np.flatnonzero(rows)}
        new = name not in self._row_weights_recorded
        if class_weights.record_class_weights(self, weights, FIT_SAMPLE_WEIGHT, f"^{re.escape(name)}$"):
            self._row_weights_recorded.add(name)
            if new:  # (a reader judging the run while it trains learns of them now, not when the hook closes)
                self._export_collections()
        else:
            self._row_weights_recorded.discard(name)

    def _forget_row_weights(self) -> None:
        """A new fit: the sample weights of an earlier one no longer hold (recorded again from this fit's)."""
        self._row_weights = {}
        for name in self._row_weights_recorded:
            class_weights.record_class_weights(self, {}, FIT_SAMPLE_WEIGHT, f"^{re.escape(name)}$")
        self._row_weights_recorded = set()

    def _end_loop(self, kind: str) -> None:
        mode = _KINDS[kind][2]
        if self.mode == mode and self._in_step:
            self.end_step()
        self._uninstall(kind)
        self._kind = None
        self._capture_now = None
        if kind == "test" and self._fit_depth > 0:
            BaseHook.set_mode(self, ModeKeys.TRAIN)
        if self._keras_depth == 0:
            self.flush()

    def _begin_batch(self, kind: str) -> None:
        self._switch_mode(_KINDS[kind][2])
        self._kind = kind
        self._capture_now = None
        self.begin_step()
        if self._epoch_begun and kind == "train":
            self._epoch_begun = False
            self._running_resets.append(self.mode_steps[ModeKeys.TRAIN])
            if self._running_names and self._writer is not None:
                self._export_collections()  # (a reader opening the run while it trains knows of the restart)
        if self._disabled or not self.is_writing:
            return
        self._register(self.model)
        if kind == "train" and not self._graph_written and self._tb is not None and self._writer is not None:
            self._write_graph()
        self._save_variables()
        self._capture_now = self._capture_plan(kind)

    def _write_graph(self) -> None:
        """The model's graph for TensorBoard, once per run (in the TRAIN folder): the GraphDef of the model's
        forward pass traced on its input spec. Models without a known input spec (subclassed ones) have none."""
        self._graph_written = True
        model = self.model
        try:
            functional = getattr(model, "_functional", None)  # a Sequential's inner functional model
            struct = getattr(model if functional is None else functional, "_inputs_struct", None)
            if struct is None:
                struct = model.inputs  # (dict inputs stay a dict in _inputs_struct)
            if isinstance(struct, (list, tuple)) and len(struct) == 1:
                struct = struct[0]
            specs = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), struct)
        except (AttributeError, ValueError, TypeError):
            specs = None
        if specs is None or not tf.nest.flatten(specs):
            logger.debug("smdebug: the model has no input spec; no graph written for TensorBoard")
            return
        try:
            fn = tf.function(lambda x: model(x, training=False))
            graph_def = fn.get_concrete_function(specs).graph.as_graph_def()
        except Exception as e:  # noqa: BLE001 - only the graph is missing
            self._warn_once("graph", "smdebug: the model's graph could not be traced for TensorBoard (%s: %s)",
                            type(e).__name__, e)
            return
        self._writer.call(self._tb.write_graph, ModeKeys.TRAIN, self.step, graph_def.SerializeToString())

    # ------------------------------------------------------------------------------------------
    # variables
    # ------------------------------------------------------------------------------------------
    def _save_variables(self) -> None:
        for name, var in self._variables:
            if self.is_due(name) and name not in self._logged_names:
                self._logged_names.add(name)
                self._record_variable(name, var)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and self.mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL):
            self._save_optimizer_variables(optimizer)

    def _save_optimizer_variables(self, optimizer) -> None:
        variables = getattr(optimizer, "variables", None) or []
        if len(variables) != len(self._opt_names):
            coll = self.collection_manager.get(CollectionKeys.OPTIMIZER_VARIABLES)
            self._opt_names = {id(v): variable_name(v) for v in variables}
            for name in self._opt_names.values():
                coll.add_tensor_name(name)
        if not (self._collection_due(CollectionKeys.OPTIMIZER_VARIABLES) or self.is_writing):
            return
        for v in variables:
            name = self._opt_names.get(id(v)) or variable_name(v)
            self._save_named_variable(name, v, CollectionKeys.OPTIMIZER_VARIABLES)

    def _save_named_variable(self, name, var, collection) -> None:
        coll = self.collection_manager.get(collection)
        if not coll.matches(name):
            coll.add_tensor_name(name)
        if name in self._logged_names:
            return
        if self._collection_due(collection):
            if self._writer is None and self._is_writer and not self.dry_run:
                self._start_writing()
            if collection not in self._due:
                self._due = set(self._due) | {collection}
            self._logged_names.add(name)
            self._record_variable(name, var, (coll,))
        elif self.is_due(name):
            self._logged_names.add(name)
            self._record_variable(name, var)

    def _record_variable(self, name: str, var, force: Sequence = ()) -> None:
        value = getattr(var, "value", var)
        if self._devices and isinstance(value, tf.distribute.DistributedValues):
            strategy = self.model.distribute_strategy
            self._record_replicas(name, strategy.experimental_local_results(value), force)
        else:
            self._record(name, value, force)

    # ------------------------------------------------------------------------------------------
    # logs
    # ------------------------------------------------------------------------------------------
    def _save_log(self, name: str, value, force: bool = False) -> None:
        """One value of Keras's logs (the callers flatten nested logs with ``_flat_logs``)."""
        if isinstance(value, (int, float, np.number)):
            value = np.asarray(value, dtype=np.float32)  # the shape batch logs have: a 0-d tensor
        collection = CollectionKeys.LOSSES if LOSS_RE.search(name) else CollectionKeys.METRICS
        self._save_named(name, value, collection, force=force)

    def _export_collections(self) -> None:
        if self._running_names and self._running_resets:
            running_means.record(self.collection_manager, ModeKeys.TRAIN.name, self._running_names,
                                 self._running_resets, upto=self.mode_steps[ModeKeys.TRAIN])
        super()._export_collections()

    def _save_logs(self, logs) -> None:
        if not isinstance(logs, dict) or not self._in_step:
            return
        if not (self._due or self._collection_due(CollectionKeys.METRICS)
                or self._collection_due(CollectionKeys.LOSSES)):
            return
        names = []
        for key, value in _flat_logs(logs):
            self._save_log(key, value)
            names.append(key)
        if self._kind == "train" and self._running_resets and self.mode == ModeKeys.TRAIN:
            self._running_names.update(names)

    # ------------------------------------------------------------------------------------------
    # the per-batch function wrappers
    # ------------------------------------------------------------------------------------------
    def _install(self, kind: str) -> None:
        attr = _KINDS[kind][0]
        model = self.model
        if model is None or attr in self._installed:
            return
        original = getattr(model, attr, None)
        if original is None or getattr(original, "_smdebug_hook", None) is not None:
            return
        hook = self

        def run(arg):
            return hook._run(kind, original, arg)

        run._smdebug_hook = self
        run._smdebug_original = original
        setattr(model, attr, run)
        self._installed[attr] = (model, original)

    def _uninstall(self, kind: str) -> None:
        attr = _KINDS[kind][0]
        entry = self._installed.pop(attr, None)
        if entry is None:
            return
        model, original = entry
        current = getattr(model, attr, None)
        if getattr(current, "_smdebug_hook", None) is self:
            setattr(model, attr, original)

    def _run(self, kind: str, original: Callable, arg):
        plan = self._capture_now if (self._kind == kind and not self._disabled) else None
        if plan is None:
            try:
                outputs = original(arg)
            except (StopIteration, tf.errors.OutOfRangeError):
                raise  # the end of the data: Keras ends the epoch
            except BaseException:
                self._step_raised(kind)  # the training's own error ends the loop
                raise
        else:
            self._capture_now = None
            outputs = self._run_capture(kind, plan, original, arg)
        if not self._disabled and self._kind == kind and self._in_step:
            try:
                if kind == "predict":
                    if outputs is not None and self.is_writing:
                        from smdebug.tensorflow.utils import structure_names

                        for name, t in structure_names("predictions", outputs):
                            if name not in self._logged_names and self.is_due(name):
                                self._logged_names.add(name)
                                self._record_everywhere(name, t)
                else:
                    self._save_logs(outputs)
            except Exception as e:  # noqa: BLE001
                self._fail(f"saving the outputs of model.{_KINDS[kind][0]}", e)
        return outputs

    def _capture_plan(self, kind: str):
        offered = self._offered.get(kind)
        if offered is None:
            if not (set(self._due) - _HOST_COLLECTIONS):
                return None
            return _DISCOVER
        names = frozenset(n for n in offered if self.is_due(n) and n not in self._logged_names)
        return names or None

    def _next_batches(self, kind: str, arg):
        """The batches this call consumes: the iterator's next element(s) (train/test), or the list
        ``predict`` passes."""
        if kind == "predict":
            return list(arg)
        return [next(arg)]

    def _run_capture(self, kind: str, plan, original: Callable, arg):
        # A tf.data (or distributed) iterator is read inside the compiled function, as Keras does;
        # other iterators (train_on_batch's generator) and predict's list of batches are read here.
        in_graph = kind != "predict" and isinstance(arg, (tf.data.Iterator, tf.distribute.DistributedIterator))
        batches = None if in_graph else self._next_batches(kind, arg)
        call_arg = arg if in_graph else batches[0]
        failure = None
        try:
            fn, holder = self._capture_function(kind, plan, in_graph)
            if not self._variables and hasattr(fn, "get_concrete_function"):
                # A model built by its first call (subclassed): trace now, so that its weights exist
                # and are saved as they are before this step updates them.
                fn.get_concrete_function(call_arg)
                self._register(self.model)
                self._save_variables()
            outputs, extras = fn(call_arg)
        except (StopIteration, tf.errors.OutOfRangeError):
            raise  # the end of the data: Keras ends the epoch
        except Exception as e:  # noqa: BLE001 - the batch still trains, through Keras' own function
            failure = e
        if failure is not None:  # (handled here, out of the except block: no smdebug context on the user's error)
            return self._capture_failed(kind, failure, original, arg, batches, in_graph)
        try:
            self._after_capture(kind, plan, holder, extras)
        except Exception as e:  # noqa: BLE001 - the step ran; only saving failed
            self._fail(f"saving the tensors of model.{_KINDS[kind][1]}", e)
        rest = self.model.steps_per_execution - 1 if kind != "predict" else 0
        if kind == "predict" and len(batches) > 1:
            more = original(batches[1:])
            outputs = tf.nest.map_structure(lambda a, b: tf.concat([a, b], axis=0), outputs, more)
        elif rest > 0:
            # steps_per_execution > 1: the other batches of this execution, without capturing
            consumed = []
            for _ in range(rest):
                try:
                    consumed.append(next(arg))
                except (StopIteration, tf.errors.OutOfRangeError):
                    break
            if consumed:
                outputs = original(iter(consumed))
        return outputs

    def _capture_failed(self, kind: str, error: Exception, original: Callable, arg, batches, in_graph: bool):
        """The capture function raised. Whose error is it? The step runs the model's own ``train_step`` (its
        layers, its loss, the user's data): an error there is the training's, which Keras' own function raises
        just the same. So the batch goes through Keras' function: if that raises too, its exception propagates
        unchanged, as it would without the hook, and the hook stays enabled (it only puts Keras' functions back,
        the loop being over). Only if Keras' function succeeds was the failure smdebug's: then the hook
        disables itself and training goes on. An error of a TensorFlow op while the step ran on an iterator
        the function reads itself (a label out of range) is the step's own too: that batch is consumed, and is
        not run again."""
        if in_graph and isinstance(error, tf.errors.OpError) and not isinstance(
                error, (tf.errors.ResourceExhaustedError, tf.errors.InternalError, tf.errors.UnimplementedError)):
            self._step_raised(kind)
            raise error
        try:
            if in_graph:
                outputs = original(arg)
            else:
                outputs = original(batches if kind == "predict" else iter(batches))
        except (StopIteration, tf.errors.OutOfRangeError):
            raise  # the end of the data
        except BaseException:
            self._step_raised(kind)
            raise  # (the same exception object, as Keras raised it)
        self._fail(f"capturing tensors of model.{_KINDS[kind][1]}", error)
        return outputs

    def _step_raised(self, kind: str) -> None:
        """Keras' step raised the training's own error, which ends ``fit``/``evaluate``/``predict`` without
        their ``on_*_end``: the hook ends its step, puts Keras' functions back and leaves its loop state as
        after the loop, so that a later ``fit`` (after fixing the data) is followed as usual."""
        try:
            if self._in_step:
                self.end_step()
            for k in list(_KINDS):
                self._uninstall(k)
            self._capture_fns.clear()  # (a function whose trace failed is not called again)
            self._keras_depth = self._fit_depth = 0
            self._kind = None
            self._capture_now = None
            self.flush()
        except Exception as e:  # noqa: BLE001
            self._fail(f"ending model.{_KINDS[kind][1]} after its error", e)

    def _capture_function(self, kind: str, plan, in_graph: bool = False):
        key = (kind, plan if plan is _DISCOVER else frozenset(plan), in_graph)
        cached = self._capture_fns.get(key)
        if cached is not None:
            return cached
        model = self.model
        strategy = model.distribute_strategy
        step_method = getattr(model, _KINDS[kind][1])
        layer_map = self._layer_map
        holder: Dict[str, object] = {"recorders": [], "fixed": None if plan is _DISCOVER else frozenset(plan)}
        hook = self

        def want(name: str) -> bool:
            fixed = holder["fixed"]
            return name in fixed if fixed is not None else hook.is_due(name)

        # A loss the step computes by hand (a custom train_step/test_step calling a Keras Loss object) is seen
        # through Loss.__call__ while the function traces: a registered loss always, and when the hook knows of
        # no loss at all (nothing compiled, nothing registered), the one the step calls on the batch's labels
        # or the model's output, which _after_capture then records. Compiled losses are described by
        # _record_loss from compile(); they are not looked for here, so they are never recorded twice.
        loss_ids = frozenset(self._tape_losses) if kind != "predict" else frozenset()
        discover = (kind != "predict" and not loss_ids and getattr(model, "loss", None) is None
                    and getattr(model, "_compile_loss", None) is None)

        def replica_step(data):
            data = tf.nest.map_structure(
                lambda i: None if isinstance(i, tf.experimental.Optional) else i, data)
            rec = capture.Recorder(want, layer_map, model, loss_ids=loss_ids, discover_losses=discover)
            x, y, w = keras.utils.unpack_x_y_sample_weight(data)
            rec.batch_labels = flatten_tensors(y)
            with rec.active():
                outputs = step_method(data)
                rec.add_data(x, y)
            if kind == "train" and w is not None:
                _offer_row_weights(rec, y, w)
            holder["recorders"].append(rec)
            return outputs, dict(rec.tensors)

        optimizer = model.optimizer if kind == "train" else None
        fused = list(self._fused_layers)

        def step(data):
            with capture.patched_layers(fused), capture.patched_optimizer(optimizer), \
                    capture.patched_losses(discover or bool(loss_ids)):
                outputs, extras = strategy.run(replica_step, args=(data,))
            outputs = _reduce_per_replica(outputs, strategy, "concat" if kind == "predict" else "auto")
            return outputs, strategy.experimental_local_results(extras)

        if not model.run_eagerly:
            step = tf.function(step, reduce_retracing=True, jit_compile=bool(model.jit_compile))
        if in_graph:
            step_on_data = step

            def step(iterator):
                return step_on_data(iterator.get_next())

            if not model.run_eagerly:
                step = tf.function(step, reduce_retracing=True)
        self._capture_fns[key] = (step, holder)
        return step, holder

    def _after_capture(self, kind: str, plan, holder, extras) -> None:
        recorders = holder["recorders"]
        if recorders:
            holder["recorders"] = []
            offered = self._offered.setdefault(kind, set())
            captured = set()
            for rec in recorders:
                offered.update(rec.offered)
                captured.update(rec.tensors)
                if rec.discovered_loss is not None:
                    self._record_step_loss(rec.discovered_loss)
                for err in rec.errors:
                    self._warn_once(f"capture:{type(err).__name__}", "smdebug: a tensor could not be captured "
                                    "in %s (%s: %s); the others are saved", _KINDS[kind][1], type(err).__name__, err)
            if holder["fixed"] is None:
                holder["fixed"] = frozenset(captured)
                # the same function serves later steps that want exactly these tensors
                for in_graph in (False, True):
                    entry = self._capture_fns.pop((kind, _DISCOVER, in_graph), None)
                    if entry is not None and entry[1] is holder:
                        self._capture_fns[(kind, holder["fixed"], in_graph)] = entry
        if not extras:
            return
        names = [n for n in extras[0].keys() if not n.startswith(_ROW_WEIGHTS)]
        if len(names) < len(extras[0]):
            self._count_row_weights(extras)
        for name in names:
            if name in self._logged_names:
                continue
            self._logged_names.add(name)
            self._record_replicas(name, [replica[name] for replica in extras])

    # ------------------------------------------------------------------------------------------
    # custom training loops
    # ------------------------------------------------------------------------------------------
    def wrap_tape(self, tape):
        """Wrap a ``tf.GradientTape`` for an eager custom training loop::

            with hook.wrap_tape(tf.GradientTape()) as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)

        Entering the tape starts a step (mode TRAIN unless ``set_mode`` said otherwise). When the step
        is due, the layer inputs/outputs of calls made inside the tape, the registered model's input and
        output (``inputs``, ``predictions``), ``tape.gradient``'s sources (as weights/biases, before the
        update) and gradients (``gradients/<variable>``) and its target (``loss``) are saved; with a Keras
        loss object given to :meth:`register_loss`, its first call's targets (``labels``) and input
        (``predictions``) too. A stop signal from a rule closes the hook and raises
        ``TrainingStopRequested`` from the ``with`` statement.
        """
        if not isinstance(tape, tf.GradientTape):
            raise SMDebugTypeError(f"wrap_tape expects a tf.GradientTape, got {type(tape).__name__}")
        return _WrappedTape(self, tape)

    def _tape_enter(self) -> None:
        self._scaled_losses = []  # (the last step's, which its tape.gradient has used)
        if self._disabled:
            return
        self._tape_passthrough = not tf.executing_eagerly()
        if self._tape_passthrough:
            self._traced_only("wrap_tape")
            return
        if self.mode == ModeKeys.GLOBAL and not self._mode_set_by_user:
            BaseHook.set_mode(self, ModeKeys.TRAIN)
        self.begin_step()  # a rule's stop request raises TrainingStopRequested here
        if self._disabled or not self.is_writing:
            return
        try:
            if self.model is not None:
                self._register(self.model)
                self._save_variables()
            rec = capture.Recorder(self.is_due, self._layer_map if self.model is not None else None, self.model,
                                   model_inputs=True, loss_ids=self._tape_losses)
            stack = contextlib.ExitStack()
            stack.enter_context(capture.patched_layers(self._fused_layers if self.model is not None else ()))
            stack.enter_context(capture.patched_losses(bool(self._tape_losses)))
            stack.enter_context(rec.active())
            self._tape_stack, self._tape_recorder = stack, rec
        except Exception as e:  # noqa: BLE001
            self._fail("wrap_tape (entering the tape)", e)

    def _tape_exit(self) -> None:
        stack, rec = self._tape_stack, self._tape_recorder
        self._tape_stack = self._tape_recorder = None
        if stack is None:
            return
        try:
            stack.close()
            if not self._disabled and self._in_step:
                for name, t in rec.tensors.items():
                    if name not in self._logged_names:
                        self._logged_names.add(name)
                        self._record(name, t)
        except Exception as e:  # noqa: BLE001
            self._fail("wrap_tape (leaving the tape)", e)

    def _tape_gradient(self, target, sources, grads) -> None:
        if self._disabled or self._tape_passthrough or not self._in_step or not tf.executing_eagerly():
            return
        try:
            target, scale = self._unscaled(target)
            if flatten_tensors(target):
                self._save_named("loss", target, CollectionKeys.LOSSES)
            for var, grad in zip(tf.nest.flatten(sources), tf.nest.flatten(grads)):
                if not isinstance(var, tf.Variable) and not hasattr(var, "path"):
                    continue
                name = variable_name(var)
                known = self.collection_manager.get(
                    CollectionKeys.BIASES if is_bias(name) else CollectionKeys.WEIGHTS)
                self._save_named_variable(name, var, known.name)
                if grad is not None:
                    gname = "gradients/" + name
                    if gname not in self._logged_names and self.is_due(gname):
                        self._logged_names.add(gname)
                        self._record(gname, grad if scale is None else _divided(grad, scale))
        except Exception as e:  # noqa: BLE001
            self._fail("wrap_tape (tape.gradient)", e)

    def _unscaled(self, target):
        """The loss a tape's target was made from by a wrapped ``LossScaleOptimizer``'s ``scale_loss`` in this
        step, and the scale it was multiplied by; ``(target, None)`` for any other target. Mixed-precision loops
        take the gradient of the scaled loss: the run keeps the loss and gradients unscaled, as ``fit`` saves
        them, not multiplied by a loss scale that changes while training."""
        for scaled, loss, scale in self._scaled_losses:
            if scaled is target:
                return loss, scale
        return target, None

    def _wrap_scale_loss(self, optimizer) -> None:
        """Note what a ``LossScaleOptimizer``'s ``scale_loss`` scales, and by how much, inside a writing
        ``wrap_tape`` step (see :meth:`_unscaled`)."""
        if not (hasattr(optimizer, "inner_optimizer") and callable(getattr(optimizer, "scale_loss", None))):
            return
        original = optimizer.scale_loss
        hook = self

        def scale_loss(loss):
            scaled = original(loss)
            if hook._tape_stack is not None and not hook._disabled and tf.executing_eagerly():
                try:
                    scale = optimizer.dynamic_scale if optimizer.built else optimizer.initial_scale
                    hook._scaled_losses.append((scaled, loss, tf.convert_to_tensor(scale)))  # (its value now)
                except Exception as e:  # noqa: BLE001
                    hook._fail("wrap_optimizer (scale_loss)", e)
            return scaled

        object.__setattr__(optimizer, "scale_loss", scale_loss)

    def wrap_optimizer(self, optimizer):
        """Follow a Keras 3 optimizer in a custom loop: the gradients it applies (when ``wrap_tape`` did
        not already save them) and its variables (``optimizer_variables``) are saved when due. Returns
        the same optimizer. Under ``fit`` the model's optimizer is followed without this.

        For a ``LossScaleOptimizer`` (mixed precision), a ``wrap_tape`` step whose ``tape.gradient`` target is
        ``optimizer.scale_loss(loss)`` saves ``loss`` and the gradients unscaled, as ``fit`` does."""
        if not isinstance(optimizer, keras.optimizers.Optimizer):
            raise SMDebugTypeError(
                f"wrap_optimizer expects a Keras optimizer, got {type(optimizer).__name__} (for a "
                "tf.compat.v1.train.Optimizer use SessionHook.wrap_optimizer)")
        if "apply" in vars(optimizer):
            return optimizer
        original = optimizer.apply
        hook = self

        def apply(grads, trainable_variables=None):
            rec = capture.current()
            if rec is not None:
                try:
                    rec.on_apply(optimizer, grads, trainable_variables)
                except Exception as e:  # noqa: BLE001
                    rec.errors.append(e)
            eager = rec is None and tf.executing_eagerly() and not hook._disabled and hook._in_step
            if rec is None and not tf.executing_eagerly() and hook._keras_depth == 0 and not hook._disabled:
                hook._traced_only("wrap_optimizer")
            grads = list(grads)
            if eager:
                hook._optimizer_gradients(optimizer, grads, trainable_variables)
            result = original(grads, trainable_variables)
            if eager:
                try:
                    hook._save_optimizer_variables(optimizer)
                except Exception as e:  # noqa: BLE001
                    hook._fail("wrap_optimizer (optimizer variables)", e)
            return result

        object.__setattr__(optimizer, "apply", apply)
        self._wrap_scale_loss(optimizer)
        self._wrapped_optimizers.append(optimizer)
        return optimizer

    def _traced_only(self, where: str) -> None:
        """``where`` (``wrap_tape``, the optimizer of ``wrap_optimizer``) is used inside a ``tf.function`` outside
        ``fit``: its Python code runs once, while the function is traced, and never at the steps that follow, so
        the hook sees none of those training steps. Said once at training time, and recorded in the run
        (``_meta.traced_only``: the names) so that a reader can tell why the run has no training tensors."""
        what = "wrap_tape()" if where == "wrap_tape" else "the optimizer given to wrap_optimizer()"
        self._warn_once("traced-" + where, f"smdebug: {what} is used inside a tf.function: the hook sees it only "
                        "while the function is traced, never at the training steps that follow, so no loss, "
                        "gradients, weights or optimizer variables of them are saved. Train with "
                        "model.fit(..., callbacks=[hook]), or run the training step eagerly (without @tf.function) "
                        "inside hook.wrap_tape(tf.GradientTape()); a value returned by the step can still be saved "
                        "after it: hook.save_scalar(\"train_loss\", float(loss)) in TRAIN mode")
        try:
            record = self.collection_manager.meta.setdefault(TRACED_ONLY_META_KEY, [])
            if isinstance(record, list) and where not in record:
                record.append(where)
        except Exception as e:  # noqa: BLE001
            self._fail("recording a tf.function step", e)

    def _watch_model(self) -> None:
        """Note the value of the registered model's smallest trainable variable (a few numbers, read at a change of
        mode and at close) and the training steps begun so far."""
        self._watched = None
        try:
            variables = getattr(self.model, "trainable_variables", None) or []
            if variables and tf.executing_eagerly():
                var = min(variables, key=lambda v: int(np.prod(tuple(v.shape))))
                self._watched = (var, np.array(var.numpy(), copy=True), self._training_steps)
        except Exception:  # noqa: BLE001 - an optional check: a variable that cannot be read is not watched
            self._watched = None

    def _check_unseen_training(self) -> None:
        """In a custom loop, say once when the registered model's weights changed while the hook began no TRAIN
        (or GLOBAL) step: the model was trained where the hook does not look (a ``tf.function`` training step, a tape not
        wrapped, an optimizer not wrapped, ``fit`` without the hook in its callbacks), and the run holds nothing of
        that training."""
        watched = self._watched
        if watched is None:
            self._watch_model()  # (a model built by its first call has its variables now)
            return
        var, before, train_steps = watched
        try:
            changed = not np.array_equal(var.numpy(), before)
        except Exception:  # noqa: BLE001
            self._watched = None
            return
        said = {"traced-wrap_tape", "traced-wrap_optimizer"} & self._warned  # (the cause is named already)
        if changed and self._training_steps == train_steps and not said:
            self._warn_once("trained-unseen", "smdebug: the weights of the registered model changed (%s) while the "
                            "hook began no training step: it was trained where the hook does not look (a training step "
                            "in a tf.function, a GradientTape not given to hook.wrap_tape, an optimizer not given to "
                            "hook.wrap_optimizer, or fit without the hook in its callbacks), so the run holds nothing "
                            "of that training. Use model.fit(..., callbacks=[hook]) or an eager step inside "
                            "hook.wrap_tape(tf.GradientTape()), or save the step's loss after it: "
                            "hook.save_scalar(\"train_loss\", float(loss)) in TRAIN mode", shown(variable_name(var)))
        self._watch_model()

    def _optimizer_gradients(self, optimizer, grads, trainable_variables) -> None:
        try:
            if not self.is_writing:
                return
            rec = capture.Recorder(lambda n: n not in self._logged_names and self.is_due(n), None)
            rec.on_apply(optimizer, grads, trainable_variables or optimizer._trainable_variables)
            for name, g in rec.tensors.items():
                self._logged_names.add(name)
                self._record(name, g)
        except Exception as e:  # noqa: BLE001
            self._fail("wrap_optimizer (gradients)", e)

    # ------------------------------------------------------------------------------------------
    # conversions
    # ------------------------------------------------------------------------------------------
    def _device_reductions(self, value, ops):
        return device_reductions(value, ops)

    def _shape_of(self, value):
        shape = getattr(value, "shape", None)
        if shape is not None:
            try:
                return tuple(int(d) for d in shape)
            except TypeError:
                pass
        return super()._shape_of(value)

    def close(self) -> None:
        if self._keras_depth == 0 and not self._disabled:
            self._check_unseen_training()
        for kind in list(_KINDS):
            try:
                self._uninstall(kind)
            except Exception:  # noqa: BLE001
                pass
        for optimizer in self._wrapped_optimizers:
            for name in ("apply", "scale_loss"):
                if name in vars(optimizer):
                    object.__delattr__(optimizer, name)
        self._wrapped_optimizers = []
        TFHookMixin.close(self)

