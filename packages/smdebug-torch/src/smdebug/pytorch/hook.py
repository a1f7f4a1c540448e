"""The PyTorch hook: module forward hooks, parameter gradient hooks and (optionally) optimizer hooks.

Names, as in smdebug 1.0.x: parameters ``<Model>_<param>`` (``Net_fc1.weight``), gradients
``gradient/<Model>_<param>``, module inputs/outputs ``<module>_input_<i>`` / ``<module>_output_<i>``
(the model itself is named by its class; submodules by their qualified name, ``layer1.0.conv1``), losses
``<LossClass>_output_0``.

A step begins at each forward call of the registered model. With ``hook.register_optimizer(opt)`` a
step is an optimizer step instead (for gradient accumulation): the forward calls before
``opt.step()`` belong to one step, and gradients are saved once, as accumulated, just before the
optimizer applies them.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Dict, List, Optional, Tuple

import torch

from smdebug.core import activations, singleton
from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import BaseHook, logger
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError, TrainingStopRequested
from smdebug.pytorch import layers
from smdebug.pytorch.collection import Collection
from smdebug.pytorch.reductions import device_reductions

_WRAPPERS = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
_OPTIMIZER_MODES = (ModeKeys.TRAIN, ModeKeys.GLOBAL)


def _tensors(value):
    """Every tensor in a (nested) tuple/list/dict output, in order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif hasattr(value, "__dataclass_fields__") or hasattr(value, "_fields"):  # dataclasses / namedtuples
        for v in (getattr(value, f) for f in getattr(value, "_fields", None) or value.__dataclass_fields__):
            yield from _tensors(v)


class Hook(BaseHook):
    framework_name = "pytorch"
    default_include_collections = (CollectionKeys.LOSSES,)
    collection_class = Collection

    def _setup(self) -> None:
        super()._setup()
        self.model: Optional[torch.nn.Module] = None
        self.model_name: Optional[str] = None
        self._names: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()
        self._params: List[Tuple[str, torch.nn.Parameter]] = []
        self._model_handles: List = []
        self._io_handles: Dict[int, object] = {}
        self._loss_handles: List = []
        self._grad_handles: List = []
        self._optimizer_handles: List = []
        self._optimizer = None
        # module name -> (input counter, output counter) of the current step; itertools.count because
        # next() on it is atomic, so two threads running the model never get the same tensor name
        self._io_index: Dict[str, Tuple[itertools.count, itertools.count]] = {}
        self._step_mode = None  # mode of the step the model's forward opened

    def default_collections(self):
        return [
            Collection(CollectionKeys.WEIGHTS, include_regex=["^(?!gradient).*weight"]),
            Collection(CollectionKeys.BIASES, include_regex=["^(?!gradient).*bias"]),
            Collection(CollectionKeys.GRADIENTS, include_regex=["^gradient"]),
            Collection(CollectionKeys.LOSSES, include_regex=["[Ll]oss_(?!input).*output"]),
            # every module's inputs/outputs; the model's own (``inputs``/``outputs``), the activation modules'
            # (``relu_activations``...) and a classification loss's (``predictions``/``labels``) are added by
            # type when the model and the loss are registered (smdebug.pytorch.layers)
            Collection(CollectionKeys.LAYERS, include_regex=[r"_input_\d+$", r"_output_\d+$"]),
            Collection(CollectionKeys.INPUTS),
            Collection(CollectionKeys.OUTPUTS),
        ]

    # ------------------------------------------------------------------------------------------
    # registration
    # ------------------------------------------------------------------------------------------
    def register_module(self, module) -> None:
        """Attach the hook to a model: its forward calls mark steps; parameters, gradients and module
        inputs/outputs become available to collections."""
        if not isinstance(module, torch.nn.Module):
            raise SMDebugTypeError(f"register_module expects a torch.nn.Module, got {type(module).__name__}")
        inner = module.module if isinstance(module, _WRAPPERS) else module
        if self.model is not None:
            if self.model is inner:
                logger.warning("smdebug: %s is already registered with this hook", type(inner).__name__)
                return
            raise SMDebugValueError(
                f"This hook already follows {self.model_name}; call hook.remove() before registering another model"
            )
        self.model = inner
        self.model_name = type(inner).__name__
        for qualified, sub in inner.named_modules():
            self._names.setdefault(sub, qualified or self.model_name)
        self._names[inner] = self.model_name
        self._params = [(f"{self.model_name}_{name}", p) for name, p in inner.named_parameters()]
        self.get_collection(CollectionKeys.INPUTS).include(layers.io_regex(self.model_name, "input"))
        self.get_collection(CollectionKeys.OUTPUTS).include(layers.io_regex(self.model_name, "output"))
        activations.add_to_collections(self, layers.activation_layers(inner, self._names.get))
        self._model_handles.append(inner.register_forward_pre_hook(self._on_model_forward_pre))
        self._prepared_token = None  # re-evaluate which module/gradient hooks are needed

    register_hook = register_module

    def register_loss(self, loss_module) -> None:
        """Save the outputs of a loss module (``<LossClass>_output_0``, in the ``losses`` collection).

        For a classification loss (CrossEntropyLoss, NLLLoss, BCELoss, MultiMarginLoss) its inputs are also
        the ``predictions`` (``<LossClass>_input_0``) and ``labels`` (``<LossClass>_input_1``) collections.
        """
        if not isinstance(loss_module, torch.nn.Module):
            raise SMDebugTypeError(f"register_loss expects a torch.nn.Module, got {type(loss_module).__name__}")
        name = type(loss_module).__name__
        self._names[loss_module] = name
        if layers.is_classification_loss(loss_module):
            self.get_collection(CollectionKeys.PREDICTIONS).include(layers.io_regex(name, "input", 0))
            self.get_collection(CollectionKeys.LABELS).include(layers.io_regex(name, "input", 1))
        self._loss_handles.append(loss_module.register_forward_hook(self._on_forward))

    def register_optimizer(self, optimizer) -> None:
        """Count steps by ``optimizer.step()`` calls (in TRAIN and GLOBAL modes).

        For gradient accumulation: all forward/backward passes between two optimizer steps form one
        step, and gradients are saved once, as the optimizer sees them.
        """
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise SMDebugTypeError(f"register_optimizer expects a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self._remove(self._optimizer_handles)
        self._optimizer = optimizer
        self._optimizer_handles = [
            optimizer.register_step_pre_hook(self._on_optimizer_pre_step),
            optimizer.register_step_post_hook(self._on_optimizer_post_step),
        ]
        self._remove(self._grad_handles)  # gradients now come from the optimizer step
        self._prepared_token = None

    def remove(self) -> None:
        """Detach every hook from the model, losses and optimizer (saved data stays)."""
        for handles in (self._model_handles, self._loss_handles, self._grad_handles, self._optimizer_handles):
            self._remove(handles)
        for handle in self._io_handles.values():
            handle.remove()
        self._io_handles.clear()
        self.model = None
        self.model_name = None
        self._optimizer = None
        self._params = []

    @staticmethod
    def _remove(handles: List) -> None:
        for handle in handles:
            handle.remove()
        handles.clear()

    def close(self) -> None:
        super().close()
        self.remove()

    # ------------------------------------------------------------------------------------------
    # collections <-> module hooks
    # ------------------------------------------------------------------------------------------
    def _before_prepare(self) -> None:
        for coll in self.collection_manager.collections.values():
            if isinstance(coll, Collection):
                coll._resolve_modules(self._names.get)

    def _may_save(self, name: str) -> bool:
        return any(c.matches(name) for c in self._included)

    def _after_prepare(self) -> None:
        # Hook only the modules whose inputs/outputs some included collection can match: every forward
        # hook takes torch off its fast path, which costs time on every step.
        if self.model is not None:
            for module in self.model.modules():
                name = self._names.get(module)
                wanted = name is not None and (
                    self._may_save(f"{name}_input_0") or self._may_save(f"{name}_output_0")
                )
                handle = self._io_handles.get(id(module))
                if wanted and handle is None:
                    self._io_handles[id(module)] = module.register_forward_hook(self._on_forward)
                elif not wanted and handle is not None:
                    handle.remove()
                    del self._io_handles[id(module)]
        wants_grads = any(self._may_save("gradient/" + name) for name, _ in self._params)
        if self._optimizer is None and wants_grads and not self._grad_handles:
            for name, p in self._params:
                if p.requires_grad:  # frozen parameters get no gradient and no hook
                    self._grad_handles.append(p.register_hook(self._grad_hook("gradient/" + name)))
        elif not wants_grads and self._grad_handles:
            self._remove(self._grad_handles)

    # ------------------------------------------------------------------------------------------
    # torch callbacks (all guarded: a failure here must never reach the training loop)
    # ------------------------------------------------------------------------------------------
    def _on_model_forward_pre(self, module, inputs):
        if self._disabled:
            return None
        try:
            # Atomic for threads running the model at once (see BaseHook._step_lock): otherwise two
            # forwards of one optimizer step could both find no step open and begin one each, and a
            # step's parameters could be refused because another thread began the next step first.
            with self._step_lock:
                if (self._optimizer is not None and self.mode in _OPTIMIZER_MODES and self._in_step
                        and self._step_mode == self.mode):
                    return None  # another micro-batch of the current optimizer step
                self._begin_step()  # (the lock is held, and this callback has its own guard)
                self._step_mode = self.mode
                self._io_index.clear()
                if self.is_writing:
                    for name, p in self._params:
                        if self.is_due(name):
                            self.record(name, p)
        except TrainingStopRequested:
            raise  # a rule stopped training: the hook is closed, the exception ends the user's loop
        except Exception as e:  # noqa: BLE001
            self._fail("the model's forward pre-hook", e)
        return None

    def _next_name(self, base: str, kind: int, label: str) -> str:
        counters = self._io_index.get(base)
        if counters is None:
            counters = self._io_index.setdefault(base, (itertools.count(), itertools.count()))
        return f"{base}_{label}_{next(counters[kind])}"

    def _on_forward(self, module, inputs, outputs):
        if self._disabled or not self._due:
            return None
        try:
            base = self._names.get(module) or type(module).__name__
            # Naming and saving in one step: a name counted in one step and saved in the next (another
            # thread began it meanwhile) could repeat a name of that step.
            with self._step_lock:
                for t in _tensors(inputs):
                    name = self._next_name(base, 0, "input")
                    if self.is_due(name):
                        self.record(name, t)
                for t in _tensors(outputs):
                    name = self._next_name(base, 1, "output")
                    if self.is_due(name):
                        self.record(name, t)
        except Exception as e:  # noqa: BLE001
            self._fail(f"the forward hook of {type(module).__name__}", e)
        return None

    def _grad_hook(self, name: str):
        def on_grad(grad):
            if self._due and not self._disabled and self.is_due(name):
                self.record(name, grad)
            return None

        return on_grad

    def _on_optimizer_pre_step(self, optimizer, args, kwargs):
        if self._disabled or not self._due:
            return None
        try:
            for name, p in self._params:
                gname = "gradient/" + name
                if p.grad is not None and self.is_due(gname):
                    self.record(gname, p.grad)
        except Exception as e:  # noqa: BLE001
            self._fail("the optimizer pre-step hook", e)
        return None

    def _on_optimizer_post_step(self, optimizer, args, kwargs):
        if self.mode in _OPTIMIZER_MODES:
            self.end_step()
        return None

    # ------------------------------------------------------------------------------------------
    # user API
    # ------------------------------------------------------------------------------------------
    def record_tensor_value(self, tensor_name: str, tensor_value) -> None:
        """Save a tensor computed in the training loop (e.g. a functional loss) as
        ``<tensor_name>_output_<i>``, as if a module had produced it."""
        if self._disabled or not self._due:
            return
        with self._step_lock:  # as in _on_forward
            name = self._next_name(tensor_name, 1, "output")
            if self.is_due(name):
                self.record(name, tensor_value)

    def _device_reductions(self, value, ops):
        return device_reductions(value, ops)

    def _shape_of(self, value):
        if isinstance(value, torch.Tensor):
            return tuple(value.shape)
        return super()._shape_of(value)


def get_hook(json_config_path: Optional[str] = None, create_if_not_exists: bool = False) -> Optional[Hook]:
    """The process's PyTorch hook; with ``create_if_not_exists`` built from the JSON configuration
    (``SMDEBUG_CONFIG_FILE_PATH``). None when ``USE_SMDEBUG`` is false or no configuration exists."""
    return singleton.get_hook(Hook, json_config_path, create_if_not_exists)


set_hook = singleton.set_hook
del_hook = singleton.del_hook
