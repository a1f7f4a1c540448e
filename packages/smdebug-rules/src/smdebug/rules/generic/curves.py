"""Loss curves as rules read them: a scalar series read once, incrementally, and judged by robust statistics.

A minibatch loss is noisy: two single values say little, and a rule that compares them fires on noise. The
rules built on this module compare *medians of windows* of saves (a window's median moves with the loss,
not with one odd batch), measure windows in a share of the run seen so far (so a run of 100 steps and one of
100,000 are judged alike), and skip a judgement when a window holds fewer than :data:`MIN_SAVES` saves (a
run saved every 500 steps has no curve to judge: the rule says it evaluated nothing rather than guess).

:class:`Curve` keeps the saves read so far; rules evaluate steps in increasing order, so each save is read
once and the rule never re-reads the run's history at every step.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.running_means import Restarts, resets_of, steps_mean
from smdebug.rules.generic.loss_rules import (
    EVALUATION_ONLY,
    LossSelection,
    SavedSteps,
    auto_mode,
    contains,
    mode_label,
    parse_mode,
    step_in_mode,
)
from smdebug.rules.generic.adversarial import adversarial_loss_of, run_pairs
from smdebug.rules.generic.ignored_targets import UncountedLosses, said_steps
from smdebug.rules.generic.selection import first_finding, members, stopped_on_request, worker_named
from smdebug.rules.params import as_bool, as_list
from smdebug.rules.rule import Rule

#: fewest saves a window must hold for its median to be judged
MIN_SAVES = 3


class Curve:
    """The saves of one scalar tensor in one mode by one worker: mode steps (or global steps for GLOBAL) and
    values, in order, read up to the step being evaluated. A save whose value cannot be read as numbers (only
    reductions were saved) is left out. ``worker`` None: the run has one worker (its saves, read as they always
    were); else that worker's copies only (a data-parallel run whose workers all save the loss: each worker's
    is the loss of its own minibatches).

    ``resets``: where the tensor's running mean restarted (:class:`~smdebug.core.running_means.Restarts`), when
    the run records that its saves are running means (Keras's training logs: the mean over the epoch so far; :mod:`smdebug.core.running_means`).
    Each save then reads as the mean of the steps since the save before it -- every step's own value when
    every step was saved -- so the curve is a minibatch loss like any other: a running mean is smooth within
    an epoch and jumps where it restarts, which read as noise far smaller than the loss's and as swings that
    are only epochs beginning.

    A NaN save of a loss that counted no target at that step (a batch whose targets were all its
    ``ignore_index``, a mean over no element) is no point of the curve: it is left out, its step kept in
    ``left_out``. ``uncounted`` tells it from a loss that blew up (:mod:`.ignored_targets`; one for the run's
    trial when not given: every curve of a run, a rule's second reading of it too, leaves out the same saves)."""

    def __init__(self, inverted: bool = False, worker: Optional[str] = None, resets: Optional[Restarts] = None,
                 uncounted: Optional[UncountedLosses] = None):
        self.worker = worker
        self.resets = resets
        self.uncounted = uncounted
        #: the steps whose save was left out: NaN, its loss having counted no target there
        self.left_out: List[int] = []
        self._previous: Optional[Dict[str, float]] = None  # the last save read, as saved (a running mean)
        self.steps: List[int] = []
        self.values: List[float] = []
        self._read = 0  # saved steps of the source list looked at so far
        #: a score where higher is better, followed as 1 - value (see LossSelection)
        self.inverted = inverted
        #: the first step whose value is NaN or infinite (None: every value read so far is finite)
        self.first_nonfinite: Optional[int] = None
        #: the index in ``values`` of the last value that is NaN or infinite (None: none)
        self.last_nonfinite: Optional[int] = None
        self._windows: Dict[str, WindowMedian] = {}  # see median_between

    def extend(self, saved: SavedSteps, name: Union[str, Sequence[str]], mode: ModeKeys, upto: int) -> None:
        """Read the saves at steps ``<= upto`` not read yet. ``name`` may be the tensors of one loss module
        called several times in a step (:func:`loss_calls`): the step's value is their mean."""
        names = [name] if isinstance(name, str) else list(name)
        source = saved.steps(names[0], mode)
        end = bisect.bisect_right(source, upto)
        worker = self.worker
        for s in source[self._read:end]:
            if worker is not None and worker not in saved.workers(names[0], s, mode):
                continue  # a step this worker did not save (its shard ran out, it joined later)
            parts, uncounted = [], False
            for n in names:
                v = saved.mean(n, s, mode, worker)
                if v is not None and math.isnan(v) and self._counted_none(saved, n, s, mode):
                    uncounted = True  # (a call of the step that counted no target: the others make its loss)
                elif v is not None:
                    parts.append(v)
            value = float(np.mean(parts)) if parts else None
            if value is None and uncounted:
                self.left_out.append(s)
                continue
            if value is not None and self.resets is not None:
                saved_value = value
                if np.isfinite(value) and (self._previous is None or np.isfinite(self._previous["value"])):
                    value = steps_mean(self.resets, s, value, self._previous)
                self._previous = {"step": s, "value": saved_value}
            if value is not None:
                if not np.isfinite(value):
                    self.first_nonfinite = s if self.first_nonfinite is None else self.first_nonfinite
                    self.last_nonfinite = len(self.values)
                self.steps.append(s)
                self.values.append(1.0 - value if self.inverted else value)
        self._read = max(self._read, end)

    def _counted_none(self, saved: SavedSteps, name: str, step: int, mode: ModeKeys) -> bool:
        """Whether the NaN save of ``name`` at ``step`` of ``mode`` is a loss that counted no target there."""
        if self.uncounted is None:
            self.uncounted = UncountedLosses(saved.trial)
        at = step if mode == ModeKeys.GLOBAL else saved.trial.global_step(mode, step)
        return at is not None and self.uncounted.counted_none(name, at, self.worker)

    def __len__(self) -> int:
        return len(self.steps)

    def index_after(self, step: int) -> int:
        """Number of saves at steps ``<= step``."""
        return bisect.bisect_right(self.steps, step)

    def between(self, low: int, high: int) -> np.ndarray:
        """Values saved at steps ``low < step <= high``."""
        return np.asarray(self.values[bisect.bisect_right(self.steps, low):bisect.bisect_right(self.steps, high)])

    def median_between(self, low: int, high: int, window: str) -> Optional[float]:
        """``robust_median(self.between(low, high))``, kept up to date as the window named ``window`` moves along
        the curve (see :class:`WindowMedian`): a rule judging every step over windows of a quarter of the run
        so far copied and sorted a quarter of the run at every step."""
        median = self._windows.get(window)
        if median is None:
            median = self._windows[window] = WindowMedian(self)
        return median.between(low, high)

    def first(self) -> Optional[int]:
        return self.steps[0] if self.steps else None


class WindowMedian:
    """The median of a curve's saves in a window of steps that moves along it (``robust_median`` of
    :meth:`Curve.between`): the window's finite values are kept sorted as it moves, so moving a window of w
    saves by one save costs one insertion and one removal (a memmove of at most w values), not a copy and a
    selection of all w. The median is the same number numpy gives (the middle value, or the mean of the two
    middle ones)."""

    def __init__(self, curve: "Curve"):
        self._curve = curve
        self._lo = self._hi = 0  # the window's saves: curve.values[lo:hi]
        self._sorted: List[float] = []  # its finite values, sorted
        self._nonfinite = 0  # how many of its values are NaN or infinite

    def between(self, low: int, high: int, minimum: int = MIN_SAVES) -> Optional[float]:
        steps = self._curve.steps
        lo, hi = bisect.bisect_right(steps, low), bisect.bisect_right(steps, high)
        if hi <= lo or lo >= self._hi or hi <= self._lo:  # (empty, or nothing in common with the one before)
            self._start(lo, hi)
        else:
            self._move(lo, hi)
        n = hi - lo
        if n < minimum or self._nonfinite:
            return None
        k = n // 2
        return float(self._sorted[k]) if n % 2 else (self._sorted[k - 1] + self._sorted[k]) / 2

    def _start(self, lo: int, hi: int) -> None:
        values = self._curve.values[lo:hi]
        self._sorted = sorted(v for v in values if math.isfinite(v))
        self._nonfinite = len(values) - len(self._sorted)
        self._lo, self._hi = lo, max(lo, hi)

    def _move(self, lo: int, hi: int) -> None:
        values = self._curve.values  # (saves are only ever appended: an index names one value for good)
        while self._hi < hi:
            self._add(values[self._hi])
            self._hi += 1
        while self._lo > lo:
            self._lo -= 1
            self._add(values[self._lo])
        while self._lo < lo:
            self._drop(values[self._lo])
            self._lo += 1
        while self._hi > hi:
            self._hi -= 1
            self._drop(values[self._hi])

    def _add(self, value: float) -> None:
        if math.isfinite(value):
            bisect.insort(self._sorted, value)
        else:
            self._nonfinite += 1

    def _drop(self, value: float) -> None:
        if math.isfinite(value):
            del self._sorted[bisect.bisect_left(self._sorted, value)]
        else:
            self._nonfinite -= 1


def robust_median(values: np.ndarray, minimum: int = MIN_SAVES) -> Optional[float]:
    """The median of ``values`` if there are at least ``minimum`` of them, all finite; else None (a window
    with NaN/infinity is ExplodingTensor's to report, not a trend)."""
    if len(values) < minimum or not np.all(np.isfinite(values)):
        return None
    return float(np.median(values))


def block_medians(values: List[float], size: int) -> List[float]:
    """Medians of consecutive blocks of ``size`` values (a last partial block is left out)."""
    return [float(np.median(values[i:i + size])) for i in range(0, len(values) - size + 1, size)]


def block_means(values: List[float], size: int) -> List[float]:
    """Means of consecutive blocks of ``size`` values (a last partial block is left out)."""
    return [float(np.mean(values[i:i + size])) for i in range(0, len(values) - size + 1, size)]


#: a module's output tensor as the hooks name it: ``CrossEntropyLoss_output_0``, ``_output_1`` for the next call
_CALL = re.compile(r"^(.*_output_)(\d+)$")


def loss_calls(names: List[str]) -> List[List[str]]:
    """The losses grouped by module: ``X_output_0``, ``X_output_1``... are one loss module called several times
    in a step (the micro-batches of gradient accumulation counted by ``register_optimizer``: each call's tensor
    is a few samples' loss, the step's loss is their mean), in call order; any other name is its own group."""
    groups: Dict[str, List[Tuple[int, str]]] = {}
    for name in names:
        m = _CALL.match(name)
        key, index = (m.group(1), int(m.group(2))) if m else (name, 0)
        groups.setdefault(key, []).append((index, name))
    return [[n for _, n in sorted(members)] for members in groups.values()]


def training_ended(trial) -> bool:
    """Whether the run has ended (its end-of-training marker was seen, or it was read as finished)."""
    return bool(trial.loaded_all_steps)


class LossCurveRule(Rule):
    """A rule judging the curve of each loss: which tensors are losses, which mode, the curves read so far.

    **Losses.** The union of the tensors of ``collection_names`` and those matching ``tensor_regex``, plus the
    ``losses`` collection when ``use_losses_collection`` is true and the run has one; with neither
    ``collection_names`` nor ``tensor_regex`` and no loss in the run, every scalar tensor, a metric where higher
    is better (XGBoost's auc, ndcg@k) followed as ``1 - value`` (see LossSelection). A loss saved per
    sample counts as its mean. Each loss is followed in one mode: ``mode`` if given, else TRAIN when it has
    TRAIN-mode saves, else GLOBAL (XGBoost's metrics); steps are steps of that mode.

    A loss module called several times in a step (``X_output_0``, ``X_output_1``...: the micro-batches of
    gradient accumulation) is one curve, the mean of its calls at each step (:func:`loss_calls`): each call's
    tensor alone is the loss of a few samples, several times noisier than the step's.

    **Workers.** In a run of several workers that each saved the loss (data-parallel training with
    ``include_workers="all"``) each worker's saves are a curve of their own, judged as a one-worker run's: a
    worker's training loss is the loss of its own minibatches (as noisy as a one-process run of that batch
    size), and a fault of one worker's data -- its shard all zeros, its labels shuffled -- shows in its curve only,
    while the averaged gradients keep the others learning. A finding names the worker (``<loss> (worker
    worker_1) ...``); one that several workers show is said once, naming the others (``; also on worker_1``).
    A worker that saved no step of a mode (validation on rank 0 only) has no curve there, and that is no fault;
    workers whose step numbering differs are aligned by the trial. Every piece of a rule's state is kept per
    (loss, mode, worker): ``(name, mode, curve.worker)``. A run of one worker, or one in which one worker saved
    the losses, is read and said exactly as before (nothing more is looked up in a run of one worker).

    Subclasses implement :meth:`judge`, called at every saved step of a loss with its curve read up to there.
    """

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, use_losses_collection="True", mode=None,
                 other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        from smdebug.rules.generic.loss_rules import _bad_regex
        from smdebug.exceptions import SMDebugValueError

        name = self.rule_name
        self.collection_names = as_list(name, "collection_names", collection_names)
        self.tensor_regex = as_list(name, "tensor_regex", tensor_regex)
        for bad in (r for r in self.tensor_regex if _bad_regex(r)):
            raise SMDebugValueError(f"{name}: tensor_regex {bad!r} is not a valid regular expression")
        self.use_losses_collection = as_bool(name, "use_losses_collection", use_losses_collection)
        self.mode = parse_mode(name, "mode", mode)
        self._saved = SavedSteps(base_trial)
        self._losses = LossSelection(base_trial, self.collection_names, self.tensor_regex, self.use_losses_collection,
                                     invert_scores=True)
        self._curves: Dict[Tuple[str, ModeKeys, Optional[str]], Curve] = {}
        #: per loss: the workers seen saving it (findings name the worker once there are several)
        self._loss_workers: Dict[str, Set[str]] = {}
        #: first call's tensor -> the tensors of every call of that loss module (see loss_calls)
        self._calls: Dict[str, List[str]] = {}
        #: on a finished run: why it has no learning curve by design ("": it has one; see _one_round)
        self._one_round_reason: Optional[str] = None
        #: per loss followed in GLOBAL mode: whether it is a training loss (see training_curve)
        self._training_curves: Dict[str, bool] = {}
        #: on a finished run: why its training ended early, on request ("": it ran its course; see stopped_early)
        self._stopped: Optional[str] = None
        self._uncounted = UncountedLosses(base_trial)
        #: what the rule itself said it did not judge (see caveat)
        self._own_caveat: Optional[str] = None
        #: losses left out as one of an adversarial pair: name -> why
        self._adversarial: Dict[str, str] = {}
        #: per (loss, mode, worker) read to its last save: whether it was saved in every validation pass (_every_pass)
        self._every_pass_of: Dict[Tuple[str, ModeKeys, Optional[str]], bool] = {}

    def caveat(self, reason: Optional[str]) -> None:
        """As :meth:`Rule.caveat`, with the NaN saves left out of the curves (a loss that counted no target at
        that step, see :class:`Curve`) said after it: "no issues" was said of a curve without them."""
        self._own_caveat = reason
        left_out = [(name, mode, c) for (name, mode, _), c in self._curves.items() if c.left_out]
        note = None
        if left_out:
            count = sum(len(c.left_out) for _, _, c in left_out)
            where = "; ".join(f"{self.shown(name, c)} at {'' if mode == ModeKeys.GLOBAL else mode.name + ' '}"
                              f"{said_steps(c.left_out)}" for name, mode, c in left_out)
            note = (f"{count} NaN loss save(s) left out of the curve ({where}): every target of the batch was "
                    "ignored or none was given (a mean over no element), no point of the curve")
        super().caveat("; ".join(r for r in (reason, note, self._adversarial_note()) if r) or None)

    def adversarial_reason(self, name: str) -> Optional[str]:
        """Why the loss ``name`` is left out as one of an adversarial pair (a GAN's generator and discriminator,
        told by their saved targets: :mod:`.adversarial`), None when it is judged. The pairs are read once per
        trial for every rule judging it, again as the run grows (:func:`~.adversarial.run_pairs`)."""
        return adversarial_loss_of(name, run_pairs(self.base_trial))

    def _adversarial_text(self) -> Optional[str]:
        """The losses left out as one of an adversarial pair, and why (None when none are)."""
        if not self._adversarial:
            return None
        return f"{', '.join(self._adversarial)}: {next(iter(self._adversarial.values()))}"

    def _adversarial_note(self) -> Optional[str]:
        text = self._adversarial_text()
        return f"not judged: {text}" if text else None

    def stopped_early(self) -> Optional[str]:
        """On a finished run that a rule's request stopped (``--follow --stop-training``), the trial's sentence
        saying so (``Trial.stopped_on_request``: the rule, the step); None otherwise, and while the run goes on.
        Such a run ends normally, with its end marker, but where it was stopped: a test of where the loss was "when
        training ended" would judge a training cut short as one that ran its course (probe 15d F1: "still falling
        when training ended" on a run the rules themselves stopped at step 56 of 680). Read once the run has ended
        (its record no longer changes)."""
        if not training_ended(self.base_trial):
            return None
        if self._stopped is None:
            self._stopped = stopped_on_request(self.base_trial) or ""
        return self._stopped or None

    def training_curve(self, name: str, mode: ModeKeys) -> bool:
        """Whether ``name`` followed in ``mode`` is a training loss: TRAIN mode, or GLOBAL (a run without modes)
        unless it is an evaluation set's metric (XGBoost's ``train-logloss`` and ``validation-logloss``, in the
        ``metrics`` collection: which set is the training data, the run does not say) or a loss saved at
        evaluation steps only (Keras's ``val_loss``, saved at EVAL-mode steps and so followed in GLOBAL mode:
        it was judged as a training loss, by the tests meant for one)."""
        if mode == ModeKeys.TRAIN:
            return True
        if mode != ModeKeys.GLOBAL:
            return False
        if name not in self._training_curves:  # (asked once per loss: a loss stays in its collections)
            metric = name in set(members(self.base_trial, "metrics"))
            self._training_curves[name] = not (metric or self.evaluation_only(name, mode))
        return self._training_curves[name]

    def evaluation_only(self, name: str, mode: ModeKeys) -> bool:
        """Whether ``name`` followed in ``mode`` is a loss saved at evaluation steps only, in a run that trains
        (Keras's and Lightning's ``val_loss``: followed in GLOBAL mode, one save per validation batch or pass)."""
        return mode == ModeKeys.GLOBAL and not self._saved.steps(name, ModeKeys.TRAIN) and bool(
            self._saved.steps(name, ModeKeys.EVAL) or self._saved.steps(name, ModeKeys.PREDICT))

    #: what the rule needs, for its NotEvaluated detail
    needs = "a loss curve"

    #: whether a loss the run records as a running mean (Keras's training logs) is read as the mean of the steps
    #: since the previous save (see :class:`Curve`). A rule whose noise model takes each save as a batch of its own
    #: needs it; the rules that compare medians of windows are judged on the values as saved, which they were
    #: calibrated on (benchmarks/rule_accuracy's Keras runs)
    steps_from_running_means = False

    def shown(self, name: str, curve: Optional[Curve] = None) -> str:
        """The loss as findings name it (``1 - train-auc`` for a score followed inverted; a module called several
        times a step by its first call's name, ``-<last>`` and "mean per step"), and ``curve``'s worker when
        several workers saved the loss (``<loss> (worker worker_1)``)."""
        calls = self._calls.get(name)
        if calls and len(calls) > 1:
            text = f"{name}-{_CALL.match(calls[-1]).group(2)} (the mean of the calls of one step)"
        else:
            text = self._losses.label(name)
        worker = curve.worker if curve is not None else None
        return worker_named(text, worker) if len(self._loss_workers.get(name, ())) > 1 else text

    def judge(self, name: str, mode: ModeKeys, curve: Curve, step: int) -> Tuple[bool, Optional[str]]:
        """(judged, reason if the condition is met) for loss ``name`` at its mode step ``step``."""
        raise NotImplementedError

    def invoke_at_step(self, step):
        judged = False
        evaluation_only = []
        for calls in loss_calls(self._losses.names()):
            name = calls[0]
            self._calls[name] = calls
            adversarial = self.adversarial_reason(name)
            if adversarial is not None:
                if name not in self._adversarial:
                    self._adversarial[name] = adversarial
                    self.caveat(self._own_caveat)  # (said in the verdict's detail)
                continue
            mode = auto_mode(self._saved, name, self.mode)
            if mode is None:
                evaluation_only.append(name)
                continue
            s = step_in_mode(self.base_trial, step, mode)
            if s is None or not contains(self._saved.steps(name, mode), s):
                continue
            workers = self._saved.workers(name, s, mode)  # ([None] in a run of one worker)
            if workers and workers[0] is not None:
                self._loss_workers.setdefault(name, set()).update(workers)
            failing = []  # [(worker, finding)]: every worker's curve is judged (each keeps its own state)
            for worker in workers:
                curve = self._curves.get((name, mode, worker))
                if curve is None:
                    curve = self._curves[(name, mode, worker)] = Curve(
                        inverted=name in self._losses.inverted, worker=worker,
                        resets=resets_of(self.base_trial, name, mode.name) if self.steps_from_running_means else None,
                        uncounted=self._uncounted)
                left_out = len(curve.left_out)
                curve.extend(self._saved, calls, mode, s)
                if len(curve.left_out) != left_out:
                    self.caveat(self._own_caveat)  # (said in the verdict's detail)
                if not curve.steps or curve.steps[-1] != s:
                    continue  # only reductions saved at s
                done, reason = self.judge(name, mode, curve, s)
                if done:
                    judged = True
                    self.mark_evaluated(name)
                if reason:
                    failing.append((worker, reason))
            if failing:
                return first_finding(failing)
        if not judged:
            broken = [(n, m, c) for (n, m, _), c in self._curves.items() if c.first_nonfinite is not None]
            if broken:  # the saves are there, their values are not numbers a curve can be judged by
                self.not_evaluated("; ".join(
                    f"{self.shown(n, c)} is not finite (NaN or infinity) from {mode_label(m)} {c.first_nonfinite} "
                    f"on ({sum(1 for v in c.values if not np.isfinite(v))} of its {len(c)} saves): there is no curve "
                    "to judge; ExplodingTensor (NaN/infinity) and Divergence judge such a run" for n, m, c in broken))
            elif self._adversarial and not self._curves:  # (every loss it would judge is one of a pair)
                self.not_applicable(self._adversarial_text())
            elif evaluation_only:  # (the run's steps decide: every loss or none)
                self.not_applicable(EVALUATION_ONLY.format(", ".join(evaluation_only))
                                    + " (give mode=EVAL to judge those steps)")
            elif self._one_round():
                self.not_applicable(self._one_round())
            elif (short := self._too_short()) is not None:
                self.not_applicable(short)
            else:
                self.not_evaluated(f"needs {self.needs_text()}"
                                   + (f" in mode {self.mode.name}" if self.mode is not None else ""))
        return False

    def needs_text(self) -> str:
        """What the rule needs, for its NotEvaluated detail (:attr:`needs` unless a rule says it in numbers)."""
        return self.needs

    def saves_text(self) -> str:
        """How many saves the run's longest loss curve has (``"; the run has 60"``; ``"... 60 so far"`` while it
        trains); empty when no loss was read."""
        have = max((len(c) for c in self._curves.values()), default=None)
        if have is None:
            return ""
        return f"; the run has {have}" + ("" if training_ended(self.base_trial) else " so far")

    def _too_short(self) -> Optional[str]:
        """Why a finished run is too short for the rule: each loss curve it read is as complete as the run could
        have made it, and still too few saves for the rule. A curve is complete when it holds a save at every step
        of its mode from its first to the run's last one there (nothing more was trained, nothing was left
        unsaved), or -- a validation loss saved once per evaluation pass (Keras's ``val_loss``, a loop's mean over
        its validation batches) -- a save in every validation pass up to its last (:meth:`_every_pass`): one value
        per pass is all such a loss has. None otherwise: a run still training ("not yet"), or a loss saved
        sparsely, where saving it more often would have it judged (NotEvaluated says what is needed)."""
        trial = self.base_trial
        if not self._curves or not training_ended(trial):
            return None
        per_step = per_pass = False  # (what the losses were: said in the text)
        complete = [(mode, worker, c) for (_, mode, worker), c in self._curves.items()
                    if len(c.steps) >= 2 and self._every_step(mode, c)]
        for (name, mode, worker), curve in self._curves.items():
            if any(m == mode and w == worker and c is not curve and c.steps[0] <= curve.steps[0]
                   and c.steps[-1] >= curve.steps[-1] for m, w, c in complete):
                # a loss saved at some of the steps of one saved at every step (the Hugging Face Trainer's `loss`,
                # logged every logging_steps, beside the model's own loss; its `test_loss`, once): saved more often
                # it could never have more saves than that one, which is too short already (probe 19a F5)
                continue
            if len(curve.steps) == 1 and complete and self._evaluation_step(mode, curve.steps[0]):
                continue  # one evaluation's loss (a test set's, once training ended): one value is all it has
            # (one save says nothing of how long the run trained: a booster saved at round 0 only)
            if len(curve.steps) < 2:
                return None
            if self._every_step(mode, curve):
                per_step = True
            elif self._every_pass(name, mode, curve):
                per_pass = True
            else:
                return None
        saved = " and ".join(([f"its {'training ' if per_pass else ''}loss was saved at every step it trained"]
                              if per_step else [])
                             + (["its validation loss once in every validation pass"] if per_pass else []))
        return f"the run is too short for this rule: {saved}, and the rule needs {self.needs_text()}"

    def _evaluation_step(self, mode: ModeKeys, step: int) -> bool:
        """Whether ``step`` (of ``mode``) is an EVAL or PREDICT step of the run."""
        if mode in (ModeKeys.EVAL, ModeKeys.PREDICT):
            return True
        if mode != ModeKeys.GLOBAL:
            return False
        return self.base_trial.mode(step) in (ModeKeys.EVAL, ModeKeys.PREDICT)  # (None: a step it does not know)

    def _every_step(self, mode: ModeKeys, curve: Curve) -> bool:
        """Whether ``curve`` holds a save at every step of ``mode`` from its first to the run's last one there."""
        if curve.steps[-1] - curve.steps[0] + 1 != len(curve.steps):
            return False
        # (the run's last step of the mode, not a copy of its steps: asked at every step a rule did not judge)
        last = self.base_trial.last_step(mode)
        # (a later step: the run trained on past the loss's last save, or is not judged to its end yet)
        return last is None or last <= curve.steps[-1]

    def _every_pass(self, name: str, mode: ModeKeys, curve: Curve) -> bool:
        """Whether ``curve`` is a loss saved at EVAL steps, read to its last save, with a save in every validation
        pass of the run up to it (before its first save, and between each two): the run could not have given
        more saves of it. A pass is a block of consecutive EVAL steps; where the passes lie the run tells by
        its steps of other modes (its training steps), all of which must have been saved between the loss's saves
        -- an EVAL step that was not saved is then known by its place. A run saved sparsely (its training steps
        every few) cannot tell whether a pass was left without a save: not complete. EVAL steps after the last
        save are not asked about: an evaluation after training (Keras's ``evaluate()`` saves ``loss``, not
        ``val_loss``) is no pass of this loss."""
        if not (mode == ModeKeys.EVAL or self.evaluation_only(name, mode)):
            return False
        saved = self._saved.steps(name, mode, curve.worker)
        if not saved or saved[-1] != curve.steps[-1]:
            return False  # (not read to its last save yet: asked again at its last step)
        # (asked at every later step the rule did not judge; the finished run's steps no longer change)
        key = (name, mode, curve.worker)
        if key not in self._every_pass_of:
            self._every_pass_of[key] = self._saved_per_pass(mode, curve)
        return self._every_pass_of[key]

    def _saved_per_pass(self, mode: ModeKeys, curve: Curve) -> bool:
        """Whether ``curve``, read to its last save, has a save in every validation pass up to it (see
        :meth:`_every_pass`)."""
        trial = self.base_trial
        if mode == ModeKeys.EVAL:
            steps = [trial.global_step(ModeKeys.EVAL, s) for s in curve.steps]
            if any(g is None for g in steps):
                return False
        else:
            steps = list(curve.steps)
            if any(trial.mode(g) != ModeKeys.EVAL for g in steps):
                return False
        run = trial.steps()
        previous = -1
        for g in steps:
            if not self._one_pass_since(run, previous, g):
                return False
            previous = g
        return True

    def _one_pass_since(self, run: List[int], previous: int, g: int) -> bool:
        """Whether the run's steps after global step ``previous`` (a save of the loss; -1: the run's start) up to
        ``g`` (its next save) hold no validation pass but ``g``'s own (and the rest of ``previous``'s): the steps
        there of other modes were all saved (``run``: the run's saved global steps), so every other step is an
        EVAL step, and those make one block ending at ``g`` -- or two, the first going on from ``previous``."""
        trial = self.base_trial
        _, m = trial.mode_modestep(g)
        m_previous = -1 if previous < 0 else trial.mode_modestep(previous)[1]
        others = (g - previous) - (m - m_previous)  # steps between of another mode than EVAL
        between = run[bisect.bisect_right(run, previous):bisect.bisect_left(run, g)]
        known = [s for s in between if trial.mode(s) != ModeKeys.EVAL]
        if len(known) != others:
            return False  # (steps of another mode were not saved: where the passes lie is unknown)
        if not known:
            return True  # (every step between is an EVAL step: one pass)
        # EVAL steps after the last step of another mode are g's pass; any before the first one continue
        # previous's pass (before the run's first save: a pass of their own, without a save, as are EVAL steps
        # between two steps of another mode)
        return all(b - a == 1 for a, b in zip(known, known[1:])) and (previous >= 0 or known[0] == 0)

    def _one_round(self) -> Optional[str]:
        """Why a finished XGBoost run has no learning curve by design: its model was trained in one round (a
        random forest, ``num_parallel_tree`` trees in its one round, or ``num_boost_round=1``): the run's only
        step is 0, and the hook saved the trained model's predictions or labels there (it saves them at the last
        round). None otherwise -- a run still training (one round so far is no model of one round), a run
        saved sparsely (step 0 alone, the last round unknown), any other framework."""
        trial = self.base_trial
        if not training_ended(trial):
            return None
        if self._one_round_reason is None:  # (asked once the run has ended: its steps no longer change)
            self._one_round_reason = ""
            from smdebug.rules.generic.xgboost_rules import booster_params, num_parallel_tree

            params = booster_params(trial)
            if params and list(trial.steps()) == [0] and any(
                    members(trial, c) for c in ("predictions", "labels")):
                forest = num_parallel_tree(params)
                kind = (f"a random forest (num_parallel_tree={forest}) trained in one round" if forest > 1
                        else "a model trained in one boosting round")
                self._one_round_reason = (f"{kind}: its first round is the whole model, and each loss has one save "
                                          "(step 0); there is no learning curve to judge")
        return self._one_round_reason or None
