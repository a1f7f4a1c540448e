"""Capturing tensors that only exist inside a training step: layer inputs/outputs, gradients, the model's
inputs, labels and predictions.

A :class:`Recorder` is active on one thread while a step's Python code runs: while tracing a
``tf.function`` (compiled ``fit``) or, eagerly, inside a ``GradientTape`` step. Every Keras layer call
goes through ``Layer.__call__``; while at least one recorder is active anywhere, that method is
replaced by a thin wrapper that hands the call's tensors to the current thread's recorder (replica
threads of a ``MirroredStrategy`` each get their own). The optimizer's ``apply`` is wrapped on the
instance the same way, for the gradients it receives. Outside those windows nothing is patched, so
steps that save nothing run Keras' own code untouched.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Callable, Dict, Iterable, List, Optional

import numpy as np
import tensorflow as tf

from smdebug.tensorflow.utils import flatten_tensors, structure_names, variable_name

_state = threading.local()
#: ``<layer path>/activation_inputs``: the input of a layer's fused activation (see patched_layers)
ACTIVATION_INPUTS = "activation_inputs"
_patch_lock = threading.RLock()
_patch_count = 0
_original_call = None


def _layer_class():
    from keras.src.layers.layer import Layer

    return Layer


def current() -> Optional["Recorder"]:
    return getattr(_state, "recorder", None)


def _patched_call(self, *args, **kwargs):
    rec = getattr(_state, "recorder", None)
    calls = None
    if rec is not None and id(self) in _probed:
        # a layer with a fused activation: its probe reports the activation's (input, output) of this call
        calls = []
        pending = _state.__dict__.setdefault("activation_calls", {})
        pending[id(self)] = calls
    try:
        outputs = _original_call(self, *args, **kwargs)
    finally:
        if calls is not None:
            _state.activation_calls.pop(id(self), None)
    if rec is not None:
        try:
            rec.on_layer_call(self, args, outputs, calls)
        except Exception as e:  # noqa: BLE001 - capturing must never break the step
            rec.errors.append(e)
    return outputs


def _probe(layer_id: int, fn):
    """``fn`` (a layer's fused activation), reporting each call to the layer call in progress on this thread."""

    @functools.wraps(fn)
    def activation(x, *args, **kwargs):
        y = fn(x, *args, **kwargs)
        calls = getattr(_state, "activation_calls", {}).get(layer_id)
        if calls is not None:
            calls.append((x, y))
        return y

    return activation


#: id(layer) -> [layer, its own activation function, contexts using the probe]
_probed: Dict[int, list] = {}


@contextlib.contextmanager
def patched_layers(fused: Iterable = ()):
    """Route Keras layer calls through the recorders while the context is open (re-entrant). The ``fused``
    layers (with a fused ``activation=``) get their activation function probed meanwhile, so the recorder
    sees its input, which never leaves the layer's ``call`` otherwise."""
    global _patch_count, _original_call
    layer_cls = _layer_class()
    probed = []
    with _patch_lock:
        if _patch_count == 0:
            _original_call = layer_cls.__dict__["__call__"]
            layer_cls.__call__ = _patched_call
        _patch_count += 1
        for layer in fused:
            entry = _probed.get(id(layer))
            if entry is None:
                fn = layer.__dict__.get("activation")
                if not callable(fn):
                    continue
                entry = _probed[id(layer)] = [layer, fn, 0]
                object.__setattr__(layer, "activation", _probe(id(layer), fn))  # (past Keras' attribute tracking)
            entry[2] += 1
            probed.append(id(layer))
    try:
        yield
    finally:
        with _patch_lock:
            for layer_id in probed:
                entry = _probed[layer_id]
                entry[2] -= 1
                if entry[2] == 0:
                    object.__setattr__(entry[0], "activation", entry[1])
                    del _probed[layer_id]
            _patch_count -= 1
            if _patch_count == 0:
                layer_cls.__call__ = _original_call


@contextlib.contextmanager
def patched_optimizer(optimizer):
    """Hand the gradients ``optimizer.apply`` receives to the current thread's recorder."""
    if optimizer is None or "apply" in vars(optimizer):
        yield
        return
    original = optimizer.apply

    def apply(grads, trainable_variables=None):
        rec = getattr(_state, "recorder", None)
        if rec is not None:
            try:
                rec.on_apply(optimizer, grads, trainable_variables)
            except Exception as e:  # noqa: BLE001
                rec.errors.append(e)
        return original(grads, trainable_variables)

    object.__setattr__(optimizer, "apply", apply)
    try:
        yield
    finally:
        object.__delattr__(optimizer, "apply")


_loss_patch_count = 0
_original_loss_call = None


def _loss_class():
    import keras

    return keras.losses.Loss


def _patched_loss_call(self, *args, **kwargs):
    rec = getattr(_state, "recorder", None)
    depth = getattr(_state, "loss_depth", 0)
    if rec is not None:
        try:
            y_true = args[0] if args else kwargs.get("y_true")
            y_pred = args[1] if len(args) > 1 else kwargs.get("y_pred")
            rec.on_loss_object_call(self, y_true, y_pred, nested=depth > 0)
        except Exception as e:  # noqa: BLE001 - capturing must never break the step
            rec.errors.append(e)
    # (a Loss whose own code calls other Loss objects: only the outermost call is the loss the step computes)
    _state.loss_depth = depth + 1
    try:
        return _original_loss_call(self, *args, **kwargs)
    finally:
        _state.loss_depth = depth


@contextlib.contextmanager
def patched_losses(active: bool = True):
    """Route calls of Keras ``Loss`` objects through the recorders while the context is open (re-entrant;
    nothing is patched when ``active`` is false). A recorder takes the calls of the losses whose ids are in
    its ``loss_ids`` (those given to ``KerasHook.register_loss``) and, with ``discover_losses``, the first
    loss the step's own code calls on the batch's labels or the model's output (see
    :meth:`Recorder.on_loss_object_call`): their targets and predictions."""
    global _loss_patch_count, _original_loss_call
    if not active:
        yield
        return
    loss_cls = _loss_class()
    with _patch_lock:
        if _loss_patch_count == 0:
            _original_loss_call = loss_cls.__dict__["__call__"]
            loss_cls.__call__ = _patched_loss_call
        _loss_patch_count += 1
    try:
        yield
    finally:
        with _patch_lock:
            _loss_patch_count -= 1
            if _loss_patch_count == 0:
                loss_cls.__call__ = _original_loss_call


def _eager_tensors(value):
    """A structure of values with NumPy arrays made tensors (a custom loop may feed the model NumPy batches)."""
    return tf.nest.map_structure(lambda v: tf.convert_to_tensor(v) if isinstance(v, np.ndarray) else v, value)


class Recorder:
    """Collects the tensors of one step (on one replica) whose names ``want`` accepts.

    ``offered`` keeps every name seen, wanted or not, so the hook learns which tensors a step has.
    """

    def __init__(self, want: Callable[[str], bool], layer_names: Optional[Dict[int, str]], model=None,
                 optimizer=None, model_inputs: bool = False, loss_ids: Iterable[int] = (),
                 discover_losses: bool = False):
        self.want = want
        #: also offer the model's call input as ``inputs`` (a custom loop: no data is unpacked for it)
        self.model_inputs = model_inputs
        #: ids of the Keras Loss objects whose first call offers ``labels`` and ``predictions``
        self.loss_ids = frozenset(loss_ids)
        #: also take a loss object nobody registered (a custom train_step's ``self.loss_fn(y, pred)``)
        self.discover_losses = discover_losses
        #: the unregistered Keras Loss object whose inputs this step offered (for the hook to record)
        self.discovered_loss = None
        #: the batch's targets as the step was given them (set by the hook before the step runs)
        self.batch_labels: List = []
        self._model_outputs: List = []  # the outputs of every call of the model in this step
        self._loss_called = False
        self.layer_names = layer_names
        self.model = model
        self.optimizer = optimizer
        self.tensors: Dict[str, object] = {}
        self.offered: List[str] = []
        self.errors: List[BaseException] = []
        self.graph = None
        self._io_counts: Dict[str, int] = {}
        self._model_called = False

    # --- activation ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def active(self):
        # Only tensors of the graph being traced (or eager ones) can be returned: Keras also calls
        # layers inside scratch graphs (shape inference while building) and control-flow branches.
        self.graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
        previous = getattr(_state, "recorder", None)
        _state.recorder = self
        try:
            yield self
        finally:
            _state.recorder = previous

    # --- adding -------------------------------------------------------------------------------
    def offer(self, name: str, tensor) -> None:
        if name in self.tensors:
            return
        self.offered.append(name)
        if self.want(name):
            self.tensors[name] = tensor

    def _io(self, base: str, kind: str, tensors: List) -> None:
        if not tensors:
            return
        key = f"{base}/{kind}"
        start = self._io_counts.get(key, 0)
        self._io_counts[key] = start + len(tensors)
        if start == 0 and len(tensors) == 1:
            self.offer(key, tensors[0])
            return
        for i, t in enumerate(tensors, start=start):
            self.offer(f"{key}_{i}", t)

    def _reachable(self, tensors: List) -> List:
        if self.graph is None:
            return [t for t in tensors if not hasattr(t, "graph") or tf.executing_eagerly()]
        return [t for t in tensors if getattr(t, "graph", None) is self.graph]

    def on_layer_call(self, layer, args, outputs, activation_calls=None) -> None:
        out = flatten_tensors(outputs)
        if not out or len(self._reachable(out)) != len(out):
            return  # a call in another graph (shape inference, a tf.cond branch): not this step's
        if layer is self.model:
            self._model_outputs.extend(out)
            if not self._model_called:
                self._model_called = True
                for name, t in structure_names("predictions", outputs):
                    self.offer(name, t)
                if self.model_inputs and args:
                    for name, t in structure_names("inputs", self._eager(args[0])):
                        self.offer(name, t)
            return
        if self.layer_names is None:  # no registered model: every layer, by its Keras path
            if type(layer).__name__ == "InputLayer":
                return
            name = layer_name(layer)
        else:
            fallback = self.layer_names.get(id(layer))
            if fallback is None:
                return
            name = layer_name(layer, fallback)
        self._io(name, "inputs", self._reachable(flatten_tensors(args)))
        self._io(name, "outputs", out)
        if activation_calls and len(activation_calls) == 1 and len(out) == 1 and activation_calls[0][1] is out[0]:
            # the fused activation ran once and made the layer's output: its input is the pre-activation
            self._io(name, ACTIVATION_INPUTS, self._reachable([activation_calls[0][0]]))

    def on_apply(self, optimizer, grads, trainable_variables) -> None:
        if trainable_variables is None:
            trainable_variables = getattr(optimizer, "_trainable_variables", None) or []
        scale = None
        if hasattr(optimizer, "inner_optimizer") and hasattr(optimizer, "dynamic_scale"):
            scale = optimizer.dynamic_scale  # LossScaleOptimizer: record gradients unscaled
        for g, v in zip(grads, trainable_variables):
            if g is None:
                continue
            name = "gradients/" + variable_name(v)
            if name in self.tensors or not self.want(name):
                self.offered.append(name)
                continue
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            if scale is not None:
                g = tf.cast(g, tf.float32) / tf.cast(tf.convert_to_tensor(scale), tf.float32)
            self.offer(name, g)

    def _eager(self, value):
        return _eager_tensors(value) if self.graph is None else value

    def on_loss_object_call(self, loss, y_true, y_pred, nested: bool = False) -> None:
        """A Keras ``Loss`` object was called in this step. A registered one (``loss_ids``) offers its inputs.
        With ``discover_losses``, so does the first other loss the step's code calls itself (not from inside
        another loss) on one prediction tensor, when it compares the batch's own labels or the model's own
        output: that is the loss the model trains with, computed by hand in a custom ``train_step``. A loss
        called on neither (a GAN's discriminator loss on made-up targets, an auxiliary loss on hidden
        features) says nothing about the model's predictions and is left alone."""
        if id(loss) in self.loss_ids:
            self.on_loss_call(y_true, y_pred)
            return
        if not self.discover_losses or nested or self._loss_called:
            return
        preds, targets = flatten_tensors(y_pred), flatten_tensors(y_true)
        if len(preds) != 1:
            return  # (the record names one prediction tensor)

        def among(tensors, pool):
            return bool(tensors) and all(any(t is p for p in pool) for t in tensors)

        if (among(targets, self.batch_labels) or among(preds, self._model_outputs)) \
                and self.on_loss_call(y_true, y_pred):
            self.discovered_loss = loss

    def on_loss_call(self, y_true, y_pred) -> bool:
        """The first call of a registered loss in this step: its targets are the ``labels`` and its first input
        the ``predictions`` (what the loss record of ``register_loss`` points at), in place of the model's
        output when the loss is given something else. Returns whether its input was offered (it is not when
        it belongs to another graph)."""
        if self._loss_called:
            return False
        self._loss_called = True
        y_true, y_pred = self._eager(y_true), self._eager(y_pred)
        preds = list(structure_names("predictions", y_pred))
        if preds and len(self._reachable([t for _, t in preds])) == len(preds):
            for name, t in preds:
                if name in self.tensors and self.tensors[name] is not t:
                    del self.tensors[name]
                self.offer(name, t)
        else:
            return False
        labels = list(structure_names("labels", y_true))
        if labels and len(self._reachable([t for _, t in labels])) == len(labels):
            for name, t in labels:
                self.offer(name, t)
        return True

    def add_data(self, x, y) -> None:
        for name, t in structure_names("inputs", x):
            self.offer(name, t)
        for name, t in structure_names("labels", y):
            self.offer(name, t)


def layer_names(model) -> Dict[int, str]:
    """``id(layer) -> fallback name`` for every layer inside ``model`` (nested ones too).

    A layer is named by its Keras path (``sequential/dense``, the prefix of its variables' paths) as
    soon as it is built; the fallback, for layers Keras gives no path, is the layer's name under the
    prefix its built siblings share (``cnn/pool``).
    """
    layers = [l for l in _flatten_layers(model) if l is not model and type(l).__name__ != "InputLayer"]
    prefix = ""
    for layer in layers:
        path = getattr(layer, "path", None)
        if path and path.endswith("/" + layer.name):
            prefix = path[: -len(layer.name)]
            break
    return {id(layer): prefix + layer.name for layer in layers}


def layer_name(layer, fallback: Optional[str] = None) -> str:
    return getattr(layer, "path", None) or fallback or layer.name


def _flatten_layers(model) -> Iterable:
    flatten = getattr(model, "_flatten_layers", None)
    if flatten is not None:
        try:
            return list(flatten(include_self=False, recursive=True))
        except TypeError:
            pass
    return list(getattr(model, "layers", []))
