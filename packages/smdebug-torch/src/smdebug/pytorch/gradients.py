"""Where the PyTorch hook takes gradients from.

* When an optimizer steps the model's parameters (found through torch's global optimizer step hook, or
  given with ``hook.register_optimizer``), gradients are read from ``param.grad`` just before its step:
  what the optimizer applies. That is after DDP's all-reduce and FSDP's reduce-scatter (sharded
  gradients are gathered, see :mod:`smdebug.pytorch.sharded`), after ``GradScaler`` unscaled them, after
  gradient clipping, and summed over the micro-batches of gradient accumulation. It costs no hook per
  parameter, and runs outside any compiled region. Under gradient accumulation with no registered
  optimizer, a step (a forward call) where gradients are due often has no optimizer step: its gradients
  are saved at the first optimizer step after it, at the step that optimizer step falls in (the gradient
  as applied; reading them at the due step would give a partial sum, still scaled by ``GradScaler``).
* In a loop with no torch optimizer (manual updates), from parameter hooks during backward: attached only
  for steps where gradients are due, the gradients are kept (summed over several backward passes) and saved
  when the step ends.

An optimizer wrapping another (accelerate's ``AcceleratedOptimizer``) is passed over: the inner one's step
is where the update happens (and where ``GradScaler`` has unscaled the gradients).
Trainer callbacks may take over (``manual()``): they call :meth:`GradientSource.save` themselves at the
trainer's own "before optimizer step" event.
"""

from __future__ import annotations

import weakref
from typing import Dict, List, Optional, Tuple

import torch

from smdebug.core.run_info import NO_GRADIENTS_KEY, UNTRAINED_KEY
from smdebug.pytorch import sharded

GRADIENT_PREFIX = "gradient/"


def _wraps_optimizer(optimizer) -> bool:
    inner = getattr(optimizer, "optimizer", None)
    return isinstance(inner, torch.optim.Optimizer) and inner is not optimizer


class GradientSource:
    def __init__(self, hook):
        self.hook = hook
        #: "auto": optimizers found by the global hook, parameter hooks until one is; "registered": the
        #: optimizer given to register_optimizer only; "manual": a trainer callback calls save()
        self.policy = "auto"
        self.optimizer_seen = False
        self._global_handle = None
        self._param_handles: List = []
        self.kept: Dict[str, torch.Tensor] = {}  # from parameter hooks, saved at the end of the step
        self._optimizers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._saved_at: Optional[int] = None  # the step whose gradients were saved (each is saved once)
        self._saved: set = set()
        # (mode, due collections, saved by parameter hooks) of the last step whose gradients were due
        # ("auto" only): unless saved, they are saved at the next optimizer step of the model in that mode;
        # until then the optimizer hook listens (and finds an optimizer the due steps never saw step)
        self._owed: Optional[Tuple[object, frozenset, bool]] = None

    # -- set-up --------------------------------------------------------------------------------------
    def _listen(self, on: bool) -> None:
        """Listen to every optimizer's steps (policy "auto"), only while gradients are due."""
        if on and self._global_handle is None:
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            self._global_handle = register_optimizer_step_pre_hook(self._on_any_step)
        elif not on and self._global_handle is not None:
            self._global_handle.remove()
            self._global_handle = None

    def use(self, policy: str) -> None:
        self.policy = policy
        self.hook._rewire_later()
        if policy != "auto":
            self._owed = None
            self._listen(False)
            self.detach()
            self.kept.clear()

    def remove(self) -> None:
        self._owed = None
        self._listen(False)
        self.detach()
        self.kept.clear()
        self._optimizers = weakref.WeakKeyDictionary()

    # -- parameter hooks (loops without an optimizer) --------------------------------------------------
    def wire(self, due: bool) -> None:
        """For a step where gradients are due: listen to optimizers, and attach parameter hooks until an
        optimizer has been seen to step the model. Nothing for the other steps."""
        auto = self.policy == "auto"
        hook = self.hook
        if due and auto:
            self._owed = (hook.mode, hook._sched_due, False)
        # (keeps listening past the due step while its gradients are owed: see the module's docstring)
        self._listen(auto and (due or self._owed is not None))
        want = due and auto and not self.optimizer_seen
        if want and not self._param_handles:
            for name, p in self.hook._params:
                if p.requires_grad:  # frozen parameters get no gradient and no hook
                    self._param_handles.append(p.register_hook(self._keep(GRADIENT_PREFIX + name)))
        elif not want and self._param_handles:
            self.detach()

    def detach(self) -> None:
        for handle in self._param_handles:
            handle.remove()
        self._param_handles.clear()

    def _keep(self, name: str):
        kept = self.kept

        def on_grad(grad):
            previous = kept.get(name)
            kept[name] = grad if previous is None else previous + grad
            return None

        return on_grad

    def end_of_step(self) -> None:
        """Save what parameter hooks kept in the step that is ending (the hook is still in it)."""
        if not self.kept:
            return
        kept = dict(self.kept)
        self.kept.clear()  # (in place: the parameter hooks hold this dict)
        if self.optimizer_seen:
            return  # an optimizer stepped meanwhile: its gradients were saved instead
        hook = self.hook
        for name, grad in kept.items():
            if name not in self._saved_names() and hook.is_due(name):
                hook.record(name, grad)
        if self._owed is not None:
            self._owed = self._owed[:2] + (True,)

    # -- optimizers -------------------------------------------------------------------------------------
    def _on_any_step(self, optimizer, args, kwargs):
        hook = self.hook
        if hook._disabled or (not hook._sched_due and self._owed is None):
            return None  # (nothing due: the usual step costs this test and no more)
        try:
            if _wraps_optimizer(optimizer):
                return None
            pairs = self._ours(optimizer)
            if not pairs:
                return None
            owed, self._owed = self._owed, None
            # (not when the parameter hooks saved them as the due step ended, before this optimizer was
            # seen, nor when they were due in another mode: no optimizer step of that mode came)
            owed_due = owed[1] if owed is not None and not owed[2] and owed[0] == hook.mode else None
            if not self.optimizer_seen:
                self.optimizer_seen = True
                self.detach()
                self.kept.clear()
                hook._rewire_later()
            if hook._sched_due or owed_due:
                self._note_untrained(pairs)
            self.save(pairs, owed=owed_due)
        except Exception as e:  # noqa: BLE001
            hook._fail("the optimizer step hook", e)
        return None

    def _ours(self, optimizer) -> List[Tuple[str, torch.nn.Parameter]]:
        """The model's (name, parameter) pairs this optimizer updates (cached per optimizer)."""
        count = sum(len(g["params"]) for g in optimizer.param_groups)
        key = (count, self.hook._params_version)
        cached = self._optimizers.get(optimizer)
        if cached is None or cached[0] != key:
            ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
            cached = (key, [(n, p) for n, p in self.hook._params if id(p) in ids])
            self._optimizers[optimizer] = cached
        return cached[1]

    def save(self, pairs=None, owed: Optional[frozenset] = None) -> None:
        """Save the gradients of ``pairs`` (default: every parameter of the model) now due, each once a step;
        ``owed``: the collections due at an earlier step of the mode whose gradients are saved now."""
        hook = self.hook
        if pairs is None:
            pairs = hook._params
        if hook._disabled:
            return
        hook._drain_traced()
        if not hook._sched_due and not owed:
            return
        saved = self._saved_names()
        without = 0  # parameters with no gradient as the optimizer steps
        for name, p in pairs:
            grad = p.grad
            gname = GRADIENT_PREFIX + name
            if grad is None:
                without += 1
                continue
            if gname in saved:
                continue
            owed_in = [c for c in hook._matching(gname) if c.name in owed] if owed else []
            if sharded.is_dtensor(grad):
                if not hook._due_by_schedule(gname) and not owed_in:
                    continue
                grad = sharded.full_value(grad)  # every rank: a collective
            if hook.is_due(gname):
                hook.record(gname, grad)
                saved.add(gname)
            elif owed_in and hook._is_writer:
                hook._record(gname, grad, force_collections=owed_in)
                saved.add(gname)
        if pairs and without == len(pairs) and not saved:
            self._no_gradient_at_step(len(pairs))

    def _no_gradient_at_step(self, count: int) -> None:
        """Every parameter the optimizer updates had no gradient as it stepped, at a step whose gradients were
        due: said once in the training log and recorded in the run (``_meta.no_gradients``), for the rules to
        say why no gradient was saved. The optimizer stepped on nothing: zero_grad() between backward() and
        step() (set_to_none, the default), or no backward() that reached these parameters."""
        hook = self.hook
        if not any(hook.is_due(GRADIENT_PREFIX + name) for name, _ in hook._params):
            return
        if hook.collection_manager.meta.get(NO_GRADIENTS_KEY) is None:
            hook.collection_manager.meta[NO_GRADIENTS_KEY] = {"step": int(hook.step), "parameters": count}
            hook._warn_once(
                "no-gradients", "smdebug: gradients were due at step %d, but none of the %d parameters the optimizer "
                "updates had a gradient when it stepped (every .grad was None): was zero_grad() called between "
                "backward() and step(), did no backward() reach them, or are they all frozen (requires_grad=False)? "
                "No gradient is saved while they have none.", hook.step, count)

    def note_stepping(self, optimizer) -> None:
        """A trainer says ``optimizer`` is about to step (its "before optimizer step" event, which the optimizer
        hook never sees): at a step whose gradients are due, its parameters go into the record of those never
        trained, as at an optimizer step the hook saw itself."""
        if self.hook._sched_due and isinstance(optimizer, torch.optim.Optimizer):
            pairs = self._ours(optimizer)
            if pairs:
                self._note_untrained(pairs)

    def _note_untrained(self, pairs) -> None:
        """At an optimizer step of a step whose gradients are due: keep, in the run's record
        (``_meta.untrained_parameters``), the model's trainable parameters that step moved at none of these steps:
        those with a gradient that no optimizer seen so far holds (left out of the optimizer), and those of this
        optimizer with no gradient while others of it had one (cut from the loss: ``.detach()``, unused). Each
        list is what was true at every such step (a second optimizer seen later takes its parameters out of the
        first list: a GAN's generator before its optimizer first steps). What a rule needs to tell a layer frozen
        by mistake from one frozen on purpose (``requires_grad=False``, never listed in those two: a third list,
        ``frozen``, holds the parameters frozen at every such step, which no update is expected of)."""
        held = {id(p) for cached in self._optimizers.values() for _, p in cached[1]}
        not_stepped = {n for n, p in self.hook._params if p.requires_grad and p.grad is not None and id(p) not in held}
        frozen = {n for n, p in self.hook._params if not p.requires_grad}
        mine = [(n, p) for n, p in pairs if p.requires_grad]
        no_gradient = {n for n, p in mine if p.grad is None} if any(p.grad is not None for _, p in mine) else set()
        meta = self.hook.collection_manager.meta
        record = meta.get(UNTRAINED_KEY)
        step = int(self.hook.step)
        if not isinstance(record, dict):
            meta[UNTRAINED_KEY] = {"not_stepped": sorted(not_stepped), "no_gradient": sorted(no_gradient),
                                   "frozen": sorted(frozen), "steps": 1, "upto": step}
            return
        record["not_stepped"] = sorted(set(record["not_stepped"]) & not_stepped)
        record["frozen"] = sorted(set(record.get("frozen", ())) & frozen)
        if record["upto"] == step:  # (a second optimizer at the same step: the step's parameters are in one list)
            record["no_gradient"] = sorted(set(record["no_gradient"]) | no_gradient)
        else:
            record["no_gradient"] = sorted(set(record["no_gradient"]) & no_gradient)
            record["steps"] += 1
            record["upto"] = step

    def _saved_names(self) -> set:
        step = self.hook.step
        if self._saved_at != step:
            self._saved_at = step
            self._saved = set()
        return self._saved
