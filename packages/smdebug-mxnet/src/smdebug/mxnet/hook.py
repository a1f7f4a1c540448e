"""The MXNet Gluon hook: forward hooks on blocks, parameters and gradients read from Gluon.

Names, as in smdebug 1.0.x for MXNet 1.x: parameters by their Gluon name (``dense0_weight``),
gradients ``gradient/dense0_weight``, block inputs/outputs ``<block.name>_input_<i>`` /
``<block.name>_output_<i>`` (losses: ``softmaxcrossentropyloss0_output_0``).

Steps. A step begins at each forward call of the registered model (its forward pre-hook), and in
it the model's parameters are saved as they are *before* that forward: the values the step computes
with. A step's gradients are read from ``Parameter.grad()`` when the step ends, i.e. after its
backward pass: at the next forward call of the model, at ``set_mode`` to another mode, or at
``close()``. Gradients are not cleared between steps by Gluon (``grad_req="write"`` overwrites
them at each backward), so what is read then is the gradient of this step's loss with respect to the
parameters saved for this step. With ``hook.register_trainer(trainer)`` gradients are read instead
just before ``trainer.step()``/``trainer.update()`` applies them (needed with ``grad_req="add"``
when they are zeroed after the update), and in TRAIN/GLOBAL modes a step is one trainer update: all
forward calls before it belong to the same step (gradient accumulation).

Modes. Until the script calls ``set_mode`` (and unless the schedule is given per mode), a forward call of
the model under ``autograd.record()`` begins a TRAIN step and one outside it an EVAL step, so validation
run without ``set_mode`` is not saved among the training steps.

Hybridized networks. After ``net.hybridize()`` Gluon runs the network as one compiled graph:
the forward hooks of its inner blocks never run, so their inputs/outputs cannot be saved (the hook
says so once, in the log). Parameters, gradients, losses and the registered block's own
inputs/outputs are unaffected. The activation collections (``relu_activations``..., which
``Hook.recommended`` includes) are read there through MXNet's operator monitor
(``HybridBlock.register_op_hook``) instead: when an included collection wants an activation block's
tensors, the hook installs the monitor and keeps only those tensors, under the names MXNet gives the
activation's graph node (``dense0_relu_fwd_output``; smdebug.mxnet.layers.graph_names), which the
layers' record names too. To see anything else inside a hybridized network, either debug with
``net.hybridize(active=False)``, or register with ``hook.register_block(net, graph_outputs=True)``:
the outputs of every operator of the graph are then offered to the collections under MXNet's node
names (``dense0_fwd_output``...).
"""

from __future__ import annotations

import ctypes
import re
import warnings
import weakref
from typing import Dict, List, Optional, Tuple

import mxnet as mx
from mxnet import gluon

from smdebug.core import activations, loss_inputs, singleton
from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import BaseHook, _guarded, logger
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError, TrainingStopRequested
from smdebug.mxnet import layers
from smdebug.mxnet.collection import Collection
from smdebug.mxnet.reductions import device_reductions

_NDArray = mx.nd.NDArray
_TRAINER_MODES = (ModeKeys.TRAIN, ModeKeys.GLOBAL)
#: how MXNet's operator monitor names an operator's outputs (``dense0_fwd_output``, ``..._fwd_0``, a backward
#: node's ``..._backward_0``); its inputs are named by argument (``dense0_fwd_data``, ``..._weight``, ``..._input0``)
_GRAPH_OUTPUT = re.compile(r"_(?:output|\d+)$")
GRADIENT_PREFIX = "gradient/"


def _arrays(value):
    """Every NDArray in a (nested) tuple/list/dict, in order. Symbols (met while Gluon traces a
    network for hybridize) and other values are skipped."""
    if isinstance(value, _NDArray):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)


def _children(block) -> List:
    return list(getattr(block, "_children", {}).values())


def _is_hybridized(block) -> bool:
    return isinstance(block, gluon.HybridBlock) and bool(getattr(block, "_active", False))


class Hook(BaseHook):
    framework_name = "mxnet"
    default_include_collections = (CollectionKeys.LOSSES,)
    collection_class = Collection

    def _setup(self) -> None:
        super()._setup()
        self.model = None
        self.losses: List = []
        self._loss_names: Dict[int, str] = {}  # id of a registered loss block (kept alive by self.losses) -> name
        self._params: List[Tuple[str, object]] = []
        self._parents: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._model_handles: List = []
        self._loss_handles: List = []
        self._io_handles: Dict[int, Tuple[object, object]] = {}
        self._trainers: List[Tuple[object, object, object]] = []
        self._io_index: Dict[str, List[int]] = {}
        self._deferred_params: List[Tuple[str, object]] = []
        self._grads_read = False  # the current step's gradients were read already
        self._step_mode: Optional[ModeKeys] = None
        self._graph_outputs = False
        # graph-node tensor name -> whether it is an operator's input: the activation blocks' tensors an
        # included collection wants, read from the operator monitor when the network is hybridized
        self._graph_names: Dict[str, bool] = {}
        self._monitor_all = False  # the monitor also hands over the operators' inputs
        self._told_hybridized = False
        # Until the script calls set_mode, autograd tells the mode of the model's forward calls: one under
        # autograd.record() computes what a backward pass will train (TRAIN), one outside it is evaluation
        # (EVAL). (mode outside record, mode under record), or None when not followed. A loop that validates
        # without set_mode (a quick-start loop, any unmodified script under `smdebug run`) had its validation
        # saved as GLOBAL steps among the training ones, and no rule could tell them apart. A schedule written
        # per mode is a script that names its modes: it is not second-guessed (its steps are GLOBAL, as in 1.0.x).
        configs = self.save_config.mode_save_configs
        alike = configs.get(ModeKeys.TRAIN) == configs.get(ModeKeys.EVAL) == configs.get(ModeKeys.GLOBAL)
        self._modes_by_autograd: Optional[Tuple[ModeKeys, ModeKeys]] = (ModeKeys.EVAL, ModeKeys.TRAIN) if alike else None

    def default_collections(self):
        return [
            Collection(CollectionKeys.WEIGHTS, include_regex=["^(?!gradient).*weight"]),
            Collection(CollectionKeys.BIASES, include_regex=["^(?!gradient).*bias"]),
            Collection(CollectionKeys.GRADIENTS, include_regex=["^gradient"]),
            # The original's regex first (it needs a character after "loss", as in "...loss0_output_0");
            # the second also catches record_tensor_value("loss") / ("mse_loss") names.
            Collection(CollectionKeys.LOSSES, include_regex=[".*loss._(?!input).*output", r"[Ll]oss_output_\d+$"]),
            # every block's inputs/outputs; the model's own (``inputs``/``outputs``), the activation blocks'
            # (``relu_activations``...) and a classification loss's (``predictions``/``labels``) are added by
            # type when the blocks are registered (smdebug.mxnet.layers)
            Collection(CollectionKeys.LAYERS, include_regex=[r"_input_\d+$", r"_output_\d+$"]),
            Collection(CollectionKeys.INPUTS),
            Collection(CollectionKeys.OUTPUTS),
            Collection(CollectionKeys.LOSS_INPUTS),  # (filled by register_block with a loss block)
        ]

    # ------------------------------------------------------------------------------------------
    # registration
    # ------------------------------------------------------------------------------------------
    def register_block(self, block, graph_outputs: bool = False) -> None:
        """Attach the hook to a Gluon block.

        A loss block (``gluon.loss.Loss``) marks no step: its outputs are the ``losses`` collection
        (``<loss>_output_0``), its inputs the ``loss_inputs`` collection (recorded with what the loss expects
        of the model's output). Any other block is the model: its forward calls mark steps, its
        parameters and their gradients are saved, and the inputs/outputs of it and its inner blocks
        become available to collections. ``graph_outputs=True`` also offers the outputs of the
        operators of a hybridized network, under MXNet's node names (see the module docstring).
        """
        if not isinstance(block, gluon.Block):
            raise SMDebugTypeError(f"register_block expects a mxnet.gluon.Block, got {type(block).__name__}")
        if isinstance(block, gluon.loss.Loss):
            if any(b is block for b in self.losses):
                logger.warning("smdebug: the loss block %s is already registered with this hook", block.name)
                return
            name = self._loss_name(block)
            self.losses.append(block)
            self._loss_names[id(block)] = name
            self._loss_handles.append(block.register_forward_hook(self._on_forward))
            losses = self.get_collection(CollectionKeys.LOSSES)
            if not losses.matches(f"{name}_output_0"):
                # (the default patterns want "loss" in the name; a block built with prefix="bce_" has none)
                losses.include(layers.io_regex(name, "output"))
            if layers.is_classification_loss(block):
                self.get_collection(CollectionKeys.PREDICTIONS).include(layers.io_regex(name, "input", 0))
                self.get_collection(CollectionKeys.LABELS).include(layers.io_regex(name, "input", 1))
            loss_inputs.add_loss(self, layers.describe_loss(block, name))  # (every loss: loss_inputs)
            return
        if self.model is not None:
            if self.model is block:
                logger.warning("smdebug: the block %s is already registered with this hook", block.name)
                if graph_outputs:
                    self._install_graph_monitor()
                return
            raise SMDebugValueError(
                f"This hook already follows the block {self.model.name}; call hook.remove() before "
                f"registering {block.name}, or register the block that contains both"
            )
        self.model = block
        self._refresh_structure()
        self.get_collection(CollectionKeys.INPUTS).include(layers.io_regex(block.name, "input"))
        self.get_collection(CollectionKeys.OUTPUTS).include(layers.io_regex(block.name, "output"))
        activations.add_to_collections(self, layers.activation_layers(self._blocks()))
        self._model_handles = [
            block.register_forward_pre_hook(self._on_model_forward_pre),
            block.register_forward_hook(self._on_model_forward),
        ]
        if graph_outputs:
            self._install_graph_monitor()
        self._prepared_token = None  # re-evaluate which block hooks are needed

    register_hook = register_block

    def register_trainer(self, trainer) -> None:
        """Read gradients just before ``trainer.step()``/``trainer.update()`` applies them, and (in TRAIN
        and GLOBAL modes) count one step per trainer update: every forward call of the model before
        the update belongs to the same step."""
        if not isinstance(trainer, gluon.Trainer):
            raise SMDebugTypeError(f"register_trainer expects a mxnet.gluon.Trainer, got {type(trainer).__name__}")
        if any(t is trainer for t, _, _ in self._trainers):
            return
        step, update = trainer.step, trainer.update
        trainer.step = self._wrap_update(step)
        trainer.update = self._wrap_update(update)
        self._trainers.append((trainer, trainer.step, trainer.update))

    def _wrap_update(self, method):
        def wrapped(*args, **kwargs):
            self._before_update()
            result = method(*args, **kwargs)
            self._after_update()
            return result

        wrapped.__wrapped__ = method
        wrapped.__doc__ = method.__doc__
        return wrapped

    def remove(self) -> None:
        """Detach every hook from the model, the losses and the trainers (saved data stays)."""
        for handle in self._model_handles + self._loss_handles:
            handle.detach()
        for _, handle in self._io_handles.values():
            handle.detach()
        self._model_handles, self._loss_handles, self._io_handles = [], [], {}
        for trainer, step, update in self._trainers:
            # our wrappers are instance attributes: deleting them brings back the Trainer methods
            if trainer.__dict__.get("step") is step:
                del trainer.step
            if trainer.__dict__.get("update") is update:
                del trainer.update
        self._trainers = []
        self._graph_outputs = False  # MXNet cannot unregister an op hook: ours now returns at once
        self._graph_names, self._monitor_all = {}, False
        self.model = None
        self.losses = []
        self._loss_names = {}
        self._params = []
        self._parents = weakref.WeakKeyDictionary()

    def close(self) -> None:
        if not self._closed and not self._disabled:
            try:
                self._read_gradients()  # the last step's
            except Exception as e:  # noqa: BLE001
                self._fail("reading the last step's gradients", e)
        super().close()
        self.remove()

    def _refresh_structure(self) -> None:
        """Parameters of the model and the parent of every inner block (blocks may be added later)."""
        model = self.model
        self._params = [(p.name, p) for p in model.collect_params().values()]
        parents = weakref.WeakKeyDictionary()
        stack = [model]
        while stack:
            block = stack.pop()
            for child in _children(block):
                if child not in parents and child is not model:
                    parents[child] = block
                    stack.append(child)
        self._parents = parents

    def _blocks(self):
        return [self.model, *self._parents.keys()] if self.model is not None else []

    def _install_graph_monitor(self) -> None:
        self._graph_outputs = True
        self._register_op_hooks()

    def _register_op_hooks(self) -> None:
        """MXNet's operator monitor on every hybrid block of the model: it runs only in a block whose compiled
        graph runs (a hybridized one), and is handed to that graph at each call, so installing it at any time
        takes effect at the next forward call."""
        for block in self._blocks():
            if isinstance(block, gluon.HybridBlock):
                block.register_op_hook(self._on_graph_node, monitor_all=self._monitor_all)
        # MXNet 1.9 warns "register_op_hook is experimental when static_alloc=True / static_shape=True" at the
        # first compiled call whatever the flags are (it tests the truth of (name, value) pairs, always true):
        # a warning about flags the user did not set is noise
        warnings.filterwarnings("ignore", message="register_op_hook is experimental", category=UserWarning)

    def _watch_activation_graph_nodes(self) -> None:
        """Have the operator monitor hand over the activation blocks' tensors that an included collection
        wants (the hook's forward hooks cannot run inside a hybridized network; ``Hook.recommended`` wants
        them for DeadRelu and SaturatedActivation)."""
        wanted: Dict[str, bool] = {}
        for block in self._blocks():
            names = layers.graph_names(block) if layers.activation_kind(block) else None
            for name, is_input in zip(names or (), (True, False)):
                if self._may_save(name):
                    wanted[name] = is_input
        monitor_all = any(wanted.values())
        if wanted == self._graph_names and monitor_all == self._monitor_all:
            return
        self._graph_names, self._monitor_all = wanted, monitor_all
        if wanted or self._graph_outputs:
            self._register_op_hooks()

    # ------------------------------------------------------------------------------------------
    # collections <-> block hooks
    # ------------------------------------------------------------------------------------------
    def _before_prepare(self) -> None:
        for coll in self.collection_manager.collections.values():
            if isinstance(coll, Collection):
                coll._resolve_blocks()
        if self.model is not None:
            self._refresh_structure()

    def _may_save(self, name: str) -> bool:
        return any(c.matches(name) for c in self._included)

    def _after_prepare(self) -> None:
        # Hook only the blocks whose inputs/outputs some included collection can match: a forward
        # hook costs a Python call per block per step.
        for block in self._blocks():
            wanted = self._may_save(f"{block.name}_input_0") or self._may_save(f"{block.name}_output_0")
            entry = self._io_handles.get(id(block))
            if wanted and entry is None:
                self._io_handles[id(block)] = (block, block.register_forward_hook(self._on_forward))
            elif not wanted and entry is not None:
                entry[1].detach()
                del self._io_handles[id(block)]
        self._watch_activation_graph_nodes()

    def _hidden_blocks(self) -> List[str]:
        """Hooked blocks whose forward hooks cannot run (an enclosing block is hybridized) and whose wanted
        tensors the operator monitor does not hand over either."""
        hidden = []
        for block, _ in self._io_handles.values():
            graph = layers.graph_names(block) if layers.activation_kind(block) else None
            if graph is not None and all(n in self._graph_names or not self._may_save(n) for n in graph):
                continue  # an activation block: the monitor has its tensors
            parent = self._parents.get(block)
            while parent is not None:
                if _is_hybridized(parent):
                    hidden.append(block.name)
                    break
                parent = self._parents.get(parent)
        return hidden

    def _tell_about_hybridize(self) -> None:
        # checked at saved steps only (hybridize() may come after register_block), until said once
        if self._told_hybridized or self.model is None or not self.is_writing:
            return
        hidden = self._hidden_blocks()
        if hidden and self._graph_outputs:
            self._told_hybridized = True
            logger.info(
                "smdebug: %s is hybridized: the inputs/outputs of its inner blocks (%s) are not saved under block "
                "names; the outputs of its graph's operators are offered to the collections under MXNet's node "
                "names (graph_outputs=True).", self.model.name, ", ".join(hidden[:5]) + (" ..." if len(hidden) > 5 else ""),
            )
        elif hidden:
            self._told_hybridized = True
            shown = ", ".join(hidden[:5]) + (f" and {len(hidden) - 5} more" if len(hidden) > 5 else "")
            logger.warning(
                "smdebug: %s is hybridized, so Gluon runs it as one graph and the inputs/outputs of its inner "
                "blocks (%s) cannot be saved; its parameters, gradients, losses and its own inputs/outputs "
                "still are. To save inner tensors, debug with %s.hybridize(active=False), or register it with "
                "hook.register_block(net, graph_outputs=True) and include operator outputs such as "
                "'dense0_fwd_output' in a collection.",
                self.model.name, shown, self.model.name,
            )
        elif _is_hybridized(self.model) and not self._graph_outputs:
            self._told_hybridized = True
            logger.info(
                "smdebug: %s is hybridized: parameters, gradients, losses and its own inputs/outputs are saved%s; "
                "the inputs/outputs of its other inner blocks are not visible (see smdebug-mxnet's README).",
                self.model.name,
                ", and its activation layers' tensors, read from MXNet's operator monitor" if self._graph_names else "",
            )

    # ------------------------------------------------------------------------------------------
    # Gluon callbacks (never let a failure reach the training loop, except a requested stop)
    # ------------------------------------------------------------------------------------------
    def _on_model_forward_pre(self, block, inputs):
        if self._disabled:
            return
        try:
            by_autograd = self._modes_by_autograd
            if by_autograd is not None:
                mode = by_autograd[bool(mx.autograd.is_recording())]
                if mode is not self.mode:
                    if self._in_step:
                        self._end_open_step()  # (as set_mode: a step belongs to one mode)
                    self.mode = mode
            if (self._trainers and self._in_step and self.mode in _TRAINER_MODES
                    and self._step_mode == self.mode):
                return  # another forward call of the current trainer step
            self._read_gradients()  # of the step that ends here
            self.begin_step()
            if self._disabled or not self._in_step:
                return
            self._step_mode = self.mode
            self._io_index.clear()
            self._grads_read = False
            self._deferred_params = []
            self._tell_about_hybridize()
            if self.is_writing:
                self._save_parameters()
        except TrainingStopRequested:
            raise  # a rule stopped training: the hook is closed, the exception ends the user's loop
        except Exception as e:  # noqa: BLE001
            self._fail("the model's forward pre-hook", e)

    def _save_parameters(self) -> None:
        for name, p in self._params:
            if not self.is_due(name):
                continue
            try:
                value = p.list_data()[0]
            except gluon.parameter.DeferredInitializationError:
                self._deferred_params.append((name, p))  # shapes known after this forward
                continue
            self.record(name, value)

    def _on_model_forward(self, block, inputs, outputs):
        if self._disabled or not self._deferred_params:
            return
        try:
            deferred, self._deferred_params = self._deferred_params, []
            for name, p in deferred:
                self.record(name, p.list_data()[0])  # first forward: not updated yet
        except Exception as e:  # noqa: BLE001
            self._fail("the model's forward hook", e)

    def _loss_name(self, block) -> str:
        """The name a loss block's tensors carry: its Gluon name, unique per instance unless two were built with
        the same ``prefix=``; then the second is ``<name>_1`` (third ``_2``...), so that two losses are never
        one alternating series."""
        taken = {self._loss_names.get(id(b)) for b in self.losses}
        if block.name not in taken:
            return block.name
        i = 1
        while f"{block.name}_{i}" in taken:
            i += 1
        return f"{block.name}_{i}"

    def _next_name(self, base: str, kind: int, label: str) -> str:
        index = self._io_index.setdefault(base, [0, 0])
        name = f"{base}_{label}_{index[kind]}"
        index[kind] += 1
        return name

    def _on_forward(self, block, inputs, outputs):
        if self._disabled or not self._due:
            return
        try:
            base = self._loss_names.get(id(block)) or block.name
            for t in _arrays(inputs):
                name = self._next_name(base, 0, "input")
                if self.is_due(name):
                    self.record(name, t)
            for t in _arrays(outputs):
                name = self._next_name(base, 1, "output")
                if self.is_due(name):
                    self.record(name, t)
        except Exception as e:  # noqa: BLE001
            self._fail(f"the forward hook of {getattr(block, 'name', type(block).__name__)}", e)

    def _on_graph_node(self, name, op_name, handle):
        # MXNet hands over a new NDArray handle: wrap it at once so it is freed
        array = _NDArray(ctypes.cast(handle, mx.base.NDArrayHandle), writable=False)
        if self._disabled or not self._due or not (self._graph_outputs or self._graph_names):
            return
        try:
            tname = mx.base.py_str(name)
            if tname in self._graph_names:
                offered = True
            else:
                # graph_outputs offers operator outputs: with the monitor handing over inputs too (for an
                # activation collection), an input (``dense0_fwd_weight``) is not offered under its node name
                offered = self._graph_outputs and (not self._monitor_all or _GRAPH_OUTPUT.search(tname) is not None)
            if offered and self.is_due(tname):
                self.record(tname, array)
        except Exception as e:  # noqa: BLE001
            self._fail("the operator monitor of the hybridized graph", e)

    def _read_gradients(self) -> None:
        """Save the current step's gradients, once, if due (after its backward pass)."""
        if not self._in_step or self._grads_read or not self._due:
            return
        self._grads_read = True
        for name, p in self._params:
            gname = GRADIENT_PREFIX + name
            if p.grad_req == "null" or not self.is_due(gname):
                continue
            try:
                grad = p.list_grad()[0]
            except (gluon.parameter.DeferredInitializationError, RuntimeError):
                continue  # not initialised yet, or no gradient buffer
            self.record(gname, grad)

    def _before_update(self) -> None:
        if self._disabled:
            return
        try:
            self._read_gradients()
        except Exception as e:  # noqa: BLE001
            self._fail("reading gradients before the trainer update", e)

    def _after_update(self) -> None:
        if self._disabled or self.mode not in _TRAINER_MODES:
            return
        self.end_step()

    # ------------------------------------------------------------------------------------------
    # user API
    # ------------------------------------------------------------------------------------------
    def set_mode(self, mode) -> None:
        """Switch to TRAIN/EVAL/PREDICT/GLOBAL. A step open in another mode ends here (its gradients
        are read first), so each step belongs to one mode. From the first call on the script names the
        modes: autograd's recording no longer decides them (see the module docstring)."""
        if isinstance(mode, ModeKeys) and mode != self.mode and not self._disabled and self._in_step:
            self._end_open_step()
        super().set_mode(mode)  # (a bad mode raises first, and changes nothing)
        self._modes_by_autograd = None  # the script tells the modes from now on, not autograd

    @_guarded()
    def _end_open_step(self) -> None:
        self._read_gradients()
        self.end_step()

    @_guarded()
    def record_tensor_value(self, tensor_name: str, tensor_value) -> None:
        """Save an array computed in the training loop (e.g. a loss computed without a loss block) as
        ``<tensor_name>_output_<i>``, as if a block had produced it.

        As ``save_tensor``: a name that is not a non-empty string, or one a run cannot hold, is refused
        at every call (said once), whether or not anything is due; the hook goes on. An internal failure
        is logged once and disables the hook; training goes on."""
        tensor_name = self._user_name("record_tensor_value", "tensor name", tensor_name, suffix="_output_0")
        if tensor_name is None or not self._due:
            return
        name = self._next_name(tensor_name, 1, "output")
        if self.is_due(name):
            self.record(name, tensor_value)

    def _device_reductions(self, value, ops):
        return device_reductions(value, ops)

    def _shape_of(self, value):
        if isinstance(value, _NDArray):
            return tuple(int(d) for d in value.shape)
        return super()._shape_of(value)


def get_hook(json_config_path: Optional[str] = None, create_if_not_exists: bool = False) -> Optional[Hook]:
    """The process's MXNet hook; with ``create_if_not_exists`` built from the JSON configuration
    (``SMDEBUG_CONFIG_FILE_PATH``). None when ``USE_SMDEBUG`` is false or no configuration exists."""
    return singleton.get_hook(Hook, json_config_path, create_if_not_exists)


set_hook = singleton.set_hook
del_hook = singleton.del_hook
