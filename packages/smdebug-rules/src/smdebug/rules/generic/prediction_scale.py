"""What a classifier's saved predictions are (probabilities, raw margins, class ids...), and their class ids.

A prediction with one score per label (no class axis: a binary classifier's) becomes a class id by a
threshold that depends on what the score is: a probability is class 1 above 0.5, a raw margin or logit above
0, a log-probability above log(0.5); class ids are already ids. Rounding every score as if it were a
probability turned the margins of a healthy XGBoost ``binary:logitraw`` run (-7.5 .. 8) into "ids" 1..8
and negative "ids", and the rules read a sound model as one that mispredicts a whole class.

What a score is, is told by the run, in this order:

* an XGBoost run's objective (the hook's record of the booster, or the ``hyperparameters`` given to it):
  ``binary:logistic``, ``reg:logistic``, ``multi:softprob`` give probabilities, ``binary:logitraw`` margins,
  ``binary:hinge`` and ``multi:softmax`` class ids;
* the loss the hook recorded whose first input is the prediction tensor (``smdebug.core.loss_inputs``): a
  loss on logits (``BCEWithLogitsLoss``, a Keras cross-entropy with ``from_logits=True``) gets margins, one
  on probabilities (``BCELoss``, ``from_logits=False``) probabilities, ``NLLLoss`` log-probabilities;
* otherwise the values themselves, only where they leave no doubt: integers (or floats without fractions)
  are ids, values all in [0, 1] probabilities. Scores with fractions outside [0, 1] are logits or margins
  whose threshold nothing records, or a regression's values: no class id is derived from them (the caller
  says so rather than guess).
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np

from smdebug.core import loss_inputs
from smdebug.rules.generic.xgboost_rules import booster_params

IDS = "class ids"
PROBABILITIES = "probabilities"
MARGINS = "raw margins (logits)"
LOG_PROBABILITIES = "log-probabilities"

#: fewest values of a loss's logits all in [0, 1] that are read as probabilities instead (see scores_to_ids)
MIN_TO_DOUBT = 20

#: the decision threshold of one score per label, by what the score is (class 1 above it)
THRESHOLDS = {PROBABILITIES: 0.5, MARGINS: 0.0, LOG_PROBABILITIES: math.log(0.5)}

#: XGBoost objectives of classifiers, by what ``Booster.predict`` returns for them
_XGBOOST = {
    "binary:logistic": PROBABILITIES,
    "reg:logistic": PROBABILITIES,
    "multi:softprob": PROBABILITIES,
    "binary:logitraw": MARGINS,
    "binary:hinge": IDS,
    "multi:softmax": IDS,
}

_BY_LOSS = {loss_inputs.LOGITS: MARGINS, loss_inputs.PROBABILITIES: PROBABILITIES,
            loss_inputs.LOG_PROBABILITIES: LOG_PROBABILITIES}


def recorded_kind(trial, name: str) -> Optional[Tuple[str, str]]:
    """``(kind, what told it)`` of the prediction tensor ``name`` from what the run records: its XGBoost
    objective, else the recorded loss whose first input ``name`` is. None when the run tells nothing (a
    custom objective, a loss expecting something else, no record)."""
    params = booster_params(trial)
    objective = params.get("objective")
    if isinstance(objective, str) and not params.get("custom_objective"):
        kind = _XGBOOST.get(objective.strip())
        if kind is not None:
            return kind, f"XGBoost objective {objective.strip()}"
    for loss in loss_inputs.recorded_losses(trial) or []:
        kind = _BY_LOSS.get(loss.expects)
        if kind is not None and name in loss.prediction_names([name]):
            return kind, f"the loss {loss.type} takes {kind}"
    return None


def scores_to_ids(scores: np.ndarray, told: Optional[Tuple[str, str]]) -> Tuple[Optional[np.ndarray], str]:
    """Class ids of ``scores`` (one score per label, no class axis), and how they were derived; ``(None,
    why)`` when nothing says how (scores with fractions outside [0, 1] and no record of what they are)."""
    if scores.dtype.kind in "iub":
        return scores.astype(np.int64), "class ids"
    kind, source = told if told is not None else (None, "")
    finite = scores[np.isfinite(scores)] if scores.size else scores
    if (kind == MARGINS and finite.size >= MIN_TO_DOUBT and finite.min() >= 0 and finite.max() <= 1
            and not np.all(finite == np.round(finite))):
        # Logits never all land in [0, 1]: these are probabilities given to a loss that takes logits (a sigmoid
        # before BCEWithLogitsLoss: ImproperOutput's finding). The model as the script uses it thresholds them at
        # 0.5; at the recorded 0 every row was "class 1" (probe 19a W2, 17a F3: a 93.6% accurate model read as one
        # that never predicts class 0)
        kind, source = PROBABILITIES, f"values all in [0, 1], though {source}"
    if kind is None:
        if not finite.size or np.all(finite == np.round(finite)):
            kind, source = IDS, "values without fractions"
        elif finite.min() >= 0 and finite.max() <= 1:
            kind, source = PROBABILITIES, "values all in [0, 1]"
        else:
            return None, (f"one score per label with fractions, in [{finite.min():.4g}, {finite.max():.4g}]: "
                          "neither probabilities nor class ids, and the run records nothing that says what they "
                          "are (logits or margins have their own threshold): no class is derived from them")
    with np.errstate(invalid="ignore"):
        if kind == IDS:
            ids, how = np.floor(scores + 0.5), f"{kind} ({source})"
        else:
            threshold = THRESHOLDS[kind]
            ids, how = (scores > threshold).astype(np.float64), f"{kind} above {threshold:.3g} ({source})"
    # (a score that is not finite is no class: -1, which the rules ignore or count as mispredicted)
    return np.where(np.isfinite(scores), ids, -1).astype(np.int64), how
