"""WeightUpdateRatio: weight updates far too large or far too small for the weights they change."""

from __future__ import annotations

import bisect
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.names import listed
from smdebug.core.run_info import untrained_parameters
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.convergence import CONVERGED_GRADIENT_FRACTION, GradientConvergence
from smdebug.rules.generic.identical_saves import IdenticalSaves
from smdebug.rules.generic.loss_rules import (SavedSteps, auto_mode, contains, mode_label, said_trained_nothing,
                                              step_in_mode)
from smdebug.rules.generic.random_init import random_initialisation, uniform_initialisations
from smdebug.rules.generic.selection import (GRADIENTS, GradientsByStep, first_finding, select_tensors,
                                             trained_parameters, value_at, worker_named, workers_at)
from smdebug.rules.params import as_float, as_int, in_range
from smdebug.rules.rule import Rule

WEIGHTS = "weights"
#: optimizer steps a record of never-trained parameters must cover: at one or two, a branch the first batches
#: did not take (a conditional head, an expert no token was routed to) would read as cut from the loss
MIN_UNTRAINED_STEPS = 3
#: a weight initialised below this share of the size the smallest standard initialisation of its shape gives
#: (see :func:`tiny_start`) starts, like a zero-initialised one, with no scale its first update can be measured
#: against: a classifier head scaled by 1e-3 at initialisation (ConvNeXt's and DeiT's ``head_init_scale``)
#: read as an update 20 times its weight at the first step (probe 17a F8)
TINY_START_SHARE = 0.01


def tiny_start(weight: np.ndarray) -> bool:
    """Whether ``weight`` (two dimensions or more) is far smaller than any standard initialisation of its shape
    would make it: its norm below :data:`TINY_START_SHARE` of ``sqrt(size / 3) * bound``, the norm of U(-bound,
    +bound) draws, for the smallest bound of :func:`~.random_init.uniform_initialisations`."""
    bounds = [b for _, b in uniform_initialisations(weight.shape)]
    if not bounds:
        return False
    typical = np.sqrt(weight.size / 3.0) * min(bounds)
    return float(np.linalg.norm(weight.ravel())) < TINY_START_SHARE * typical


def _listed(names: List[str]) -> str:
    # (names from a run's record: listed() clips each and says how many more)
    return f"{len(names)} trainable parameter{'s' if len(names) != 1 else ''} ({listed(names, limit=5)})"


def _them(names: List[str]) -> str:
    return "them" if len(names) != 1 else "it"


def _their(names: List[str]) -> str:
    return "their" if len(names) != 1 else "its"


class WeightUpdateRatio(Rule):
    """Fires when the update of a weight between two saved steps is too large or too small relative to the
    weight.

    For each tensor of the ``weights`` collection saved at the current step ``s``::

        ratio = ||w[s] - w[p]||_2 / (||w[p]||_2 + epsilon)

    where ``p`` is the weight's previous saved step when ``num_steps`` is None, or else the *oldest* saved
    step with ``s - num_steps <= p < s``; with no such ``p`` (first save, or saves further apart than
    ``num_steps``) the weight is skipped. The rule fires when ``ratio > large_threshold`` or
    ``ratio < small_threshold``, and when the ratio is not finite (NaN or infinite weights). A weight that
    was all zeros at ``p`` (zero-initialised biases and normalisation shifts) is skipped at ``s``: its ratio
    has no scale (it used to fire as ``update / epsilon``); later, its norm in the denominator is the largest it
    has had so far, since a shift that stays near zero has no scale of its own at a save where it crosses zero.
    So is a weight whose first save is under 1% of the norm the smallest standard initialisation of its shape
    gives (:func:`tiny_start`: a classifier head scaled by 1e-3 at initialisation, ConvNeXt's and DeiT's
    ``head_init_scale``, whose first AdamW step is twenty times its norm).

    The large test leaves out a tensor the run never saved a gradient of while it saved others' (non-trainable
    variables: Keras' BatchNormalization ``moving_mean`` and ``moving_variance``, which the Keras hook saves with
    the weights): no optimizer step moves it, so its update says nothing of the learning rate. A moving mean starts
    at zero and its first save after that holds rounding-level values (a norm of 3e-9), so its next update, towards
    the batch statistics, reads as a ratio of 4.5e4. Its updates are still judged when they are not finite.

    A weight the run saved no gradient of at ``p`` (the step whose update moves it towards ``s``), while it
    saved gradients of other weights there, is not being trained then (frozen on purpose for fine-tuning:
    ``requires_grad=False``, ``trainable=False``, left out of the optimizer; with gradual unfreezing, only until
    its layer joins): its ratio of 0 is no fault and the small test skips it. That holds for the output layer
    too: a classifier head frozen by mistake at its random init (while the body trains) is not told apart from
    one frozen on purpose -- LoRA, adapter and prompt tuning freeze a pretrained output layer while parameters
    before it train, a tied input embedding frozen freezes the output projection with it, fixed-classifier
    methods keep a random head -- because the run records neither which module's output feeds the loss nor
    where a weight's first saved value came from (pretrained or freshly initialised). So does a weight whose gradient
    saved at ``p`` is exactly zero: nothing reached it then (the weights behind a layer that starts at zero get
    no gradient at the first step), so the optimizer had nothing to apply; a gradient that stays zero is
    VanishingGradient's finding. Nor is a *converged* weight: one whose gradient is negligible next to its own
    earlier gradients, that is, every gradient of it the run saved at the steps ``p..s`` (the interval the
    update spans; at least one) has an L2 norm at most ``converged_gradient_fraction`` (default 1e-4) times the
    largest L2 norm of its gradient saved at any earlier step. This is the relative first-order stopping test
    of numerical optimisation, ``||g_k|| <= tol * ||g_0||`` (Nocedal & Wright, *Numerical Optimization*,
    ch. 3), taken against the largest earlier gradient rather than the first (a gradient that starts at
    zero gives no scale): an optimizer's step scales with the gradient (``lr * g`` for SGD) or stops once its
    tolerance is met (L-BFGS, line searches), so a gradient four orders of magnitude below its size earlier
    in the run leaves the optimizer nothing to apply, and a tiny update is what a converged weight should
    show. The default of 1e-4 matches ``small_threshold``: ordinary training's update ratios (1e-4 to 1e-3)
    sit four to five orders of magnitude above its 1e-8, so a gradient shrunk by 1e-4 is what takes an SGD
    update down to that threshold. A gradient that stays full-size while the update
    is tiny still fires: an optimizer that never steps, an optimizer over a copy of the model, a learning
    rate of 1e-12 all leave the gradient as large as it was. The test needs gradients saved as values or
    with an ``l2`` norm reduction, at a step before ``p`` and between ``p`` and ``s``; without them the
    weight is judged as before. When ``p`` saved no gradient at
    all (a gradient schedule unlike the weights'), the whole run decides: a weight with no gradient at any step
    while others have one is frozen. When the run saved no gradient at all, every weight is judged (nothing
    tells frozen from trained: a ``zero_grad()`` between ``backward()`` and ``step()`` leaves the optimizer
    nothing to apply and the hooks nothing to save).

    An update of exactly 0 (the weight bit-identical at ``p`` and ``s``) while the same weight moves at other
    saves of the run is read as *no optimizer step between these saves*, not as a tiny step, and skipped:
    gradient accumulation (one ``optimizer.step()`` every k forward calls of the model, each a hook step unless
    the optimizer is registered with the hook), a model called several times per update (siamese and multi-view
    code, triplets, an RL rollout before one update), a step skipped on overflow. It is skipped when the weight
    moves at a save after the stretch of identical saves holding ``p..s``; a stretch that reaches the run's
    last save is skipped only once training has ended, if the weight moved before it and the stretch spans no
    more steps than the longest one without a move that ended earlier (the run's own period between updates).
    A weight that never moves over the run (an optimizer that never steps or steps a copy of the model, a
    learning rate so small that float rounding cancels the update), or stops moving for good, still fires,
    and so does a tiny non-zero update -- but not at once: a learning rate warming up from almost nothing (a cubic
    or exponential ramp from 1e-8 of its peak) gives tiny updates that grow. A tiny update is judged at the
    weight's next save, and fires there when that update is tiny too and no larger per step (an optimizer
    that does not train gives updates that do not grow), or when it is the last save of a finished run.

    Frozen by mistake, before it was trained: at the last step of a run that has ended, weights whose saved values
    are bit-identical at every save of the run while other weights moved, and whose values are still a standard
    random initialisation of their shape (every value within the bound of PyTorch's default ``nn.Linear``/``nn.Conv``
    initialisation, Keras' ``glorot_uniform`` or Glorot uniform in PyTorch's layout, and a Kolmogorov-Smirnov test
    against that uniform does not reject; at least 256 values: see :mod:`~smdebug.rules.generic.random_init`) fire,
    named with the weights that trained instead. A body frozen on purpose for fine-tuning is pretrained and has left
    that bound; a body frozen at its initialisation leaves only the head to learn, on random features. Normal
    initialisations (embeddings, transformer code's ``normal_(0, 0.02)``) are not told from trained weights, and a
    layer kept random on purpose with a default uniform initialisation (random features, the fixed random target
    of random network distillation, a target network never synced in the run) reads as this finding.

    A weight several workers saved (``include_workers="all"``) is judged on each worker's copy: ``w[s]`` and
    ``w[p]`` are the same worker's saves (worker_1's weights are never an update of worker_0's), and the
    gradient tests above read that worker's gradient. A replica that stops updating on one worker only fires,
    naming the worker (``fc1.weight (worker worker_1): update/weight ratio 0 ...``); identical healthy replicas
    (DDP) are quiet.

    Steps are TRAIN-mode steps when the weight has TRAIN-mode saves (weights do not change during
    evaluation, so EVAL saves are ignored), GLOBAL steps otherwise; ``num_steps`` counts steps of that mode.
    The rule needs weights saved at close steps: a save interval of 1, or equal to ``num_steps``.

    :param num_steps: furthest distance, in steps, of the compared save (>= 1); None: the previous save.
        Default None.
    :param large_threshold: the largest tolerated ratio. Default ``"10.0"``.
    :param small_threshold: the smallest tolerated ratio. Default ``"0.00000001"`` (1e-8).
    :param epsilon: added to the norm of the older weight (>= 0). Default ``"0.000000001"`` (1e-9).
    :param converged_gradient_fraction: a weight whose gradient norm from ``p`` to ``s`` is at most this
        fraction of its largest earlier gradient norm has converged, and a too-small update of it is no
        finding (in [0, 1]; 0 turns the exemption off). Default ``"0.0001"``.
    """

    def __init__(self, base_trial, num_steps=None, large_threshold="10.0", small_threshold="0.00000001",
                 epsilon="0.000000001", converged_gradient_fraction=CONVERGED_GRADIENT_FRACTION, other_trials=None,
                 action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        if num_steps is None or (isinstance(num_steps, str) and num_steps.strip().lower() in ("", "none")):
            self.num_steps: Optional[int] = None
        else:
            self.num_steps = as_int(name, "num_steps", num_steps, minimum=1)
        self.large_threshold = as_float(name, "large_threshold", large_threshold)
        self.small_threshold = as_float(name, "small_threshold", small_threshold)
        self.epsilon = as_float(name, "epsilon", epsilon)
        if not self.epsilon >= 0:
            raise SMDebugValueError(f"{name}: epsilon must be >= 0, got {self.epsilon!r}")
        if not self.small_threshold < self.large_threshold:
            raise SMDebugValueError(
                f"{name}: small_threshold ({self.small_threshold:g}) must be below large_threshold "
                f"({self.large_threshold:g})")
        self.converged_gradient_fraction = in_range(
            name, "converged_gradient_fraction",
            as_float(name, "converged_gradient_fraction", converged_gradient_fraction), 0, 1)
        self._saved = SavedSteps(base_trial)
        #: (number of tensors of the run when built, {weight: its gradient's tensor name})
        self._gradient_names: Optional[Tuple[int, Dict[str, str]]] = None
        self._convergence = GradientConvergence(base_trial)
        self._warned_no_weights = False
        self._trained = (-1, None)  # (number of tensors of the run when computed, trained_parameters)
        self._frozen: Optional[frozenset] = None  # (see _frozen_on_purpose)
        self._gradients = GradientsByStep(base_trial)
        #: (weight, worker, mode) -> {mode step: digest of its value}: which saves hold bit-identical weights
        self._identical = IdenticalSaves(base_trial)
        #: per (weight, worker, mode): whether its first save judged was all zeros, and then its largest norm so far
        self._zero_start: Dict[Tuple[str, Optional[str], ModeKeys], bool] = {}
        self._peak: Dict[Tuple[str, Optional[str], ModeKeys], float] = {}
        #: per (weight, worker, mode) whose last update judged was tiny but not zero: that update's ratio per step
        self._tiny_rate: Dict[Tuple[str, Optional[str], ModeKeys], float] = {}

    def _untrained(self, step: int) -> Optional[str]:
        """At the last step of a run that has ended: the trainable parameters no optimizer step moved, from the
        hook's record (``_meta.untrained_parameters``, PyTorch) over at least ``MIN_UNTRAINED_STEPS`` optimizer
        steps whose gradients were due, leaving out any whose saved value changed; the finding, or None."""
        trial = self.base_trial
        # (last_step(): steps()[-1] copied every step of the run at every step judged, n^2 over a run)
        if not trial.loaded_all_steps or step != trial.last_step():
            return None
        record = untrained_parameters(trial)
        if record is None or record["steps"] < MIN_UNTRAINED_STEPS:
            return None
        self.mark_evaluated()
        count = record["steps"]
        parts = []
        not_stepped = [n for n in record["not_stepped"] if self._unchanged(n)]
        if not_stepped:
            parts.append(f"{_listed(not_stepped)} had a gradient at each of the {count} optimizer steps whose "
                         f"gradients were due, but no optimizer of the run updates {_them(not_stepped)}: left out "
                         f"of the optimizer's parameters?")
        no_gradient = [n for n in record["no_gradient"] if self._unchanged(n)]
        if no_gradient:
            parts.append(f"{_listed(no_gradient)} got no gradient at any of the {count} optimizer steps whose "
                         f"gradients were due, while the other parameters of {_their(no_gradient)} optimizer did: "
                         f"cut from the loss (a .detach(), an in-place copy), or not used by the forward pass (if "
                         f"on purpose, freeze {_them(no_gradient)} with requires_grad_(False))")
        if not parts:
            return None
        return "never trained: " + "; ".join(parts) + " (requires_grad is True, and the saved values never changed)"

    def _frozen_at_init(self, step: int) -> Optional[str]:
        """At the last step of a run that has ended: the weights whose saved values never changed over the run while
        other weights moved, and whose values are still a standard random initialisation (see
        :mod:`~smdebug.rules.generic.random_init`); the finding, or None.

        A body frozen on purpose for fine-tuning is pretrained: its values left the initialisation's bound while it
        trained. One frozen by mistake (``requires_grad_(False)`` or ``trainable=False`` before loading the
        pretrained weights, or on a model never trained) is still the fresh draw, and only the rest learns on top of
        random features. Only a finished run is judged: a body unfrozen later (gradual unfreezing) moves then."""
        trial = self.base_trial
        if not trial.loaded_all_steps or step != trial.last_step():
            return None
        unchanged, moved = [], []
        for name in self._weights():
            steps = trial.tensor(name).steps()
            if len(steps) < 2:
                continue
            same = self._identical.same(name, None, ModeKeys.GLOBAL, steps[0], steps[-1])
            if same is False:
                moved.append(name)
            elif same:
                unchanged.append((name, steps))
        if not moved or not unchanged:
            return None  # nothing moved at all: the whole model is frozen, the small test's finding
        self.mark_evaluated()
        at_init = []
        for name, steps in unchanged:
            how = random_initialisation(value_at(trial, name, steps[0]))
            # (every save read only for a weight at its initialisation: a frozen pretrained body of a long run is
            # the common case, and reading each of its saves again would double the rule's reading)
            if how is not None and self._never_moved(name, steps):
                at_init.append((name, steps, how))
        if not at_init:
            return None
        names = [name for name, _, _ in at_init]
        name, steps, how = at_init[0]
        # (the other frozen weights too, so that the user unfreezes all of them: a small kernel beside the one
        # tested, probe 18a W8, or weights loaded before the run)
        others = [n for n, _ in unchanged if n not in names]
        also = (f"; also unchanged from the first save to the last: {listed(others, limit=5)} (not recognisable "
                f"as a fresh initialisation: too few values to tell, or trained before this run)" if others else "")
        return (f"frozen before it was trained: {len(names)} weight{'s' if len(names) != 1 else ''} "
                f"({listed(names, limit=5)}) never changed over the run ({len(steps)} saves, steps {steps[0]}-"
                f"{steps[-1]}) and {'are' if len(names) != 1 else 'is'} still a fresh random initialisation "
                f"({name}: {how}), while {len(moved)} other weight{'s' if len(moved) != 1 else ''} trained "
                f"({listed(moved, limit=5)}): the model learns on top of random features{also}. Unfreeze "
                f"{_them(names)} (requires_grad, trainable, the optimizer's parameters) or load the pretrained "
                f"weights before freezing")

    def _never_moved(self, name: str, steps: List[int]) -> Optional[bool]:
        """Whether weight ``name``'s saved values are bit-identical at every save of the run (``steps``, global;
        identical first and last saves could still hide a layer unfrozen and frozen again in between): a frozen
        tensor is never written, and a weight an optimizer moved does not come back to its exact bits, so equality
        is exact rather than allclose (a tiny update is the small test's finding). None when a save holds no value
        (reductions only)."""
        for s in steps[1:]:
            same = self._identical.same(name, None, ModeKeys.GLOBAL, steps[0], s)
            if not same:
                return same
        return True

    def _unchanged(self, name: str) -> bool:
        """Whether weight ``name``'s saved values are the same at its first and last saves (True when it was not
        saved twice: the hook's record stands alone)."""
        steps = self.base_trial.tensor(name).steps() if self.base_trial.has_tensor(name) else []
        return len(steps) < 2 or self._identical.same(name, None, ModeKeys.GLOBAL, steps[0], steps[-1]) is not False

    def _weights(self):
        names = select_tensors(self.base_trial, [WEIGHTS], [])
        if not names and not self._warned_no_weights:
            # (at debug level: the verdict's detail says what was looked for and found)
            self.logger.debug("%s: the run has no tensors in the %r collection", self.rule_name, WEIGHTS)
            self._warned_no_weights = True
        return names

    def _not_trained(self, name: str, mode: ModeKeys, p: int) -> bool:
        """Whether ``name`` got no gradient at mode step ``p`` while other weights did (frozen on purpose then);
        when ``p`` saved no gradient, whether it got none in the whole run while others did, or the PyTorch hook's
        record says it was frozen (``requires_grad`` False) while other weights were not: a run whose optimizer
        moved nothing saved no gradient at all, and its headline named a layer frozen on purpose rather than the
        parameters the optimizer left out (probe 19a W3)."""
        frozen = self._gradients.frozen(name, [g for g in [self.base_trial.global_step(mode, p)] if g is not None])
        if frozen is not None:
            return frozen
        return self._never_trained(name) or name in self._frozen_on_purpose()

    def _frozen_on_purpose(self) -> frozenset:
        """The weights the hook's record (``_meta.untrained_parameters``) says were frozen, when some weights were
        not: a model frozen whole is judged (its updates are all zero, which is the finding)."""
        if self._frozen is None:
            record = untrained_parameters(self.base_trial)
            if record is None:
                return frozenset()  # (not recorded yet: a live run's record comes with its collections)
            frozen = frozenset(record["frozen"])
            self._frozen = frozen if any(n not in frozen for n in self._weights()) else frozenset()
        return self._frozen

    def _never_trained(self, name: str) -> bool:
        """Whether the run saved no gradient of ``name`` at any step while it saved gradients of other weights: a
        tensor no optimizer updates (frozen, or a non-trainable variable such as Keras' BatchNormalization
        ``moving_mean``/``moving_variance``, which the Keras hook saves with the weights)."""
        count = len(self.base_trial.tensor_names())
        if self._trained[0] != count:
            self._trained = (count, trained_parameters(self.base_trial))
        trained = self._trained[1]
        return trained is not None and name not in trained

    def _zero_gradient(self, name: str, worker: Optional[str], mode: ModeKeys, p: int) -> bool:
        """Whether the gradient of ``name`` saved (by ``worker``) at mode step ``p`` is exactly zero: no signal
        reached the weight then (VanishingGradient's to judge), so the optimizer had nothing to apply."""
        g = self.base_trial.global_step(mode, p)
        return g is not None and self._gradients.all_zero(name, g, worker=worker)

    def _gradient_of(self, name: str) -> Optional[str]:
        """The tensor name of the gradient of weight ``name`` (``gradient/<name>``: the gradients collection's
        members name their parameter after the first ``/``), None if the run saved none."""
        names = self.base_trial.tensor_names()
        if self._gradient_names is None or self._gradient_names[0] != len(names):  # new tensors: rebuilt
            found: Dict[str, str] = {}
            coll = self.base_trial.collections().get(GRADIENTS)
            if coll is not None:
                for n in names:
                    if "/" in n and coll.matches(n):
                        found.setdefault(n.split("/", 1)[1], n)
            self._gradient_names = (len(names), found)
        return self._gradient_names[1].get(name)

    def _converged(self, name: str, worker: Optional[str], mode: ModeKeys, p: int, s: int) -> Optional[str]:
        """Whether the gradient of ``name`` (``worker``'s) is negligible over the update from mode step ``p`` to
        ``s``: every gradient saved at global steps ``p..s`` (at least one) has an L2 norm of at most
        ``converged_gradient_fraction`` times the largest one saved before ``p``. Returns how (for the log), or
        None when it is not (or nothing tells)."""
        gradient = self._gradient_of(name)
        first, last = self.base_trial.global_step(mode, p), self.base_trial.global_step(mode, s)
        if gradient is None or first is None or last is None:
            return None
        return self._convergence.converged(gradient, worker, first, last, self.converged_gradient_fraction)

    def _judge(self, name: str, worker: Optional[str], mode: ModeKeys, steps: List[int], p: int, s: int):
        """``worker``'s update of weight ``name`` from mode step ``p`` to ``s`` (None: the one worker that saved
        it): its finding, "" when the update is no fault, None when it cannot be judged (only reductions saved,
        nothing saved by that worker, a change of shape)."""
        now = value_at(self.base_trial, name, s, mode=mode, worker=worker)
        before = value_at(self.base_trial, name, p, mode=mode, worker=worker)
        if now is None or before is None:
            return None
        now, before = np.asarray(now, dtype=np.float64), np.asarray(before, dtype=np.float64)
        label = worker_named(name, worker)
        if now.shape != before.shape:
            self.logger.debug("%s: %s changed shape between steps %d and %d", self.rule_name, label, p, s)
            return None
        key = (name, worker, mode)
        if not np.any(before) or (key not in self._zero_start and tiny_start(before)):
            # a parameter initialised to zero (a bias, a normalisation shift), or far below any standard
            # initialisation of its shape (a head scaled by 1e-3), has no scale to compare its first update with:
            # the ratio is undefined, not large; from then on its largest size so far is its scale
            self._zero_start.setdefault(key, True)
            if np.any(before):
                self._peak[key] = max(self._peak.get(key, 0.0), float(np.linalg.norm(now.ravel())))
            return ""
        self._zero_start.setdefault(key, False)
        norm = float(np.linalg.norm(before.ravel()))
        if self._zero_start[key]:
            # a parameter that started at zero and stays near it (a shift whose optimum is about 0) has no scale
            # at a save where it happens to cross zero: its largest size so far is its scale (an Adam step of
            # 3e-3 on a LayerNorm beta saved at a norm of 3e-4 read as a ratio of 10.8)
            norm = self._peak[key] = max(self._peak.get(key, 0.0), norm)
        with np.errstate(all="ignore"):
            ratio = float(np.linalg.norm((now - before).ravel()) / (norm + self.epsilon))
        if self._zero_start[key] and np.isfinite(ratio):
            self._peak[key] = max(self._peak[key], float(np.linalg.norm(now.ravel())))
        where = f"between {mode_label(mode)}s {p} and {s}"
        if not np.isfinite(ratio):
            return f"{label}: update/weight ratio is {ratio} {where}"
        if ratio > self.large_threshold and not self._never_trained(name):
            return f"{label}: update/weight ratio {ratio:.4g} > large_threshold {self.large_threshold:g} {where}"
        if ratio < self.small_threshold and not self._not_trained(name, mode, p) and not self._zero_gradient(
                name, worker, mode, p):
            if ratio == 0 and np.array_equal(now, before):
                skipped = self._identical.no_optimizer_step(name, worker, mode, steps, p, s)
                if skipped is not None:
                    # bit-identical weights while the same weight moves at other saves: no optimizer step
                    # between these saves (gradient accumulation, several forward calls per update)
                    self.logger.debug("%s: %s unchanged %s: no optimizer step between these saves (%s)",
                                      self.rule_name, label, where, skipped)
                    return ""
            converged = self._converged(name, worker, mode, p, s)
            if converged is not None:
                # a converged weight: nothing left to apply, its tiny update is no fault
                self.logger.debug("%s: %s: update/weight ratio %.4g %s not judged small: converged (%s)",
                                  self.rule_name, label, ratio, where, converged)
                return ""
            if self._warming_up(key, ratio / max(1, s - p)) and not (self.base_trial.loaded_all_steps
                                                                       and s == steps[-1]):
                self.logger.debug("%s: %s: update/weight ratio %.4g %s judged at the next save: larger per step "
                                  "than the update before it (a learning rate warming up)", self.rule_name, label,
                                  ratio, where)
                return ""
            return f"{label}: update/weight ratio {ratio:.4g} < small_threshold {self.small_threshold:g} {where}"
        self._tiny_rate.pop(key, None)
        return ""

    def _warming_up(self, key: Tuple[str, Optional[str], ModeKeys], rate: float) -> bool:
        """Whether a tiny, non-zero update whose ratio per step is ``rate`` may be a learning rate still rising
        from near zero: it is the weight's first tiny one since an update of normal size (or the run's start), or
        larger per step than the tiny one before it.

        A warm-up from almost nothing (a cubic or exponential ramp from 1e-8 of the peak, ``LinearLR`` with a
        tiny ``start_factor``) moves the weights by less than ``small_threshold`` at its first steps, and by more
        at each step after, until its updates are of normal size (probe 17a F5: a healthy run fired at its first
        step). An optimizer that does not train -- a learning rate of 1e-12, a copy of the model stepped --
        gives updates that do not grow: the second tiny one fires (and any at the last save of a finished run).
        An update of exactly zero is no warm-up (the rule's tests of skipped steps judge it)."""
        if rate <= 0:
            return False
        earlier = self._tiny_rate.get(key)
        self._tiny_rate[key] = rate
        return earlier is None or rate > earlier

    def _previous(self, steps, s) -> Optional[int]:
        i = bisect.bisect_left(steps, s)
        if self.num_steps is None:
            return steps[i - 1] if i > 0 else None
        j = bisect.bisect_left(steps, s - self.num_steps)
        return steps[j] if j < i else None

    def invoke_at_step(self, step):
        judged = False
        evaluation_only = []
        for name in self._weights():
            mode = auto_mode(self._saved, name, None)
            if mode is None:
                evaluation_only.append(name)
                continue
            s = step_in_mode(self.base_trial, step, mode)
            steps = self._saved.steps(name, mode)
            if s is None or not contains(steps, s):
                continue
            p = self._previous(steps, s)
            if p is None:
                continue
            workers = workers_at(self.base_trial, name, s, mode)
            failing = []
            # each worker's copy against its own earlier save ([None]: the one worker that saved it)
            for worker in workers if len(workers) > 1 else [None]:
                outcome = self._judge(name, worker, mode, steps, p, s)
                if outcome is None:
                    continue
                judged = True
                if outcome:
                    failing.append((worker, outcome))
            if failing:
                return first_finding(failing)
        untrained = self._untrained(step) or self._frozen_at_init(step)
        if untrained:
            return untrained
        # (the run's steps decide: every weight or none)
        if not judged and not (evaluation_only and said_trained_nothing(self, self._saved, "the weights' updates")):
            self.not_evaluated("needs two saves of a weight" + (f" at most num_steps={self.num_steps} steps apart"
                                                                 if self.num_steps is not None else ""))
        return False
