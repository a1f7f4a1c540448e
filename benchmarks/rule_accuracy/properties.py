"""The measurable property behind every label, checked on the written run.

A buggy scenario is labelled with problem classes; for each class, :data:`CHECKS` holds a function that reads
the run back (with a trial, as a rule would) and says whether the problem is really there, with the numbers
as evidence. A healthy scenario must show none of the symptoms. The definitions are the benchmark's own,
fixed independently of any rule's thresholds, in the spirit of AUTOTRAINER (ICSE'21) and DeepDiagnosis
(ICSE'22): a gradient ratio between the first and last layer for vanishing gradients, the share of units
never active for dead ReLUs, the share of pre-activations where the activation's slope is below 1% of its
maximum for saturation, swings of the smoothed loss for oscillation, and so on (each docstring gives it).

Every check gets ``(run, facts)``: ``run`` a :class:`Run` (the trial with a few cached reads) and ``facts`` the
dict the training function returned (which saved tensors are which layers, what the loss expects). Each
returns ``(holds, evidence)``; ``holds`` is None when the run lacks the data to say (never a silent
"no": a healthy label needs every applicable check to have looked and found nothing).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

Result = Tuple[bool, str]

#: a unit of a ReLU layer is dead when active in fewer than this share of a batch's samples
DEAD_UNIT_ACTIVE = 0.01
#: tanh / sigmoid pre-activations where the slope is below 1% of its maximum
TANH_FLAT, SIGMOID_FLAT = 3.0, 4.6


class Run:
    """A written run, read once: series of scalars by mode, tensor values by global step."""

    def __init__(self, path: str):
        from smdebug.trials import create_trial

        self.trial = create_trial(path)
        self.names = self.trial.tensor_names()
        self._modes: Dict[int, str] = {}

    def mode(self, step: int) -> str:
        if step not in self._modes:
            mode = self.trial.mode(step)
            self._modes[step] = getattr(mode, "name", str(mode))
        return self._modes[step]

    def matching(self, regex: str) -> List[str]:
        pattern = re.compile(regex)
        return [n for n in self.names if pattern.search(n)]

    def values(self, name: str, mode: Optional[str] = None) -> Dict[int, np.ndarray]:
        """{global step: value} of a tensor (only steps of ``mode`` if given)."""
        return {s: v for s, v in self._all_values(name).items() if mode is None or self.mode(s) == mode}

    @lru_cache(maxsize=None)
    def _all_values(self, name: str) -> Dict[int, np.ndarray]:
        tensor = self.trial.tensor(name)
        out = {}
        for step in tensor.steps():
            try:
                out[step] = np.asarray(tensor.value(step), dtype=np.float64)
            except Exception:  # noqa: BLE001 - only a reduction saved at that step: no value to judge
                continue
        return out

    def series(self, regex: str, mode: Optional[str]) -> List[Tuple[int, float]]:
        """(global step, scalar) of the first tensor matching ``regex`` in ``mode`` (any mode if None), in
        step order."""
        names = self.matching(regex)
        if not names:
            return []
        return sorted((s, float(np.mean(v))) for s, v in self.values(names[0], mode).items())


def _as_loss(values: np.ndarray, facts: dict) -> np.ndarray:
    """An XGBoost metric where higher is better (AUC, NDCG: in [0, 1]) read as the loss ``1 - metric``."""
    return 1.0 - values if facts.get("metric_higher_is_better") else values


def _train_loss(run: Run, facts: dict) -> np.ndarray:
    if facts["framework"] == "xgboost":  # one step per boosting round, in the GLOBAL mode
        return _as_loss(np.array([v for _, v in run.series(facts["train_metric"], None)]), facts)
    return np.array([v for _, v in run.series(facts["loss"], "TRAIN")])


def _evaluations(run: Run, facts: dict) -> Tuple[List[int], np.ndarray]:
    """Mean validation loss of each evaluation (consecutive EVAL steps form one), with its last step."""
    if facts["framework"] == "xgboost":
        points = run.series(facts["valid_metric"], None)
        return [s for s, _ in points], _as_loss(np.array([v for _, v in points]), facts)
    points = run.series(facts["loss"], "EVAL")
    groups: List[List[Tuple[int, float]]] = []
    for step, value in points:
        if groups and step == groups[-1][-1][0] + 1:
            groups[-1].append((step, value))
        else:
            groups.append([(step, value)])
    return [g[-1][0] for g in groups], np.array([np.mean([v for _, v in g]) for g in groups])


def _window_mean(values: np.ndarray, start: float, end: float) -> float:
    n = len(values)
    lo, hi = int(n * start), max(int(n * start) + 1, int(n * end))
    return float(np.mean(values[lo:hi]))


def _span(loss: np.ndarray) -> float:
    """How far the training loss came down over the run: its first 5% less its lowest value (the scale of a
    loss that has no natural zero, e.g. a Gaussian negative log-likelihood, which goes below 0)."""
    return max(_window_mean(loss, 0.0, 0.05) - float(np.min(loss)), 1e-12)


def _below(a: float, b: float, fraction: float, span: float) -> bool:
    """``a`` is at least ``fraction`` below ``b``: ``a < (1 - fraction) * b`` for positive losses, as every check
    reads them; for a loss that reaches 0 or below, where ratios mean nothing, ``b - a > fraction * span``."""
    if a > 0 and b > 0:
        return a < (1 - fraction) * b
    return b - a > fraction * span


def _finite(run: Run, regexes: List[str]) -> Tuple[bool, str]:
    for regex in regexes:
        for name in run.matching(regex):
            for step, value in run.values(name).items():
                if not np.all(np.isfinite(value)):
                    return False, f"{name} at step {step} has {int((~np.isfinite(value)).sum())} NaN/inf values"
    return True, ""


def _weight_regexes(facts: dict) -> List[str]:
    return [f"^{re.escape(w)}$" for w in facts["weights"]]


def nan_or_inf(run: Run, facts: dict) -> Result:
    """Some loss, weight or gradient holds NaN or infinity."""
    grads = [f"^{re.escape(facts.get('gradient_prefix', 'gradient/'))}"]
    loss = [facts[k] for k in ("loss", "train_metric") if k in facts]
    ok, where = _finite(run, loss + _weight_regexes(facts) + grads)
    return (not ok), (where or "every loss, weight and gradient is finite")


def finite_explosion(run: Run, facts: dict) -> Result:
    """Everything stays finite, yet the training loss's magnitude or the weights' total norm grows at least
    100-fold (last 20% of the run against the first 10%; magnitude: a loss that falls without bound below 0, as
    an objective with a sign error does, explodes too)."""
    nan, where = nan_or_inf(run, facts)
    if nan:
        return False, f"not finite: {where}"
    loss = _train_loss(run, facts)
    if not len(loss):
        return None, "no training loss saved"
    loss_growth = abs(_window_mean(loss, 0.8, 1.0)) / max(abs(_window_mean(loss, 0.0, 0.1)), 1e-12)
    norms: Dict[int, float] = {}
    for w in facts["weights"]:
        for step, value in run.values(w, "TRAIN").items():
            norms[step] = norms.get(step, 0.0) + float(np.sum(value ** 2))
    steps = sorted(norms)
    weight_growth = np.sqrt(norms[steps[-1]] / max(norms[steps[0]], 1e-24)) if steps else 0.0
    holds = loss_growth >= 100 or weight_growth >= 100
    return holds, f"train loss x{loss_growth:.3g}, weight norm x{weight_growth:.3g}, all finite"


def vanishing_gradient(run: Run, facts: dict) -> Result:
    """The first layer's mean |gradient| is below 1/1000 of the last layer's (median over the saved steps), among
    the layers trained (with gradients saved: a layer frozen on purpose has none)."""
    prefix = facts["gradient_prefix"]
    trained = [w for w in facts["weights"] if prefix + w in run.names]
    if not trained:
        return None, "no gradients saved"
    first = run.values(prefix + trained[0], "TRAIN")
    last = run.values(prefix + trained[-1], "TRAIN")
    ratios = [np.mean(np.abs(first[s])) / max(np.mean(np.abs(last[s])), 1e-30) for s in first if s in last]
    if not ratios:
        return None, "no gradients saved"
    ratio = float(np.median(ratios))
    return ratio < 1e-3, f"median first/last layer mean |gradient| = {ratio:.3g}"


def _late(values: Dict[int, np.ndarray], share: float = 0.25) -> List[np.ndarray]:
    steps = sorted(values)
    return [values[s] for s in steps[int(len(steps) * (1 - share)):]]


def dead_relu(run: Run, facts: dict) -> Result:
    """In some ReLU layer, more than half of the units are active in fewer than 1% of a batch's samples
    (median over the last quarter of the training saves)."""
    best, where = 0.0, "no ReLU output saved"
    for regex in facts["activation_outputs"].get("relu", []):
        for name in run.matching(regex):
            shares = []
            for value in _late(run.values(name, "TRAIN")):
                units = value.reshape(value.shape[0], -1)
                shares.append(float(((units > 0).mean(axis=0) < DEAD_UNIT_ACTIVE).mean()))
            if shares and np.median(shares) >= best:
                best, where = float(np.median(shares)), name
    return best > 0.5, f"{where}: {best:.0%} of units dead"


def saturated(run: Run, facts: dict) -> Result:
    """In some tanh/sigmoid layer, most pre-activations lie where the slope is below 1% of its maximum
    (|x| > 3 for tanh, > 4.6 for sigmoid), median over the last quarter of the training saves."""
    best, where = 0.0, "no tanh/sigmoid input saved"
    for kind, bound in (("tanh", TANH_FLAT), ("sigmoid", SIGMOID_FLAT)):
        for regex in facts["activation_inputs"].get(kind, []):
            for name in run.matching(regex):
                shares = [float((np.abs(v) > bound).mean()) for v in _late(run.values(name, "TRAIN"))]
                if shares and np.median(shares) >= best:
                    best, where = float(np.median(shares)), f"{name} ({kind})"
    return best > 0.5, f"{where}: {best:.0%} of pre-activations in the flat region"


def poor_init(run: Run, facts: dict) -> Result:
    """At the first saved step the pre-activations are badly scaled: their std differs more than 100-fold
    between hidden layers, exceeds 30, or is (almost) zero."""
    stds = []
    for kind in facts["activation_inputs"]:
        for regex in facts["activation_inputs"][kind]:
            for name in run.matching(regex):
                values = run.values(name, "TRAIN")
                if values:
                    stds.append((name, float(np.std(values[min(values)]))))
    if not stds:
        return False, "no activation inputs saved"
    high, low = max(s for _, s in stds), min(s for _, s in stds)
    holds = high > 30 or low < 1e-6 or high / max(low, 1e-30) > 100
    return holds, "initial pre-activation std " + ", ".join(f"{n}={s:.3g}" for n, s in stds[:6])


def loss_not_decreasing(run: Run, facts: dict) -> Result:
    """The training loss of the last 20% of the run is at least 90% of that of its first 5%."""
    loss = _train_loss(run, facts)
    if not len(loss):
        return None, "no training loss saved"
    if not np.all(np.isfinite(loss)):
        return False, "the training loss is not finite (another problem)"
    early, late = _window_mean(loss, 0.0, 0.05), _window_mean(loss, 0.8, 1.0)
    ratio = late / max(early, 1e-12)
    return not _below(late, early, 0.1, _span(loss)), f"late/early training loss = {ratio:.3g}"


def slow_convergence(run: Run, facts: dict) -> Result:
    """The training loss decreases but is still above 35% of where it started when the budget ends (last
    10% against first 5%), and still falling (the last 10% at least 3% below the 10% before the last third)."""
    loss = _train_loss(run, facts)
    if not len(loss):
        return None, "no training loss saved"
    if not np.all(np.isfinite(loss)):
        return False, "the training loss is not finite (another problem)"
    if np.min(loss) < 0:
        # a loss that goes below 0 (a density's negative log-likelihood) has no natural zero: how far from
        # converged it is cannot be told by a share of where it started
        return None, f"the training loss goes below 0 ({np.min(loss):.3g}): no share of its start measures convergence"
    start, end = _window_mean(loss, 0.0, 0.05), _window_mean(loss, 0.9, 1.0)
    earlier = _window_mean(loss, 0.57, 0.67)
    ratio = end / max(start, 1e-12)
    holds = 0.35 <= ratio < 0.9 and end < 0.97 * earlier
    return holds, f"last/first training loss = {ratio:.3g}, last/two-thirds = {end / max(earlier, 1e-12):.3g}"


def _smooth(values: np.ndarray, window: int = 10) -> np.ndarray:
    window = min(window, len(values))
    if len(values) < window:
        return values
    return np.convolve(values, np.ones(window) / window, mode="valid")


def oscillating(run: Run, facts: dict) -> Result:
    """In the second half of the run the training loss, smoothed over 10 steps (and over at least 256 rows:
    more steps for batches smaller than 26, as the run's facts give ``batch_size``), swings up and down at
    least 3 times (a zigzag count: a swing is a rise and a fall, each larger than 15% of the loss the run
    started from, or of how far it came down when it went below 0). Minibatch noise of a converging run stays
    far below that scale once smoothed over that many rows."""
    loss = _train_loss(run, facts)
    if len(loss) < 40:
        # a curve this short has no second half to swing in: the symptom cannot show
        return False, f"{len(loss)} training losses: too short a curve to swing"
    if not np.all(np.isfinite(loss)):
        return False, "the training loss is not finite (another problem)"
    half = loss[len(loss) // 2:]
    window = max(10, int(np.ceil(256 / facts.get("batch_size", 32))))
    s = _smooth(half, window)
    # for a positive loss, the initial loss; for one that goes below 0, how far it came down
    threshold = 0.15 * max(abs(_window_mean(loss, 0.0, 0.05)), _span(loss))
    moves, anchor, direction = 0, s[0], 0
    for v in s[1:]:
        if direction >= 0 and v < anchor - threshold:
            moves, direction, anchor = moves + 1, -1, v
        elif direction <= 0 and v > anchor + threshold:
            moves, direction, anchor = moves + 1, 1, v
        elif (direction > 0 and v > anchor) or (direction < 0 and v < anchor):
            anchor = v
    swings = moves // 2
    return swings >= 3, f"{swings} swings larger than {threshold:.3g} (15% of the initial loss)"


def _curves(run: Run, facts: dict):
    """(validation curve, training curve), or the Result to return when they cannot be judged."""
    _, evals = _evaluations(run, facts)
    loss = _train_loss(run, facts)
    if not len(loss):
        return None, (None, "no training loss saved")
    if len(evals) < 4:
        # no validation (or too little of it): a validation curve that turns cannot show
        return None, (False, f"{len(evals)} evaluations: too few for a validation trend")
    if not np.all(np.isfinite(evals)):
        return None, (False, "the validation loss is not finite (another problem)")
    return (evals, loss), None


def overfit(run: Run, facts: dict) -> Result:
    """The validation loss ended at least 15% above its best while the training loss ended below a fifth of
    the validation loss (the model memorises the training set and gets worse on new data). For a loss that
    reaches 0 or below, the same fractions of how far the training loss came down (``_below``)."""
    curves, verdict = _curves(run, facts)
    if verdict:
        return verdict
    evals, loss = curves
    best, final = float(evals.min()), float(np.mean(evals[-2:]))
    train_final = _window_mean(loss, 0.9, 1.0)
    span = _span(loss)
    rose = (final >= 1.15 * best) if best > 0 else (final - best >= 0.15 * span)
    holds = rose and _below(train_final, final, 0.8, span)
    return holds, f"validation loss {best:.3g} (best) -> {final:.3g} (end), training loss {train_final:.3g} at the end"


def overtraining(run: Run, facts: dict) -> Result:
    """The validation loss stopped improving before half of the evaluations (no later evaluation within 1% of
    beating it) while the training loss kept falling by at least 30% after that point."""
    curves, verdict = _curves(run, facts)
    if verdict:
        return verdict
    evals, loss = curves
    best_at = int(np.argmin(evals))
    later_best = float(evals[best_at + 1:].min()) if best_at + 1 < len(evals) else np.inf
    span = _span(loss)
    plateau = best_at < len(evals) / 2 and not _below(later_best, float(evals[best_at]), 0.01, span)
    share = (best_at + 1) / len(evals)
    train_then, train_end = _window_mean(loss, max(0.0, share - 0.05), share), _window_mean(loss, 0.9, 1.0)
    holds = plateau and _below(train_end, train_then, 0.3, span)
    return holds, (f"best validation at evaluation {best_at + 1} of {len(evals)}; training loss {train_then:.3g} "
                   f"then, {train_end:.3g} at the end")


def class_imbalance(run: Run, facts: dict) -> Result:
    """The training labels seen (pooled over the training saves; an XGBoost run saves the validation labels,
    drawn from the same data) have a most/least frequent class ratio of at least 10."""
    if facts.get("task") in ("ranking", "regression", "reconstruction", "embedding", "language_model"):
        # next tokens of text, the index of a row's other view, grades of a ranking: targets, not classes
        return False, f"a {facts['task']} task: its targets are no classes"
    counts: Dict[int, int] = {}
    for name in run.matching(facts["labels"]):
        for value in (run.values(name, "TRAIN") or run.values(name)).values():
            labels = value.reshape(-1) if value.ndim <= 1 or value.shape[-1] == 1 else value.argmax(-1)
            if not np.all(labels == np.round(labels)):
                return False, "continuous targets (a regression): no classes"
            for label, n in zip(*np.unique(np.round(labels).astype(int), return_counts=True)):
                counts[label] = counts.get(label, 0) + int(n)
    if len(counts) == 1 and (facts.get("num_classes") or 0) >= 2:
        # the extreme case: the model scores several classes and every label is the same one
        return True, f"every label is class {next(iter(counts))}, of the model's {facts['num_classes']} classes"
    if len(counts) < 2:
        return False, f"label counts {counts}"
    ratio = max(counts.values()) / min(counts.values())
    return ratio >= 10, f"most/least frequent class = {ratio:.3g} ({dict(sorted(counts.items()))})"


def _model_inputs(run: Run, facts: dict) -> List[np.ndarray]:
    names = run.matching(facts["model_input"])
    return list(run.values(names[0], "TRAIN").values()) if names else []


def bad_images(run: Run, facts: dict) -> Result:
    """Image inputs (4-D) not scaled to unit range: some channel's mean beyond +-1 or the pixel std above 5."""
    values = [v for v in _model_inputs(run, facts) if v.ndim == 4]
    if not values:
        return False, "no image input saved"
    x = np.concatenate(values)
    axis = 1 if x.shape[1] <= 4 else 3
    means = x.mean(axis=tuple(a for a in range(4) if a != axis))
    holds = float(np.abs(means).max()) > 1 or float(x.std()) > 5
    return holds, f"channel means {np.round(means, 3).tolist()}, std {x.std():.3g}"


def unnormalised_input(run: Run, facts: dict) -> Result:
    """Non-image inputs (2-D tabular or 3-D sequences) with some feature whose |mean| or std exceeds 100."""
    values = [v for v in _model_inputs(run, facts) if v.ndim in (2, 3) and v.dtype.kind == "f"]
    if not values:
        return False, "no tabular/sequence input saved"
    x = np.concatenate([v.reshape(-1, v.shape[-1]) for v in values])
    if np.all(x == np.round(x)) and x.min() >= 0:  # token ids, not measurements
        return False, "integer token ids"
    scale = np.maximum(np.abs(np.nanmean(x, axis=0)), np.nanstd(x, axis=0))
    return float(scale.max()) > 100, f"largest feature scale {scale.max():.3g} (feature {int(scale.argmax())})"


def improper_output(run: Run, facts: dict) -> Result:
    """The output does not match the loss: probabilities (all in [0, 1]) fed to a loss that expects logits;
    unbounded outputs fed to a loss that expects probabilities; values that are no log-probabilities of the
    classes (positive, or not normalised over the class axis) fed to one that expects them; outputs bounded to
    [0, 1] or [-1, 1] against regression targets 10% or more of which lie outside that range; or a
    mean-squared error against integer class labels with three or more classes."""
    expects = facts.get("loss_expects")
    preds = [v for n in run.matching(facts["predictions"]) for v in run.values(n, "TRAIN").values()]
    if not preds:
        return False, "no predictions saved"
    p = np.concatenate([v.reshape(v.shape[0], -1) for v in preds])
    in_unit = bool(p.min() >= 0 and p.max() <= 1)
    if expects == "logits" and in_unit:
        return True, f"the loss expects logits; the outputs are all in [{p.min():.3g}, {p.max():.3g}]"
    if expects == "log_probs" and p.max() > 1e-3:
        # log-probabilities are <= 0; positive values are logits or scores that were never log-softmaxed
        return True, f"the loss expects log-probabilities (<= 0); the outputs reach {p.max():.3g}"
    if expects == "log_probs" and p.shape[1] > 1:
        # log-probabilities of one row sum to 1 once exponentiated (a log-softmax over another axis does not)
        off = float(np.median(np.abs(np.exp(p).sum(1) - 1)))
        if off > 0.01:
            return True, f"the loss expects log-probabilities over the classes; exp() of a row sums to 1 +- {off:.3g}"
    if expects == "probabilities" and (not in_unit or (p.shape[1] > 1 and not np.allclose(p.sum(1), 1, atol=1e-3))):
        return True, f"the loss expects probabilities; outputs in [{p.min():.3g}, {p.max():.3g}]"
    targets = [v for n in run.matching(facts["labels"]) for v in run.values(n, "TRAIN").values()]
    if expects == "values" and targets:
        # an output squashed into [0, 1] (sigmoid) or [-1, 1] (tanh) against targets it cannot reach
        t = np.concatenate([v.reshape(-1) for v in targets])
        for lo, hi in ((0.0, 1.0), (-1.0, 1.0)):
            if p.min() >= lo and p.max() <= hi:
                out = float(np.mean((t < lo) | (t > hi)))
                if out >= 0.1:
                    return True, (f"outputs within [{lo:g}, {hi:g}] for a regression whose targets are {out:.0%} "
                                  "outside it")
                break
    if expects == "values" and facts.get("targets_are_classes"):
        labels = np.concatenate([v.reshape(-1) for n in run.matching(facts["labels"])
                                 for v in run.values(n, "TRAIN").values()])
        distinct = np.unique(labels)
        if len(distinct) >= 3 and np.all(distinct == np.round(distinct)):
            return True, f"mean squared error against {len(distinct)} integer class labels"
    return False, f"outputs in [{p.min():.3g}, {p.max():.3g}] for a loss expecting {expects}"


def frozen_weights(run: Run, facts: dict) -> Result:
    """At least half of the weight matrices/kernels are identical at the first and last training save while
    their gradients are not all zero, or while the optimizer had no gradient to apply to any weight of the
    model (the PyTorch hook saves gradients as the optimizer sees them at its step: none after a
    ``zero_grad()`` between ``backward()`` and ``step()``)."""
    prefix = facts["gradient_prefix"]
    if "trainable" in facts:
        return _frozen_trainable(run, facts)
    no_gradient_at_all = not any((prefix + w) in run.names for w in facts["weights"])
    unchanged, total = [], 0
    for w in facts["weights"]:
        values = run.values(w, "TRAIN")
        grads = run.values(prefix + w, "TRAIN") if (prefix + w) in run.names else {}
        if len(values) < 2:
            continue
        total += 1
        steps = sorted(values)
        if np.array_equal(values[steps[0]], values[steps[-1]]) and (
                no_gradient_at_all or any(np.any(g != 0) for g in grads.values())):
            unchanged.append(w)
    holds = total > 0 and len(unchanged) * 2 >= total
    return holds, f"{len(unchanged)} of {total} weight tensors unchanged with non-zero gradients"


def _frozen_trainable(run: Run, facts: dict) -> Result:
    """With the facts saying which weights were meant to be trained (``requires_grad`` at the end of the run):
    at least half of them identical at the first and last training save, whatever their gradients (a
    ``.detach()`` in the forward pass leaves them none; a parameter missing from the optimizer has one)."""
    unchanged, total = [], 0
    for w in facts["trainable"]:
        values = run.values(w, "TRAIN")
        if len(values) < 2:
            continue
        total += 1
        steps = sorted(values)
        if np.array_equal(values[steps[0]], values[steps[-1]]):
            unchanged.append(w)
    holds = total > 0 and len(unchanged) * 2 >= total
    return holds, f"{len(unchanged)} of {total} weight tensors meant to be trained never changed"


def tree_too_deep(run: Run, facts: dict) -> Result:
    """Some tree is at least 10 levels deep (read from the saved trees): far past XGBoost's default of 6 and
    the 3-10 its documentation suggests tuning within."""
    depth = _deepest_tree(run)
    if depth < 0 and facts.get("max_depth"):
        # no trees saved (XGBoost cannot dump multi-target trees with their statistics): max_depth bounds them
        return facts["max_depth"] >= 10, f"no trees saved; max_depth={facts['max_depth']} bounds them"
    if depth < 0:
        return None, "no trees saved"
    return depth >= 10, f"deepest tree {depth} levels"


def _deepest_tree(run: Run) -> int:
    """The deepest tree of the run: the largest node depth the hook saved (``trees/Depth``) at any step."""
    if "trees/Depth" not in run.names:
        return -1
    return int(max((v.max() for v in run.values("trees/Depth").values() if v.size), default=-1))


def feature_overweight(run: Run, facts: dict) -> Result:
    """One feature carries at least 80% of the total gain at the last step."""
    gains = {n: run.values(n) for n in run.names if n.startswith("feature_importance/gain/")}
    if not gains:
        return False, "no feature importances saved"
    step = max(max(v) for v in gains.values() if v)
    shares = {n.rsplit("/", 1)[1]: float(v[step].reshape(-1)[0]) for n, v in gains.items() if step in v}
    top = max(shares, key=shares.get)
    return shares[top] >= 0.8, f"feature {top} has {shares[top]:.0%} of the gain"


#: problem class -> the check that makes the label true
CHECKS: Dict[str, Callable[[Run, dict], Result]] = {
    "vanishing_gradient": vanishing_gradient,
    "exploding_nan": nan_or_inf,
    "exploding_finite": finite_explosion,
    "dead_relu": dead_relu,
    "saturated_activation": saturated,
    "poor_weight_init": poor_init,
    "loss_not_decreasing": loss_not_decreasing,
    "slow_convergence": slow_convergence,
    "oscillating_loss": oscillating,
    "overfit": overfit,
    "overtraining": overtraining,
    "class_imbalance": class_imbalance,
    "bad_image_input": bad_images,
    "unnormalised_input": unnormalised_input,
    "improper_output": improper_output,
    "frozen_weights": frozen_weights,
    "tree_too_deep": tree_too_deep,
    "feature_overweight": feature_overweight,
}

#: the checks that apply to a framework's runs (a healthy run must fail every one of them)
_NEURAL_ONLY = {"vanishing_gradient", "dead_relu", "saturated_activation", "poor_weight_init", "frozen_weights",
                "bad_image_input", "unnormalised_input", "improper_output", "exploding_finite", "exploding_nan",
                "oscillating_loss"}
_TREES_ONLY = {"tree_too_deep", "feature_overweight"}


def applicable(framework: str) -> List[str]:
    skip = _NEURAL_ONLY if framework == "xgboost" else _TREES_ONLY
    return [c for c in CHECKS if c not in skip]


def check_labels(path: str, facts: dict, classes: List[str]) -> Dict[str, Result]:
    """Every class's check for a buggy run (each must hold); every applicable check for a healthy one (none
    may hold). A check that cannot read its data reports ``None`` with the error, never a pass."""
    run = Run(path)
    wanted = classes or applicable(facts["framework"])
    results = {}
    for cls in wanted:
        try:
            holds, evidence = CHECKS[cls](run, facts)
            results[cls] = (None if holds is None else bool(holds), evidence)
        except Exception as e:  # noqa: BLE001 - a check that cannot read its data says so, never passes
            results[cls] = (None, f"check failed: {type(e).__name__}: {e}")
    return results
