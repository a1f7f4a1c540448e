"""The PyTorch hook: a forward pre-hook on the model marks steps and saves parameters; module forward
hooks, gradients and optimizer hooks are attached only for what a step needs.

Names, as in smdebug 1.0.x: parameters ``<Model>_<param>`` (``Net_fc1.weight``), gradients
``gradient/<Model>_<param>``, module inputs/outputs ``<module>_input_<i>`` / ``<module>_output_<i>``
(the model itself is named by its class; submodules by their qualified name, ``layer1.0.conv1``), losses
``<LossClass>_output_0`` (a second instance of one class ``<LossClass>_1_output_0``). The model's tensor
keyword arguments: ``<Model>_input_<keyword>``.

A step begins at each forward call of the registered model. With ``hook.register_optimizer(opt)`` a
step is an optimizer step instead (for gradient accumulation): the forward calls before
``opt.step()`` belong to one step. Trainer callbacks (``smdebug.pytorch.lightning``,
``smdebug.pytorch.transformers``) begin and end steps themselves. Gradients: see
:mod:`smdebug.pytorch.gradients`.

Costing nothing when nothing is due: on a step where no collection is due, the only callback PyTorch
makes into the hook is the model's forward pre-hook, which counts the step. Module forward hooks (layer
inputs/outputs, losses) and parameter hooks are attached for the steps that need them and removed after.

torch.compile: see :mod:`smdebug.pytorch._dynamo`. Parameters and gradients are read outside the compiled
region (no graph break, no recompilation). Inside a compiled forward, hooks are traced: a graph keeps the
hooks it was traced with (dynamo does not see hook changes after compiling), so while dynamo traces, the
forward hooks of every module some included collection may save are attached (:meth:`Hook._on_compile`);
in the graph their tensors become extra outputs, saved after it (see :meth:`Hook._io_hook`). Modules that
run eagerly (a loss module called after a compiled model) get their hooks by what is due, as in eager.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from typing import Dict, List, Optional, Tuple

import torch

from smdebug.core import activations, class_weights, loss_inputs, singleton
from smdebug.core.collection import CollectionKeys
from smdebug.core.hook import BaseHook, _guarded, logger
from smdebug.core.modes import ModeKeys
from smdebug.core.names import printable
from smdebug.core.run_info import LABELS_SHIFTED_TWICE_KEY
from smdebug.core.statistic_names import statistic_kind
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError, TrainingStopRequested
from smdebug.pytorch import _dynamo, layers, model_loss, sharded
from smdebug.pytorch.collection import Collection
from smdebug.pytorch.evaluated_in_train_mode import EvaluatedInTrainMode
from smdebug.pytorch.gradients import GRADIENT_PREFIX, GradientSource
from smdebug.pytorch.module_io import io_targets, keyword_input_regex, keyword_tensors, tensors, unnamed_modules
from smdebug.pytorch.reductions import device_reductions
from smdebug.pytorch.trained_in_eval import TrainedInEval

_WRAPPERS = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
_OPTIMIZER_MODES = (ModeKeys.TRAIN, ModeKeys.GLOBAL)
_NOTHING: frozenset = frozenset()
OUTPUT_LOSS = "loss"
#: the collection of normalisation layers' running statistics (saved when a rule asks for it: UnnormalizedInput)
NORMALIZATION_STATISTICS = "normalization_statistics"
_STATISTIC_BUFFERS = ("running_mean", "running_var")
#: the largest buffer of the model's own saved as a statistic of its input (one value per input feature; see
#: _is_statistic)
_MAX_STATISTIC_VALUES = 1 << 16


def _is_statistic(name: str, buffer: torch.Tensor) -> bool:
    """Whether a buffer named ``name`` (its last part) is a statistic a model keeps of its input: BatchNorm's
    running ones, or a vector of the model's own named like one (``mean``, ``std``...: the names of
    :mod:`smdebug.core.statistic_names`), as a model that standardises raw features in its forward keeps them
    (``(x - self.mean) / self.std``)."""
    if name in _STATISTIC_BUFFERS:
        return True
    return (statistic_kind(name) is not None and buffer.dim() == 1 and buffer.is_floating_point()
            and 1 < buffer.numel() <= _MAX_STATISTIC_VALUES)


def _unwrap(module: torch.nn.Module) -> torch.nn.Module:
    """The model inside DataParallel/DistributedDataParallel and torch.compile's OptimizedModule."""
    while True:
        if isinstance(module, _WRAPPERS):
            module = module.module
            continue
        orig = module.__dict__.get("_orig_mod") or module.__dict__.get("_modules", {}).get("_orig_mod")
        if isinstance(orig, torch.nn.Module) and type(module).__name__ == "OptimizedModule":
            module = orig
            continue
        return module


def _class_name(module: torch.nn.Module) -> str:
    """The model's class name, as the user wrote it: FSDP2's ``fully_shard`` swaps a module's class
    for a subclass ``FSDP<Class>`` of (FSDPModule, Class)."""
    cls = type(module)
    bases = cls.__bases__
    if len(bases) == 2 and bases[0].__name__ == "FSDPModule" and cls.__name__ == "FSDP" + bases[1].__name__:
        return bases[1].__name__
    return cls.__name__


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
        self._params_version = 0
        self._loss_modules: List[torch.nn.Module] = []
        # torch hooks that must run as plain Python even when the model is compiled: (handle, function)
        self._eager_handles: List[Tuple[object, object]] = []
        self._model_handles: List = []
        self._io_handles: Dict[torch.nn.Module, Tuple[object, Tuple[bool, bool]]] = {}
        self._optimizer_handles: List = []
        self._optimizer = None
        self._grads = GradientSource(self)
        self._trained_in_eval = TrainedInEval(self)
        self._evaluated_in_train_mode = EvaluatedInTrainMode(self)
        # module name -> (input counter, output counter) of the current step; itertools.count because
        # next() on it is atomic, so two threads running the model never get the same tensor name
        self._io_index: Dict[str, Tuple[itertools.count, itertools.count]] = {}
        self._step_mode = None  # mode of the step the model's forward opened
        # (module, input tensors, output tensors) captured inside compiled forwards, saved eagerly after
        self._traced: List[tuple] = []
        # modes whose steps a trainer callback begins and ends (the model's forwards then mark no step)
        self._external_modes: frozenset = _NOTHING
        self._forward_mode = None  # trainers: module -> the mode its forward call runs in (or None)
        self._trainer_forwards = 0  # forward calls of the model in steps a trainer callback begins
        # Until the script calls set_mode (and while no trainer callback owns the modes), the model's
        # training flag tells the mode of its forward calls: (mode when eval(), mode when train()), or
        # None when not followed. A loop that validates under model.eval() without set_mode (every loop
        # run by `smdebug run` unmodified, and many written from a quick start) would otherwise put its
        # validation losses in the training series, and no rule could tell validation from training.
        # A schedule written per mode is a script that names its modes: it is not second-guessed.
        configs = self.save_config.mode_save_configs
        alike = configs.get(ModeKeys.TRAIN) == configs.get(ModeKeys.EVAL) == configs.get(ModeKeys.GLOBAL)
        self._modes_by_flag: Optional[Tuple[ModeKeys, ModeKeys]] = (ModeKeys.EVAL, ModeKeys.TRAIN) if alike else None
        self._loss_in_output = False  # save the model output's "loss" (see _record_output_loss)
        self._model_loss = None  # the loss the model's head computes (smdebug.pytorch.model_loss.ModelLoss)
        self._shift_checks_left = 8  # due calls of a causal LM whose labels are compared (see _check_shifted_twice)
        self._named_saved: Tuple[int, set] = (-1, set())  # (step, names _save_named saved in it)
        self._wired = None  # what the attached torch hooks were chosen for (see _rewire)
        # the attached torch hooks are those of a step with nothing due, and the model's forward calls mark
        # its steps: a quiet step needs nothing but the core's count (see _on_model_forward_pre)
        self._wired_quiet = False
        self._tracing = False  # dynamo is compiling a frame (see _on_compile)
        self._model_compiled = False  # the model's forward has been compiled: its modules' hooks stay
        # something else has been compiled (a function that may call the model and the losses), or the
        # model, with a torch that does not tell compiles: every hook that may ever save stays
        self._compiled = False
        self._sharded = False  # some parameters are sharded DTensors (gathered by every rank)
        self._sched_due: frozenset = _NOTHING  # collections due by the schedule, on every rank
        self._failed_sharded = False
        # set_mode changed the mode and the registered model has not run since (see _arm_step_openers): the
        # forward pre-hooks on the loss modules that begin the steps of that mode meanwhile, else None
        self._step_openers: Optional[List] = None
        self._opener_key = None  # the loss module (or record_tensor_value name) whose calls mark those steps
        self._said_copy = False

    def __deepcopy__(self, memo):
        # A deep copy of the registered model (an EMA or SWA average: copy.deepcopy, AveragedModel, timm's
        # ModelEmaV2) copies the torch hooks attached to it, and they hold this hook: the copy refers to this
        # same hook (a hook is no model state, and its locks cannot be copied: copying the model raised), and
        # the copy's first forward call takes them off it (see _on_copy_forward).
        memo[id(self)] = self
        return self

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
            Collection(CollectionKeys.LOSS_INPUTS),  # (filled by register_loss)
        ]

    # ------------------------------------------------------------------------------------------
    # registration
    # ------------------------------------------------------------------------------------------
    def register_module(self, module) -> None:
        """Attach the hook to a model (also wrapped in DataParallel/DDP or ``torch.compile``): its forward
        calls mark steps; parameters, gradients and module inputs/outputs become available to collections."""
        if not isinstance(module, torch.nn.Module):
            raise SMDebugTypeError(f"register_module expects a torch.nn.Module, got {type(module).__name__}")
        inner = _unwrap(module)
        if self.model is not None:
            if self.model is inner:
                logger.warning("smdebug: %s is already registered with this hook", type(inner).__name__)
                return
            raise SMDebugValueError(
                f"This hook already follows {self.model_name}; call hook.remove() before registering another model"
            )
        self.model = inner
        self.model_name = _class_name(inner)
        unnamed = unnamed_modules(inner)
        for qualified, sub in inner.named_modules():
            if sub not in unnamed:
                self._names.setdefault(sub, qualified or self.model_name)
        self._names[inner] = self.model_name
        self._refresh_params()
        self._file_unnamed_parameters()
        statistics = self.get_collection(NORMALIZATION_STATISTICS)
        for name, _ in self._normalization_statistics():
            statistics.add_tensor_name(name)
        self.get_collection(CollectionKeys.INPUTS).include(
            [layers.io_regex(self.model_name, "input"), keyword_input_regex(self.model_name)])
        self.get_collection(CollectionKeys.OUTPUTS).include(layers.io_regex(self.model_name, "output"))
        activations.add_to_collections(self, layers.activation_layers(inner, self._names.get))
        self._register_loss_submodules(inner)
        self._model_handles.append(self._add_eager_hook(inner.register_forward_pre_hook, self._on_model_forward_pre))
        _dynamo.notify_when_loaded(self)
        _dynamo.watch_compiles(self)
        self._rewire_later()

    register_hook = register_module

    def _file_unnamed_parameters(self) -> None:
        """Put the parameters whose names say neither weight nor bias (``W``, ``pos_embed``, ``b_enc``, ``scale``)
        in ``weights`` (two or more dimensions) or ``biases`` (fewer): the default collections find parameters
        by name (1.0.x's patterns), and the rules that read weights would never see these."""
        weights = self.get_collection(CollectionKeys.WEIGHTS)
        biases = self.get_collection(CollectionKeys.BIASES)
        for name, p in self._params:
            if not any(c.matches_regex(name) or c.has_tensor_name(name) for c in (weights, biases)):
                (weights if p.dim() >= 2 else biases).add_tensor_name(name)

    def register_loss(self, loss_module) -> None:
        """Save the outputs of a loss module (``<LossClass>_output_0``, in the ``losses`` collection; a second
        instance of the same class ``<LossClass>_1_output_0``, see :meth:`_loss_name`).

        For a classification loss (CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss, MultiMarginLoss) its inputs are also
        the ``predictions`` (``<LossClass>_input_0``) and ``labels`` (``<LossClass>_input_1``) collections.
        """
        if not isinstance(loss_module, torch.nn.Module):
            raise SMDebugTypeError(f"register_loss expects a torch.nn.Module, got {type(loss_module).__name__}")
        name = self._loss_name(loss_module)
        self._names[loss_module] = name
        losses = self.get_collection(CollectionKeys.LOSSES)
        if not losses.matches(f"{name}_output_0"):
            # the default pattern wants "Loss"/"loss" in the class name (smdebug 1.0.x's); a loss module is
            # registered to be saved whatever its class is called
            losses.include(layers.io_regex(name, "output"))
        if layers.is_classification_loss(loss_module):
            self.get_collection(CollectionKeys.PREDICTIONS).include(layers.io_regex(name, "input", 0))
            self.get_collection(CollectionKeys.LABELS).include(layers.io_regex(name, "input", 1))
        loss_inputs.add_loss(self, layers.describe_loss(loss_module, name))  # (every loss: loss_inputs)
        self._record_class_weights(loss_module, name)
        if loss_module not in self._loss_modules:
            self._loss_modules.append(loss_module)
        self._rewire_later()
        if self._in_step:
            with self._step_lock:
                self._rewire()  # (registered during a step, e.g. by zero-code at the loss's first call)

    def _loss_name(self, loss_module) -> str:
        """The name a registered loss module's tensors carry: its class name, as in smdebug 1.0.x; a second
        (third...) instance of the same class ``<LossClass>_1`` (``_2``...), in registration order, so that
        two losses of one class (a GAN's discriminator and generator losses) are two series, never one series
        that alternates between them. The same instance registered again keeps its name."""
        if loss_module in self._loss_modules:
            return self._names.get(loss_module) or type(loss_module).__name__
        base = type(loss_module).__name__
        taken = {self._names.get(m) for m in self._loss_modules}
        if base not in taken:
            return base
        for i in itertools.count(1):
            if f"{base}_{i}" not in taken:
                return f"{base}_{i}"
        raise AssertionError("unreachable")

    def _register_loss_submodules(self, model: torch.nn.Module) -> None:
        """Register the model's loss submodules (instances of torch's ``_Loss`` base class: a LightningModule's
        ``self.loss_fn = nn.CrossEntropyLoss()``) as losses: their inputs are then the run's loss inputs, and the
        rules can judge them, as if the user had called ``register_loss``."""
        base = getattr(getattr(torch.nn, "modules", None), "loss", None)
        base = getattr(base, "_Loss", None)
        if base is None:
            return
        for sub in model.modules():
            if isinstance(sub, base) and sub not in self._loss_modules:
                self.register_loss(sub)

    def _record_class_weights(self, loss_module, name: str) -> None:
        """Record the class weights a loss module compensates imbalance with (``_meta.class_weights``, see
        :mod:`smdebug.core.class_weights`): ``weight`` of CrossEntropyLoss, NLLLoss and MultiMarginLoss (one
        weight per class), and a single ``pos_weight`` of BCEWithLogitsLoss (class 1's weight; a vector of
        them weighs the outputs of a multi-label model, which are no class ids). They apply to the loss's
        targets, ``<name>_input_1``. Never breaks registration."""
        try:
            targets = layers.io_regex(name, "input", 1)
            kind = type(loss_module).__name__
            class_weights.forget_class_weights(self, targets)  # (a loss of this name registered before)
            per_class = tuple(getattr(torch.nn, n) for n in ("CrossEntropyLoss", "NLLLoss", "MultiMarginLoss")
                              if hasattr(torch.nn, n))
            weight = getattr(loss_module, "weight", None)
            if isinstance(loss_module, per_class) and isinstance(weight, torch.Tensor) and weight.dim() == 1:
                class_weights.record_class_weights(self, weight.detach().float().cpu().tolist(),
                                                   f"{kind}(weight=...)", targets)
            pos_weight = getattr(loss_module, "pos_weight", None)
            if (isinstance(loss_module, torch.nn.BCEWithLogitsLoss) and isinstance(pos_weight, torch.Tensor)
                    and pos_weight.numel() == 1):
                class_weights.record_class_weights(self, {1: float(pos_weight.detach().float().cpu().reshape(-1)[0])},
                                                   f"{kind}(pos_weight=...)", targets)
        except Exception as e:  # noqa: BLE001 - a loss module of an odd kind: no record, training goes on
            logger.debug("smdebug: class weights of %s not recorded (%s)", name, e)

    def register_optimizer(self, optimizer) -> None:
        """Count steps by ``optimizer.step()`` calls (in TRAIN and GLOBAL modes).

        For gradient accumulation: all forward/backward passes between two optimizer steps form one
        step, and gradients are saved once, as the optimizer sees them.
        """
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise SMDebugTypeError(f"register_optimizer expects a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self._remove(self._optimizer_handles)
        self._optimizer = optimizer
        self._grads.use("registered")
        self._optimizer_handles = [
            optimizer.register_step_pre_hook(self._on_optimizer_pre_step),
            optimizer.register_step_post_hook(self._on_optimizer_post_step),
        ]
        self._rewire_later()

    def remove(self) -> None:
        """Detach every hook from the model, losses and optimizer (saved data stays)."""
        if self._step_openers is not None:
            self._disarm_step_openers()
        for handles in (self._model_handles, self._optimizer_handles):
            self._remove(handles)
        for handle, _ in self._io_handles.values():
            handle.remove()
        self._io_handles.clear()
        self._eager_handles.clear()
        self._grads.remove()
        self._trained_in_eval.listen(False)
        self.model = None
        self.model_name = None
        self._optimizer = None
        self._params = []
        self._loss_modules = []
        self._traced.clear()
        self._rewire_later()

    @staticmethod
    def _remove(handles: List) -> None:
        for handle in handles:
            handle.remove()
        handles.clear()

    def close(self) -> None:
        if not self._closed and not self._disabled:
            with self._step_lock:
                self._settle_step()
            self._say_if_never_called()
            self._say_if_no_loss()
        super().close()
        self.remove()

    def _say_if_never_called(self) -> None:
        """Warn when a registered model was never called: a step begins at each forward call of the registered
        module, so a loop that calls other modules (a GAN's generator and critic held by a container that is
        registered but never called itself) records nothing, and an empty run says nothing of why."""
        if self.model is not None and self.step == self.init_step:
            logger.warning(
                "smdebug: %s was registered with the hook but never called, so no step was recorded and nothing "
                "was saved: a step begins at each forward call of the registered module. Register the module "
                "your training loop calls (a model whose parts are called one by one needs a hook on the part "
                "that is called once per step)", self.model_name)

    def _say_if_no_loss(self) -> None:
        """Warn when the run trained but saved no loss although the losses collection was asked for: no loss
        module was registered (nor found in the model), the model computed none itself, and the script saved
        no value of its own (``record_tensor_value``). A functional loss (``F.cross_entropy``) runs no module
        the hook can watch; the rules that judge the loss then found none, and said so in eight mechanical
        ways with no word of the cause (probe 17a F9)."""
        if (self.model is None or self.step == self.init_step or self._loss_modules or self._model_loss is not None
                or self._user_saves or CollectionKeys.LOSSES not in self.include_collections):
            return
        logger.warning(
            "smdebug: no loss was saved to %s: no loss module was registered with the hook and the script "
            "recorded no loss value, so the rules that judge the loss (LossNotDecreasing, Overfit, "
            "ImproperOutput, ...) will find none. A functional loss (torch.nn.functional.cross_entropy) runs no "
            "module the hook can see: use the module (loss_fn = nn.CrossEntropyLoss(); "
            "hook.register_loss(loss_fn)) or record the value (hook.record_tensor_value('loss', loss))",
            printable(self.out_dir))

    def _forget_step(self) -> None:
        self._traced.clear()  # (what a compiled forward captured in the discarded step)
        self._named_saved = (-1, set())

    def end_step(self) -> None:
        if not self._disabled:
            try:
                with self._step_lock:
                    self._settle_step()
            except Exception as e:  # noqa: BLE001
                self._fail("end_step()", e)
        super().end_step()

    # ------------------------------------------------------------------------------------------
    # torch hooks that must stay out of compiled code
    # ------------------------------------------------------------------------------------------
    def _add_eager_hook(self, register, fn):
        """``register(fn)`` (a module's register_forward_*_hook), with ``fn`` running as plain Python even
        where dynamo compiles around it; returns the handle."""
        handle = register(_dynamo.eager(fn))
        self._eager_handles.append((handle, fn))
        return handle

    def _on_dynamo_loaded(self) -> None:
        """torch._dynamo was just imported (torch.compile is about to be used): from now on the eager
        hooks must be hidden from it. They are swapped in place, keeping their order among the module's
        hooks."""
        for handle, fn in self._eager_handles:
            hooks = handle.hooks_dict_ref()
            if hooks is not None and handle.id in hooks:
                hooks[handle.id] = _dynamo.eager(fn)

    # ------------------------------------------------------------------------------------------
    # collections <-> torch hooks
    # ------------------------------------------------------------------------------------------
    def _before_prepare(self) -> None:
        for coll in self.collection_manager.collections.values():
            if isinstance(coll, Collection):
                coll._resolve_modules(self._names.get)

    def _may_save(self, name: str) -> bool:
        return any(c.matches(name) for c in self._included)

    def _on_compile(self, started: bool) -> None:
        """Dynamo begins (or ends) compiling a frame, before it traces anything. While it traces, every
        module hook that an included collection may ever save is attached, so the graph has it. A graph is
        also traced again when the hooks of a module in it change, so from then on those hooks stay: the
        model's modules' when the model's forward is what is compiled (the loss modules, called after it,
        still get theirs only at the steps that save), every module's when something else is (a compiled
        function may call the model and the loss)."""
        if self._disabled:
            return
        try:
            with self._step_lock:
                self._tracing = started
                if started:
                    if self.model is not None and _dynamo.runs_compiled(self.model):
                        self._model_compiled = True
                    else:
                        self._compiled = True
                self._rewire_later()
                if started:
                    self._rewire()
        except Exception as e:  # noqa: BLE001
            self._fail("the hook's compile callback", e)

    def _rewire_later(self) -> None:
        """Something the wiring depends on changed (registrations, compilation, gradient source): the
        next step chooses its torch hooks afresh."""
        self._wired = None
        self._wired_quiet = False

    def _rewire(self) -> None:
        """Attach the module and parameter hooks the current step needs, and remove the others.

        Forward hooks (inputs/outputs of modules, losses) cost time on every call of their module, so
        they are attached only where a due collection can save what they see; while dynamo traces, where any
        included collection may (see _on_compile). Cheap when nothing changed since the last step: the due
        collections are interned sets."""
        due = self._sched_due  # (on a rank that writes, self._due)
        wired = self._wired
        # (whatever else decides the wiring, compiled-ness, registrations, where gradients come from, sets
        # _wired to None when it changes)
        if wired is not None and wired[1] is self._prepared_token and wired[0] == due:
            return
        self._wired = (due, self._prepared_token)
        self._wired_quiet = False  # (set below when nothing is attached for a step with nothing due)
        stay = self._tracing or self._compiled
        wanted = self._may_save if stay else self.is_due
        targets = (io_targets(self.model, self._names, self._may_save if stay or self._model_compiled else wanted)
                   if self.model is not None else {})
        for module in self._loss_modules:
            name = self._names.get(module) or type(module).__name__
            inputs, outputs = wanted(f"{name}_input_0"), wanted(f"{name}_output_0")
            # (its inputs reach the hook whenever its output is saved and they may ever be: saved at a step whose
            # loss came out NaN, see _nan_loss)
            inputs = inputs or (outputs and self._may_save(f"{name}_input_1"))
            if inputs or outputs:
                targets[module] = (inputs, outputs)
        if self._loss_in_output and self.model is not None and (
                wanted(OUTPUT_LOSS + "_output_0")
                or (self._model_loss is not None and any(wanted(n) for n in self._model_loss.regex_probes()))):
            # the loss the model computes in its forward (Hugging Face models given labels), and its inputs
            targets[self.model] = targets.get(self.model, (False, False)) + (True,)
        for module in [m for m in self._io_handles if m not in targets]:
            self._io_handles.pop(module)[0].remove()
        for module, flags in targets.items():
            current = self._io_handles.get(module)
            if current is not None and current[1] == flags:
                continue
            if current is not None:
                current[0].remove()
            self._io_handles[module] = (self._add_io_hook(module, *flags), flags)
        grads_due = bool(due) and any(self._due_by_schedule(GRADIENT_PREFIX + n) for n, _ in self._params)
        self._grads.wire(grads_due)
        self._trained_in_eval.listen(bool(due) and self._modes_by_flag is not None)
        # A later quiet step may skip all this (see _on_model_forward_pre) only if it would attach the same
        # (nothing; compiled, what may ever be saved, whatever is due) and its step begins at the forward
        # call (not at an optimizer step, not by a trainer's callback)
        self._wired_quiet = (not due and not grads_due
                             and (not self._io_handles or self._compiled or self._model_compiled)
                             and self._optimizer is None and not self._external_modes
                             and self._step_openers is None)  # (the model's next forward disarms them)

    def _add_io_hook(self, module, inputs: bool, outputs: bool, output_loss: bool = False):
        if module is self.model:
            # The model's own hooks run eagerly even when it is compiled (around the compiled forward).
            # with_kwargs: a model called as model(**batch) (the Hugging Face Trainer, accelerate loops) gets
            # all its inputs as keyword arguments; they are its inputs too
            def on_model(mod, ins, kwargs, outs):
                if output_loss:
                    self._record_output_loss(outs, kwargs)
                if inputs or outputs:
                    self._on_forward_eager(mod, ins if inputs else (), outs if outputs else (),
                                           kwargs if inputs else None)

            handle = self._add_eager_hook(functools.partial(module.register_forward_hook, with_kwargs=True), on_model)
            return _Handle(handle, self._eager_handles)
        return module.register_forward_hook(self._io_hook(inputs, outputs))

    def _io_hook(self, inputs: bool, outputs: bool):
        traced = self._traced
        eager = self._on_forward_eager

        def on_forward(module, ins, outs):
            # Traced when the module runs inside a compiled forward: no Python may run there, so the tensors
            # become outputs of the graph and are saved, by name and due or not, once it has run.
            if _dynamo.is_compiling():
                traced.append((module, tensors(ins) if inputs else [], tensors(outs) if outputs else []))
                return None
            return eager(module, ins if inputs else (), outs if outputs else ())

        return on_forward

    # ------------------------------------------------------------------------------------------
    # steps
    # ------------------------------------------------------------------------------------------
    def _on_model_forward_pre(self, module, inputs):
        try:
            # The usual step, kept lean (it runs at every forward call, and every attribute looked at costs):
            # wired for a quiet step (see _rewire), nothing captured by compiled code or kept from backward
            # to settle, and a compile would be told (torch._dynamo.reset() forgets the hook's callbacks).
            # The core counts it.
            if module is not self.model and module._forward_pre_hooks is not self.model._forward_pre_hooks:
                return self._on_copy_forward(module)  # (DataParallel's replicas share the model's hooks)
            watch = self._evaluated_in_train_mode
            if watch.armed and module.training and (watch.watching or not torch.is_grad_enabled()):
                watch.on_forward(module)  # (a no-gradient pass in train() mode, or the training around one)
            by_flag = self._modes_by_flag
            if by_flag is not None and by_flag[module.training] is not self.mode:
                self.mode = by_flag[module.training]  # (ends a quiet stretch; the step below is of this mode)
            if (self._wired_quiet and not self._traced and not self._grads.kept and _dynamo.compiles_watched()
                    and self._begin_quiet_step()):
                self._step_mode = self.mode  # (the core takes the step lock where it must)
                return None
            if self._disabled:
                return None
            if self._step_openers is not None:
                self._disarm_step_openers()  # (the model runs: its forward begins the steps again)
            if self._traced:
                self._drain_traced()  # (a compiled forward's tensors, from the last call)
            if (not _dynamo.compiles_watched() and not _dynamo.watch_compiles() and not self._compiled
                    and _dynamo.runs_compiled(module)):
                # a torch that does not tell compiles: once the model runs compiled, hooks stay for good
                self._compiled = True
                self._rewire_later()
            if self._forward_mode is not None:
                mode = self._forward_mode(module)
                if mode is not None:
                    self.mode = mode
            if self.mode in self._external_modes:
                self._trainer_forwards += 1  # (see _save_batch_input)
                if self._in_step:
                    with self._step_lock:
                        self._rewire()
                return None
            # Atomic for threads running the model at once (see BaseHook._step_lock): otherwise two
            # forwards of one optimizer step could both find no step open and begin one each, and a
            # step's parameters could be refused because another thread began the next step first.
            with self._step_lock:
                if (self._optimizer is not None and self.mode in _OPTIMIZER_MODES and self._in_step
                        and self._step_mode == self.mode):
                    self._rewire()  # another micro-batch of the current optimizer step
                    return None
                self._start_step()
        except TrainingStopRequested:
            raise  # a rule stopped training: the hook is closed, the exception ends the user's loop
        except Exception as e:  # noqa: BLE001
            self._fail("the model's forward pre-hook", e)
        return None

    @_guarded()
    def begin_step(self, mode_step: Optional[int] = None) -> None:
        """Start the next step of the current mode (the model's forward calls do this by themselves;
        loops that count steps otherwise call it, and ``end_step``). ``mode_step``: see BaseHook."""
        if mode_step is not None and (isinstance(mode_step, bool) or not isinstance(mode_step, int) or mode_step < 0):
            raise SMDebugValueError(f"begin_step(mode_step=...) needs a step number >= 0, got {mode_step!r}")
        with self._step_lock:
            self._start_step(mode_step)

    def _start_step(self, mode_step: Optional[int] = None) -> None:
        """(step lock held) Begin a step, attach what it needs, and save the parameters due."""
        self._settle_step()
        self._begin_step(mode_step)
        if self._disabled:
            return
        self._step_mode = self.mode
        if self._io_index:
            self._io_index.clear()
        # Every rank follows the schedule, writer or not: sharded parameters are gathered by all ranks.
        due = self._sched_due = self._due if self._is_writer else self._compute_due()
        wired = self._wired
        if wired is None or wired[1] is not self._prepared_token or wired[0] != due:
            self._rewire()
        if due:
            self._save_parameters()

    def _settle_step(self) -> None:
        """(step lock held) Before a step ends: save what compiled forwards captured, and gradients kept
        from backward, in the step they belong to."""
        if self._in_step:
            if self._traced:
                self._drain_traced()
            if self._grads.kept:
                self._grads.end_of_step()

    def _normalization_statistics(self) -> List[Tuple[str, torch.Tensor]]:
        """The running statistics normalisation layers keep of their input (BatchNorm's ``running_mean`` and
        ``running_var`` buffers): what tells a rule that the model standardises raw features itself. Buffers,
        not parameters: no optimizer moves them, and they are no weights."""
        if self.model is None:
            return []
        return [(f"{self.model_name}_{name}", b) for name, b in self.model.named_buffers()
                if b is not None and _is_statistic(name.rsplit(".", 1)[-1], b) and not sharded.is_dtensor(b)]

    def _save_parameters(self) -> None:
        self._refresh_params()
        for name, b in self._normalization_statistics():
            if self.is_due(name):
                self.record(name, b)
        for name, p in self._params:
            if sharded.is_dtensor(p):
                if not self._due_by_schedule(name):
                    continue
                value = sharded.full_value(p)  # every rank: a collective
            elif self.is_due(name):
                value = p
            else:
                continue
            self.record(name, value)

    def _refresh_params(self) -> None:
        """The model's parameters as they are now: FSDP's fully_shard (or any re-parametrisation) after
        registration replaces them."""
        if self.model is None:
            return
        current = [(f"{self.model_name}_{name}", p) for name, p in self.model.named_parameters()]
        if len(current) != len(self._params) or any(a[1] is not b[1] for a, b in zip(current, self._params)):
            self._params = current
            self._params_version += 1
            self._sharded = sharded.any_sharded(current)

    def _due_by_schedule(self, name: str) -> bool:
        """Due at this step by the schedules, whichever rank writes (for collectives every rank joins)."""
        due = self._sched_due
        return bool(due) and any(c.name in due for c in self._matching(name))

    def _fail(self, where: str, exc: BaseException) -> None:
        super()._fail(where, exc)
        if self._sharded and self.num_workers_in_job() > 1 and not self._failed_sharded:
            # The other ranks will still gather sharded tensors at the due steps, a collective this rank
            # must join: it goes on following the schedule as a rank that writes nothing.
            self._failed_sharded = True
            self._disabled = False
            self._is_writer = False
            self._due = set()
            self._writer = None
            self._open_step = None
            logger.error("smdebug: this rank saves nothing more, but keeps joining the gathers of sharded "
                         "tensors so that the other ranks do not wait for it.")

    @staticmethod
    def num_workers_in_job() -> int:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_world_size()
        return 1

    # ------------------------------------------------------------------------------------------
    # module inputs and outputs
    # ------------------------------------------------------------------------------------------
    def _next_name(self, base: str, kind: int, label: str) -> str:
        counters = self._io_index.get(base)
        if counters is None:
            counters = self._io_index.setdefault(base, (itertools.count(), itertools.count()))
        return f"{base}_{label}_{next(counters[kind])}"

    def _on_forward_eager(self, module, inputs, outputs, kwargs=None):
        if self._disabled or not self._due:
            return None
        try:
            base = self._names.get(module) or type(module).__name__
            # Naming and saving in one step: a name counted in one step and saved in the next (another
            # thread began it meanwhile) could repeat a name of that step.
            outputs = tensors(outputs)
            nan_loss = self._nan_loss(module, base, outputs)
            with self._step_lock:
                self._save_io(base, tensors(inputs), outputs, nan_loss)
                if kwargs:
                    self._save_keyword_inputs(base, kwargs)
        except Exception as e:  # noqa: BLE001
            self._fail(f"the forward hook of {type(module).__name__}", e)
        return None

    def _nan_loss(self, module, base: str, outputs) -> bool:
        """Whether ``module`` is a registered loss whose one value, saved at this step, is NaN. Its class-index
        targets are then saved too, due or not: the evidence the rules read of a batch whose targets the loss all
        ignored (``ignore_index``), averaged over no element, which is no explosion (probe 15b F6). (The test reads
        the loss's one value, which its save at this step copies to the host anyway: at most one more wait for the
        device.)"""
        if module not in self._loss_modules or len(outputs) != 1:
            return False
        out = outputs[0]
        if out.numel() != 1 or not out.is_floating_point() or not self.is_due(f"{base}_output_0"):
            return False
        return bool(torch.isnan(out.detach()).any())

    def _save_io(self, base: str, inputs, outputs, nan_loss: bool = False) -> None:
        for i, t in enumerate(inputs):
            name = self._next_name(base, 0, "input")
            if self.is_due(name):
                self.record(name, t)
            elif nan_loss and i >= 1 and not (t.is_floating_point() or t.is_complex()):
                # the class-index targets of a NaN loss (no larger than the batch's positions; the scores, as large
                # as the model's output, are not: every step of a run that blew up would save them), in the
                # collections that save them at other steps (loss_inputs, labels)
                keep = tuple(c for c in self._included if c.matches(name))
                if keep:
                    self._record(name, t, force_collections=keep)
        for t in outputs:
            name = self._next_name(base, 1, "output")
            if self.is_due(name):
                self.record(name, t)

    def _save_keyword_inputs(self, base: str, kwargs) -> None:
        """(step lock held) The tensors a module got as keyword arguments: ``<module>_input_<keyword>``
        (``BertModel_input_input_ids``); a second call in the same step ``<module>_input_<keyword>_1``..."""
        for key, t in keyword_tensors(kwargs):
            counters = self._io_index.get(base + "\0" + key)
            if counters is None:
                counters = self._io_index.setdefault(base + "\0" + key, (itertools.count(), itertools.count()))
            i = next(counters[0])
            name = f"{base}_input_{key}" + (f"_{i}" if i else "")
            if self.is_due(name):
                self.record(name, t)

    def _save_batch_input(self, batch) -> None:
        """(trainer callbacks) The batch a trainer handed to a step in which the registered model was never
        called -- a LightningModule whose ``training_step`` calls its parts (``self.encoder(x)``) rather than
        ``self(x)`` -- saved as the model's input, as the model's forward hook would have saved it: a tuple's or
        list's first tensor as ``<Model>_input_0`` (of ``(x, y)``, the targets are no input), a dict's tensors by
        key (``<Model>_input_<key>``; the ``inputs`` collection leaves out targets such as ``labels``)."""
        if self._disabled or not self._due or self.model is None:
            return
        try:
            with self._step_lock:
                if isinstance(batch, dict):
                    self._save_keyword_inputs(self.model_name, batch)
                    return
                first = batch[0] if isinstance(batch, (tuple, list)) and batch else batch
                if isinstance(first, torch.Tensor):
                    self._save_io(self.model_name, [first], [])
        except Exception as e:  # noqa: BLE001
            self._fail("saving the batch as the model's input", e)

    def _drain_traced(self) -> None:
        """Save what the hooks traced into compiled forwards captured (they run in the graph's order)."""
        if not self._traced:
            return
        with self._step_lock:
            # Emptied in place: compiled code appends to this very list (dynamo guards on it).
            captured = list(self._traced)
            self._traced.clear()
            if self._disabled or not self._due:
                return
            for module, inputs, outputs in captured:
                self._save_io(self._names.get(module) or type(module).__name__, inputs, outputs)

    # ------------------------------------------------------------------------------------------
    # optimizer
    # ------------------------------------------------------------------------------------------
    def _on_optimizer_pre_step(self, optimizer, args, kwargs):
        if self._disabled:
            return None
        # ``step(closure)`` (L-BFGS, SAM-style loops): the step's gradients do not exist yet, the closure makes
        # them inside step() (probe 16a F4: a run saved no gradient at all, silently). They are saved when the
        # closure's first evaluation returns: the gradients the step starts from. (``args`` holds the optimizer
        # first: the hooks get step()'s own arguments.)
        if kwargs and callable(kwargs.get("closure")):
            return args, {**kwargs, "closure": self._saving_gradients_after(kwargs["closure"])}
        at = next((i for i, a in enumerate(args) if callable(a) and a is not optimizer), None)
        if at is not None:
            return tuple(args[:at]) + (self._saving_gradients_after(args[at]),) + tuple(args[at + 1:]), kwargs
        try:
            self._grads.save()
        except Exception as e:  # noqa: BLE001
            self._fail("the optimizer pre-step hook", e)
        return None

    def _saving_gradients_after(self, closure):
        saved = []

        def closure_then_save_gradients():
            loss = closure()
            if not saved:
                saved.append(True)
                try:
                    self._grads.save()
                except Exception as e:  # noqa: BLE001
                    self._fail("the optimizer pre-step hook", e)
            return loss

        return closure_then_save_gradients

    def _on_optimizer_post_step(self, optimizer, args, kwargs):
        if self.mode in _OPTIMIZER_MODES:
            self.end_step()
        return None

    # ------------------------------------------------------------------------------------------
    # trainer callbacks (smdebug.pytorch.lightning / smdebug.pytorch.transformers)
    # ------------------------------------------------------------------------------------------
    def set_mode(self, mode) -> None:
        super().set_mode(mode)  # (a bad mode raises first, and changes nothing)
        self._modes_by_flag = None  # the script tells the modes from now on, not the model's training flag
        if mode is not self._step_mode and self._step_openers is None:
            self._arm_step_openers()  # (once per change of mode: a loop may call set_mode at every batch)

    # ------------------------------------------------------------------------------------------
    # steps that the registered model's forward does not begin
    # ------------------------------------------------------------------------------------------
    def _arm_step_openers(self) -> None:
        """set_mode changed the mode. Steps begin at the registered model's forward calls, but a loop may
        evaluate another module with the registered loss: an EMA or SWA copy of the model (timm's ModelEmaV2,
        ``torch.optim.swa_utils.AveragedModel``), a deep copy made before registration that the hook never
        sees. Until the registered model runs again, the registered losses' calls (and ``record_tensor_value``)
        begin the steps of the new mode: each call of the first of them to run begins one, as a forward call of
        the model would, so the validation losses are saved in EVAL steps rather than dropped (no step of that
        mode was open). Only at a change of mode, so a plain loop's steps cost nothing more than the check."""
        if self.model is None or self._disabled or self.mode in self._external_modes:
            return  # (no forward calls mark steps; a trainer's callback begins them itself)
        try:
            self._step_openers = [_Handle(self._add_eager_hook(module.register_forward_pre_hook,
                                                               self._on_loss_forward_pre), self._eager_handles)
                                  for module in self._loss_modules]
            self._opener_key = None
            self._rewire_later()  # (the model's next forward takes the full path, which disarms them)
        except Exception as e:  # noqa: BLE001
            self._fail("set_mode()", e)

    def _disarm_step_openers(self) -> None:
        openers, self._step_openers, self._opener_key = self._step_openers, None, None
        for handle in openers or ():
            handle.remove()
        self._rewire_later()  # (the next step may take the quiet path again: see _rewire)

    def _on_loss_forward_pre(self, module, inputs):
        self._open_step_for(module)
        return None

    def _open_step_for(self, key) -> None:
        """(armed: see _arm_step_openers) A registered loss (or a recorded value) runs before the model did
        in this mode: the first of them to run begins a step at each of its calls; the others fall in it."""
        if self._disabled or self._step_openers is None:
            return
        try:
            with self._step_lock:
                if self._opener_key is None or self._opener_key == key:
                    self._opener_key = key
                    self._start_step()
        except TrainingStopRequested:
            raise
        except Exception as e:  # noqa: BLE001
            self._fail("beginning a step at the loss", e)

    def _on_copy_forward(self, module) -> None:
        """A forward call of a deep copy of the registered model (an EMA/SWA average made after
        registration: see __deepcopy__): the copy carries this hook's torch hooks, which would take its calls
        for the model's, begin steps and save its layers under other names. They are taken off the copy and
        its modules; its calls are not the model's (a validation of the copy is saved through the registered
        loss, see _arm_step_openers)."""
        try:
            ours = {handle.id for handle, _ in self._eager_handles}
            ours.update(getattr(h, "id", None) for h in self._model_handles)
            for io_handle, _ in self._io_handles.values():
                ours.add(getattr(getattr(io_handle, "handle", io_handle), "id", None))
            for sub in module.modules():
                for hooks in (sub._forward_pre_hooks, sub._forward_hooks,
                              getattr(sub, "_forward_pre_hooks_with_kwargs", {}),
                              getattr(sub, "_forward_hooks_with_kwargs", {}),
                              getattr(sub, "_forward_hooks_always_called", {})):
                    for key in [k for k in hooks if k in ours]:
                        del hooks[key]
            if not self._said_copy:
                self._said_copy = True
                logger.info("smdebug: a copy of %s (an EMA/SWA average?) was called: its calls are not the "
                            "registered model's; the hook's torch hooks were taken off it", self.model_name)
        except Exception as e:  # noqa: BLE001
            self._fail("a copy of the registered model", e)
        return None

    def _follow_trainer(self, modes, gradients: str = "auto") -> None:
        """Steps of ``modes`` are begun and ended by a trainer callback (``begin_step(mode_step=...)``,
        ``end_step()``), not by the model's forward calls. ``gradients="manual"``: the callback saves
        them at the trainer's own event (``_save_gradients``), no optimizer hook is used."""
        self._external_modes = frozenset(modes)
        self._modes_by_flag = None  # (the trainer tells the modes)
        if self._step_openers is not None:
            self._disarm_step_openers()
        if gradients == "manual":
            self._grads.use("manual")
        self._rewire_later()

    def _save_named(self, name: str, value, collection: str) -> None:
        """Save a value a trainer reports (a logged metric, the learning rate) under its own name, added
        to ``collection``, if that collection is included and due at this step; once per step (the first
        value of the step is kept)."""
        if self._disabled or not self._in_step:
            return
        try:
            with self._step_lock:
                coll = self.collection_manager.get(collection)
                if name not in coll.tensor_names:
                    # a new name changes the collections: prepared again, and the due ones of this step
                    # recomputed (a collection empty until now was not included), as save_tensor does
                    coll.add_tensor_name(name)
                    self._refresh_collections()
                    if self._is_writer:
                        self._due = self._compute_due()
                    if self._due and self._writer is None and not self.dry_run:
                        self._start_writing()
                if collection not in self._due:
                    return
                saved = self._named_saved
                if saved[0] != self.step:
                    saved = self._named_saved = (self.step, set())
                if name not in saved[1]:
                    saved[1].add(name)
                    self._record(name, value, force_collections=(coll,))
        except Exception as e:  # noqa: BLE001
            self._fail(f"saving {name}", e)

    def _may_be_empty(self, collection: str) -> bool:
        # (a trainer callback fills "metrics" with the names the trainer logs, as they come; a model without
        # normalisation layers has no running statistics, and Hook.recommended asks for them whatever the model)
        return super()._may_be_empty(collection) or collection == NORMALIZATION_STATISTICS or (
            collection == CollectionKeys.METRICS and bool(self._external_modes))

    def _record_output_loss(self, outputs, kwargs=None) -> None:
        """The model's output carries the loss (``outputs.loss`` / ``outputs["loss"]``, as Hugging Face
        models return it when given labels): saved as ``loss_output_<i>``, in the ``losses`` collection.
        When a trainer callback told the hook which loss the model's head computes (``_model_loss``), what
        that loss got, the logits and the ``labels`` argument, is saved as ``loss_input_<2i>`` and
        ``loss_input_<2i+1>`` (as a registered loss module's inputs), in ``loss_inputs``."""
        loss = outputs.get(OUTPUT_LOSS) if isinstance(outputs, dict) else getattr(outputs, OUTPUT_LOSS, None)
        if not isinstance(loss, torch.Tensor):
            return
        self.record_tensor_value(OUTPUT_LOSS, loss)
        head = self._model_loss
        if head is None or self._disabled or not self._due:
            return
        if head.shifts and self._shift_checks_left > 0:
            self._check_shifted_twice(kwargs or {})
        try:
            pair = head.inputs(outputs, kwargs or {})
            if pair is None:
                return
            with self._step_lock:
                for t in pair:
                    name = self._next_name(OUTPUT_LOSS, 0, "input")
                    if self.is_due(name):
                        self.record(name, t)
        except Exception as e:  # noqa: BLE001
            self._fail("saving the inputs of the model's own loss", e)

    def _check_shifted_twice(self, kwargs) -> None:
        """(a causal language model given ``labels``, at its first due calls) Labels that are the ``input_ids``
        moved one token ahead are shifted a second time by the model's head: it learns the token after next.
        Said once and recorded (``_meta.labels_shifted_twice``) for ImproperOutput once enough label positions
        (:data:`model_loss.MIN_SHIFT_POSITIONS`) agree."""
        try:
            found = model_loss.shifted_twice(kwargs.get(model_loss.LABELS), kwargs.get("input_ids"))
            if found is None:
                return
            self._shift_checks_left -= 1
            compared, next_share, same_share = found
            if compared < model_loss.MIN_SHIFT_POSITIONS:
                return
            self._shift_checks_left = 0
            if next_share < model_loss.SHIFTED_SHARE or same_share > 0.5:
                return
            self.collection_manager.meta[LABELS_SHIFTED_TWICE_KEY] = {
                "step": int(self.step), "positions": compared, "share": round(next_share, 4)}
            self._warn_once(
                "labels-shifted-twice", "smdebug: %s shifts its labels by one token itself, and the labels it got "
                "are its input_ids already moved one token ahead (%.1f%% of %d positions): shifted twice, the model "
                "learns to predict the token after next. Pass labels = input_ids (padding as -100); the model "
                "shifts them.", type(self.model).__name__, 100 * next_share, compared)
        except Exception as e:  # noqa: BLE001
            self._fail("comparing the labels with the input_ids", e)

    def _save_gradients(self, optimizer=None) -> None:
        """Save the model's gradients now (a trainer's "before optimizer step" event, with the optimizer about to
        step when the trainer says: its parameters go into the record of those never trained)."""
        if self._disabled:
            return
        try:
            with self._step_lock:
                self._grads.note_stepping(optimizer)
                self._grads.save()
        except Exception as e:  # noqa: BLE001
            self._fail("saving gradients", e)

    # ------------------------------------------------------------------------------------------
    # user API
    # ------------------------------------------------------------------------------------------
    @_guarded()
    def record_tensor_value(self, tensor_name: str, tensor_value) -> None:
        """Save a tensor computed in the training loop (e.g. a functional loss) as
        ``<tensor_name>_output_<i>``, as if a module had produced it.

        As ``save_tensor``: a name that is not a non-empty string, or one a run cannot hold, is refused
        at every call (said once), whether or not anything is due; the hook goes on. An internal failure
        is logged once and disables the hook; training goes on."""
        tensor_name = self._user_name("record_tensor_value", "tensor name", tensor_name, suffix="_output_0")
        if tensor_name is None:
            return
        if self._step_openers is not None:
            self._open_step_for(tensor_name)  # (the mode changed, and the model has not run since)
        if not self._due:
            return
        with self._step_lock:  # as in _on_forward_eager
            name = self._next_name(tensor_name, 1, "output")
            if self.is_due(name):
                self.record(name, tensor_value)

    def _device_reductions(self, value, ops):
        return device_reductions(value, ops)

    def _shape_of(self, value):
        if isinstance(value, torch.Tensor):
            return tuple(value.shape)
        return super()._shape_of(value)


class _Handle:
    """A forward-hook handle whose removal also forgets the eager hook's entry."""

    def __init__(self, handle, eager_handles: List):
        self.handle, self.eager_handles = handle, eager_handles

    def remove(self) -> None:
        self.handle.remove()
        self.eager_handles[:] = [e for e in self.eager_handles if e[0] is not self.handle]


def get_hook(json_config_path: Optional[str] = None, create_if_not_exists: bool = False) -> Optional[Hook]:
    """The process's PyTorch hook; with ``create_if_not_exists`` built from the JSON configuration
    (``SMDEBUG_CONFIG_FILE_PATH``). None when ``USE_SMDEBUG`` is false or no configuration exists."""
    return singleton.get_hook(Hook, json_config_path, create_if_not_exists)


set_hook = singleton.set_hook
del_hook = singleton.del_hook
