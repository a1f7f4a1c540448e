"""Divergence: the loss or the weights growing by orders of magnitude while staying finite, or a training loss
giving back most of the progress it had made, or climbing steadily after it.

ExplodingTensor finds NaN and infinity; training often goes wrong long before that (a learning rate just
above the stability limit, a sign error that maximises the loss, a too-large step that throws the weights
out): the loss or the weights grow 100-fold, 1000-fold, still finite. A healthy run changes the norm of its
weights by a small factor (initialisation to trained) and lowers its loss. A training loss can also go the wrong
way without growing past where it started: it learned, then climbed back up and stayed there (gradients that are
never zeroed and pile up, labels corrupted from some step on, a learning rate thrown too high mid-run).
"""

from __future__ import annotations

import bisect
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.curves import LossCurveRule, robust_median, training_ended
from smdebug.rules.generic.loss_rules import contains, mode_label, step_in_mode, trend_p_value
from smdebug.rules.generic.selection import first_finding, select_tensors, value_at
from smdebug.rules.params import as_float, as_int, as_list, in_range


#: Kendall's trend test's one-sided p-value below which the saves since a loss's best rise (a climb, not noise)
CLIMB_SIGNIFICANCE = 1e-3
#: the fewest saves since a loss went back to its start to tell whether it falls again as it did the first time
#: (training started again from scratch: see Divergence._started_again)
RESTART_SAVES = 5

#: names of a recorded learning rate (``learning_rate``, ``lr``, ``lr-Adam``, ``optimizer/lr``), not ``lrelu``
_LEARNING_RATE = re.compile(r"(?i)(^|[^a-z])(lr|learning_?rate)([^a-z]|$)")


class Divergence(LossCurveRule):
    """Fires when the loss, or the norm of the weights, grew by ``growth_factor`` or more since the start.

    **Loss** (see :class:`~smdebug.rules.generic.curves.LossCurveRule` for which tensors and mode, and for runs
    whose workers all save the loss: each worker's curve is judged, a loss that grows on one worker only -- its
    shard gone bad -- fires naming it): at a saved
    step, ``|median of the last window saves| >= growth_factor * |median of the first window saves|`` (both
    windows of ``window`` saves, finite, the first non-zero).

    **Weights**: the tensors of ``weight_collections`` with at least 2 dimensions (weight matrices, kernels,
    embeddings; biases and normalisation scales are 1-D and may start at 0), TRAIN-mode saves when they have
    any. At a step where weights were saved::

        growth = sqrt(sum of ||w[s]||^2) / sqrt(sum of ||w[first save of w]||^2)

    over the tensors saved at ``s`` and earlier, and the rule fires when ``growth >= growth_factor``. A norm
    that starts at 0 (all-zero initialisation) is left out (nothing to grow from).

    **A training loss that gave back its progress** (TRAIN mode, or a run without modes except an evaluation
    set's metric: a validation loss rising is Overfit's to judge). Checked once ``2 * window`` saves are there,
    then every ``max(window, n // 20)`` saves (``n``: saves so far), with ``w = max(window, n // 10)``::

        first    = median of the first window saves
        now      = median of the last w saves
        best     = the lowest level the loss held over two consecutive earlier blocks of w saves (counted back
                   from the last save): the lowest of max(median of a block, median of the block before it)
        noise    = standard error of the difference of two such medians (1.4826 * 1.2533 * the median of
                   |difference of consecutive saves| of the last w saves / sqrt(w))
        gave_back = first - best >= |first| / 10 and first - best > 3 * noise      (it had learned)
                    and now - best > 3 * noise                                     (it is worse now, beyond noise)
                    and share >= give_back_percent / 100                           (by most of what it had learned)
        share    = (now - best) / (first - best), or, for a loss that stayed positive and fell to a hundredth of
                   first or less, the larger log(now / best) / log(first / best): the orders of magnitude given back

    and the rule fires when ``gave_back`` holds at two checks in a row (a loss back up over the last tenth of the
    run, twice: a bump of a few steps -- a warm restart, an odd batch, a learning-rate warm-up -- is no block of a
    tenth of the run, and a loss at its floor wobbles by its noise, not by half of its progress). LossNotDecreasing
    judges a loss that went back up to where it started; this judges one that learned and then lost most of it
    while still below its start. A run that trains again from scratch (cross-validation folds or seeds trained in
    turn under one hook, each re-initialised) is no give-back: a loss that went back to its start's level, not
    far beyond it, and falls from there as it did the first time (the median of its saves since is no higher than
    that of as many saves at the run's start, give or take a tenth of the progress) is judged again at the next
    check, and at the last save of a finished run as always. Losses whose definition changes during the run (an
    annealed weight of a term
    growing far beyond the rest, a curriculum that moves to harder data, adversarial losses) can meet the
    condition healthily; leave the rule out for those (or give ``give_back_percent=0``).

    **A training loss that climbs steadily after its progress** (same losses, same checks, same blocks; judged on a
    finished run, at its last save): a loss that learned and then turned and kept rising -- a weight decay
    or regulariser that comes to dominate the loss (AdamW's ``weight_decay=10`` meant as 1e-2), a learning rate too
    high for the later phase of training -- gives back only a few percent of its progress before the run ends,
    far from ``give_back_percent``, yet training is making the model worse. With ``best`` the ``i``-th block
    counted back::

        climbing = it had learned (as above) and i >= 3                    (the climb spans 3 blocks: 30% of the run)
                   and every block since best higher than the one before   (no fall again: not a restart's bump)
                   and now - (the block before it) > 3 * noise             (still rising at the end)
                   and now - best > 3 * noise and now - best >= climb_percent / 100 * (first - best)
                   and Kendall's trend test says the saves since best rise (one-sided p < 0.001)
                   and the run's recorded learning rate (a tensor named ``lr`` or ``learning_rate``: the Hugging
                   Face Trainer's, a logged ``lr``) did not rise from the best block's start to now

    and the rule fires when ``climbing`` holds at the last save and at the check before it (or ``gave_back``
    there): a loss that climbed until training ended. While a run goes on the climb is not reported: a ramp that
    will end (an annealed KL weight rising to its final value, a curriculum stage) looks the same until it does.
    A warm restart, unfreezing a backbone or one ramp of a cyclically annealed weight raise the loss for a block or
    two and it falls again; a curriculum that moved to harder data lifts it to a new level where it sits; a
    warm-up or one-cycle schedule raises the learning rate on purpose (judged by the loss's shape alone when the
    run recorded no learning rate: the finding says so). A climb over a quarter of the run or less is no trend
    yet; a weight annealed up until the very end of training can meet the condition (give ``climb_percent=0``).
    A run a rule's request stopped (``--follow --stop-training``; ``Trial.stopped_on_request``) ended where it was
    stopped, not where its training would have: this test is left out there, and a verdict of no issues says so.

    :param growth_factor: the smallest growth that fires (> 1). Default ``"100"`` (two orders of magnitude).
    :param window: saves in each loss window (>= 1). Default ``"10"``.
    :param give_back_percent: the share of the progress a training loss must give back to fire (0-100; 0 turns
        the test off). Default ``"50"`` (most of it).
    :param climb_percent: the share of its progress a steadily climbing training loss must have given back to fire
        (0-100; 0 turns the test off). Default ``"2"``: the shape of the climb is the evidence, this only keeps a
        drift too small to matter quiet.
    :param weight_collections: comma-separated collections of weights; empty for none. Default ``"weights"``.
    Plus the loss selection parameters of LossNotDecreasing (``collection_names``, ``tensor_regex``,
    ``use_losses_collection``, ``mode``).
    """

    needs = "saves of a loss (2 * window) or of 2-D weights at two steps"

    def __init__(self, base_trial, growth_factor="100", window="10", weight_collections="weights",
                 collection_names=None, tensor_regex=None, use_losses_collection="True", mode=None,
                 give_back_percent="50", climb_percent="2", other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, use_losses_collection, mode,
                         other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.growth_factor = as_float(name, "growth_factor", growth_factor)
        if not (self.growth_factor > 1 and np.isfinite(self.growth_factor)):
            raise SMDebugValueError(f"{name}: growth_factor must be a number > 1, got {growth_factor!r}")
        self.window = as_int(name, "window", window, minimum=1)
        self.weight_collections = as_list(name, "weight_collections", weight_collections)
        self.give_back_percent = in_range(name, "give_back_percent",
                                          as_float(name, "give_back_percent", give_back_percent), 0, 100)
        self.climb_percent = in_range(name, "climb_percent", as_float(name, "climb_percent", climb_percent), 0, 100)
        #: per (weight tensor, worker): squared norm at its first save (worker None in a run of one worker)
        self._first: Dict[Tuple[str, Optional[str]], float] = {}
        #: per training loss (and worker): [saves at its next give-back check, whether the previous check met it]
        self._checks: Dict[Tuple[str, ModeKeys, Optional[str]], List] = {}

    def judge(self, name, mode, curve, s):
        if len(curve) < 2 * self.window:
            return False, None
        first = robust_median(np.asarray(curve.values[:self.window]), minimum=1)
        now = robust_median(np.asarray(curve.values[-self.window:]), minimum=1)
        if first is None or now is None or first == 0:
            return False, None
        growth = abs(now) / abs(first)
        if growth >= self.growth_factor:
            return True, (f"{self.shown(name, curve)} grew {growth:.3g}-fold: median {first:.4g} over its first "
                          f"{self.window} saves -> {now:.4g} over the {self.window} saves to {mode_label(mode)} {s} "
                          f"(growth_factor {self.growth_factor:g}), all finite")
        if self.give_back_percent and self.training_curve(name, mode):
            return True, self._gave_back(name, mode, curve, s)
        return True, None

    def _gave_back(self, name: str, mode: ModeKeys, curve, s: int) -> Optional[str]:
        """The reason when the training loss gave back most of its progress at this check and the one before."""
        n = len(curve)
        check = self._checks.setdefault((name, mode, curve.worker), [2 * self.window, False])
        last = training_ended(self.base_trial) and s == self._saved.steps(name, mode, curve.worker)[-1]
        if n < check[0] and not last:
            return None  # (a finished run's last save is always checked: the schedule may step over the end)
        check[0] = n + max(self.window, n // 20)
        values = np.asarray(curve.values, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            check[1] = False
            return None
        w = max(self.window, n // 10)
        ends = list(range(n, w - 1, -w))  # blocks of w saves counted back from the last one
        medians = [float(np.median(values[e - w:e])) for e in ends]
        now = medians[0]
        i = int(np.argmin(medians[1:])) + 1
        held, held_end = self._held_best(medians)
        best = held if held is not None else medians[i]
        first = float(np.median(values[:self.window]))
        noise = 1.4826 * 1.2533 * float(np.median(np.abs(np.diff(values[n - w:])))) / np.sqrt(w)
        progress, back = first - best, now - best
        share = back / progress if progress > 0 else 0.0
        if best > 0 and first >= 100 * best and now > best:
            # a positive loss that fell by orders of magnitude (two at least: a noisy loss that fell 20-fold, Keras's
            # per-batch running mean of an overfitting regression, reads as "most of the way back" on a log scale
            # while its block medians moved by a quarter of its progress) is measured on their scale: back from
            # 0.0011 to 0.034 after 0.25 is 13% of the way back up in its units, but most of the orders of
            # magnitude it had fallen (a SIREN or Fourier-feature fit blown up 30-fold late in training; probe 9 M4)
            share = max(share, float(np.log(now / best) / np.log(first / best)))
        met = (held is not None and progress >= abs(first) / 10 and progress > 3 * noise and back > 3 * noise
               and share >= self.give_back_percent / 100)
        climbing = (self._climbing(name, values, ends, medians, i, first - medians[i], 3 * noise, curve, mode)
                    if not met else None)
        before, check[1] = check[1], met or climbing is not None
        if met and not last and self._started_again(values, ends[held_end], best):
            # training started again from scratch (cross-validation folds or seeds trained in turn under one hook,
            # each re-initialised): judged again once the loss stops falling, and at the run's last save -- a loss
            # that does not come back down is still given back (probe 17a F4: five folds read as "gave back 84% of
            # the progress it had made" at the second fold's start)
            return None
        stopped = self.stopped_early() if last and self.climb_percent else None
        if stopped:
            # a run a rule's request stopped did not end where its training would have: a climb up to the stop
            # is one the run's end cannot confirm (the give-back test, judged at every check, stands)
            self.caveat(f"the test of a loss climbing until training ended was left out: {stopped}, so the run "
                        "did not end where its training would have")
        if climbing is not None and before and last and not stopped:
            # reported once training has ended: while the run goes on, a climb cannot be told from a ramp that
            # will end (an annealed KL weight rising to its final value, a curriculum stage) -- the run's end can
            return climbing
        if not (met and before):
            return None
        label = mode_label(mode)
        scale = "" if share == back / progress else " on a log scale (it had fallen by orders of magnitude)"
        return (f"{self.shown(name, curve)} gave back {share:.0%} of the progress it had made{scale}: median "
                f"{first:.4g} "
                f"over its first {self.window} saves -> {best:.4g} at best (held over the {2 * w} saves to {label} "
                f"{curve.steps[ends[held_end] - 1]}) -> {now:.4g} over the {w} saves to {label} {s}, beyond the noise "
                f"({3 * noise:.3g}) at two checks in a row (give_back_percent {self.give_back_percent:g})")

    def _started_again(self, values: np.ndarray, since: int, best: float) -> bool:
        """Whether the loss may be training again from scratch after it held its ``best`` level (at save ``since``):
        it went back to where it started -- a save at the level of its first ``window`` saves (their median, less a
        tenth of the progress to ``best``), none far above them (half the progress: a fresh initialisation's loss is
        drawn as the first one was, while a learning rate thrown far too high throws the loss beyond its start) --
        and from the first such save after it was last more than half way down (the last restart, when there were
        several) it falls as it did the first time: the median of those saves is no higher than that of as many
        saves at the run's start (at most all saves before ``since``), give or take a tenth of the progress. Fewer
        than :data:`RESTART_SAVES` saves since it went back are too few to tell: True, judged at the next check. A
        loss that sits at the level it went back to (labels corrupted from some step on, a learning rate too high to
        learn at) or keeps rising (gradients that pile up) has a higher median than the run's first descent."""
        start = values[:self.window]
        level, high = float(np.median(start)), float(np.max(start))
        progress = level - best
        later = values[since:]
        if progress <= 0 or not later.size or float(np.max(later)) > high + 0.5 * progress:
            return False
        back = np.flatnonzero(later >= level - 0.1 * progress)
        if not back.size:
            return False
        # it went back last after it was last more than half way down (several folds: the last fold's start)
        down = np.flatnonzero(later[:back[-1]] <= level - 0.5 * progress)
        again = later[back[back > down[-1]][0]:] if down.size else later[back[0]:]
        if len(again) < RESTART_SAVES:
            return True
        first_time = values[:min(len(again), since)]  # (a loss that went back more than once: all of it before)
        return float(np.median(again)) <= float(np.median(first_time)) + 0.1 * progress

    @staticmethod
    def _held_best(medians: List[float]) -> Tuple[Optional[float], int]:
        """The lowest level the loss held over two consecutive blocks before the last one -- the lowest of
        ``max(medians[k], medians[k + 1])``, the blocks counted back from the last save -- and ``k`` (the later
        block of the two); (None, 0) with fewer than two such blocks. The lowest median of many blocks of a noisy
        loss is biased low (a lucky stretch of 10 batches: the minimum of n medians lies about sqrt(2 ln n)
        standard errors below their level), and a give-back measured from a level the loss never held read
        a warm restart's designed bump on a healthy run as "gave back 59% of the progress" (probe 14a F8); a
        level held over two blocks is one the loss reached, not one stretch of luck."""
        pairs = [(max(medians[k], medians[k + 1]), k) for k in range(1, len(medians) - 1)]
        if not pairs:
            return None, 0
        return min(pairs)

    def _climbing(self, name: str, values: np.ndarray, ends: List[int], medians: List[float], i: int, progress: float,
                  beyond: float, curve, mode: ModeKeys) -> Optional[str]:
        """The reason when the training loss, after real progress, has climbed steadily from its best block to the
        last one at a learning rate that did not rise; None otherwise.

        ``medians[k]`` is the median of the block of saves ending at ``ends[k]`` (counted back from the last save),
        ``i`` the best earlier block, ``beyond`` three times the noise of a difference of two block medians."""
        if not self.climb_percent or i < 3:
            # a climb over a block or two is a bump of a fifth of the run at most (a warm restart, unfreezing a
            # backbone, one ramp of a cyclically annealed KL weight: each falls again), not a sustained trend
            return None
        first = float(np.median(values[:self.window]))
        best, now = medians[i], medians[0]
        if not (progress >= abs(first) / 10 and progress > beyond):
            return None  # it never learned: LossNotDecreasing's to judge
        rise = now - best
        if not (rise > beyond and rise >= progress * self.climb_percent / 100):
            return None
        # steadily: every block after the best is higher than the one before it (a loss that jumps at a warm
        # restart or at unfreezing and then falls again has a block lower than the one before), and the saves
        # since the best rise by Kendall's trend test, not by one jump
        after = medians[i::-1]
        if any(b <= a for a, b in zip(after, after[1:])):
            return None
        if medians[0] - medians[1] <= beyond:
            # still climbing at the end, beyond the noise: a loss that rose to a new level and sits there (a
            # curriculum that moved on to harder data, an annealed weight that reached its final value) is flat
            return None
        if trend_p_value(values[ends[i]:], rising=True) >= CLIMB_SIGNIFICANCE:
            return None
        w = ends[0] - ends[1]
        start, end = curve.steps[ends[i] - w], curve.steps[-1]
        lr = self._learning_rate(mode, start, end)
        if lr is not None and lr[1] > lr[0] * (1 + 1e-6):
            return None  # raised on purpose (a warm restart, a one-cycle or warm-up schedule): the loss follows it
        label = mode_label(mode)
        if lr is None:
            rate = ("; the run recorded no learning rate, so a schedule that raised it on purpose cannot be ruled "
                    "out")
        elif lr[2] < lr[0] * (1 - 1e-6):
            rate = f", while the recorded learning rate fell ({lr[0]:.3g} -> {lr[2]:.3g})"
        else:
            rate = f", at a constant learning rate ({lr[0]:.3g}, recorded)"
        return (f"{self.shown(name, curve)} climbed steadily after its progress: from its best {best:.4g} (median of "
                f"the {w} saves to {label} {curve.steps[ends[i] - 1]}; {first:.4g} over its first {self.window} "
                f"saves) to {now:.4g} (the {w} saves to {label} {end}), higher in each of the {i} blocks of {w} "
                f"saves since and still rising{rate}. Training is making the model worse on its own training data: "
                f"a weight decay or regulariser that comes to dominate the loss, or a learning rate too high for this "
                f"phase of training (climb_percent {self.climb_percent:g})")

    def _learning_rate(self, mode: ModeKeys, start: int, end: int) -> Optional[Tuple[float, float, float]]:
        """(value at ``start``, highest, value at ``end``) of the learning rate the run recorded between the mode
        steps ``start`` and ``end`` (the Hugging Face Trainer's ``learning_rate``, a Keras or Lightning ``lr``
        logged as a metric); None when it recorded none there."""
        lo = self.base_trial.global_step(mode, start)
        hi = self.base_trial.global_step(mode, end)
        if lo is None or hi is None:
            return None
        for name in self.base_trial.tensor_names():
            if not _LEARNING_RATE.search(name):
                continue
            tensor = self.base_trial.tensor(name)
            steps = [t for t in tensor.steps() if t <= hi]
            if not steps:
                continue
            # the rate in force at the block's start: its last save at or before it (or its first save after)
            k = bisect.bisect_right(steps, lo)
            chosen = steps[max(k - 1, 0):]
            rates = []
            for t in chosen:
                try:
                    value = np.asarray(tensor.value(t), dtype=np.float64)
                except Exception:  # a value that cannot be read as numbers: no record of the rate
                    continue
                if value.size and np.all(np.isfinite(value)):
                    rates.append(float(np.mean(value)))
            if len(rates) >= 1:
                return rates[0], max(rates), rates[-1]
        return None

    def _weights(self, step: int) -> Optional[str]:
        if not self.weight_collections:
            return None
        # per worker (None in a run of one worker): [sum of squared norms now, at their first saves, tensors]
        totals: Dict[Optional[str], List] = {}
        for name in select_tensors(self.base_trial, self.weight_collections, []):
            mode = ModeKeys.TRAIN if self._saved.steps(name, ModeKeys.TRAIN) else ModeKeys.GLOBAL
            s = step_in_mode(self.base_trial, step, mode)
            if s is None or not contains(self._saved.steps(name, mode), s):
                continue
            for worker in self._saved.workers(name, s, mode):  # ([None] in a run of one worker)
                by_worker = {} if worker is None else {"worker": worker}
                value = value_at(self.base_trial, name, s, mode=mode, **by_worker)
                if value is None or value.ndim < 2 or value.dtype.kind not in "fiu":
                    continue
                squared = float(np.sum(np.square(value, dtype=np.float64)))
                if not np.isfinite(squared):
                    continue  # NaN/infinity: ExplodingTensor's to report
                # each worker's copy grows from its own first save: a replica that drifts off is no update of another's
                first = self._first.setdefault((name, worker), squared)
                if first == 0:
                    continue
                total = totals.setdefault(worker, [0.0, 0.0, []])
                total[0] += squared
                total[1] += first
                total[2].append(name)
        if not totals:
            return None
        self.mark_evaluated(*sorted({name for _, _, used in totals.values() for name in used}))
        failing = []
        for worker in sorted(totals, key=lambda w: "" if w is None else w):
            total_now, total_first, used = totals[worker]
            growth = float(np.sqrt(total_now / total_first))
            if growth >= self.growth_factor:
                whose = "" if worker is None else f" of worker {worker}"
                failing.append((worker, f"the norm of the weights ({len(used)} tensors{whose}) grew {growth:.3g}-fold "
                                        f"since their first save, still finite (growth_factor {self.growth_factor:g})"))
        return first_finding(failing)

    def invoke_at_step(self, step):
        reason = self._weights(step)
        return reason or super().invoke_at_step(step)
