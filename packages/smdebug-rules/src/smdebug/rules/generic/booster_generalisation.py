"""Whether what a booster learned carries over to its held-out data: Overfit's test of XGBoost runs.

A boosting run has no validation passes. At every round XGBoost evaluates each data set of ``evals`` (the
estimator's ``eval_set``) and the hook saves one metric per set in one step of no mode: ``train-logloss`` beside
``validation-logloss``, or ``validation_0-rmse`` (the training rows, as the scikit-learn API names them) beside
``validation_1-rmse``. A booster's training metric falls at every round whatever the data; the question a
debugger can answer from these curves is whether the held-out one followed at all.

When the training labels are shuffled apart from their rows (or the features say nothing of the label), the
trees fit the training rows and nothing carries over: the held-out metric's best is no better than its first
round, or than the best constant prediction, while the training metric falls by a large share. Early stopping
ends such a run a few rounds after its first, so a test of each curve alone sees a short run that "ended at its
best" (probe 16b F3: a breast-cancer classifier's held-out log loss gained 4.6% while the training one fell 72%;
a diabetes regression's held-out RMSE was best at round 0).

Judged once the training metric fell by at least ``MIN_TRAINING_FALL`` of its first value: the held-out metric's
gain (below its first round, or the best constant prediction on its labels where the hook saved them) as a share of
the training metric's. On sound boosting runs of tasks with a clear signal (the rule-accuracy benchmark's healthy
XGBoost runs and probe 16b's: binary, multi-class, regression, ranking, gblinear, early stopped or not) the
held-out metric gained a third or more of what the training metric gained; runs on shuffled labels gained 0-13%
(wine, breast cancer, diabetes, digits, synthetic sets; eta 0.05-0.3, depth 3-6, early stopping or not). But deep
trees boosted for long on a task with little signal (Friedman's regression under noise of sd 8) gain 5-15% too,
for a real, small gain. So where the run saved the held-out set's predictions and labels (``Hook.recommended``
does, for the set it names in ``_meta.xgboost_labels_from``), a gain up to ``ROW_TESTED_SHARE`` is a finding only
when no saved round's predictions beat the best constant prediction row by row beyond chance; without them, only
a gain up to ``SHARE_OF_TRAINING_GAIN`` is, on the curves alone.
"""

from __future__ import annotations

import bisect
import re
from statistics import NormalDist
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.rules.evaluation import note_read
from smdebug.rules.generic.selection import MAX_CLASS_ID, value_at
from smdebug.rules.generic.xgboost_rules import labels_from

#: metrics whose relative gain means something: lower is better, 0 is a perfect fit and a model that learned
#: nothing sits well above 0 (left out: scores such as auc/ndcg/map, where one tree already ranks well; the
#: negative log-likelihoods -- poisson-, gamma-, tweedie-, cox-, aft-nloglik -- whose constant offset no model
#: removes; a custom metric, whose scale is unknown)
_JUDGED_METRIC = re.compile(r"^(rmse|rmsle|mae|mape|mphe|logloss|mlogloss|error(@[0-9.]+)?|merror|quantile)$")

#: a data set named as the training data (``xgboost.train(evals=[(dtrain, "train"), ...])``)
_TRAINING_NAME = re.compile(r"(?i)^d?train(ing)?([_-]?(set|data))?$")

#: the least share of its first value the training metric must have lost before the held-out one is judged
MIN_TRAINING_FALL = 0.1
#: the held-out metric's gain, as a share of the training metric's, at or below which nothing carried over --
#: where the held-out rows cannot be tested one by one (see ROW_TESTED_SHARE)
SHARE_OF_TRAINING_GAIN = 0.1
#: the same, where the run saved the held-out set's predictions and labels: a gain up to this share is a finding
#: unless the predictions beat the best constant prediction row by row beyond chance at some saved round
ROW_TESTED_SHARE = 0.25
#: the one-sided level of that row test, shared among the rounds tested (Bonferroni)
ROW_TEST_LEVEL = 0.01
#: saved rounds of both curves needed to judge
MIN_ROUNDS = 5
#: held-out rows needed for the row test
MIN_ROWS = 10


class Pair(NamedTuple):
    """One metric evaluated on the training data and on a held-out set."""
    metric: str
    training: str  # tensor name, ``validation_0-logloss``
    held_out: str  # tensor name, ``validation_1-logloss``
    training_named: bool  # whether the training set was told by its name (else: the set whose metric fell most)


def metric_sets(trial) -> Dict[str, List[str]]:
    """Per metric, the tensors ``<set>-<metric>`` of the run (a run without modes), for metrics in two sets or
    more."""
    by_metric: Dict[str, List[str]] = {}
    for name in trial.tensor_names():
        if "/" in name or "-" not in name:
            continue
        by_metric.setdefault(name.split("-", 1)[1], []).append(name)
    return {m: sorted(names) for m, names in by_metric.items() if len(names) >= 2}


def best_constant_metric(metric: str, labels: np.ndarray) -> Optional[float]:
    """The value of XGBoost's evaluation ``metric`` for the best constant prediction on a set with ``labels`` (the
    best it can be for a model that learned nothing from the features, chosen knowing the set's labels): the
    labels' standard deviation for ``rmse``, their mean absolute deviation from the median for ``mae``, their
    entropy for ``logloss`` and ``mlogloss``, the minority share for ``error`` and ``merror``. None for another
    metric, or labels it does not apply to. (A weighted set's metric weighs the rows: not known here.)"""
    y = np.asarray(labels, dtype=np.float64)
    if y.size == 0 or not np.all(np.isfinite(y)):
        return None
    if metric in ("rmse", "mae"):
        rows = y.reshape(y.shape[0], -1)  # (one column per target of a multi-output regression)
        if metric == "rmse":
            return float(np.sqrt(np.mean((rows - rows.mean(axis=0)) ** 2)))
        return float(np.mean(np.abs(rows - np.median(rows, axis=0))))
    if y.ndim != 1 or not np.all(y == np.round(y)) or y.min() < 0 or y.max() > MAX_CLASS_ID:
        return None
    if metric in ("logloss", "error") and y.max() > 1:
        return None
    if metric not in ("logloss", "error", "mlogloss", "merror"):
        return None
    shares = np.bincount(y.astype(np.int64)) / y.size
    if metric in ("error", "merror"):
        return float(1.0 - shares.max())
    shares = shares[shares > 0]
    return float(-np.sum(shares * np.log(shares)))


def held_out_constant(trial, name: str) -> Optional[float]:
    """For ``<set>-<metric>`` of the set whose labels the XGBoost hook saved (``_meta.xgboost_labels_from``),
    the metric of the best constant prediction on those labels (their last save); None otherwise."""
    source = labels_from(trial)
    if source is None or not name.startswith(source + "-") or not trial.has_tensor("labels"):
        return None
    steps = trial.tensor("labels").steps()
    labels = value_at(trial, "labels", steps[-1]) if steps else None
    if labels is None or labels.dtype.kind not in "fiub":
        return None
    return best_constant_metric(name[len(source) + 1:], labels)


def row_losses(metric: str, predictions: np.ndarray, labels: np.ndarray
               ) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(the model's loss on each row, the best constant prediction's) for XGBoost's evaluation ``metric``, from the
    saved predictions and labels of one set: squared error (rmse), absolute error (mae), binary or multi-class
    cross-entropy (logloss, mlogloss: the predictions must be probabilities), misclassification (error, merror).
    None for another metric or predictions that are not of that kind (raw margins, a shape that does not fit)."""
    p = np.asarray(predictions, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    n = y.shape[0] if y.ndim else 0
    if n < MIN_ROWS or p.shape[:1] != (n,) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(y))):
        return None
    if metric in ("rmse", "mae"):
        if p.size != y.size:
            return None
        p, y = p.reshape(n, -1), y.reshape(n, -1)
        if metric == "rmse":
            return ((y - p) ** 2).sum(axis=1), ((y - y.mean(axis=0)) ** 2).sum(axis=1)
        return np.abs(y - p).sum(axis=1), np.abs(y - np.median(y, axis=0)).sum(axis=1)
    if y.ndim != 1 or not np.all(y == np.round(y)) or y.min() < 0 or y.max() > MAX_CLASS_ID:
        return None
    classes = y.astype(np.int64)
    shares = np.bincount(classes) / n
    if metric in ("logloss", "error"):
        if p.ndim != 1 or classes.max() > 1 or p.min() < 0 or p.max() > 1:
            return None
        if metric == "error":
            return ((p > 0.5) != classes).astype(np.float64), (classes != int(np.argmax(shares))).astype(np.float64)
        q, eps = float(shares[1]) if len(shares) > 1 else 0.0, 1e-7
        pc, qc = np.clip(p, eps, 1 - eps), min(max(q, eps), 1 - eps)
        model = -(classes * np.log(pc) + (1 - classes) * np.log(1 - pc))
        return model, -(classes * np.log(qc) + (1 - classes) * np.log(1 - qc))
    if metric == "mlogloss":
        if p.ndim != 2 or p.shape[1] <= classes.max() or p.min() < 0 or p.max() > 1:
            return None
        return -np.log(np.clip(p[np.arange(n), classes], 1e-7, 1)), -np.log(shares[classes])
    if metric == "merror":
        chosen = np.argmax(p, axis=1) if p.ndim == 2 else (p if p.ndim == 1 and np.all(p == np.round(p)) else None)
        if chosen is None:
            return None
        return (chosen != classes).astype(np.float64), (classes != int(np.argmax(shares))).astype(np.float64)
    return None


def advantage_z(model: np.ndarray, constant: np.ndarray) -> float:
    """How far the model's mean loss on the rows is below the constant prediction's, in standard errors of the
    rows' paired differences (compared with a one-sided normal quantile by the caller)."""
    d = constant - model
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    return (np.inf if mean > 0 else 0.0) if sd == 0 else mean / (sd / np.sqrt(len(d)))


class BoosterGeneralisation:
    """Judges, at each step of a boosting run, each held-out set's metric against the training data's.

    ``saved``: the rule's :class:`~smdebug.rules.generic.loss_rules.SavedSteps` (cached steps and values).
    ``selected``: which tensors the rule may read (its ``tensor_regex``), None for all."""

    def __init__(self, trial, saved, selected=None):
        self.trial = trial
        self._saved = saved
        self._selected = selected
        self._constants: Dict[str, Optional[float]] = {}
        #: per metric: [saved steps read so far], its (step, value) pairs
        self._curves: Dict[str, Tuple[List[int], List[Tuple[int, float]]]] = {}
        #: per (metric, round with the held-out predictions saved): their row test's z score (None: not testable)
        self._row_z: Dict[Tuple[str, int], Optional[float]] = {}
        self._rows = 0
        self._key = None
        #: per held-out metric that cannot be judged (its values are not a metric's), why
        self.unjudged: Dict[str, str] = {}
        self._applies: Optional[bool] = None
        self._pairs: Optional[List[Pair]] = None

    def _fresh(self) -> None:
        """Forget the run's sets and pairs once it has new steps or tensors (read again at most once per step)."""
        t = self.trial
        key = (len(t.tensor_names()), t.last_complete_step, t.loaded_all_steps)
        if key != self._key:
            self._key, self._applies, self._pairs = key, None, None

    def applies(self) -> bool:
        """Whether the run is one without modes holding a metric of several evaluation sets, or of the one held-out
        set whose labels the XGBoost hook saved (a booster's)."""
        self._fresh()
        if self._applies is None:
            t = self.trial
            self._applies = not (t.steps(mode=ModeKeys.TRAIN) or t.steps(mode=ModeKeys.EVAL)) and bool(
                metric_sets(t) or self.held_out_alone())
        return self._applies

    def held_out_alone(self) -> Optional[str]:
        """In a run that evaluated one data set only (the estimator's ``eval_set=[(X_val, y_val)]``), that set's
        first judged metric (``validation_0-logloss``) when the hook saved its labels (so it is held out: the hook
        never names the training data); None otherwise."""
        source = labels_from(self.trial)
        if source is None or metric_sets(self.trial):
            return None
        names = sorted(n for n in self.trial.tensor_names() if n.startswith(source + "-")
                       and _JUDGED_METRIC.match(n[len(source) + 1:]) and (self._selected is None or self._selected(n)))
        return names[0] if names else None

    def judge_alone(self, name: str) -> Tuple[bool, Optional[str]]:
        """(judged, finding) for the held-out set of a run that evaluated no other, from every saved round: with no
        training metric to compare with, the rows alone tell whether the booster learned anything that holds on
        held-out data -- no saved round's predictions beat the best constant prediction beyond chance (a sound
        booster's do by many standard errors from its first rounds). Judged on a finished run only: the test is of
        all the rounds the run saved."""
        held = self._curve(name, self.trial.last_complete_step)
        rows = self._row_test(Pair(name.split("-", 1)[1], "", name, False), self.trial.last_complete_step)
        if rows is None or len(held) < MIN_ROUNDS:
            return False, None
        note_read(name)
        if rows[0]:
            return True, None
        _, z, at, tested, n = rows
        return True, (f"{name}: no generalisation: on its {n} rows the booster's predictions never beat the best "
                      f"constant prediction beyond chance (at best {z:.2f} standard errors, round {at}; {tested} saved "
                      f"round{'s' if tested != 1 else ''} tested at one-sided level {ROW_TEST_LEVEL:g} shared among "
                      f"them; the metric {held[0][1]:.4g} at round {held[0][0]}, {min(v for _, v in held):.4g} at "
                      "best): what the booster learned did not carry over to held-out rows (training labels shuffled "
                      "apart from their rows? features that say nothing of the label?); evaluating the training data "
                      "too, eval_set=[(X_train, y_train), (X_val, y_val)], shows what it learned there")

    def pairs(self) -> List[Pair]:
        """Every (training set, held-out set) pair of a judged metric. The training set: the one named so, else
        the one whose metric lost the largest share of its first value (a booster fits its training rows better
        than any other); the set whose labels the hook saved is held out whatever its curve."""
        self._fresh()
        if self._pairs is None:
            self._pairs = self._find_pairs()
        return self._pairs

    def _find_pairs(self) -> List[Pair]:
        found = []
        source = labels_from(self.trial)
        for metric, names in metric_sets(self.trial).items():
            if not _JUDGED_METRIC.match(metric):
                continue
            names = [n for n in names if self._selected is None or self._selected(n)]
            named = [n for n in names if _TRAINING_NAME.match(n.split("-", 1)[0])]
            candidates = [n for n in names if source is None or not n.startswith(source + "-")]
            if named:
                training, by_name = named[0], True
            elif candidates:
                training, by_name = max(candidates, key=self._fall), False
            else:
                continue
            found.extend(Pair(metric, training, n, by_name) for n in names if n != training)
        return found

    def _curve(self, name: str, upto: int) -> List[Tuple[int, float]]:
        """(step, value) of ``name``'s saves at steps ``<= upto`` whose value is a finite number, read once each
        (kept from one step to the next: a run of thousands of rounds is judged at every one)."""
        read, curve = self._curves.setdefault(name, ([0], []))
        steps = self._saved.steps(name)
        end = bisect.bisect_right(steps, upto)
        for s in steps[read[0]:end]:
            v = self._saved.mean(name, s)
            if v is not None and np.isfinite(v):
                curve.append((s, v))
        read[0] = max(read[0], end)
        return curve[:bisect.bisect_right(curve, (upto, np.inf))]

    def _fall(self, name: str) -> float:
        curve = self._curve(name, self.trial.last_complete_step)
        if len(curve) < 2 or curve[0][1] <= 0:
            return -np.inf
        return (curve[0][1] - min(v for _, v in curve)) / curve[0][1]

    def _constant(self, name: str) -> Optional[float]:
        # (None is not kept: on a live run the labels it needs may be saved after the first rounds are judged)
        if self._constants.get(name) is None:
            self._constants[name] = held_out_constant(self.trial, name)
        return self._constants[name]

    def judge(self, pair: Pair, step: int) -> Tuple[bool, Optional[str]]:
        """(judged, finding) for ``pair`` with the saves up to ``step``: judged once both curves have
        :data:`MIN_ROUNDS` saves of positive values and the training metric fell by :data:`MIN_TRAINING_FALL`."""
        train, held = self._curve(pair.training, step), self._curve(pair.held_out, step)
        if len(train) < MIN_ROUNDS or len(held) < MIN_ROUNDS:
            return False, None
        t0, tb = train[0][1], min(v for _, v in train)
        h0 = held[0][1]
        if t0 <= 0 or h0 <= 0 or tb < 0:
            # (not a metric whose relative gain means anything: the "log loss" of raw margins goes below 0)
            self.unjudged[pair.held_out] = (f"{pair.training} or {pair.held_out} is not positive ({t0:.4g}, "
                                            f"{h0:.4g} at the first round, {tb:.4g} at the training set's best): "
                                            "no share of its value can be measured")
            return False, None
        self.unjudged.pop(pair.held_out, None)
        note_read(pair.training)
        note_read(pair.held_out)
        training_gain = (t0 - tb) / t0
        if training_gain < MIN_TRAINING_FALL:
            return True, None  # (nothing learned on the training data either: LossNotDecreasing's matter)
        constant = self._constant(pair.held_out)
        reference = max(h0, constant) if constant is not None else h0
        best_at, best = min(held, key=lambda sv: sv[1])
        held_gain = max(0.0, (reference - best) / reference)
        if held_gain > ROW_TESTED_SHARE * training_gain:
            return True, None
        rows = self._row_test(pair, step)
        if rows is None and held_gain > SHARE_OF_TRAINING_GAIN * training_gain:
            return True, None
        if rows is not None and rows[0]:
            return True, None
        return True, self._finding(pair, train, held, training_gain, held_gain, best_at, best, constant, rows)

    def _row_test(self, pair: Pair, step: int) -> Optional[Tuple[bool, float, int, int, int]]:
        """Whether the held-out set's saved predictions beat the best constant prediction on its labels, row by
        row, beyond chance at some round up to ``step``: (beat, best z, its round, rounds tested, rows); None when
        they cannot be read (the hook saved another set's, or none; a metric :func:`row_losses` does not know).

        A held-out gain that is a small share of the training gain is what shuffled labels give -- and also what
        deep trees give on a task with little signal, whose held-out gain is small but real: the rows tell them
        apart (a weak real signal on a few hundred rows is many standard errors above 0; a chance one is not)."""
        metric = pair.held_out.split("-", 1)[1]
        if labels_from(self.trial) != pair.held_out.split("-", 1)[0] or not self.trial.has_tensor("predictions") \
                or not self.trial.has_tensor("labels"):
            return None
        label_steps = self.trial.tensor("labels").steps()
        rounds = [s for s in self.trial.tensor("predictions").steps() if s <= step]
        for s in rounds:
            if (metric, s) not in self._row_z:
                self._row_z[(metric, s)] = self._z_at(metric, s, label_steps)
        tested = [(self._row_z[(metric, s)], s) for s in rounds if self._row_z[(metric, s)] is not None]
        if not tested:
            return None
        level = ROW_TEST_LEVEL / len(tested)
        (z, at), n = max(tested), self._rows
        return z > NormalDist().inv_cdf(1 - level), z, at, len(tested), n

    def _z_at(self, metric: str, s: int, label_steps: List[int]) -> Optional[float]:
        """The row test's z score of the predictions saved at round ``s`` (labels of that round, else the latest
        before it), None when they cannot be tested."""
        earlier = [t for t in label_steps if t <= s]
        if not earlier:
            return None
        predictions = value_at(self.trial, "predictions", s)
        labels = value_at(self.trial, "labels", earlier[-1])
        if predictions is None or labels is None:
            return None
        losses = row_losses(metric, predictions, labels)
        if losses is None:
            return None
        note_read("predictions")
        self._rows = len(losses[0])
        return advantage_z(*losses)

    def _finding(self, pair: Pair, train, held, training_gain: float, held_gain: float, best_at: int, best: float,
                 constant: Optional[float], rows: Optional[Tuple[bool, float, int, int, int]]) -> str:
        h0, (t_last_step, t_last) = held[0][1], train[-1]
        if constant is not None and constant > h0:
            start = f"{constant:.4g}, the best constant prediction on its labels (first round {h0:.4g})"
        else:
            start = f"its first round's {h0:.4g}" + (
                f" (the best constant prediction on its labels: {constant:.4g})" if constant is not None else "")
        best_text = (f"its best is its first round ({h0:.4g})" if best_at == held[0][0] and held_gain == 0 else
                     f"its best, {best:.4g} at round {best_at}, is {held_gain:.1%} below {start}")
        which = "" if pair.training_named else " (the training data's, as the set whose metric fell most)"
        return (f"{pair.held_out}: no generalisation: {best_text}, while {pair.training}{which} fell "
                f"{training_gain:.1%} ({train[0][1]:.4g} at round {train[0][0]}, {t_last:.4g} at round "
                f"{t_last_step}); {self._share_said(training_gain, held_gain, rows)}: the trees fit the training "
                "rows, and what they learned did not carry over to held-out rows (training or held-out labels "
                "shuffled apart from their rows? features that say nothing of the label? trees deep enough to "
                "memorise noise?)")

    @staticmethod
    def _share_said(training_gain: float, held_gain: float, rows: Optional[Tuple[bool, float, int, int, int]]
                    ) -> str:
        share = held_gain / training_gain
        if rows is None:
            return f"the held-out metric gained {share:.0%} of what the training metric gained"
        _, z, at, tested, n = rows
        return (f"the held-out metric gained {share:.0%} of what the training metric gained, and on its {n} rows the "
                f"predictions never beat the best constant prediction beyond chance (at best {z:.2f} standard errors, "
                f"round {at}; {tested} saved round{'s' if tested != 1 else ''} tested at one-sided level "
                f"{ROW_TEST_LEVEL:g} shared among them)")
