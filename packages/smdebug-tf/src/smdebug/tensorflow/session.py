"""The session hook: a ``tf.compat.v1.train.SessionRunHook`` for graph-mode code run by a
``tf.compat.v1.train.MonitoredSession`` (``MonitoredTrainingSession``).

One ``session.run`` call is one step (from 0, in mode TRAIN unless ``set_mode`` says otherwise). When a
step is due, the hook adds the due tensors to that run's fetches and saves what comes back:

* ``losses``: the tensors in ``tf.compat.v1.losses.get_losses()`` (named by their op, e.g.
  ``mean_squared_error/value``), plus any added with ``add_to_collection``;
* ``weights`` / ``biases``: every global variable by its name without ``:0`` (``dense/kernel``);
  non-trainable ones except the global step count as weights;
* ``gradients``: ``gradients/<variable>``, for optimizers wrapped with :meth:`SessionHook.wrap_optimizer`;
* ``optimizer_variables``: the wrapped optimizers' slots (``dense/kernel/Momentum``);
* any graph tensor a user collection's (or ``include_regex``'s, or ``save_all``'s) regex matches, named
  ``<op name>`` for an op's first output and ``<op name>:<i>`` for the others; tensors that need a
  placeholder this run does not feed are skipped.

``EstimatorHook`` is the same class: ``tf.estimator`` no longer exists in TensorFlow 2.16+, but code
that named the hook that way keeps working with MonitoredSession.
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import tensorflow as tf

from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import BaseHook, logger
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugTypeError
from smdebug.tensorflow.base import TFHookMixin
from smdebug.tensorflow.utils import is_bias

_BUILTIN_REGEX_COLLECTIONS = frozenset({
    CollectionKeys.GRADIENTS, CollectionKeys.LOSSES, CollectionKeys.INPUTS, CollectionKeys.LABELS,
    CollectionKeys.PREDICTIONS, CollectionKeys.OUTPUTS, CollectionKeys.LAYERS, CollectionKeys.SCALARS,
})
_UNFETCHABLE_DTYPES = (tf.resource, tf.variant)


def _tensor_name(t) -> str:
    op_name = t.op.name
    return op_name if t.value_index == 0 else f"{op_name}:{t.value_index}"


def _var_name(v) -> str:
    return v.op.name


class SessionHook(tf.compat.v1.train.SessionRunHook, TFHookMixin):
    """smdebug's hook for ``tf.compat.v1.train.MonitoredSession(hooks=[hook])``."""

    def _setup(self) -> None:
        super()._setup()
        self._graph = None
        self._candidates: Dict[str, object] = {}  # name -> graph tensor or variable
        self._gradients: List[Tuple[str, object]] = []
        self._optimizers: List = []
        self._placeholders: Dict[str, Set[object]] = {}
        self._run_context = None
        self._scanned_token = None

    # ------------------------------------------------------------------------------------------
    # graph construction
    # ------------------------------------------------------------------------------------------
    def wrap_optimizer(self, optimizer):
        """Follow a ``tf.compat.v1.train.Optimizer``: the gradients it applies are saved as
        ``gradients/<variable>`` and its slots as optimizer variables. Returns the same optimizer."""
        if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
            raise SMDebugTypeError(
                f"SessionHook.wrap_optimizer expects a tf.compat.v1.train.Optimizer, got {type(optimizer).__name__} "
                "(Keras optimizers: KerasHook.wrap_optimizer)")
        if "apply_gradients" in vars(optimizer):
            return optimizer
        original = optimizer.apply_gradients
        hook = self

        def apply_gradients(grads_and_vars, global_step=None, name=None):
            grads_and_vars = list(grads_and_vars)
            for g, v in grads_and_vars:
                if g is None:
                    continue
                if isinstance(g, tf.IndexedSlices):
                    g = tf.convert_to_tensor(g)
                hook._gradients.append(("gradients/" + _var_name(v), g))
            return original(grads_and_vars, global_step=global_step, name=name)

        object.__setattr__(optimizer, "apply_gradients", apply_gradients)
        self._optimizers.append(optimizer)
        return optimizer

    def begin(self) -> None:
        """Called by MonitoredSession once the graph is complete: find what can be saved."""
        try:
            self._collect(tf.compat.v1.get_default_graph())
        except Exception as e:  # noqa: BLE001
            self._fail("SessionHook.begin()", e)

    def _collect(self, graph) -> None:
        self._graph = graph
        candidates: Dict[str, object] = {}
        with graph.as_default():
            global_step = tf.compat.v1.train.get_global_step()
            slots = {}
            for opt in self._optimizers:
                for slot in opt.get_slot_names():
                    for v in tf.compat.v1.global_variables():
                        s = opt.get_slot(v, slot)
                        if s is not None:
                            slots[id(s)] = s
                for extra in getattr(opt, "_non_slot_dict", {}).values():  # e.g. Adam's beta powers
                    slots[id(extra)] = extra
            weights = self.collection_manager.get(CollectionKeys.WEIGHTS)
            biases = self.collection_manager.get(CollectionKeys.BIASES)
            opt_vars = self.collection_manager.get(CollectionKeys.OPTIMIZER_VARIABLES)
            for v in tf.compat.v1.global_variables():
                if global_step is not None and v is global_step:
                    continue
                name = _var_name(v)
                if id(v) in slots:
                    opt_vars.add_tensor_name(name)
                else:
                    (biases if is_bias(name) else weights).add_tensor_name(name)
                candidates[name] = v
            losses = self.collection_manager.get(CollectionKeys.LOSSES)
            for t in tf.compat.v1.losses.get_losses():
                name = _tensor_name(t)
                losses.add_tensor_name(name)
                candidates[name] = t
        for name, g in self._gradients:
            candidates[name] = g
        self._candidates = candidates
        self._scanned_token = None
        self._prepared_token = None

    def _scan_graph(self) -> None:
        """Tensors matched by regexes of user collections (and ``default``/``all``), once per change of
        the collections."""
        token = self._token()
        if token == self._scanned_token or self._graph is None:
            return
        self._scanned_token = token
        colls = [c for c in self._included if c.name not in _BUILTIN_REGEX_COLLECTIONS and c.has_regex()]
        if not colls:
            return
        for op in self._graph.get_operations():
            for t in op.outputs:
                if t.dtype.base_dtype in _UNFETCHABLE_DTYPES or not self._graph.is_fetchable(t):
                    continue
                name = _tensor_name(t)
                if name not in self._candidates and any(c.matches_regex(name) for c in colls):
                    self._candidates[name] = t

    def _needed_placeholders(self, name: str, tensor) -> Set[object]:
        found = self._placeholders.get(name)
        if found is not None:
            return found
        found, seen, stack = set(), set(), [tensor.op]
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            if op.type in ("Placeholder", "PlaceholderV2"):
                found.add(op.outputs[0])
                continue
            if op.type in ("VarHandleOp", "VariableV2", "Const"):
                continue
            stack.extend(i.op for i in op.inputs)
            stack.extend(op.control_inputs)
        self._placeholders[name] = found
        return found

    # ------------------------------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------------------------------
    def _on_stop_requested(self, signal: dict) -> None:
        if self._run_context is not None:
            logger.warning("smdebug: asking the MonitoredSession to stop (%s)", self.stop_reason)
            self._run_context.request_stop()
            return
        super()._on_stop_requested(signal)

    def before_run(self, run_context):
        if self._disabled:
            return None
        try:
            if self.mode == ModeKeys.GLOBAL and not self._mode_set_by_user:
                BaseHook.set_mode(self, ModeKeys.TRAIN)
            self._run_context = run_context
            try:
                self.begin_step()
            finally:
                self._run_context = None
            if not self.is_writing:
                return None
            self._scan_graph()
            fed = set()
            feed_dict = getattr(run_context.original_args, "feed_dict", None) or {}
            for key in feed_dict:
                fed.add(key if not isinstance(key, str) else self._graph.as_graph_element(key))
            fetches, variables = {}, {}
            for name, t in self._candidates.items():
                if not self.is_due(name):
                    continue
                if isinstance(t, tf.Variable):
                    variables[name] = t
                elif isinstance(t, tf.Tensor) and not self._needed_placeholders(name, t) <= fed:
                    continue
                else:
                    fetches[name] = t
            if variables:
                # Read before this run updates them (fetched with the train op, the order would be
                # undefined): the weights a due step saves are those its gradients were computed at.
                for name, value in run_context.session.run(variables).items():
                    self._record_everywhere(name, value)
            if not fetches:
                return None
            return tf.compat.v1.train.SessionRunArgs(fetches)
        except Exception as e:  # noqa: BLE001
            self._fail("SessionHook.before_run()", e)
            return None

    def after_run(self, run_context, run_values):
        if self._disabled:
            return
        try:
            results = run_values.results
            if isinstance(results, dict):
                for name, value in results.items():
                    self._record_everywhere(name, value)
            self.end_step()
        except Exception as e:  # noqa: BLE001
            self._fail("SessionHook.after_run()", e)

    def end(self, session) -> None:
        """The MonitoredSession closes: finish the last step and write everything (the hook stays
        usable for another session; ``close()`` or the end of the process marks the run finished)."""
        if self._disabled:
            return
        try:
            if self._in_step:
                self.end_step()
            self.flush()
        except Exception as e:  # noqa: BLE001
            self._fail("SessionHook.end()", e)

    def close(self) -> None:
        for opt in self._optimizers:
            if "apply_gradients" in vars(opt):
                object.__delattr__(opt, "apply_gradients")
        self._optimizers = []
        TFHookMixin.close(self)


#: ``tf.estimator`` is gone from TensorFlow 2.16+; the name stays for code that used it.
EstimatorHook = SessionHook
