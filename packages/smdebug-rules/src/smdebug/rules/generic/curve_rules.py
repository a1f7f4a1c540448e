"""Rules on the shape of a loss curve: LossNotDecreasing, OscillatingLoss, SlowConvergence.

All three read the curve incrementally (:mod:`~smdebug.rules.generic.curves`) and compare medians (for
OscillatingLoss, means beyond their noise) of windows of saves, so minibatch noise does not make them fire; their
windows are a share of the run seen so far, so they judge a run of 100 steps and one of 100,000 alike. The losses
they follow and the mode they follow them in are chosen as :class:`~smdebug.rules.generic.curves.LossCurveRule` says.
"""

from __future__ import annotations

import bisect
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core.loss_inputs import recorded_losses
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic.curves import (
    MIN_SAVES,
    Curve,
    LossCurveRule,
    block_means,
    robust_median,
    training_ended,
)
from smdebug.rules.generic.booster_generalisation import held_out_constant
from smdebug.rules.generic.loss_rules import Evaluations, evaluation_noise, mode_label
from smdebug.rules.generic.xgboost_rules import booster_params, continued_rounds
from smdebug.rules.params import as_float, as_int, in_range


#: LossNotDecreasing's check at a step: (met, detail, now, first, stalled, past): ``past`` (best, noise of a window's
#: median, whether the finding is a rise past that best) for an evaluation set's metric that came down to a best
_Checked = Tuple[bool, str, float, float, bool, Optional[Tuple[float, float, bool]]]

#: LossNotDecreasing: the share of an evaluation set's gain (first to best) that, given back, is overtraining
GIVE_BACK = 0.25


def _finite(rule: str, name: str, value: float) -> float:
    if not np.isfinite(value):
        raise SMDebugValueError(f"{rule}: {name} must be a finite number, got {value!r}")
    return value


# ----------------------------------------------------------------------------------------------------------
# LossNotDecreasing
# ----------------------------------------------------------------------------------------------------------
class LossNotDecreasing(LossCurveRule):
    """Fires when a loss has stopped decreasing (or rises) without having made real progress.

    **Losses and steps**: see :class:`~smdebug.rules.generic.curves.LossCurveRule` (the ``losses`` collection
    by default; TRAIN-mode steps when the loss has them).

    **Condition**, at a saved step ``s`` of the loss, with ``f`` its first saved step, ``L = s - f + 1`` the
    length of the run so far, ``n`` the saves so far, ``span = max(num_steps, ceil(3 * (s - f) / (n - 1)))``
    (``num_steps``, widened to hold 3 saves of a loss saved sparsely), ``w = max(span, L // 4)`` and
    ``m = f + L // 2 - 1`` (half-way)::

        now   = median of the losses saved at steps in (s - w, s]
        then  = median of the losses saved at steps in (m - w, m]
        first = median of the losses saved at steps in [f, f + span)
        p     = |first| * min_progress_percent / 100
        met   = (now >= then + |then| * tol / 100                      (not decreasing over the second half,
                 or then - now < p / 2 and tol <= 0)                    or too slowly to matter)
                and now >= first - p                                     (nor much below where it started)
                and not (now == 0 and no save was below 0)             (a loss at its floor of 0 has converged)

    with ``tol`` = ``increase_threshold_percent`` if given, else ``diff_percent``. "Too slowly to matter": at the
    pace of the second half, ``p`` takes longer than the whole run so far (a model at chance level, its labels
    unrelated to its inputs, creeps down a few percent by memorising; min_progress_percent 0 turns this off);
    judged for training losses only (TRAIN mode, or a run without modes except an evaluation set's metric such
    as XGBoost's ``validation-logloss``): a validation loss nearing a high floor is a hard problem, not a fault.
    Each window must hold at least
    3 saves, all finite, and the window of ``then`` must begin after the first one (``m - w >= f + span - 1``:
    the first ``4 * span`` steps are never judged); otherwise the step is not judged. The rule fires at
    ``s`` when ``met`` holds there and at the latest judged step at or before ``s - k * num_steps`` for every
    ``k < patience``.

    The windows' medians follow the loss, not one batch's noise; the comparison with the start keeps a
    converged run (its loss flat, but far below where it began) from firing; ``patience`` keeps one unlucky
    window from firing. A rising loss meets the condition too (it did not decrease).

    **A finished run** (its end was seen before the step was judged: a run evaluated after training) is judged
    knowing how its loss went on: a stall the loss later left -- the median of the run's last window (``w`` computed
    at the last save) at least ``|first| * min_progress_percent / 100`` below ``now`` and below both ``first`` and
    the first save (a loss that blew up within its first steps has a high ``first``; back at its first value it made
    no progress) -- was a plateau, not a fault, and is not reported. Training often starts on one (an LSTM language
    model at the unigram entropy, a deep net near a saddle; Saxe et al. 2014 relate its length to the initial
    weights and the learning rate, nothing a rule can know), and a run that then learned did not fail to decrease.
    Nor is a training loss's stall when the run's last window lies ``p`` below its first save (the model before
    any update) and no higher than ``first``, ``now`` lies within three standard errors of a window's median of that last window (the
    stall is the level the run ended on) and the condition did not hold at every check from half-way through the
    run to its end, as the live criterion holds a stall: a loss that reached its floor within its first few steps
    has a first window of post-learning noise, and on a noisy floor one upward excursion of the window medians
    met the condition at two checks ``patience`` apart (probe 14a F1).
    A loss that was only falling slowly (the "too slowly to matter" test) is judged by that test's own
    yardstick: it is not reported when the run's last window lies ``p / 2`` below ``now`` and ``p`` below
    ``first`` and the first save (a steady learner whose progress is spread evenly over the run meets the pace
    test at half-way; a model at chance level never gets ``p`` below its start). **Live** (a run still training,
    followed), the future is unknown: a stall is reported once the condition has held at every check from half-way
    through the run so far (and at a check at or before half-way), beyond ``patience``: a slow start or an early
    plateau that a finished run would forgive is not reported while it lasts less than half of the run so far
    (a finding may stop the job: ``--stop-training``), and a fault's stall, which lasts to the end, is reported
    at about twice the step where it began. When the followed run ends, a rule that found nothing judges the
    finished run (see the runner).

    **An evaluation set's metric** (a validation loss, XGBoost's ``validation-logloss``; a whole set evaluated
    exactly, with no batch noise) has ``first`` raised to its very first evaluation, or the median of its first 3
    saves, when higher: one that falls fast (boosting at eta 0.3) makes most of its progress within the first
    window, whose median is no untrained reference. **Past its best**: when it came down to a best -- the lowest
    median of ``w`` steps, below ``first`` by more than three times the round-to-round noise of such a median -- and
    now lies below ``first`` but above that best by more than a quarter of the gain (``now - best > 0.25 * (first -
    best)``) and by more than three times the noise (the round-to-round noise, and at least the counting noise
    ``sqrt(now * resolution)`` of a metric that counts, an error rate on a set of n rows moving by 1/n), it fires
    (not decreasing over the second half), and the finding says so: the best value and the step its window ends,
    the rise since, and that early stopping there would have kept the best model (overtraining; boosting past the
    best round). The test is the same whatever share of ``first`` the metric gained: a booster on a prior model's
    margin (``base_margin``) starts near its floor, and a hard task's error rate cannot fall 10% (a rise of 7 rows
    of 500 fired: probe 15c F1). Otherwise such a metric fires as "did not decrease" when its progress is below
    ``p`` beyond that noise (a 3% gain, flat to the end: labels misaligned with their rows), except a metric whose
    value carries a constant offset (``*-nloglik``: a Tweedie, Cox or AFT likelihood; its progress is no share of
    its value). On a finished run, neither is reported when the run's last window lies within three times that
    noise of the best (the last model is the best one: early stopping would have kept nothing), a stall only when
    the last window also lies ``p / 2`` below ``now`` (the metric left it). A drift of a few percent of the gain is
    the noise floor of a small evaluation set, a quarter of it is boosting past the best round. **A short finished
    run** whose last save
    is the first check that can be judged (a 40-round booster: no check ``num_steps`` earlier) is judged there on
    the checks there are for such a metric; a training loss is not confirmed without its patience checks, and
    the step is then not judged (said, not "no issues").

    **A linear booster** (XGBoost's gblinear, its run recorded by the XGBoost hook): its first round is a whole
    pass of coordinate descent, most of the way to the best linear fit, so its first evaluation is no untrained
    reference. Its progress is measured from the best constant prediction on the labels the hook saved with the
    metric's evaluation set (``_meta.xgboost_labels_from``: the labels' standard deviation for ``rmse``, their
    entropy for ``logloss``; see :func:`~smdebug.rules.generic.booster_generalisation.best_constant_metric`), when
    higher than ``first``: a booster that converged within its first rounds has made its progress, whatever eta
    and the number of rounds (probe 16b F1); one stuck
    at the constant model, or fitting labels it cannot learn, is no lower than that and is judged as before. A
    rise past its best is still measured against the gain since the first evaluation (the rounds early stopping
    chooses among).

    **A validation loss first evaluated after the model had learned** (a run whose training loss, TRAIN mode,
    had already fallen by ``min_progress_percent`` by the global step of the validation loss's first save: an
    epoch before the first validation pass, as Keras's ``val_loss``): its first value is no untrained reference,
    so it is not held to progress from there; it fires only once it is back at or above its first evaluation
    (all it had gained lost). A rise past an early best below that is Overfit's to judge, with Overfit's
    tolerance (a noisy regression at its floor after a few epochs, then 8% up, Overfit quiet, fired).

    **Workers** (a data-parallel run whose workers all save the loss): each worker's training loss is judged as a
    curve of its own (see :class:`~smdebug.rules.generic.curves.LossCurveRule`). The shared model learns from
    the averaged gradients, so a worker whose own loss does not decrease while the others' fall is training on
    data that teaches nothing -- a shard of zeros or of one repeated row, labels shuffled or misaligned with their
    inputs -- and the rule names it.

    :param collection_names: collections holding losses (list or comma-separated string). Default None.
    :param tensor_regex: regexes of loss tensor names (list or comma-separated string). Default None.
    :param use_losses_collection: also inspect the ``losses`` collection. Default ``"True"``.
    :param num_steps: the shortest window, and the spacing of the patience checks, in steps (>= 1).
        Default ``"10"``.
    :param diff_percent: the tolerance ``tol`` above, in percent (0: the loss must be lower than half-way;
        > 0 tolerates a rise of less than ``tol`` percent; < 0 demands a decrease of more than ``|tol|``
        percent). Default ``"0.0"``.
    :param increase_threshold_percent: newer name of the same tolerance; used instead of ``diff_percent`` when
        given. Giving both with different values is an error (a ``diff_percent`` of 0 never conflicts).
    :param mode: ``"TRAIN"``, ``"EVAL"``, ``"PREDICT"`` or ``"GLOBAL"``; None/empty for automatic.
    :param min_progress_percent: a loss that fell by at least this percentage of its initial value is making
        progress and never "not decreasing" (>= 0). Default ``"10"``.
    :param patience: consecutive checks, ``num_steps`` apart, that must meet the condition (>= 1). Default
        ``"2"``.
    """

    needs = "saves of a loss over at least 4 * num_steps steps, at least 3 saves per window"

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, use_losses_collection="True",
                 num_steps="10", diff_percent="0.0", increase_threshold_percent=None, mode=None,
                 min_progress_percent="10", patience="2", other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, use_losses_collection, mode,
                         other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.num_steps = as_int(name, "num_steps", num_steps, minimum=1)
        self.diff_percent = _finite(name, "diff_percent", as_float(name, "diff_percent", diff_percent))
        self.increase_threshold_percent = as_float(name, "increase_threshold_percent", increase_threshold_percent,
                                                   allow_none=True)
        if self.increase_threshold_percent is not None:
            _finite(name, "increase_threshold_percent", self.increase_threshold_percent)
            if self.diff_percent != 0 and self.diff_percent != self.increase_threshold_percent:
                raise SMDebugValueError(
                    f"{name}: diff_percent ({self.diff_percent:g}) and increase_threshold_percent "
                    f"({self.increase_threshold_percent:g}) are two names of one tolerance; give one of them")
        self.tolerance_percent = (self.increase_threshold_percent if self.increase_threshold_percent is not None
                                  else self.diff_percent)
        self.min_progress_percent = in_range(name, "min_progress_percent",
                                             as_float(name, "min_progress_percent", min_progress_percent), 0)
        self.patience = as_int(name, "patience", patience, minimum=1)
        #: per (loss, mode, worker): judged steps and whether the condition was met there
        self._history: Dict[Tuple[str, ModeKeys, Optional[str]], Tuple[List[int], List[bool]]] = {}
        #: per (loss, mode, worker): the index in its history of the last check where the condition was not met
        #: (-1: none), so that a live run's "held since half-way" is not a scan of half the history at every step
        self._last_unmet: Dict[Tuple[str, ModeKeys, Optional[str]], int] = {}
        #: per (loss, mode, worker), on a finished run: the median of its last window (None: too few saves to tell)
        self._final: Dict[Tuple[str, ModeKeys, Optional[str]], Optional[float]] = {}
        #: per (loss, mode, worker), on a finished run: whether a training loss's stall held to its end (see
        #: _stalled_to_end)
        self._to_end: Dict[Tuple[str, ModeKeys, Optional[str]], bool] = {}
        #: per worker: whether a training loss had made progress before the first evaluation
        self._trained_first: Dict[Optional[str], bool] = {}
        #: per evaluation metric of a linear booster: where the model stood before its first round (see
        #: _booster_start; None: not known)
        self._start: Dict[str, Optional[float]] = {}
        #: per evaluation metric of a booster, once the run has ended: the metric of the best constant prediction
        #: on the set's saved labels (see held_out_constant; None: not known)
        self._constants: Dict[str, Optional[float]] = {}

    def _met(self, curve: Curve, s: int, label: str, paced: bool, trained_before: bool = False,
             capped: bool = False, measurable: bool = True, start: Optional[float] = None,
             name: Optional[str] = None) -> Optional[_Checked]:
        f = curve.first()
        length = s - f + 1
        span, w = self._widths(curve, s)
        m = f + length // 2 - 1
        if m - w < f + span - 1:
            return None
        # (windows kept as they move: medians of a quarter of the run, copied and sorted at every step, made
        # judging a run of n steps cost n^2)
        now = curve.median_between(s - w, s, "now")
        then = curve.median_between(m - w, m, "then")
        first = curve.median_between(f - 1, f + span - 1, "first")
        if now is None or then is None or first is None:
            return None
        if capped and np.isfinite(curve.values[0]):
            # (see _stalled_to_end) no higher than the first save: a loss that blew up within its first steps
            # and came back to where it began made no progress
            first = min(first, float(curve.values[0]))
        if not paced:
            # an evaluation set's metric of a model that converges within the first window (boosting at eta 0.3
            # reaches its plateau in a few rounds; a small validation set's error rate then sits on a step of
            # 1/n) has that plateau as the window's median: its first saves are the untrained reference (an
            # XGBoost wine classifier's validation-merror .125 -> .083 by round 4, flat after, fired "did not
            # decrease")
            # And its very first evaluation when higher: an evaluation set's metric has no batch noise to take a
            # median against (a whole set, evaluated exactly), and one that falls fast loses most of its progress
            # within its first saves (a boosted regression's test-rmse 61.2, 57.7, 54.9: the median of those is no
            # untrained reference; a +0.8% drift at its noise floor fired "rose past its best": probe 11 F1)
            early = robust_median(np.asarray(curve.values[:MIN_SAVES]))
            first = max(v for v in (first, early, float(curve.values[0])) if v is not None and np.isfinite(v))
        # Progress is measured from ``origin``: for a booster whose first round is a whole fit (gblinear), where it
        # stood before that round, the metric of the best constant prediction on the set's labels (see
        # _booster_start); a booster stuck there, or on labels it cannot learn, is no lower than that and
        # is judged as before. A rise past its best is still measured against the gain since its first
        # evaluation (``first``): the rounds early stopping chooses among (a gblinear classifier's validation
        # logloss .09 at round 15, .21 at round 200, is overtraining whatever round 0 had learned)
        constant = not paced and start is not None and start > first
        origin = start if constant else first
        tol = self.tolerance_percent
        progress = abs(origin) * self.min_progress_percent / 100
        # barely decreasing: at its pace over the second half, the loss would need longer than the whole run so
        # far to make min_progress_percent of progress (a model at chance level memorising a few labels creeps
        # down this way, and "it went down a little" is no progress a user would call decreasing)
        # (a positive tolerance says a loss may even rise a little: then it is not demanded either)
        barely = then - now < progress / 2 and progress > 0 and tol <= 0 and paced
        met = (now >= then + abs(then) * tol / 100 or barely) and now >= origin - progress
        if met and now == 0 and min(curve.values) >= 0:
            met = False  # a loss that cannot go below 0 and sits at 0 (an error rate of 0) has converged
        if met and trained_before and now < curve.values[0]:
            # a validation loss first evaluated after the model had learned (the training loss had made
            # min_progress_percent of progress by then): its first evaluation is no untrained reference, so its
            # "progress" from there says nothing about whether the model learned, and a rise past an early best
            # while it is still below that first evaluation is Overfit's to judge, with Overfit's tolerance
            # (a tabular regression at its noise floor after one epoch, early stopping on; probe 9 F2)
            met = False
        rising = now >= then + abs(then) * tol / 100
        # (the best window is a scan of every save so far: looked for only where it is used, by the give-back
        # test below or the past-best words of a met condition)
        wanted = not paced and (met or (not trained_before and rising))
        best = self._best(curve, s, w, f) if wanted else (None, None)
        # (best, noise of a window's median, whether the metric gave back a real share of its gain since its best)
        past: Optional[Tuple[float, float, bool]] = None
        if not trained_before and best[0] is not None and best[1] <= s - w:
            # (a continued booster's first round is no untrained model: its gain is measured from the constant
            # prediction, as the same model trained from scratch would be -- probe 18a F2)
            since = origin if constant and continued_rounds(self.base_trial) else first
            gave_back = self._gave_back(curve, s, w, best[0], since, now)
            if gave_back is not None:
                past = (best[0], gave_back[1], rising and gave_back[0])
        if met and not paced and not trained_before and now < origin and (
                not measurable or origin - now > progress - 3 * self._eval_noise(curve, s, w, now)):
            # "progress below min_progress_percent" is claimed of an evaluation set's metric only beyond its noise
            # (an error rate on 500 rows .382 -> .344 is 7.6 +- 2.6 points of progress, no evidence of less than
            # 10) and of a metric whose value measures progress as a share of itself (see _OFFSET_METRIC)
            met = False
        if past is not None and past[2]:
            met = True  # a rise past the best window beyond noise, by a real share of the gain: overtraining
        change = (now - then) / abs(then) * 100 if then else 0.0
        stalled = now >= then + abs(then) * tol / 100
        verb = "did not decrease" if stalled else "barely decreased"
        pace = "" if stalled else f"; at this pace min_progress_percent takes longer than the {length} steps so far"
        ratio = now / origin if origin else float("inf")
        initial = "the best constant prediction's" if constant else "the initial"
        detail = (f"{verb} over the second half of the run so far ({label}): median {then:.4g} over the {w} steps "
                  f"to step {m} -> {now:.4g} over the {w} steps to step {s} ({change:+.3g}%; tolerance {tol:g}%"
                  f"{pace}), {ratio:.3g}x {initial} {origin:.4g} (progress below min_progress_percent "
                  f"{self.min_progress_percent:g}%)")
        # the words of a rise past its best only for a real give-back, or a metric back at its start: a metric that
        # made little progress and wanders at its plateau did not "rise past its best" (probe 15c F7)
        if met and not paced and best[0] is not None and ((past is not None and past[2]) or now >= first):
            words = self._past_best(curve, s, w, best, first, then, m, now, change, tol, name)
            if words is not None:
                detail = words
                past = (best[0], self._eval_noise(curve, s, w, now), True)
        if past is not None and not (met and past[2]):
            past = (past[0], past[1], False)
        return met, detail, now, first, stalled, past

    def _widths(self, curve: Curve, s: int) -> Tuple[int, int]:
        """(span, w) at ``s``, a step of ``curve`` read up to there: the shortest window and the window of ``now``
        and ``then`` (see the class docstring)."""
        f = curve.first()
        # the shortest window: num_steps steps, widened to hold MIN_SAVES saves of a loss saved sparsely (every
        # 10 steps: a window of 10 steps holds one save, and the rule judged nothing on a run that has the data)
        spacing = (s - f) / (len(curve) - 1) if len(curve) > 1 else 1.0
        span = max(self.num_steps, int(np.ceil(MIN_SAVES * spacing)))
        return span, max(span, (s - f + 1) // 4)

    @staticmethod
    def _best(curve: Curve, s: int, w: int, f: int) -> Tuple[Optional[float], Optional[int]]:
        """The lowest median of ``w`` steps up to ``s`` and the step where its window ends ((None, None): none)."""
        best, best_step = None, None
        for t in curve.steps:
            if t < f + w - 1 or t > s:
                continue
            value = robust_median(curve.between(t - w, t))
            if value is not None and (best is None or value < best):
                best, best_step = value, t
        return best, best_step

    @staticmethod
    def _window_noise(curve: Curve, s: int, w: int) -> float:
        """The standard error of the median of the window ``(s - w, s]``, from the spread of consecutive saves up
        to ``s``, as Divergence's give-back test measures it."""
        values = np.asarray([v for t, v in zip(curve.steps, curve.values) if t <= s], dtype=np.float64)
        if len(values) < 2:
            return 0.0
        saves = max(1, len(curve.between(s - w, s)))
        return 1.4826 * 1.2533 * float(np.median(np.abs(np.diff(values)))) / np.sqrt(saves)

    def _gave_back(self, curve: Curve, s: int, w: int, best: float, first: float,
                   now: float) -> Optional[Tuple[bool, float]]:
        """For an evaluation set's metric that came down beyond its round-to-round noise to a best window (ended
        before the current one) and lies below its start now: (whether it rose past that best by enough to be
        overtraining, the noise of the rise). None for a metric that never came down, or came back to where it
        began (judged as not decreasing).

        One test whatever the share of its start the metric gained: the rise must be beyond noise and a real share
        of the gain (``GIVE_BACK``). A metric that made under min_progress_percent of progress was held to "any
        rise" instead, and those are healthy runs' curves: a booster on top of a strong prior (``base_margin``)
        starts near its floor, a ``*-nloglik`` of tweedie, cox or aft carries a large constant offset, and a hard
        task's error rate cannot fall 10% (7 rows of 500 fired "rose past its best": probe 15c F1)."""
        gain = first - best
        if not (gain > 3 * self._window_noise(curve, s, w) and now < first):
            return None
        noise = self._eval_noise(curve, s, w, now)
        return now - best > max(3 * noise, GIVE_BACK * gain), noise

    def _eval_noise(self, curve: Curve, s: int, w: int, now: float) -> float:
        """The noise of a window's median of an evaluation set's metric at ``s``: its round-to-round spread
        (_window_noise) and, for a metric that counts (an error rate on a set of n rows moves by 1/n), at least
        the counting noise of the set (see _counting_noise): the curve of a fixed set can be flat between steps of
        a few rows, and a rise of 7 rows of 500 is that set's sampling noise, not a worse model."""
        values = np.asarray([v for t, v in zip(curve.steps, curve.values) if t <= s], dtype=np.float64)
        return max(self._window_noise(curve, s, w), _counting_noise(values, now))

    def _constant(self, name: str) -> Optional[float]:
        """The metric of the best constant prediction on the labels of ``name``'s evaluation set (a booster's), kept
        once the run has ended (a run followed live may save its labels later)."""
        if name in self._constants:
            return self._constants[name]
        value = held_out_constant(self.base_trial, name)
        if training_ended(self.base_trial):
            self._constants[name] = value
        return value

    def _past_best(self, curve: Curve, s: int, w: int, best_at: Tuple[float, int], first: float, then: float, m: int,
                   now: float, change: float, tol: float, name: Optional[str] = None) -> Optional[str]:
        """For an evaluation-set metric (a validation loss) that came down and then rose again, the finding in
        the user's terms: it rose from its best (the lowest median of ``w`` steps, and the step where that window
        ends) to ``now`` -- training went on past its best model (overtraining; XGBoost: boosting past the best
        round), which early stopping prevents. "Did not decrease ... progress below min_progress_percent" read as
        a model that never learned. None when the metric never came down beyond its noise (nothing it
        learned to lose: the plain wording stands) or its best is the current window."""
        best, best_step = best_at
        if best_step > s - w:
            return None
        if not (first - best > 3 * self._window_noise(curve, s, w) and now - best > 3 * self._eval_noise(
                curve, s, w, now)):
            return None
        rise = (now - best) / abs(best) * 100 if best else float("inf")
        booster = booster_params(self.base_trial)
        gained = (first - best) / abs(first)
        said = (f"rose past its best: median {best:.4g} at its best (the {w} steps to step {best_step}) -> {now:.4g} "
                f"over the {w} steps to step {s} ({rise:+.3g}%), no lower over the second half of the run so far "
                f"({then:.4g} to step {m}, {change:+.3g}%; tolerance {tol:g}%): ")
        constant = self._constant(name) if booster and name else None
        if constant and (constant - best) / abs(constant) * 100 < self.min_progress_percent:
            # A best barely below what predicting one constant scores on the same rows is no model worth keeping:
            # the booster hardly learned and then lost even that (eta=2, probe 18a W2), which "overtraining ...
            # early stopping would have kept" hid. (Against the constant, not the first round: a booster on a
            # strong prior, base_margin, starts near its floor and may overtrain from there.)
            beat = (constant - best) / abs(constant)
            return said + (f"the model barely learned: at its best {beat:.1%} below the best constant prediction's "
                           f"{constant:.4g} on these rows (min_progress_percent {self.min_progress_percent:g}%), "
                           f"and it lost even that: a learning rate (eta) too high, or features that do not "
                           f"predict the label?")
        return said + (f"training went on past its best model (overtraining{'; boosting past the best round' if booster else ''}), "
                       f"which early stopping at step {best_step} would have kept; at its best {gained:.1%} below "
                       f"the initial {first:.4g} (min_progress_percent {self.min_progress_percent:g}%)")

    def _trained_before_evaluation(self, curve: Curve, mode: ModeKeys) -> bool:
        """Whether a training loss of the run (TRAIN mode) had already fallen by min_progress_percent of its
        first saves by the global step of the first save of ``curve``, an evaluation curve (a validation loss,
        followed in EVAL or GLOBAL mode): an epoch of training before the first validation pass, as Keras and
        most loops do. False for a run without TRAIN-mode losses (XGBoost's evaluation sets)."""
        if curve.worker not in self._trained_first:
            self._trained_first[curve.worker] = False
            at = None
            if curve.steps:
                at = curve.steps[0] if mode == ModeKeys.GLOBAL else self.base_trial.global_step(mode, curve.steps[0])
            for name in self._losses.names() if at is not None else []:
                values = [v for v in (self._saved.mean(name, t, ModeKeys.TRAIN, curve.worker)
                                      for t in self._saved.steps(name, ModeKeys.TRAIN, curve.worker)
                                      if (self.base_trial.global_step(ModeKeys.TRAIN, t) or 0) <= at)
                          if v is not None and np.isfinite(v)]
                if len(values) >= 2 * MIN_SAVES:
                    start, then = float(np.median(values[:MIN_SAVES])), float(np.median(values[-MIN_SAVES:]))
                    if start - then >= abs(start) * self.min_progress_percent / 100:
                        self._trained_first[curve.worker] = True
                        break
        return self._trained_first[curve.worker]

    def _left_later(self, name: str, mode: ModeKeys, curve: Curve, now: float, first: float, stalled: bool) -> bool:
        """On a finished run: whether the loss's last window lies clearly below ``now`` and the start (the stall
        was left, and the run made progress). A loss that only went down slowly (``stalled`` False: the "barely"
        test) left it once it went on falling at the yardstick that test used (``p / 2`` more) and the run as
        a whole made ``p`` of progress: a steady learner whose progress is spread over the whole run was
        asked for a second full ``p`` after the judged step (a two-tower recommender, down 22% at an even pace,
        fired at half-way and missed that by 0.07%; probe 9 F1), while a model at chance level that creeps down
        by memorising never reaches ``p`` below its start."""
        key = (name, mode, curve.worker)
        if key not in self._final:
            steps = self._saved.steps(name, mode, curve.worker)
            self._final[key] = None
            if steps:
                f, last = steps[0], steps[-1]
                spacing = (last - f) / (len(steps) - 1) if len(steps) > 1 else 1.0
                span = max(self.num_steps, int(np.ceil(MIN_SAVES * spacing)))
                w = max(span, (last - f + 1) // 4)
                calls = self._calls.get(name, [name])
                tail = []
                for t in steps[bisect.bisect_right(steps, last - w):]:
                    parts = [v for v in (self._saved.mean(n, t, mode, curve.worker) for n in calls) if v is not None]
                    if parts:
                        tail.append(1.0 - float(np.mean(parts)) if curve.inverted else float(np.mean(parts)))
                tail = np.asarray(tail)
                self._final[key] = robust_median(tail)
        end = self._final[key]
        if end is None:
            return False
        p = abs(first) * self.min_progress_percent / 100
        if not stalled:
            return end < min(first, curve.values[0]) - p and end < now - p / 2
        return end < min(now, first, curve.values[0]) - p

    def _ended_near_best(self, key: Tuple[str, ModeKeys, Optional[str]], past: Tuple[float, float, bool], now: float,
                         first: float) -> bool:
        """On a finished run (after _left_later read its last window): whether an evaluation set's metric ended at
        its best, within three times the noise of a window's median -- the last model is as good as the best one.
        A rise past its best (``past[2]``) is then no overtraining, and "early stopping at step N would have kept
        [the best model]" would be wrong advice; a stall with little progress (``past[2]`` False) is one the metric
        later left, when it also fell ``p / 2`` below it (the yardstick of _left_later for a slow learner): a
        booster on a strong prior (``base_margin``) flat for a while, then down to its best in its last rounds
        (probe 15c F1). A metric that wanders at its plateau to the end, near its early best, left nothing."""
        end = self._final.get(key)
        best, noise, rose = past
        if end is None or end > best + 3 * noise:
            return False
        return rose or end < now - abs(first) * self.min_progress_percent / 100 / 2

    def _learned_at_start(self, name: str, mode: ModeKeys, curve: Curve, s: int, now: float, first: float) -> bool:
        """On a finished run: whether the run's last window lies ``p`` below the loss's first save (the model
        before any update, in a run saved from its start) and ``now``, at ``s``, lies on the level the run ended
        on, within three standard errors of its window's median: the model learned, though ``first``, the median
        of the first window, may not show it -- a loss that reaches its floor within a few steps has a first
        window of post-learning saves -- and the stall at ``s`` is that floor (see _stalled_to_end). A loss
        still well above where it ended was still moving at ``s`` (a model at chance level creeping down by
        memorising, after falling from the inflated loss of its first steps), and is judged as before."""
        end = self._final.get((name, mode, curve.worker))  # (read by _left_later)
        p = abs(first) * self.min_progress_percent / 100
        if end is None or not np.isfinite(curve.values[0]) or end >= float(curve.values[0]) - p:
            return False
        if end > first:
            # ended above its first window: the first save was high by its noise (a heavy-ball SGD whose loss
            # swings from its first step, first save 1.33 against a first window of 0.69, ended at 1.0): no
            # learning its first window could hide
            return False
        return now - end <= 3 * self._window_noise(curve, s, self._widths(curve, s)[1])

    def _stalled_to_end(self, name: str, mode: ModeKeys, curve: Curve, label: str) -> bool:
        """On a finished run: whether a training loss's stall held to the run's end as the live criterion holds
        one: the condition met at every check from half-way through the run to its last one (every check, in a
        run too short to have one at or before half-way), its start taken as no higher than the first save (see
        _left_later). Asked of a loss whose last window lies ``p`` below its first save (_learned_at_start): on a
        noisy plateau the model reached within its first few steps (a Poisson regression at its floor after 3
        steps, per-batch spread 27% of the loss), the median of the first window is itself post-learning noise,
        and one upward excursion of the window medians, seen at two checks ``patience`` apart (two looks at
        nearly the same windows, a quarter of the run each), reported a stall the live follower, watching the same
        run, never saw (probe 14a F1, F1b: 1 seed in 4). A fault's stall lasts to the end and holds there; a
        stuck loss whose first save was high by its noise alone is still reported when it does. Judged once per
        curve, over a second reading of the whole run."""
        key = (name, mode, curve.worker)
        if key not in self._to_end:
            whole = Curve(inverted=curve.inverted, worker=curve.worker)
            calls = self._calls.get(name, [name])
            steps: List[int] = []
            last_unmet = -1
            for t in self._saved.steps(name, mode, curve.worker):
                whole.extend(self._saved, calls, mode, t)
                if not whole.steps or whole.steps[-1] != t:
                    continue  # only reductions saved at t
                result = self._met(whole, t, label, True, capped=True)
                if result is None:
                    continue
                if not result[0]:
                    last_unmet = len(steps)
                steps.append(t)
            held = bool(steps) and last_unmet < len(steps) - 1 and (
                last_unmet < 0 or self._held_since_half_way(steps, last_unmet, whole.first(), steps[-1]))
            self._to_end[key] = held
        return self._to_end[key]

    @staticmethod
    def _held_since_half_way(steps: List[int], last_unmet: int, f: int, s: int) -> bool:
        """Live (the run's end unknown): whether the condition held at every check from half-way through the run so
        far to ``s``, and at a check at or before half-way. Training often starts on a plateau or creeps at first
        (a slow start, a warm-up, a saddle), and a finished run forgives a stall its loss later left; a run still
        training cannot be forgiven later, and a finding may stop it (--stop-training). A fixed patience made the
        first judgeable checks (step ~50) decide: healthy runs that stalled for 4-29 steps were reported, and one
        was stopped (probe 12c F1); the faults' stalls last from where they begin to the end, so they hold over
        half of any run so far, reported later the longer the run had been learning."""
        half = f + (s - f) // 2
        i = bisect.bisect_right(steps, half) - 1
        return i >= 0 and last_unmet < i  # (held at every check from i on)

    def judge(self, name, mode, curve, s):
        label = mode_label(mode).replace("step", "steps")
        paced = self.training_curve(name, mode)
        if not paced and not curve.inverted and name not in self._start:
            start = _booster_start(self.base_trial, name)
            # (kept once known, or known not to come: a run followed live may save its labels later)
            if start is not None or training_ended(self.base_trial) or not _starts_trained(self.base_trial):
                self._start[name] = start
        result = self._met(curve, s, label, paced,
                           trained_before=not paced and self._trained_before_evaluation(curve, mode),
                           measurable=paced or not _OFFSET_METRIC.search(name),
                           start=None if paced or curve.inverted else self._start.get(name), name=name)
        if result is None:
            return False, None
        met, detail, now, first, stalled, past = result
        key = (name, mode, curve.worker)
        steps, mets = self._history.setdefault(key, ([], []))
        steps.append(s)
        mets.append(met)
        if not met:
            self._last_unmet[key] = len(mets) - 1
            return True, None
        for k in range(1, self.patience):
            i = bisect.bisect_right(steps, s - k * self.num_steps) - 1
            if i < 0:
                # no judged check that far back: the run is too short for the patience chain so far. At the last
                # save of a finished run, an evaluation set's metric (no batch noise: the unlucky window patience
                # guards against is a training loss's) is judged on the checks there are: a 40-round booster
                # whose validation logloss went .63 -> 5.4 was "no issues" (probe 11 M1). Otherwise the stall is
                # not confirmed yet, and not judged: "no issues" would claim it was.
                if not paced and training_ended(self.base_trial) and s == self._saved.steps(
                        name, mode, curve.worker)[-1]:
                    break
                self.not_evaluated(f"{self.shown(name, curve)}: met at {label} {s}, too early in the run to confirm "
                                   f"at patience={self.patience} checks num_steps={self.num_steps} apart")
                return False, None
            if not mets[i]:
                return True, None
        if training_ended(self.base_trial):
            if self._left_later(name, mode, curve, now, first, stalled):
                return True, None  # a plateau the finished run's loss later left
            if past is not None and self._ended_near_best(key, past, now, first):
                return True, None  # its last model is its best one (within noise): early stopping would keep nothing
            if paced and self._learned_at_start(name, mode, curve, s, now, first) and not self._stalled_to_end(
                    name, mode, curve, label):
                return True, None  # a noisy floor reached within the first window: no stall the live criterion sees
        elif not self._held_since_half_way(steps, self._last_unmet.get(key, -1), curve.first(), s):
            return True, None  # live: not yet a stall that lasted half of the run so far
        return True, (f"{self.shown(name, curve)} {detail}"
                      + (f"; met at {self.patience} checks {self.num_steps} steps apart" if self.patience > 1 else ""))


# ----------------------------------------------------------------------------------------------------------
# OscillatingLoss
# ----------------------------------------------------------------------------------------------------------
#: OscillatingLoss: saves per block by default
OSCILLATION_WINDOW = 10
#: and the fewest a block holds when a sparsely saved loss has fewer saves than default blocks need: below five
#: the spread within a block (the noise the threshold is measured by) rests on too few values to be trusted
OSCILLATION_MIN_WINDOW = 5


class OscillatingLoss(LossCurveRule):
    """Fires when a loss swings up and down instead of converging (a learning rate or momentum too high: the
    optimiser overshoots back and forth across a valley).

    At a saved step ``s`` of the loss (judged every ``window`` saves), over the saves of the second half of
    the run so far (steps after ``f + (s - f + 1) // 2 - 1``, ``f`` the first saved step), at most its last
    ``2 * (min_swings + 1)`` blocks::

        curve     = means of consecutive blocks of ``window`` saves (the last 2 * (min_swings + 1) of them)
        initial   = median of the loss's first ``window`` saves
        noise     = standard error of a block's mean: sqrt(mean over those blocks of the variance of a block's
                    saves) / sqrt(window)
        threshold = max(swing_percent / 100 * |initial|, 4 * noise)
        swings    = number of moves of ``curve`` larger than ``threshold``, each in the opposite direction of
                    the one before (a zigzag count: a rise then a fall then a rise...)

    and the rule fires when ``swings >= min_swings``. The threshold is a share of where the loss started (the scale
    of what training moves), so the small ups and downs of a converged loss never count, and it is at least four
    standard errors of a block's mean, so the noise of the batches never counts either: a minibatch loss can be far
    noisier than its trend moves -- mixup draws one mixing weight per batch and its loss jumps with it, a batch of
    one row or a few, a noise-robust loss on mislabelled data, a run with an odd batch now and then -- and the
    blocks of such a loss zigzag by chance (simulated with Gaussian, Student-t, gamma, two-valued and spiky noise
    around a converging curve: at four standard errors no four-move zigzag in 300 runs of each; by the share alone,
    up to 86% of them). An optimiser that overshoots moves whole blocks, far beyond their noise. Only the second
    half counts, so the turbulent first steps of a healthy run do not. The swings must come within a stretch of a
    fixed number of blocks: an optimiser that overshoots swings again and again, while a long noisy run sees a few
    large excursions of its blocks by chance, and the more blocks one looks at, the more of them -- a fixed stretch
    keeps the chance of a false alarm the same for a run of 200 steps and one of 20,000. A loss that is merely spiky
    -- an unstable optimiser throwing it far up at odd steps -- is noise at this scale; Divergence and
    LossNotDecreasing judge where it goes.

    **Workers** (a data-parallel run whose workers all save the loss): each worker's curve is judged on its own
    (see :class:`~smdebug.rules.generic.curves.LossCurveRule`); a worker's loss is that of its own, smaller,
    minibatches, and the threshold of four standard errors is measured on that curve's own noise.

    **Running means** (Keras's training logs: the mean over the epoch so far, recorded as such in the run): each
    save is read as the mean of the batches since the previous one, each batch's own loss when every step was
    saved. Read as saved, a running mean is smooth within an epoch (its blocks' spread far below the loss's noise)
    and jumps as each epoch begins, and a heavy-tailed loss's jumps counted as swings on healthy runs.

    **Sparse saves**: with the default ``window``, a loss saved fewer than ``2 * 10 * (min_swings + 1)`` times
    (a ``SaveConfig`` every 7 steps over a 600-step run) is judged in blocks of fewer saves, as many as fit the
    saves (``saves // (2 * (min_swings + 1))``), down to :data:`OSCILLATION_MIN_WINDOW`: the threshold of four
    standard errors grows as the blocks shrink, so the noise of a smaller block no more counts than that of a
    larger one (simulated as above with blocks of 3, 4, 5 and 10 saves: at most one four-move zigzag in 2,000
    runs of any noise). A ``window`` given explicitly is kept as given.

    :param window: saves per block (>= 1). Default ``"10"``, fewer for a loss saved sparsely (see above).
    :param swing_percent: the smallest move that counts, as a percentage of the initial loss (> 0). Default
        ``"20"``.
    :param min_swings: moves needed (>= 2; 4 = two rises and two falls). Default ``"4"``.
    Plus the loss selection parameters of LossNotDecreasing (``collection_names``, ``tensor_regex``,
    ``use_losses_collection``, ``mode``).
    """

    needs = "at least 2 * window * (min_swings + 1) saves of a loss"
    #: the noise is measured within blocks of saves, each taken as a batch of its own: a running mean, smooth
    #: within an epoch and jumping as the next begins, has far less spread than its loss and swings at every epoch
    steps_from_running_means = True

    def __init__(self, base_trial, window=None, swing_percent="20", min_swings="4", collection_names=None,
                 tensor_regex=None, use_losses_collection="True", mode=None, other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, use_losses_collection, mode,
                         other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        #: whether the block size may shrink to fit a sparsely saved loss (only the default one does)
        self.fit_window = window is None
        self.window = as_int(name, "window", OSCILLATION_WINDOW if window is None else window, minimum=1)
        self.swing_percent = as_float(name, "swing_percent", swing_percent)
        if not (self.swing_percent > 0 and np.isfinite(self.swing_percent)):
            raise SMDebugValueError(f"{name}: swing_percent must be a positive number, got {swing_percent!r}")
        self.min_swings = as_int(name, "min_swings", min_swings, minimum=2)

    def _smallest_window(self) -> int:
        return min(self.window, OSCILLATION_MIN_WINDOW) if self.fit_window else self.window

    def _window_for(self, saves: int) -> int:
        """The block size for a curve of ``saves`` saves: ``window``, or with the default one as many saves as
        fit (see the docstring), never under :data:`OSCILLATION_MIN_WINDOW`."""
        if not self.fit_window:
            return self.window
        return max(self._smallest_window(), min(self.window, saves // (2 * (self.min_swings + 1))))

    def needs_text(self) -> str:
        # the number, not the formula (a 60-step run read "needs at least 2 * window * (min_swings + 1) saves":
        # probe 14a F6, F7), and how many the run has, "so far" only while it trains
        window = self._smallest_window()
        return (f"at least {2 * window * (self.min_swings + 1)} saves of a loss (window {window}, "
                f"min_swings {self.min_swings}){self.saves_text()}")

    def judge(self, name, mode, curve, s):
        n = len(curve)
        window = self._window_for(n)
        if n % window or n < 2 * window * (self.min_swings + 1):
            return False, None
        initial = robust_median(np.asarray(curve.values[:window]), minimum=1)
        f = curve.first()
        half = curve.index_after(f + (s - f + 1) // 2 - 1)
        finite = curve.last_nonfinite is None or curve.last_nonfinite < half  # (every save of the second half)
        if initial is None or not initial or not finite:
            return False, None
        count = (n - half) // window  # the second half's blocks
        if count < self.min_swings + 1:
            return False, None
        # only the latest stretch of blocks is judged (see the docstring): only its saves are read (a mean of every
        # block of the second half, at every tenth save, made judging a run of n saves cost n^2)
        half += max(0, count - 2 * (self.min_swings + 1)) * window
        saves = curve.values[half:half + min(count, 2 * (self.min_swings + 1)) * window]
        blocks = block_means(saves, window)
        share = self.swing_percent / 100 * abs(initial)
        noise = _block_mean_error(saves, window)
        threshold = max(share, 4 * noise)
        swings, anchor, direction, low, high = 0, blocks[0], 0, min(blocks), max(blocks)
        for v in blocks[1:]:
            if direction >= 0 and v < anchor - threshold:
                swings, direction, anchor = swings + 1, -1, v
            elif direction <= 0 and v > anchor + threshold:
                swings, direction, anchor = swings + 1, 1, v
            elif (direction > 0 and v > anchor) or (direction < 0 and v < anchor):
                anchor = v
        if swings >= self.min_swings:
            why = (f"{self.swing_percent:g}% of the initial {initial:.4g}" if threshold == share else
                   f"4 standard errors of a block's mean; {self.swing_percent:g}% of the initial {initial:.4g} is "
                   f"{share:.4g}")
            return True, (f"{self.shown(name, curve)} swings up and down: {swings} moves larger than {threshold:.4g} "
                          f"({why}) between {low:.4g} and {high:.4g}, "
                          f"in means of blocks of {window} saves over {mode_label(mode)}s "
                          f"{curve.steps[half]}-{s} "
                          f"(min_swings {self.min_swings})")
        return True, None


def _block_mean_error(values: List[float], window: int) -> float:
    """The standard error of a block's mean: the root mean square of the blocks' standard deviations (ddof 1)
    over sqrt(window); 0 for blocks of one save."""
    if window < 2 or len(values) < window:
        return 0.0
    blocks = np.asarray(values[:len(values) // window * window], dtype=np.float64).reshape(-1, window)
    return float(np.sqrt(np.mean(blocks.var(axis=1, ddof=1))) / np.sqrt(window))


# ----------------------------------------------------------------------------------------------------------
# SlowConvergence
# ----------------------------------------------------------------------------------------------------------
#: SlowConvergence: the share of a curve's whole progress its last third must still make to count as falling
END_SHARE = 0.1
#: fewest validation passes whose rise changes SlowConvergence's words (see SlowConvergence._validation_rose)
MIN_EVALUATIONS = 4


class SlowConvergence(LossCurveRule):
    """Fires when training ended while the loss was still falling steadily, far from converged: the learning
    rate (or the number of steps) was too small for the budget.

    Judged once, at the last saved step of the loss, when the run has ended (before that, and on a run still
    training, the rule evaluates nothing: whether the budget was too small is known at its end). A run a rule's
    request stopped (``--follow --stop-training``; ``Trial.stopped_on_request``) ended where it was stopped, not
    where its budget ran out: the rule is NotApplicable there, saying so. With ``n`` saves and
    ``w = max(window, n // 10)``::

        initial = median of the first w saves          early = median of the w saves around n / 3
        late    = median of the w saves around 2n / 3   final = median of the last w saves
        scale   = max(|initial|, ln 2 for a classification cross-entropy, else 0)
        noise   = max(1.48 * MAD of the last w saves / sqrt(w), counting noise)
        falling = late - final >= min_decrease_percent / 100 * scale and late - final > 3 * noise
                  and late - final >= 0.1 * (max(first save, initial) - final)
        steady  = initial > early > late and late - final >= deceleration * (initial - early)
        gone    = the share of the way covered: from start = max(first save, initial) to where the curve heads
                  (floor = final - d3^2 / (d2 - d3) when it decelerates, d2 = early - late > d3 = late - final > 0:
                  a loss a + b * r^t drops by a constant ratio from one third to the next; 0 at most for a
                  curve that never went below 0), else to 0 (of max(scale, start))
        slow    = falling and (gone < progress_percent / 100 or steady) and not validation_stopped
                  and not converged_percent / 100 <= gone <= 1

    i.e. the loss is still clearly going down at the end (by a tenth of all it achieved, at least: a metric that
    made its progress in its first saves and then sat on a plateau is not still falling by the hair its plateau
    moves) and either it has covered less than ``progress_percent``
    of its way or it falls as fast at the end as at the start (a healthy run's decrease slows down by far: most of
    it happens early). "As fast at the end" needs a curve that fell in every third: a last third that only
    makes up for a middle third that rose (a noisy validation loss, a bump after an lr restart) is no steady
    decrease. Needs at least ``3 * window`` saves.

    A loss saved at evaluation steps only (Keras's and Lightning's ``val_loss``) is not judged: the budget shows in
    the training loss, and a validation series, saved per batch of a few passes that began after training had run,
    says how far the model generalises, not whether more steps would have trained it further.

    What the rule says is that more steps (or a higher learning rate) would have trained the model further, so
    it stays quiet where they would not have:

    - **a run that starts near its floor** (resumed from a checkpoint, fine-tuning a model that already fits): a
      cross-entropy (the loss's recorded type or its name: CrossEntropy, NLLLoss, BCE, logloss) is measured on
      the scale of an untrained classifier (ln 2 at least), not on where this run began: a drift of 0.001 nats
      below 0.008 is no "still falling";
    - **a validation that stopped improving** (``validation_stopped``): in a run without modes (XGBoost), the
      same metric of the other evaluation sets (``validation-rmse`` for ``train-rmse``) has at least 6
      evaluations and no longer falls by the test above. A boosted ensemble's training metric falls at every
      round for ever, and early stopping ends such runs on purpose;
    - **a counted metric** (an error rate on an evaluation set: its curve repeats values, fewer distinct ones
      than half of its saves): a flat stretch has no spread at all, so the noise is at least the counting noise
      ``sqrt(final * resolution)`` (the Poisson error of the count the final value stands for, the resolution
      the smallest step between its values): a change of a sample or two is no trend.

    **Workers** (a data-parallel run whose workers all save the loss): each worker's curve is judged at its own
    last save (see :class:`~smdebug.rules.generic.curves.LossCurveRule`; a worker whose shard ran out earlier
    ends earlier). Replicas of one model converge alike, so a budget too small usually shows on every worker
    and is said once, naming the others.

    :param window: the smallest window, in saves (>= 2). Default ``"10"``.
    :param progress_percent: share of its way to where it heads (to 0 for a curve that does not decelerate) that a
        converging run covers (0-100). Default ``"50"``.
    :param deceleration: the last third's decrease relative to the first third's below which the curve is
        converging (> 0). Default ``"0.5"``.
    :param min_decrease_percent: the last third's decrease that counts as still falling, as a percentage of the
        initial loss (>= 0). Default ``"2"``.
    :param converged_percent: share of its way (as ``gone``) past which a curve is converged enough, however fast
        its last third still fell (0-100; 100: only a curve at its floor). Default ``"90"``. A curve past where it
        headed (``gone`` above 1: a loss with no floor falling on) is not let off by it.
    Plus the loss selection parameters of LossNotDecreasing.

    A loss that fell through 0 to below minus where it started, faster in its last third than in its first, is
    said as what it is: it has no floor and runs away (a sign-flipped loss, a likelihood that grows without
    bound), it is not converging slowly.
    """

    needs = "a finished run with at least 3 * window saves of a loss (judged once training has ended)"

    def __init__(self, base_trial, window="10", progress_percent="50", deceleration="0.5", min_decrease_percent="2",
                 converged_percent="90", collection_names=None, tensor_regex=None, use_losses_collection="True", mode=None, other_trials=None,
                 action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, use_losses_collection, mode,
                         other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        self.window = as_int(name, "window", window, minimum=2)
        self.progress_percent = in_range(name, "progress_percent", as_float(name, "progress_percent",
                                                                            progress_percent), 0, 100)
        self.deceleration = as_float(name, "deceleration", deceleration)
        if not (self.deceleration > 0 and np.isfinite(self.deceleration)):
            raise SMDebugValueError(f"{name}: deceleration must be a positive number, got {deceleration!r}")
        self.min_decrease_percent = in_range(name, "min_decrease_percent",
                                             as_float(name, "min_decrease_percent", min_decrease_percent), 0)
        self.converged_percent = in_range(name, "converged_percent",
                                          as_float(name, "converged_percent", converged_percent), 0, 100)
        #: per loss: its untrained reference (see _reference)
        self._references: Dict[str, float] = {}

    def invoke_at_step(self, step):
        stopped = self.stopped_early()
        if stopped:
            # the rule judges the run's end only, and this run did not run its course: where its loss would have
            # gone is unknown, and "still falling when training ended" would blame the budget for a stop
            self.not_applicable(f"{stopped}; the rule judges where the loss was when training ran its course, and "
                                "this training was cut short")
            return False
        rounds = continued_rounds(self.base_trial)
        if rounds:
            # how fast the loss fell is judged against its first third, and a continued booster's first third
            # is the tail of a training that began before the run: a healthy continuation read as "still
            # falling ... 0.52x as much in the last third as in the first" (probe 18a F2)
            self.not_applicable(f"the run continues a model trained for {rounds} rounds before (xgb_model): how "
                                "fast its metrics fell at first is not in the run")
            return False
        return super().invoke_at_step(step)

    def judge(self, name, mode, curve, s):
        if not training_ended(self.base_trial) or s != self._saved.steps(name, mode, curve.worker)[-1]:
            return False, None
        if self.evaluation_only(name, mode):
            # the budget shows in the training loss; a validation loss saved per batch of a few passes is a
            # mixture of fixed batches whose spread is no pass-to-pass noise, and it began after training had
            # already run (a converged model's plateau read as "only 23% gone": probe 11 F4)
            return False, None
        values = np.asarray(curve.values)
        n = len(values)
        w = max(self.window, n // 10)
        if n < 3 * self.window or not np.all(np.isfinite(values)):
            return False, None
        thirds = _thirds(values, w)
        initial, early, late, final = thirds
        falling, noise = self._falling(values, thirds, w, self._reference(name))
        if not falling:
            return True, None
        scale = max(abs(initial), self._reference(name))
        d1, d2, d3 = initial - early, early - late, late - final
        # every third fell: a drop at the end that only undoes a rise in the middle is noise, not a trend
        steady = d1 > 0 and d2 > 0 and d3 >= self.deceleration * d1
        # the progress is counted from the first save when it is higher: a metric that falls fast within its first
        # saves (an error rate: 47 misclassified rows, then 9) has the median of its first window far below its start
        start = max(float(values[0]), initial)
        if final >= start:
            # above where it started: no slow convergence but none at all, which LossNotDecreasing and Divergence
            # judge ("still falling ... only -36% of the initial loss is gone" on a loss that went 26 -> 87)
            return True, None
        if final < -abs(start) and d3 > d1 > 0:
            # fell through 0 to below minus its start, faster and faster: a loss with no floor running away (a
            # sign-flipped loss, a likelihood that can grow without bound), not a budget too small. Said as such
            # (probe 13a F7 read "still falling ... 8x as much in the last third" beside Divergence's finding);
            # still a finding: Divergence waits for a 100-fold growth, and a run at -85 from -1.2 has none
            return True, (f"{self.shown(name, curve)} fell through 0 and ran away, faster and faster: {initial:.4g} "
                          f"(first {w} saves) -> {early:.4g} -> {late:.4g} -> {final:.4g} (last {w} saves); a loss "
                          "with no floor is not converging at all (a sign flipped, a likelihood without bound?)")
        if 0 < d3 < d2:
            # decelerating: where the curve is heading, were it to go on as geometrically as its last two thirds
            # fell (a loss a + b * r^t drops by a constant ratio from one third to the next)
            floor = final - d3 * d3 / (d2 - d3)
            heading = f"of the way to {floor:.4g}, where its last two thirds head, was covered"
            if floor < 0 <= float(np.min(values)):
                # a curve that never went below 0 cannot head below it: most losses are bounded by 0
                # (cross-entropies, squared and absolute errors); one that is not (a density's negative
                # log-likelihood on its way below 0) is at worst judged more converged than it is
                floor = 0.0
                heading = "of the way to 0 (its last two thirds head below it) was covered"
            gone = (start - final) / (start - floor) if start > floor else 1.0
        else:
            gone = 1 - final / max(scale, start) if scale else 1.0
            heading = "of the initial loss is gone"
        little_progress = gone < self.progress_percent / 100
        if self.converged_percent / 100 <= gone <= 1:
            # nearly all the way to where it heads: not far from converged, whatever the curve's shape (a loss
            # that sat on a plateau and then fell in the last third, as attention and recurrent models do on
            # algorithmic tasks, falls far faster there than in the first third)
            return True, None
        if not (little_progress or steady):
            return True, None
        stopped = self._validation_stopped(name, mode, curve.worker)
        if stopped:
            return True, None  # training longer would not have helped: its validation stopped improving
        why = (f"only {gone:.0%} {heading}" if little_progress else
               f"it fell {d3 / d1:.2g}x as much in the last third as in the first")
        if little_progress and not (d1 > 0 and d2 > 0) and (start - final) < 0.1 * abs(start):
            # a loss that barely moved, up and down, before a last dip (an untrained classifier's ln 2 all run long
            # under a learning rate far too high: probe 15a F5) is not one that more steps would bring down:
            # "still falling" read as "train longer" where the learning rate or the data are at fault
            return True, (f"{self.shown(name, curve)} barely moved over the run: {initial:.4g} (first {w} saves) -> "
                          f"{early:.4g} -> {late:.4g} -> {final:.4g} (last {w} saves), not falling steadily; only "
                          f"{gone:.0%} {heading}: a loss held near where it started is more often held back (a "
                          f"learning rate far too high or too low, labels that do not match the inputs) than short "
                          f"of training (progress_percent {self.progress_percent:g})")
        said = (f"{self.shown(name, curve)} was still falling when training ended: {initial:.4g} (first {w} "
                f"saves) -> {early:.4g} -> {late:.4g} -> {final:.4g} (last {w} saves); {why} "
                f"(progress_percent {self.progress_percent:g}, deceleration {self.deceleration:g})")
        rose = self._validation_rose(name, mode, curve.worker)
        return True, said + (f"; but {rose}: the training loss fell on what the model memorised, so training longer "
                             f"would not help (labels that do not match the inputs? too few rows for the model?)"
                             if rose else "")

    def _validation_rose(self, name: str, mode: ModeKeys, worker: Optional[str]) -> Optional[str]:
        """For a TRAIN-mode loss also saved in EVAL mode: how its validation loss rose from its first evaluations to
        its last, beyond the evaluations' noise, without ever improving on them (its best among the first two);
        None otherwise. "Still falling when training ended" then invited more epochs on a run whose labels were
        shuffled: the training loss crept down on memorised rows while the validation loss rose at every pass
        (probe 18a W3). A rise is asked, never a fall (see _validation_stopped: a few noisy passes cannot confirm
        one), and it only changes the words: the finding stands."""
        if mode != ModeKeys.TRAIN or not self._saved.steps(name, ModeKeys.EVAL, worker):
            return None
        evaluations = Evaluations(self.base_trial, self._saved, name, worker)
        evaluations.extend(self.base_trial.last_step())
        v = evaluations.val
        if len(v) < MIN_EVALUATIONS or not np.all(np.isfinite(v)):
            return None
        best = min(v)
        if best < min(v[:2]) or v[-1] - best <= max(3 * evaluation_noise(v), 0.01 * abs(best)):
            return None
        return (f"its validation loss never improved: it rose from {v[0]:.4g} at the first evaluation to {v[-1]:.4g} "
                f"at the last ({len(v)} evaluations)")

    def _falling(self, values: np.ndarray, thirds, w: int, reference: float) -> Tuple[bool, float]:
        """Whether the curve still falls at its end, beyond its noise and by min_decrease_percent of its scale."""
        initial, _, late, final = thirds
        tail = values[len(values) - w:]
        noise = 1.4826 * float(np.median(np.abs(tail - final))) / np.sqrt(w)
        noise = max(noise, _counting_noise(values, final))
        drop = late - final
        # a material share of what the run achieved: a metric that made its progress in its first few saves and
        # then sat on a plateau still "falls" by a hair at its end, and a plateau that stopped moving has no
        # spread to call that hair noise (a ranking metric flat for 78 of 80 rounds; probe 9 F4). A curve still
        # falling steadily made a third of its progress in its last third; a decelerating one far from its floor
        # well over a tenth.
        achieved = max(float(values[0]), initial) - final
        return (drop >= self.min_decrease_percent / 100 * max(abs(initial), reference) and drop > 3 * noise
                and drop >= END_SHARE * achieved), noise

    def _reference(self, name: str) -> float:
        """ln 2 for a classification cross-entropy (what an untrained classifier scores at best: the scale of its
        progress, whatever this run started from), else 0."""
        if name not in self._references:
            types = [name]
            for loss in recorded_losses(self.base_trial) or []:
                if name == loss.name or name.startswith(loss.name + "_") or (name == "loss" and len(
                        recorded_losses(self.base_trial)) == 1):
                    types.append(loss.type)
            self._references[name] = float(np.log(2)) if any(_CROSS_ENTROPY.search(t) for t in types) else 0.0
        return self._references[name]

    def _validation_stopped(self, name: str, mode: ModeKeys, worker: Optional[str] = None) -> bool:
        """Whether the loss's validation curve -- the same metric of another evaluation set (``validation-rmse``
        for ``train-rmse``) in a run without modes (XGBoost) -- no longer fell at the end of the run (judged with
        at least 6 evaluations). A boosted ensemble's training metric falls at every round for ever, whatever
        its validation does. The EVAL-mode loss of a TRAIN-mode loss is not asked: a deep-learning run's few
        noisy validation passes often cannot confirm a fall that is there (a held-out run whose classifier head
        never trained fell 2.10 -> 1.33 over 24 passes and was let off), and its training loss, unlike a
        booster's, stops falling by itself once the model has converged."""
        curves: List[np.ndarray] = []
        if mode == ModeKeys.GLOBAL and "-" in name and "/" not in name:
            metric = name.split("-", 1)[1]
            for other in self.base_trial.tensor_names():
                if other == name or "/" in other or "-" not in other or other.split("-", 1)[1] != metric:
                    continue
                values = [self._saved.mean(other, t, ModeKeys.GLOBAL, worker)
                          for t in self._saved.steps(other, ModeKeys.GLOBAL, worker)]
                curves.append(np.asarray([1.0 - v if other in self._losses.inverted else v
                                          for v in values if v is not None], dtype=np.float64))
        for values in curves:
            if len(values) < 6 or not np.all(np.isfinite(values)):
                continue  # too few evaluations to tell whether they still improved
            w = max(2, len(values) // 10)
            if not self._falling(values, _thirds(values, w), w, self._reference(name))[0]:
                return True
        return False


def _thirds(values: np.ndarray, w: int) -> Tuple[float, float, float, float]:
    """The medians of the first w saves, of the w saves around n / 3 and 2n / 3, and of the last w saves."""
    n = len(values)

    def around(center: int) -> float:
        lo = min(max(0, center - w // 2), n - w)
        return float(np.median(values[lo:lo + w]))

    return float(np.median(values[:w])), around(n // 3), around(2 * n // 3), float(np.median(values[n - w:]))


def _counting_noise(values: np.ndarray, final: float) -> float:
    """The noise of a metric that counts (an error rate on an evaluation set: it moves by one sample's share at a
    time, and a flat stretch has no spread at all): sqrt(final * resolution), the Poisson error of the count the
    final value stands for, where the resolution is the smallest gap between the curve's distinct values; 0 for
    a continuous curve (fewer repeated values than half its saves)."""
    distinct = np.unique(values)
    if len(distinct) < 2 or len(distinct) > len(values) // 2:
        return 0.0
    resolution = float(np.min(np.diff(distinct)))
    return float(np.sqrt(abs(final) * resolution))


#: an evaluation set's metric whose value carries a constant offset (the negative log-likelihood of a Poisson, gamma,
#: Tweedie, Cox or AFT model includes terms no model removes: tweedie-nloglik 3.99 -> 3.805 is all a model can
#: gain), so its progress is no share of its value (see LossNotDecreasing._met)
_OFFSET_METRIC = re.compile(r"(?i)nloglik")

#: a classification cross-entropy, by its tensor's name or its recorded loss type
_CROSS_ENTROPY = re.compile(r"(?i)cross.?entropy|^nllloss|^bce|logloss")


def _starts_trained(trial) -> bool:
    """Whether the run's first round is no untrained model: a linear booster's (see :func:`_booster_start`), or a
    model that continues one trained before (``xgb_model``)."""
    return booster_params(trial).get("booster") == "gblinear" or continued_rounds(trial) > 0


def _booster_start(trial, name: str) -> Optional[float]:
    """For an evaluation set's metric of an XGBoost run whose first round is no untrained model
    (:func:`_starts_trained`), ``<set>-<metric>`` of the set whose labels the hook saved
    (``_meta.xgboost_labels_from``): the metric of the best constant prediction on those labels (see
    booster_generalisation.best_constant_metric), a floor for where the booster stood before its first round. None
    for another booster, set or metric, or when the labels were not saved.

    gblinear's first round is a whole pass of coordinate descent, most of the way to the best linear fit (a
    regression's validation RMSE 71.4 for the constant model, 58.0 after round 0, 55.1 at its best), so its first
    evaluation is no untrained reference: measured from there, a booster that converged within a few rounds
    had made 4% of "progress" and fired "did not decrease", at eta .3 over 200 rounds and not at eta .5 over 100
    (probe 16b F1). A model continued from one trained before starts where that one ended: its validation logloss
    .163 at the run's first round, .157 at its best, .162 at its end read as "rose past its best" by most of its
    gain, where the same rounds of a model trained from scratch (from .69) are a drift at its plateau (probe 18a
    F2). A tree booster's first round is one shrunken tree, its first evaluation near the constant model's."""
    if not _starts_trained(trial):
        return None
    return held_out_constant(trial, name)
