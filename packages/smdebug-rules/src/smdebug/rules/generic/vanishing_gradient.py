from __future__ import annotations

import bisect
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.core.modes import ModeKeys
from smdebug.rules.generic.convergence import CONVERGED_GRADIENT_FRACTION, GradientConvergence
from smdebug.rules.generic.loss_rules import SavedSteps, said_trained_nothing
from smdebug.rules.generic.selection import (first_finding, is_bias, ndim_at, reduction_at, scalar, select_tensors,
                                             value_at, worker_named, workers_at)
from smdebug.rules.generic.learning_pace import LearningPace
from smdebug.rules.params import as_float, as_int, in_range
from smdebug.rules.rule import Rule

GRADIENTS = "gradients"
LOSSES = "losses"


class VanishingGradient(Rule):
    """Fires when the gradients of a layer's weights (tensors of the ``gradients`` collection with at least 2
    dimensions: matrices, kernels, embeddings) vanish, by either of two tests at a step:

    (a) **absolute** (the original's): the mean absolute value of a weight gradient is below ``threshold``
        (default 1e-7); a gradient of exactly zero must be zero at ``patience`` consecutive steps where
        gradients were saved. Uses a stored ``abs mean`` reduction when only reductions were saved (the shape is
        then read from the index; a tensor whose shape is unknown is judged).
    (b) **relative** (AUTOTRAINER, Zhang et al., ICSE'21: the gradient norm of the first layer below 1e-3 of
        the last layer's, and below 1e-4 itself): with ``g_min`` and ``g_max`` the smallest and largest L2
        norm of the weight gradients saved at the step (at least two of them)::

            g_min / g_max < ratio_threshold   and   g_min < norm_threshold

        at ``patience`` consecutive steps where gradients were saved. Depth, not scale, is what makes a
        gradient vanish -- the signal shrinks through every saturated or badly scaled layer on its way back --
        so a healthy network's layers keep gradients within an order or two of each other while a vanishing
        one's first layers get a ten-thousandth of the last one's, whatever the loss's scale (the absolute
        test misses a deep tanh network at PyTorch's default initialisation, whose first layers' mean
        gradient is ~1e-6). The layers are compared by norm, not in model order (the run does not record
        it).

    Gradients are saved at the optimizer step, after any clipping: gradients clipped to a tiny global norm
    (``clip_grad_norm_(max_norm=1e-6)`` meant 1.0) meet the tests, and the finding then says that every step's
    gradients have the same total norm, the signature of clipping (see :meth:`_clipped_to`).

    ``patience`` keeps the first step of a network with a layer that starts at zero from firing: the weights
    behind it get a gradient of exactly zero (not a small one) until it has moved once (residual branches
    whose last normalisation scale starts at zero, a zero-initialised classifier head).

    Gradients of biases (named so by their framework: ``fc.bias``, ``dense/bias``, ``dense0_bias``; whatever
    their rank, since Keras' ``MultiHeadAttention`` holds its projections' biases as ``(heads, key_dim)`` matrices)
    and of the other 1-D tensors (normalisation scales and shifts) are not judged: a bias followed by BatchNorm
    gets a gradient of (almost) exactly zero by construction (the normalisation removes any constant shift), and
    so does an attention key projection's bias (it shifts all of a query's logits alike, which the softmax
    removes); neither is a vanishing gradient. Gradients the run did not save (a frozen layer has none) take no
    part.

    A run whose workers all save their gradients (``include_workers="all"``, data parallel) is judged per worker:
    each worker's gradients at the step are compared with each other (never with another worker's replica), and
    each worker's ``patience`` counts its own steps with gradients. Gradients vanishing on one worker only fire,
    naming the worker (``gradient/fc1.weight (worker worker_1): ...``); the other workers where they vanish too
    are named after it. A gradient only one worker saved (a model split across workers, each saving its own
    layers) is the model's only copy of it and is compared with every worker's; a run where no gradient was saved
    by several workers is judged as one model, as a run of one worker.

    A small gradient is only a fault when it stops its layer from learning. Adaptive optimizers (Adam, AdamW,
    RMSprop, Adagrad) divide each parameter's step by its own gradient's running scale, so a layer whose gradient
    is small by construction keeps learning at the pace of the others: a transformer's separate query and key
    projections initialised small (BERT, ViT, LLaMA-style models at N(0, 0.02)) each get a gradient proportional
    to the other's weights, about 1e-5 of the largest gradient for tens of steps, while AdamW moves them at 0.7-0.9
    of the fastest layer's relative pace. Plain SGD moves a weight in proportion to its gradient: in the
    vanishing networks of the rule-accuracy benchmark (deep sigmoid and tanh stacks, a CNN initialised 300-fold
    too small) the layers whose gradient vanished moved at 1e-5 to 1e-4 of the fastest layer's pace (and so does
    Adam's once a gradient's entries fall below its epsilon). So when the run saved the weights too (as
    ``Hook.recommended`` does), a gradient that meets a test (its absolute one on a gradient that shrank, or the
    relative one) is not counted at a step where its weight's update ratio, ``||w[b] - w[a]|| / ||w[a]||`` less
    the part along ``w[a]`` (weight decay, which only shrinks a weight, is no learning; ``a``,
    ``b``: the weight's save before the step and the step itself, or the step and the next save for the first
    one) is at least ``learning_fraction`` of the largest update ratio, over the same saves, of the weights whose
    gradients did not vanish; without the weights, or when every gradient vanished, it is judged as before.

    A gradient that is tiny because training has *converged* is no vanishing gradient either: a model that fits
    its training data (separable classes under cross-entropy, a loss that can reach 0) drives every layer's
    gradient towards zero together with the loss, and a full-batch optimizer (L-BFGS) takes it below the absolute
    test's threshold. So the absolute test (a gradient that shrank, or one of exactly zero) is not counted at a step
    where the run converged, which takes both of:

    - every weight gradient of the view saved at the step has an L2 norm at most ``converged_gradient_fraction``
      times the largest one it had at an earlier step (the relative stopping test WeightUpdateRatio uses:
      ``converged_gradient_fraction`` has the same meaning and default, 1e-4). A gradient that vanishes through
      depth or saturation is small from the start and never shrank from a size of its own; and
    - every training loss the run saved (``losses`` collection, TRAIN steps; every step when the run has no
      modes) has fallen to at most ``converged_loss_fraction`` (default 1e-3) of its first save, at its latest
      save at or before the step (and is not negative). A network that collapsed (dead ReLUs after a learning
      rate too high, weights decayed to nothing, saturated units) also has gradients far below its earlier ones,
      but its loss is stuck near where it began: in the rule-accuracy benchmark's collapsed runs it is still at
      0.015 to 2,600 times its first value, while a run that fits its data brings it down by many orders of
      magnitude.

    Without a saved training loss, or gradient norms (only a mean reduction saved), nothing tells a minimum from a
    plateau and the step is judged as before. The relative test needs no such exemption: gradients that shrink
    together keep their ratios.

    :param threshold: the absolute test's mean |gradient| (default 1e-7).
    :param ratio_threshold: the relative test's ``g_min / g_max`` (default 1e-3; 0 turns the test off).
    :param norm_threshold: the relative test's ``g_min`` (default 1e-4).
    :param patience: consecutive steps with gradients at which the relative test, or a gradient of exactly zero,
        must hold (>= 1; default 3).
    :param learning_fraction: a weight whose update ratio is at least this fraction of the largest among the
        weights judged with it is still learning, and its small gradient not counted (default 0.01; 0 turns the
        check off).
    :param converged_gradient_fraction: with ``converged_loss_fraction``, a step where every weight gradient's norm
        is at most this fraction of its own largest earlier norm has converged (in [0, 1]; default 1e-4; 0 turns
        the convergence exemption off).
    :param converged_loss_fraction: with ``converged_gradient_fraction``, a step where every training loss is at
        most this fraction of its first save has converged (in [0, 1]; default 1e-3; 0 turns the exemption off).
    """

    def __init__(self, base_trial, threshold="0.0000001", ratio_threshold="0.001", norm_threshold="0.0001",
                 patience="3", learning_fraction="0.01", converged_gradient_fraction=CONVERGED_GRADIENT_FRACTION,
                 converged_loss_fraction="0.001", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        # (magnitudes: a negative threshold could never be met)
        self.threshold = in_range(name, "threshold", as_float(name, "threshold", threshold), 0)
        self.ratio_threshold = as_float(name, "ratio_threshold", ratio_threshold)
        self.norm_threshold = in_range(name, "norm_threshold", as_float(name, "norm_threshold", norm_threshold), 0)
        if not (0 <= self.ratio_threshold < 1):
            raise SMDebugValueError(f"{name}: ratio_threshold must be in [0, 1), got {ratio_threshold!r}")
        self.patience = as_int(name, "patience", patience, minimum=1)
        self.learning_fraction = as_float(name, "learning_fraction", learning_fraction)
        if not (0 <= self.learning_fraction <= 1):
            raise SMDebugValueError(f"{name}: learning_fraction must be in [0, 1], got {learning_fraction!r}")
        self.converged_gradient_fraction = in_range(
            name, "converged_gradient_fraction",
            as_float(name, "converged_gradient_fraction", converged_gradient_fraction), 0, 1)
        self.converged_loss_fraction = in_range(
            name, "converged_loss_fraction", as_float(name, "converged_loss_fraction", converged_loss_fraction), 0, 1)
        self._pace = LearningPace(base_trial)
        self._convergence = GradientConvergence(base_trial)
        self._saved = SavedSteps(base_trial)
        #: training loss -> (the TRAIN steps list it was read from, their global steps)
        self._loss_steps: Dict[str, Tuple[List[int], List[int]]] = {}
        #: per view (see :meth:`_views`: a worker, or None), the relative test at the steps where it had gradients,
        #: in order: (step, met, reason)
        self._relative: Dict[Optional[str], List[Tuple[int, bool, Optional[str]]]] = {}
        #: per view, the absolute test at the steps where it had gradients, in order: (step, {weight: reason})
        self._absolute: Dict[Optional[str], List[Tuple[int, Dict[str, str]]]] = {}
        #: what the first finding said of clipping (see :meth:`_clipped_to`; "" for nothing), None before it
        self._clip_hint: Optional[str] = None

    def invoke_at_step(self, step):
        copies: List[_Copy] = []  # every weight gradient saved at the step, each worker's copy
        for name in select_tensors(self.base_trial, [GRADIENTS], []):
            if is_bias(name):
                continue  # (whatever its rank: see the class docstring)
            workers = workers_at(self.base_trial, name, step)
            for worker in workers:
                # (several workers saved it: read and named as that worker's copy; one: as the trial reads it)
                read = worker if len(workers) > 1 else None
                statistics = self._statistics(name, step, read)
                if statistics is not None:
                    copies.append(_Copy(name, worker, read, *statistics))
        if not copies:
            said_trained_nothing(self, self._saved, "the gradients of training steps")  # (none to judge: why)
        failing = []
        for view, members in self._views(copies).items():
            found = self._judge(view, step, members)
            if found and all(found != reason for _, reason in failing):  # (a shared gradient's finding: once)
                failing.append((view, found))
        found = first_finding(failing)
        if not found:
            return False
        if self._clip_hint is None:  # (worked out once, at the first finding with three steps of gradients:
            self._clip_hint = self._clipped_to(step)  # reading every gradient again per finding made long runs
        return found + (f"; {self._clip_hint}" if self._clip_hint else "")  # quadratic)

    def _clipped_to(self, step: int) -> Optional[str]:
        """Why the gradients are small when it is clipping: the hook saves gradients at the optimizer step, after
        ``clip_grad_norm_``, so gradients clipped to a tiny ``max_norm`` read as vanishing ones. Clipping to a
        global norm leaves every step's gradients with the same total L2 norm (the max_norm) while the gradients
        themselves change; said when the run's gradients (every tensor of the collection, biases too, as the
        clip counts them) have one total norm, to 1e-4, at this step and the two steps with gradients before it.
        Read at the first finding only: "" when it is not clipping (or the gradients were saved as reductions
        only), None while fewer than three steps have gradients (asked again at the next finding)."""
        saved = self._saved_gradient_steps()
        steps = [s for s in saved if s <= step][-3:]
        if len(steps) < 3:
            steps = saved[:3]  # (a finding at the first steps: the steps after it, where the run has them)
        if len(steps) < 3:
            return None
        totals, values = [], []
        for s in steps:
            total, here = 0.0, []
            for name in select_tensors(self.base_trial, [GRADIENTS], []):
                value = value_at(self.base_trial, name, s)
                if value is None:
                    continue
                value = np.asarray(value, dtype=np.float64)
                here.append(value)
                total += float(np.sum(np.square(value)))
            if not total > 0 or not np.isfinite(total):
                return ""
            totals.append(np.sqrt(total))
            values.append(here)
        if max(totals) - min(totals) > 1e-4 * max(totals):
            return ""
        if all(len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))
               for a, b in zip(values, values[1:])):
            return ""  # (the same gradients at every step: nothing says a clip keeps their norm)
        return (f"the gradients of every step have the same total norm, {totals[-1]:.3g} (steps "
                f"{', '.join(map(str, steps))}): clipped to it (clip_grad_norm_ / clipnorm with max_norm "
                f"{totals[-1]:.3g}?); gradients are saved after clipping, so a tiny max_norm reads as vanishing "
                "gradients")

    def _saved_gradient_steps(self) -> List[int]:
        names = select_tensors(self.base_trial, [GRADIENTS], [])
        return sorted({s for name in names for s in self._saved.steps(name)})

    @staticmethod
    def _views(copies: "List[_Copy]") -> "Dict[Optional[str], List[_Copy]]":
        """The sets of gradients judged together, by the worker they are judged for. Gradients several workers
        saved (``include_workers="all"``, data parallel: each worker holds a replica) are judged per worker: one
        view per such worker, its own copies (another worker's gradients are no layer of its replica). A gradient
        one worker saved alone (that worker's layers of a model split across workers, or any gradient of a run of
        one worker) is the model's only copy: it joins every view, and with no gradient held by several workers
        the step is one view (None), judged as a run of one worker."""
        replicas = sorted({c.worker for c in copies if c.read is not None})
        if not replicas:
            return {None: copies} if copies else {}
        return {w: [c for c in copies if c.read is None or c.worker == w] for w in replicas}

    def _judge(self, view: Optional[str], step: int, members: "List[_Copy]"):
        """The finding of both tests on one view's gradients at ``step`` (each view keeps its own history)."""
        shrunk = None
        below: Dict[str, str] = {}
        norms: Dict[str, float] = {}
        labels: Dict[str, Optional[str]] = {}
        vanished = self._vanished(members)
        read = {c.name: c.read for c in members}
        # the gradients that did not vanish show how fast a layer learns at this step
        reference = {name: worker for name, worker in read.items() if name not in vanished}

        def learning(gradient: str) -> bool:
            return self._pace.keeps_learning(gradient, read.get(gradient), step, reference, self.learning_fraction)

        # (read only when the absolute test would count: a step with a gradient below the threshold)
        converged = any(c.mean_abs < self.threshold for c in members) and self._converged(step, members)
        for c in members:
            labels[c.name] = c.read
            if c.mean_abs < self.threshold:
                reason = (f"{worker_named(c.name, c.read)}: mean |gradient| {c.mean_abs:.3g} < threshold "
                          f"{self.threshold:g}")
                if converged:  # every gradient shrank together with the loss: convergence, not vanishing
                    self.logger.debug("%s: step %d: %s not counted: converged (%s)", self.rule_name, step, reason,
                                      converged)
                elif c.mean_abs > 0:  # a gradient that shrank: it vanishes now, unless its weight keeps learning
                    if shrunk is None and not learning(c.name):
                        shrunk = reason
                else:
                    below[c.name] = reason  # exactly zero: judged over patience steps (below), unless converged
            if self.ratio_threshold > 0 and c.norm is not None:
                norms[c.name] = c.norm
        relative = self._relative_test(view, step, norms, labels, learning)  # (both tests keep their history)
        absolute = self._absolute_test(view, step, {} if converged else below) if members else False
        return shrunk or absolute or relative

    def _converged(self, step: int, members: "List[_Copy]") -> Optional[str]:
        """How the view's gradients show that training converged at global ``step`` (see the class docstring:
        every weight gradient a tiny fraction of its own earlier largest, every training loss a tiny fraction of
        its first save); None when it did not or nothing tells."""
        if not (self.converged_gradient_fraction > 0 and self.converged_loss_fraction > 0) or not members:
            return None
        loss = self._loss_fell(step)
        if loss is None:
            return None
        for c in members:
            if self._convergence.converged(c.name, c.read, step, step, self.converged_gradient_fraction) is None:
                return None
        return f"{loss}; every weight gradient <= {self.converged_gradient_fraction:g} x its own earlier largest"

    def _training_steps(self, loss: str) -> List[int]:
        """The global steps where the run saved training loss ``loss``, in order: its TRAIN steps, or all its
        steps in a run with no modes (a validation loss, saved in EVAL steps only, has none). Kept while the run
        shows no new steps (the lists :class:`SavedSteps` hands out are kept as long)."""
        if not self.base_trial.steps(mode=ModeKeys.TRAIN):
            return self._saved.steps(loss)
        mode_steps = self._saved.steps(loss, ModeKeys.TRAIN)
        cached = self._loss_steps.get(loss)
        if cached is None or cached[0] is not mode_steps:
            cached = (mode_steps, [g for g in (self.base_trial.global_step(ModeKeys.TRAIN, s) for s in mode_steps)
                                   if g is not None])
            self._loss_steps[loss] = cached
        return cached[1]

    def _loss_fell(self, step: int) -> Optional[str]:
        """How every training loss saved at or before global ``step`` fell to at most ``converged_loss_fraction``
        of its first save (its latest save against its first); None when one did not, or none was saved."""
        said = []
        for loss in select_tensors(self.base_trial, [LOSSES], []):
            steps = self._training_steps(loss)
            upto = bisect.bisect_right(steps, step)
            if not upto:
                continue
            first, now = self._saved.mean(loss, steps[0]), self._saved.mean(loss, steps[upto - 1])
            if first is None or now is None:
                return None  # (only reductions saved: nothing tells)
            if not (first > 0 and 0 <= now <= self.converged_loss_fraction * first):
                return None
            said.append(f"{loss} {now:.3g} <= {self.converged_loss_fraction:g} x its first {first:.3g}")
        return "; ".join(said) if said else None

    def _vanished(self, members: "List[_Copy]") -> set:
        """The view's gradients that meet either test at this step, patience aside (their weights are no measure
        of how fast the others learn)."""
        norms = [c.norm for c in members if c.norm is not None]
        largest = max(norms) if norms else 0.0
        return {c.name for c in members
                if c.mean_abs < self.threshold
                or (self.ratio_threshold > 0 and c.norm is not None and largest > 0
                    and c.norm / largest < self.ratio_threshold and c.norm < self.norm_threshold)}

    def _statistics(self, name: str, step: int, worker: Optional[str]) -> Optional[Tuple[float, Optional[float]]]:
        """(mean |gradient|, L2 norm or None) of ``worker``'s weight gradient ``name`` at ``step``; None when it
        was not saved there or is no weight's (0 or 1 dimensions, empty)."""
        value = value_at(self.base_trial, name, step, worker=worker)
        if value is not None:  # the value: both statistics from one read
            if value.ndim in (0, 1) or not value.size:
                return None
            magnitudes = np.abs(np.asarray(value, dtype=np.float64))
            return float(magnitudes.mean()), float(np.sqrt(np.sum(magnitudes ** 2)))
        # only reductions saved: the stored ones
        stored = reduction_at(self.base_trial, name, step, "mean", abs=True, worker=worker)
        if stored is None:  # not saved at this step
            return None
        if ndim_at(self.base_trial, name, step, worker=worker) in (0, 1):
            return None
        l2 = reduction_at(self.base_trial, name, step, "l2", worker=worker)
        return scalar(stored), None if l2 is None else scalar(l2)

    def _absolute_test(self, view: Optional[str], step: int, below: Dict[str, str]):
        """The absolute test on gradients of exactly zero (``below``: weight -> reason) holds when one weight's
        gradient was zero at each of the view's last ``patience`` steps with gradients: the weights behind a layer
        that starts at zero (a zero-initialised classifier head, the last normalisation scale of a residual
        branch) get a gradient of exactly zero at the first step only, and learn normally from the next."""
        history = self._absolute.setdefault(view, [])
        if history and history[-1][0] >= step:  # evaluated again from an earlier step
            history[:] = [a for a in history if a[0] < step]
        history.append((step, below))
        recent = history[-self.patience:]
        if len(recent) < self.patience:
            return False
        lasting = set(below).intersection(*(b for _, b in recent))
        if not lasting:
            return False
        name = min(lasting)
        steps = ", ".join(str(s) for s, _ in recent)
        return below[name] + (f"; at {self.patience} steps with gradients ({steps})" if self.patience > 1 else "")

    def _relative_test(self, view: Optional[str], step: int, norms: dict, labels: dict, learning):
        if len(norms) < 2:
            return False
        high = max(norms, key=norms.get)

        def vanished(name):
            ratio = norms[name] / norms[high] if norms[high] > 0 else 1.0
            return ratio < self.ratio_threshold and norms[name] < self.norm_threshold

        # the smallest gradient that vanished and whose weight is not learning anyway (the smallest when none)
        ordered = sorted(norms, key=norms.get)
        low = next((n for n in ordered if vanished(n) and not learning(n)), ordered[0])
        ratio = norms[low] / norms[high] if norms[high] > 0 else 1.0
        met = vanished(low) and not learning(low)
        # (the largest named by its worker only when it is not the smallest one's: a gradient saved by one worker)
        largest = high if labels.get(high) == labels.get(low) else worker_named(high, labels.get(high))
        reason = (f"{worker_named(low, labels.get(low))}: gradient norm {norms[low]:.3g} is {ratio:.3g} of the largest "
                  f"({largest}: {norms[high]:.3g}); ratio_threshold {self.ratio_threshold:g}, "
                  f"norm_threshold {self.norm_threshold:g}")
        history = self._relative.setdefault(view, [])
        if history and history[-1][0] >= step:  # evaluated again from an earlier step
            history[:] = [r for r in history if r[0] < step]
        history.append((step, met, reason))
        recent = history[-self.patience:]
        if len(recent) == self.patience and all(m for _, m, _ in recent):
            steps = ", ".join(str(s) for s, _, _ in recent)
            return reason + (f"; at {self.patience} steps with gradients ({steps})" if self.patience > 1 else "")
        return False


class _Copy(NamedTuple):
    """One worker's copy of a weight gradient at a step."""

    name: str
    worker: str  # the worker that saved it
    read: Optional[str]  # the worker, when several saved the gradient (its copy is named so); None when one did
    mean_abs: float
    norm: Optional[float]

