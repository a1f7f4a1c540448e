"""Rules on what goes into the model and what comes out of it: UnnormalizedInput (tabular or sequence
features left in their raw units) and ImproperOutput (an output activation the loss does not expect).

Both problem classes are from AUTOTRAINER (ICSE'21) and DeepDiagnosis (ICSE'22), which found them among the
commonest causes of a model that trains badly without any NaN: an input feature in the thousands saturates
the first layer and dominates the gradient; a softmax fed to a loss that applies log-softmax itself
flattens the gradient; a classification trained with a squared error against the class index learns an
ordering of the classes that does not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import numpy as np

from smdebug.core import loss_inputs
from smdebug.core.modes import ModeKeys
from smdebug.core.run_info import labels_shifted_twice
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic import counted_padding
from smdebug.rules.generic.activation_rules import batches_at
from smdebug.rules.generic.ignored_targets import class_axes, framework_axis
from smdebug.rules.generic.input_statistics import InputStatistics, feature_scales, typical_row_norm
from smdebug.rules.generic.loss_rules import mode_label
from smdebug.rules.generic.selection import members, select_tensors, stopped_on_request
from smdebug.rules.generic.xgboost_rules import cross_validation, objective_as_loss
from smdebug.rules.params import as_float, as_int, as_list
from smdebug.rules.rule import Rule


#: how many times apart the evaluation and training batches' typical feature scale may be: a validation set is
#: drawn from the training data's distribution (a few percent apart); one split scaled and not the other is off by
#: the scaling's factor (16 for 4-bit pixels, 255 for 8-bit ones, a feature's standard deviation)
SPLIT_FACTOR = 4.0
#: a row this many times the typical row's norm is an outlier (reported with squashed inputs: what a scaler
#: fitted on the table with it made of the other rows)
OUTLIER_FACTOR = 100.0


def _floats(values: List[np.ndarray]) -> List[np.ndarray]:
    return [v for v in values if v.dtype.kind == "f" and v.size]


class UnnormalizedInput(Rule):
    """Fires when a tabular or sequence input of the model has a feature far from unit scale.

    Inspects the tensors of ``collection_names`` (``inputs``: the model's own inputs, which the hooks save
    there) with 2 dimensions (batch, features) or 3 (batch, time, features); images (4 dimensions and more)
    are CheckInputImages' job. Integer and boolean inputs of any rank (a 1-D batch of node or item ids as much
    as ``(N, T)`` tokens) are token or category ids, not measurements, and are skipped, as are float tables of
    non-negative whole numbers that look like ids outside PyTorch (one column, or values that repeat as codes
    do; a float input of a PyTorch model is measurements, whole numbers or not: its ids must be integers) (the verdict is NotApplicable when the model's input is only images or
    ids). At a step where such an input was saved (at least ``min_samples`` rows, pooled over workers, and
    over consecutive saves when one save holds fewer: a batch size of 8), per feature ``j`` (the last axis)::

        scale_j = max(|mean_j|, std_j)

    and the rule fires when ``max_j scale_j > threshold``. A standardised feature has scale about 1; a
    feature min-max scaled to [0, 1] below 1; features left as measured (areas, amounts, sensor readings)
    reach the hundreds or thousands. It fires too when the input is squashed towards 0: when the typical row
    (the median over the rows that are not all zeros of a row's Euclidean norm over its features) is below
    ``threshold_low``, every sample is so close to 0 that the first layer, initialised for inputs of unit
    scale, sees almost the same input for every sample (its bias) and learns nothing from it (a min-max scaler
    fitted while an outlier row was in the table, a unit conversion or a division by 255 applied twice). That
    is judged over the table, never feature by feature: a feature of tiny values beside features of unit scale
    (a rare flag, a near-constant column) is data; and over the model's inputs as a whole: a small input
    beside another float input of ordinary size saved at the same step is small by design (a noise level). Unless the model standardises them itself: a saved pair of per-feature
    statistics (a mean and a variance of one layer, one value per feature: Keras's adapted ``Normalization``, a
    first ``BatchNormalization``'s moving statistics, at their last save) that brings every feature of the
    input to a scale of at most ``threshold`` (:mod:`.input_statistics`); a PyTorch ``BatchNorm1d``'s running
    statistics are buffers, which the torch hook saves in ``normalization_statistics`` when asked
    (Hook.recommended does, for this rule).

    It also fires when the model's input carries no information: a float table or sequence (at least
    ``min_samples`` samples) whose samples are all identical (all zeros from an inverted mask, one sample
    repeated) at every step that saved it, with no input of the model varying across its samples at those
    steps; judged once training has ended, at its last save, and the finding names the input, its value and
    the steps. The inputs are judged as a whole, never feature by feature: constant columns beside varying
    ones (padding, a rare one-hot column, an image's border) are data, and a constant input beside a varying
    one is constant by design (an RNN's zero initial state, a mask of ones).

    :param threshold: the largest tolerated feature scale (> 0). Default ``"50"``.
    :param threshold_low: the smallest tolerated norm of the typical row (>= 0; 0 for no such test). Default
        ``"0.001"``: a thousandth of what a single standardised feature gives.
    :param min_samples: rows a save must hold to be judged (>= 2). Default ``"16"``.
    :param collection_names: comma-separated collections of input tensors. Default ``"inputs"``.
    :param tensor_regex: comma-separated regexes of more input tensors. Default None.
    """

    def __init__(self, base_trial, threshold="50", min_samples="16", collection_names="inputs", tensor_regex=None,
                 threshold_low="0.001", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.threshold = as_float(rule, "threshold", threshold)
        if not (self.threshold > 0 and np.isfinite(self.threshold)):
            raise SMDebugValueError(f"{rule}: threshold must be a positive number, got {threshold!r}")
        self.threshold_low = as_float(rule, "threshold_low", threshold_low)
        if not (self.threshold_low >= 0 and np.isfinite(self.threshold_low)):
            raise SMDebugValueError(f"{rule}: threshold_low must be a number >= 0, got {threshold_low!r}")
        self.min_samples = as_int(rule, "min_samples", min_samples, minimum=2)
        self.collection_names = as_list(rule, "collection_names", collection_names)
        self.tensor_regex = as_list(rule, "tensor_regex", tensor_regex)
        if not (self.collection_names or self.tensor_regex):
            raise SMDebugValueError(f"{rule}: give collection_names or tensor_regex")
        #: input tensor -> why it is no table of measurements (an image, ids)
        self._not_tables: Dict[str, str] = {}
        self._statistics = InputStatistics(base_trial)
        #: float inputs seen holding fractions: measurements, whatever a later save holds
        self._tables: Set[str] = set()
        #: per input tensor and mode (TRAIN, EVAL): rows seen, and their per-feature sums and sums of squares
        self._by_mode: Dict[str, Dict[ModeKeys, Tuple[int, np.ndarray, np.ndarray]]] = {}
        self._split_said = False  # (the finding of another scale in evaluation is said once)
        #: per input tensor: rows of recent saves too small to judge alone, pooled until min_samples
        self._pools: Dict[str, List[np.ndarray]] = {}
        self._framework: Optional[str] = None  # the run's, "" when unknown (read at the first float input)

    def _not_table(self, name: str, reason: str) -> None:
        self._not_tables[name] = reason
        self.not_applicable(reason)

    def invoke_at_step(self, step):
        judged = False
        # what the inputs seen so far are, when they are no table of measurements: said at every step (the
        # verdict is NotApplicable if no step offered a table: the model takes no such input)
        for reason in self._not_tables.values():
            self.not_applicable(reason)
        names = select_tensors(self.base_trial, self.collection_names, self.tensor_regex)
        saved = [(name, value) for name in names for value in batches_at(self.base_trial, name, step) if value.size]
        constant = self._constant_inputs(step, saved)
        sized = self._sized_inputs(saved)
        for name, value in saved:
            if value.ndim >= 4:
                self._not_table(name, f"the model's input is an image: {name} has {value.ndim} dimensions "
                                      "(CheckInputImages judges images)")
                continue
            if name in constant:
                judged = True  # (judged as a whole: see _constant_inputs)
                self.mark_evaluated(name)
                continue
            if value.dtype.kind in "iub":
                # (of any rank: a 1-D batch of node, user or item ids is as much an index as a (N, T) of tokens)
                kind = "booleans, a mask or flags" if value.dtype.kind == "b" else "integers"
                self._not_table(name, f"the model's input is token or category ids, not measurements: {name} "
                                      f"holds {kind} ({value.ndim}-D; token, node, user or item ids)")
                continue
            if value.ndim not in (2, 3):
                continue
            if value.dtype.kind == "f" and name not in self._tables and self._float_ids(value):
                self._not_table(name, f"the model's input is token or category ids: {name} holds "
                                      "non-negative whole numbers that repeat as codes do, not measurements")
                continue
            if value.dtype.kind != "f":
                continue
            # (an input that held fractions once is measurements: its whole-number saves too -- pixels left at
            # 0-16 in the validation split only)
            self._tables.add(name)
            self._not_tables.pop(name, None)
            x = value.reshape(-1, value.shape[-1]).astype(np.float64)
            if not np.all(np.isfinite(x)):
                continue
            mismatch = self._split_mismatch(name, step, x)
            if mismatch:
                return mismatch
            over = ""
            if x.shape[0] < self.min_samples:
                # a batch smaller than min_samples (batch size 8): the rows of consecutive saves are pooled until
                # they are enough, rather than never judged
                pool = self._pools.setdefault(name, [])
                if pool and pool[-1].shape[1] != x.shape[1]:
                    pool.clear()
                pool.append(x)
                if sum(len(p) for p in pool) < self.min_samples:
                    continue
                x, over = np.concatenate(pool), f" of {len(pool)} saves"
                pool.clear()
            judged = True
            self.mark_evaluated(name)
            scale = feature_scales(x)
            j = int(np.argmax(scale))
            if scale[j] > self.threshold:
                inside = self._statistics.standardising(x, self.threshold)
                if inside:
                    # (the model standardises the raw features itself: its first layer that learns sees them
                    # at unit scale)
                    self.logger.debug("%s: %s at step %d is standardised inside the model by %s", self.rule_name,
                                      name, step, inside)
                    continue
                return (f"{name}: feature {j} has scale {scale[j]:.4g} (mean {x[:, j].mean():.4g}, std "
                        f"{x[:, j].std():.4g}) > threshold {self.threshold:g} over {x.shape[0]} rows{over}; "
                        f"{int((scale > self.threshold).sum())} of {x.shape[1]} features above it")
            squashed = self._squashed(name, x, scale, over) if not sized - {name} else None
            if squashed:
                return squashed
        if constant:
            found = self._no_information(step)
            if found:
                return found
        if not judged:
            self.not_evaluated(f"judges steps where a float 2-D or 3-D input with at least min_samples="
                               f"{self.min_samples} rows was saved")
        return False

    def _sized_inputs(self, saved: List[Tuple[str, np.ndarray]]) -> Set[str]:
        """The float inputs saved at a step (tables, sequences, images) whose typical row is at least
        ``threshold_low``: beside one of them, a squashed input is an auxiliary one small by design (a noise
        level, a time step), as a constant input beside a varying one is (the inputs are judged as a whole)."""
        sized = set()
        for name, value in saved:
            if value.dtype.kind == "f" and value.ndim >= 2 and value.size and np.isfinite(value).all():
                if not typical_row_norm(value.reshape(-1, value.shape[-1]).astype(np.float64)) < self.threshold_low:
                    sized.add(name)
        return sized

    def _squashed(self, name: str, x: np.ndarray, scale: np.ndarray, over: str) -> Optional[str]:
        """The finding when the table's typical row is below ``threshold_low`` (see the class docstring), unless
        the model standardises the input itself to rows of at least that size."""
        typical = typical_row_norm(x)
        if not 0 < typical < self.threshold_low:
            return None
        inside = self._statistics.standardising(x, self.threshold, floor=self.threshold_low)
        if inside:
            self.logger.debug("%s: %s is standardised inside the model by %s", self.rule_name, name, inside)
            return None
        norms = np.sqrt(np.square(x).sum(axis=1))
        outliers = int((norms > OUTLIER_FACTOR * typical).sum())
        said = (f"; {outliers} of the rows are over {OUTLIER_FACTOR:g} times the typical one (largest norm "
                f"{norms.max():.3g}): outliers" if outliers else "")
        return (f"{name}: its samples are squashed towards 0: the typical row's norm over its {x.shape[1]} "
                f"features is {typical:.3g} < threshold_low {self.threshold_low:g} over {x.shape[0]} rows{over} "
                f"(median feature scale {float(np.median(scale)):.3g}, largest {float(scale.max()):.3g}){said}; "
                f"the first layer sees almost the same input for every sample: check the scaling (a min-max "
                f"scaler fitted while outlier rows were in the data, a unit conversion or a division applied twice)")

    def _float_ids(self, value: np.ndarray) -> bool:
        """Whether a float input holds token or category ids rather than measurements. Never in a PyTorch run:
        ``nn.Embedding`` and ``one_hot`` take integer tensors only, so a float tensor fed to the model is
        measurements there, whole numbers or not (counts, amounts in cents, ages). Elsewhere (a Keras ``Input``
        and an MXNet array are float32 unless told otherwise, ids included) non-negative whole numbers that
        look like ids: one column (a user or item id), values that repeat as the codes of a vocabulary do (at
        most half as many distinct values as values: tokens, categories), or columns that share one range (a
        sequence of ids from one vocabulary: every column that is not all zeros reaches a tenth of the
        table's largest value). A table of counts or amounts of different things has nearly every value
        distinct and columns orders of magnitude apart; it is judged as measurements."""
        if self._framework is None:
            from smdebug.core.run_info import framework_of

            self._framework = framework_of(self.base_trial) or ""
        if self._framework == "pytorch":
            return False
        if not (value.min() >= 0 and np.all(value == np.round(value))):
            return False
        if value.shape[-1] == 1 or 2 * len(np.unique(value)) <= value.size:
            return True
        reach = value.reshape(-1, value.shape[-1]).max(axis=0)
        reach = reach[reach > 0]
        return bool(reach.size == 0 or reach.min() * 10 >= reach.max())

    def _split_mismatch(self, name: str, step: int, x: np.ndarray) -> Optional[str]:
        """The finding when the input's evaluation batches are on another scale than its training batches: per
        feature, ``max(|mean|, std)`` of every EVAL-mode row saved so far against every TRAIN-mode row's (at least
        ``min_samples`` of each, two features or more), and the median feature's ratio more than
        :data:`SPLIT_FACTOR`-fold either way, unless in one split most features have their scale set by one
        row (half their sum of squares or more: an outlier, not a scaling of the split). A validation set is drawn from the data the model trains on; a
        scaling or normalisation applied to one split only shows as every feature off by the same factor (pixels
        divided by 16 for training only: the validation loss 3 times the training loss, no rule said why).
        Said once."""
        mode = self.base_trial.mode(step)
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL) or self._split_said:
            return None
        sums = self._by_mode.setdefault(name, {})
        if any(len(total[1]) != x.shape[1] for total in sums.values()):
            return None  # (another width in another mode: not the same input)
        count, first, second, largest = sums.get(mode, (0, 0.0, 0.0, 0.0))
        sums[mode] = (count + len(x), first + x.sum(axis=0), second + (x * x).sum(axis=0),
                      np.maximum(largest, (x * x).max(axis=0)))
        if mode != ModeKeys.EVAL or any(sums.get(m, (0,))[0] < self.min_samples for m in (ModeKeys.TRAIN,
                                                                                        ModeKeys.EVAL)):
            return None
        scale, carried = {}, {}
        for m in (ModeKeys.TRAIN, ModeKeys.EVAL):
            count, first, second, largest = sums[m]
            mean = first / count
            scale[m] = np.maximum(np.abs(mean), np.sqrt(np.maximum(second / count - mean * mean, 0.0)))
            # (per feature: one row holds half its sum of squares or more, so that row sets its scale)
            with np.errstate(all="ignore"):
                carried[m] = largest >= 0.5 * second
        both = (scale[ModeKeys.TRAIN] > 0) & (scale[ModeKeys.EVAL] > 0)
        if both.sum() < 2:
            return None
        if any(carried[m][both].mean() > 0.5 for m in carried):
            # most features' scale in one split is one row's: an outlier sets it, not the split's scaling (a
            # sentinel row in the training data); the rows are judged as they are instead (_squashed)
            return None
        ratio = scale[ModeKeys.EVAL][both] / scale[ModeKeys.TRAIN][both]
        fold = np.maximum(ratio, 1 / ratio)
        if not np.median(fold) > SPLIT_FACTOR:
            return None
        self._split_said = True
        return (f"{name}: its evaluation (EVAL) batches are on another scale than its training batches: the median "
                f"feature's max(|mean|, std) is {float(np.median(ratio)):.3g} times its training value, "
                f"{int((fold > SPLIT_FACTOR).sum())} of {int(both.sum())} features more than {SPLIT_FACTOR:g}-fold "
                f"apart ({sums[ModeKeys.EVAL][0]} EVAL rows, {sums[ModeKeys.TRAIN][0]} TRAIN rows): the validation "
                f"data is not prepared as the training data is (a scaling or normalisation applied to one split only?)")

    def _constant_inputs(self, step: int, saved: List[Tuple[str, np.ndarray]]) -> Dict[str, np.ndarray]:
        """The float tables or sequences (2-D, 3-D, at least ``min_samples`` samples) saved at ``step`` whose
        samples are all identical, when no input of the model saved there varies across its samples: then
        the model is shown nothing that tells one sample from another (all zeros: an inverted mask, a wrong
        column; one sample repeated). Judged for the inputs as a whole: a constant input beside one that
        varies is a constant by design (an RNN's zero initial state, a mask of ones, one task's id), and a
        constant feature beside others that vary (padding, a rare one-hot column, an image's border) is data.
        Every such step is remembered; :meth:`_no_information` judges the run."""
        tables, varies = {}, False
        for name, value in saved:
            if value.ndim < 1 or value.shape[0] < 2 or value.dtype.kind not in "fiub":
                continue
            rows = value.reshape(value.shape[0], -1)
            same = bool(np.all(rows == rows[:1]))
            if not same:
                varies = True
            elif (value.dtype.kind == "f" and value.ndim in (2, 3) and value.shape[0] >= self.min_samples
                  and np.all(np.isfinite(rows))):
                tables[name] = rows[0]
        if not tables:
            return {}
        record = self.__dict__.setdefault("_constancy", {"steps": [], "varied": None, "values": {}})
        if varies:
            record["varied"] = record["varied"] if record["varied"] is not None else step
            return {}
        record["steps"].append(step)
        for name, row in tables.items():
            record["values"][name] = row
        return tables

    def _no_information(self, step: int) -> Optional[str]:
        """The finding once training has ended, at the last save of the constant inputs, when at every step
        that saved them no input of the model varied across its samples."""
        record = self.__dict__["_constancy"]
        names = sorted(record["values"])
        last = max(s for n in names for s in self.base_trial.tensor(n).steps()[-1:])
        if record["varied"] is not None or not self.base_trial.loaded_all_steps or step != last:
            return None
        steps = record["steps"]
        described = []
        for name in names:
            row = record["values"][name]
            if not np.any(row):
                what = "every value 0"
            elif np.all(row == row[0]):
                what = f"every value {row[0]:.4g}"
            else:
                what = (f"each of its {row.size} values per sample the same in every sample, from "
                        f"{row.min():.4g} to {row.max():.4g}")
            described.append(f"{name} ({what})")
        return (f"the model's input carries no information: every sample is identical at each of the {len(steps)} "
                f"saves judged (steps {steps[0]}-{steps[-1]}): {'; '.join(described)}; no input tells one sample "
                "from another (a preprocessing fault: a mask applied inverted, features dropped or zeroed, one "
                "sample repeated)")


#: PyTorch's regression losses (they broadcast an output and a target of different shapes, only warning)
TORCH_REGRESSION_LOSSES = ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss")
# what a loss expects of its first input, for runs whose hook recorded no losses (the original smdebug's):
# PyTorch loss classes, as the hook names a loss module's tensors (<LossClass>_input_0)
_EXPECTS_BY_CLASS = {
    **dict.fromkeys(("CrossEntropyLoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss"), loss_inputs.LOGITS),
    **dict.fromkeys(("NLLLoss", "KLDivLoss", "CTCLoss"), loss_inputs.LOG_PROBABILITIES),
    **dict.fromkeys(TORCH_REGRESSION_LOSSES, loss_inputs.REGRESSION),
}
#: log-probabilities are <= 0 (log-softmax computes x - max - log(sum exp(x - max)), never above 0 even in half
#: precision); a value above this is a raw score
LOG_PROBABILITY_TOLERANCE = 1e-3
#: probabilities lie in [0, 1] (a softmax or sigmoid in half precision rounds to 1 at most); beyond this margin a
#: value is a raw score
PROBABILITY_TOLERANCE = 1e-3
#: a softmax's rows sum to 1 up to rounding (half precision over many classes included)
ROW_SUM_TOLERANCE = 5e-3
#: a row of probabilities given to a categorical cross-entropy is off a distribution when its sum is further than
#: this from 1: twenty times ROW_SUM_TOLERANCE, beyond any rounding of a softmax (bfloat16 included, whose
#: rounding moves a row's sum by at most 2**-8); independent sigmoids over K classes sum to about K/2
ROW_SUM_OFF = 0.1
#: Keras' categorical cross-entropies (names lower-case, with no underscores): they take one probability
#: *distribution* per row (they divide each row by its sum, silently), unlike the binary ones, whose every output
#: is a probability of its own (multi-label sigmoids are right there)
_CATEGORICAL_ON_PROBABILITIES = {"categoricalcrossentropy", "sparsecategoricalcrossentropy",
                                 "categoricalfocalcrossentropy"}


def _row_spread(rows: np.ndarray) -> float:
    """How much ``rows`` (one per sample, on axis 0) differ from one another: the root mean square over the other
    axes of the standard deviation across the rows. 0 when every row is the same."""
    flat = rows.reshape(rows.shape[0], -1).astype(np.float64, copy=False)
    return float(np.sqrt(np.mean(np.var(flat, axis=0)))) if flat.size else 0.0


def _same_rows(rows: np.ndarray) -> bool:
    """Whether every row of ``rows`` is the same value, up to float rounding."""
    flat = rows.reshape(rows.shape[0], -1).astype(np.float64, copy=False)
    return bool(np.all(np.abs(flat - flat[:1]) <= SAME_ROWS * max(float(np.max(np.abs(flat))), 1e-30)))


def _categorical(loss_type: str) -> bool:
    """Whether a loss of this (recorded) type takes a probability distribution per row."""
    return loss_type.replace("_", "").lower() in _CATEGORICAL_ON_PROBABILITIES


def _broadcast(p_shape: Tuple[int, ...], y_shape: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
    """The shape PyTorch broadcasts an output and a target of these shapes to, when it holds more values than
    either (every output compared with every target of another sample: ``(N, 1)`` against ``(N,)`` gives
    ``(N, N)``); None when the shapes are equal or their broadcast adds nothing."""
    if p_shape == y_shape:
        return None
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(p_shape, y_shape))
    except ValueError:
        return None
    size = int(np.prod(shape))
    return shape if size > int(np.prod(p_shape)) and size > int(np.prod(y_shape)) else None


def _softmax_rows(p: np.ndarray) -> bool:
    """Whether ``p`` holds probability rows over at least 2 classes, summing to 1: the class axis is the last
    (Keras) or, with more than 2 dimensions, the second (PyTorch's ``(N, C, d1, ...)``)."""
    if p.ndim < 2:
        return False
    for axis in {p.ndim - 1, 1}:
        if p.shape[axis] >= 2 and np.all(np.abs(p.sum(axis=axis, dtype=np.float64) - 1) <= ROW_SUM_TOLERANCE):
            return True
    return False


#: the most values of one save whose log-probability rows are summed (a language model's (N, T, vocabulary)
#: output is read on its first samples: the rows of a few are as telling as all, and memory stays bounded)
LOG_ROWS_VALUES = 1 << 22


def _log_rows_off(p: np.ndarray) -> Optional[Tuple[int, int]]:
    """``(rows, rows off)`` of log-probabilities ``p``: over the axes where ``exp(p)`` comes closest to summing
    to 1 (the class axis is the second, PyTorch's ``(N, C, d1, ...)``, or the last, CTC's ``(T, N, C)`` and
    Keras/Gluon's; a distribution may span the trailing axes, as a heatmap's ``(N, K, H, W)`` or ``(N, H, W)``
    does), how many groups of at least 2 values there are and how many of them sum further than ROW_SUM_OFF
    from 1. The first axis (the batch) is a candidate only when it is as long as the class axis: a contrastive
    loss's ``(N, N)`` similarities normalised over the batch, the other direction of a symmetric loss, are right.
    None when no grouping holds 2 values."""
    if p.ndim < 2 or p.shape[0] == 0:
        return None
    candidates = {(1,), (p.ndim - 1,), tuple(range(1, p.ndim)), tuple(range(max(1, p.ndim - 2), p.ndim))}
    per_sample = p.size // p.shape[0]
    if p.size > LOG_ROWS_VALUES:
        p = p[: max(1, LOG_ROWS_VALUES // max(per_sample, 1))]
    elif p.shape[0] in (p.shape[1], p.shape[-1]):
        candidates.add((0,))
    q = np.exp(p.astype(np.float64, copy=False))
    best: Optional[Tuple[int, int]] = None
    for axes in candidates:
        if int(np.prod([p.shape[a] for a in axes])) < 2:
            continue
        sums = q.sum(axis=axes)
        off = int(np.count_nonzero(np.abs(sums - 1) > ROW_SUM_OFF))
        if best is None or off * best[0] < best[1] * sums.size:
            best = (int(sums.size), off)
    return best


#: a Poisson loss as the PyTorch hook records it, with its flag: ``PoissonNLLLoss(log_input=True)``
_POISSON = re.compile(r"^PoissonNLLLoss\(log_input=(True|False)\)$")


def poisson_log_input(loss_type: str) -> Optional[bool]:
    """Whether a recorded Poisson loss takes log-rates (``log_input=True``) or rates; None for another loss."""
    m = _POISSON.match(loss_type)
    return None if m is None else m.group(1) == "True"


def _label(loss: loss_inputs.LossInputs) -> str:
    """How verdicts name a recorded loss: its type, and the hook's name for it where that differs (other than by
    the flags recorded with the type: ``PoissonNLLLoss(log_input=True)`` is the loss the hook names
    ``PoissonNLLLoss``)."""
    same = loss.name == loss.type or loss.type.startswith(loss.name + "(")
    return loss.type if same else f"{loss.type} ({loss.name})"


#: what a loss is judged on: (its first input's tensor, its targets' tensor or None, what it expects, its type)
_Judged = Tuple[str, Optional[str], str, str]


def _judged_once(found: Dict[str, _Judged]) -> Dict[str, _Judged]:
    """``found`` keeping the first of the losses that read the same tensors and judge them alike (same kind and
    type): judging a copy again says nothing new, and a record listing one loss thousands of times under other
    names read the same tensors thousands of times at every step."""
    first: Dict[_Judged, str] = {}
    for label, judged in found.items():
        first.setdefault(judged, label)
    return {label: judged for judged, label in first.items()}


@dataclass
class _Seen:
    """What a loss's first input and targets looked like over the saves read so far."""

    low: float = np.inf
    high: float = -np.inf
    values: int = 0
    zeros: int = 0  # outputs exactly 0
    outputs_per_row: Optional[int] = None
    softmax_rows: bool = True  # every save's rows sum to 1
    rows: int = 0  # rows over >= 2 classes (the last axis) seen
    rows_off: int = 0  # ... whose sum is further than ROW_SUM_OFF from 1
    log_rows: int = 0  # rows of log-probabilities seen (over the axes that normalise best, see _log_rows_off)
    log_rows_off: int = 0  # ... whose exp() sums further than ROW_SUM_OFF from 1
    #: target id -> count while every target is a non-negative integer (None once one is not)
    ids: Optional[Dict[int, int]] = field(default_factory=dict)
    #: saves of the loss's first input left out for holding NaN or infinity, their values, and the first one's step
    nonfinite_saves: int = 0
    nonfinite_values: int = 0
    first_nonfinite: Optional[int] = None


#: class labels of a data set made for classification are roughly balanced (ClassImbalance calls a ratio of the
#: most to the least frequent class above 10 imbalanced); a count's or a rating's values are not: a count's small
#: values outnumber its tail by far
BALANCED_IDS_RATIO = 10.0
#: logits clamped at 0 (a ReLU left after the last layer): at least this share of a run's logits exactly 0
CLAMPED_SHARE = 0.1

#: an output that ignores the model's input (see ImproperOutput: "an output that does not depend on the input"):
#: its spread across the rows under this share of the spread of what it is compared with. A prediction fitted by
#: least squares spreads as sqrt(R^2) times its targets, so this is a model that explains under 0.1% of their
#: variance: a weak model on noisy targets (R^2 of a few percent) spreads 5-10 times more
IGNORED_INPUT_SHARE = 0.03
#: ... and this many times less than at the first save of the output (a model that learned to ignore its input;
#: units that differ from the targets' -- a log-rate against counts -- keep their spread as the model trains)
IGNORED_INPUT_SHRINK = 10.0
#: rows the spread is measured over, pooled from the last saves (a batch of 4 tells nothing of a spread)
IGNORED_INPUT_ROWS = 16
#: rows this close to each other (relative to the output's largest value) are one value: float rounding
SAME_ROWS = 1e-6

#: losses over class-index targets, one per position of a sequence (PyTorch's): their padding test (see
#: counted_padding) is judged at this many saves at most
_PER_TOKEN_CLASSIFICATION = ("CrossEntropyLoss", "NLLLoss")
PADDING_SAVES = 3

_LOSS_TENSOR = re.compile(r"^(?:.*[/_.])?(?P<loss>[A-Za-z0-9]+Loss)_(?:input|output)_\d+$")
# the loss a model computes in its own forward (a Hugging Face model given labels): recorded under this name,
# its value saved as loss_output_<i> (smdebug.pytorch.model_loss)
_MODEL_OWN_LOSS = "loss"
_MODEL_OWN_LOSS_OUTPUT = re.compile(r"^loss_output_\d+$")


#: framework -> (how its scripts compute a loss the hook cannot see, how to tell the hook which loss it is); the
#: hook then records what the loss expects (smdebug.core.loss_inputs) and saves its inputs
_REGISTER_THE_LOSS = {
    "tensorflow": ("in a custom train_step or a GradientTape loop, with a loss function or TensorFlow ops",
                   "hook.register_loss(loss_fn) before training, loss_fn being the Keras loss object or function "
                   "the step calls"),
    "pytorch": ("with torch.nn.functional or tensor operations, or a loss module the hook was not given",
                "compute it with a loss module (nn.CrossEntropyLoss()...) and hook.register_loss(loss_module)"),
    "mxnet": ("outside a Gluon loss block the hook was given", "hook.register_block(loss_block)"),
    # (an XGBoost run's losses are the booster's evaluation metrics: the loss is its objective, which the
    # XGBoost hook records from the booster; there is nothing to register)
    "xgboost": ("", "smdebug.xgboost.Hook records the booster's objective; the rule compares the 'predictions' "
                "and 'labels' collections, saved for the hook's validation_data"),
    "": ("", "register the loss with the hook (hook.register_loss)"),
}


class ImproperOutput(Rule):
    """Fires when what the model outputs does not fit the loss it is trained with.

    Which loss a run was trained with, and what it expects of the model's output, is what the hook recorded
    (``smdebug.core.loss_inputs``: PyTorch loss modules and Gluon loss blocks by class and flags, the loss a
    Keras model was compiled with, ``from_logits`` included); the loss's inputs are the ``loss_inputs``
    collection (``Hook.recommended`` saves it). For runs with no such record (the original smdebug's), PyTorch
    loss modules are recognised from their tensors' names (``<LossClass>_input_0``, ``_input_1``). Pooled
    over the saves seen so far (from at least ``min_values`` output values), with ``p`` the output as the
    loss gets it and ``y`` the targets:

    * a loss that applies (log-)softmax or sigmoid itself (``CrossEntropyLoss``, ``BCEWithLogitsLoss``, a
      Keras cross-entropy with ``from_logits=True``) gets probabilities, not logits (a softmax or sigmoid
      applied twice; the gradient flattens as the outputs saturate): outputs all in [0, 1] whose rows (over 2
      classes or more) each sum to 1, a softmax's, at once; other outputs in [0, 1] (a sigmoid's) once the run
      has ended without any leaving that range -- a model's logits start out small (all zero behind a
      zero-initialised head) and leave [0, 1] as it learns; or logits clamped at 0: none below 0, some above,
      and at least 10% exactly 0 (a ReLU left after the last layer: a linear layer's outputs are exactly 0 only
      all at once, behind a zero-initialised head at its first step);
    * a loss that wants probabilities (a Keras cross-entropy with ``from_logits=False``, its default) gets
      outputs below 0 or above 1 (beyond ``1e-3``): raw scores, the output activation forgotten (Keras clips
      them into (0, 1), and whatever lies outside gets no gradient);
    * a categorical cross-entropy that wants probabilities (Keras' ``categorical_crossentropy``, its sparse and
      focal kinds, with ``from_logits=False``) gets rows (the last axis, over 2 classes or more) most of which do
      not sum to 1 (further than 0.1 from it, far beyond a softmax's rounding): independent sigmoids, not a
      softmax: the model's outputs are no class probabilities (Keras 3 computes the loss from the logits under
      an output activation of its own, so training matches a softmax's, probe 16b F4; it divides each row of any
      other output by its sum, silently). The binary cross-entropies are not held to it:
      each of their outputs is a probability of its own (multi-label sigmoids);
    * a loss that wants log-probabilities (``NLLLoss``, ``KLDivLoss``, ``CTCLoss``) gets outputs all >= 0:
      probabilities, not their logarithm; or outputs above 0 (beyond ``1e-3``): raw scores, the log-softmax
      forgotten (NLLLoss then rewards making the true class's score larger without bound, and the loss falls below 0);
    * a loss that wants log-probabilities gets rows whose ``exp()`` mostly (in more than half of the rows) does
      not sum to 1 within 0.1 over the class axis -- the second, PyTorch's ``(N, C, d1, ...)``, or the last,
      CTC's ``(T, N, C)``, or the trailing axes together, a heatmap's: a log-softmax over the batch axis
      (``dim=0``), or log-scores never normalised (``logsigmoid``). NLLLoss picks the target's value, so raising
      it costs the other classes nothing and the loss still falls. The batch axis counts as a class axis only
      when it is as long as one (a contrastive loss's ``(N, N)`` similarities, normalised over the batch);
    * a cross-entropy or divergence (any of the above) gets targets with one value per output (labels,
      one-hot rows, soft labels: probabilities) outside [0, 1]: labels coded -1/+1 make the loss unbounded
      below;
    * a regression loss of a PyTorch run (``MSELoss``, ``L1Loss``, ``SmoothL1Loss``, ``HuberLoss``) gets an output and
      targets whose shapes broadcast to more values than either (``(N, 1)`` against ``(N,)`` gives ``(N, N)``:
      every output against the target of every sample; PyTorch only warns), judged at the first save of both;
    * a regression loss (squared, absolute, Huber error) on one output per sample gets targets that are the
      class ids ``0 .. K-1`` (every one present, ``3 <= K <= max_classes``), roughly balanced (the most frequent
      at most 10 times as frequent as the least, as a data set made for classification is): a classification
      trained as a regression on the class index. Counts and ratings are integers from 0 too, but skewed (a
      count's small values outnumber its tail by far), and a squared error on them is an ordinary regression;
    * a regression loss whose outputs, over the whole finished run, never went below 0, with at least 10% of
      them exactly 0, while at least 10% of its targets are below 0: an output clamped at 0 (a ReLU on the
      output layer, copied from the hidden ones) that cannot reach the negative targets and gets no gradient
      where it is 0 (a linear output is exactly 0 only by chance). Judged, as the next, at the loss's last save;
    * a regression loss whose outputs, over the whole finished run, never left [0, 1] (or [-1, 1]), with at
      least 10% of them within 1% of that range's width from its ends, while at least 10% of its targets lie
      outside it: a sigmoid (tanh) output activation that cannot reach the targets -- it saturates chasing
      them. Judged once training has ended, at the loss's last save: early in training a linear output is
      small too, and only one that stayed inside the range, pressed against its ends, is bounded.

    * a ``PoissonNLLLoss`` (its ``log_input`` flag as the PyTorch hook recorded it) that takes log-rates
      (``log_input=True``, its default) gets outputs that never went below 0 over the whole finished run while
      its targets average below 1: every predicted rate ``exp(input)`` is at least 1, so none reaches the data's
      -- rates (a Softplus, ReLU or exp output) given where their log is expected; or, with ``log_input=False``,
      gets an output below 0: a log-rate (a linear output) where a rate is expected (the loss is NaN there).

    * an output that does not depend on the model's input: the first input of a regression loss, or of a loss
      this rule knows nothing else of (a reconstruction, a user's own: a VAE's), at the trained model's last
      save (its last EVAL save in the second half of a finished run, else its last TRAIN save there; pooled
      back over the late saves to 16 rows at least) spreads across the rows (the root mean square of each
      output's standard deviation over the rows) by under 3% of the spread of its targets -- or, for an output
      shaped as the model's input whose loss saved no such targets (a reconstruction), of that input -- while
      they vary; and it is one value for every row, or spreads at least 10 times less than at its first save.
      The model gives (nearly) the same output for every sample: a VAE's posterior collapsed (its decoder
      ignores the code), dead ReLUs before the output, weights decayed to nothing. A least-squares fit spreads
      as sqrt(R^2) times its targets: 3% is a model explaining under 0.1% of their variance, far below a weak
      model on noisy targets. Not judged when the targets are one value (the best output then is one value: a
      GAN's labels), when the model's input is the same for every row (UnnormalizedInput's), for class ids
      against scores, for a booster's predictions, or on a run a rule stopped or that did not end normally.
      The second condition keeps outputs in other units than their targets (a log-rate against counts) from
      reading as small: they keep their spread as the model trains.

    * a per-token classification loss of a PyTorch run (``CrossEntropyLoss``, ``NLLLoss``) counts the padding of
      its targets: the targets, one row per sequence (flattened ones cut back into the model's input's rows), end
      or start in runs of one id in at least half of the rows, runs of several lengths, and that id is at most 1%
      of the other positions; and the loss value saved with those inputs is the average (or sum) of the
      recomputed cross-entropy over every target that is a class, the padding included, not over the others
      (also with the scores and targets shifted by one, as a causal language model's own loss takes them, and
      divided by the count of targets before that shift, as a Hugging Face model does; :mod:`.counted_padding`;
      judged at the loss's first 3 saves with integer targets and a saved value). The padding is the easiest
      token there is: the loss looks excellent and the real tokens' gradient is diluted. Class weights, label
      smoothing or another ignore_index match neither average: nothing is said then.

    Other losses (ranking, contrastive, a user's own) are judged by the last test only: the verdict is
    NotApplicable when the run has only such losses and that test could not be made. A run whose loss inputs
    were not saved is NotEvaluated, and the verdict names
    the loss and what to save. Saves holding NaN or infinity are left out (they say the model's output broke,
    not what kind of output it is: ExplodingTensor's finding); a run judged nothing for that is NotEvaluated
    saying so, with the step they start at and how many saves and values they held.

    :param min_values: output values to see before judging (>= 1). Default ``"256"``.
    :param max_classes: the most class ids a regression target may have to count as class labels (>= 3).
        Default ``"100"``.
    """

    def __init__(self, base_trial, min_values="256", max_classes="100", other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        rule = self.rule_name
        self.min_values = as_int(rule, "min_values", min_values, minimum=1)
        self.max_classes = as_int(rule, "max_classes", max_classes, minimum=3)
        #: loss -> its outputs and targets pooled over the saves read so far
        self._seen: Dict[str, _Seen] = {}
        #: regression loss -> counts of outputs near the ends of [0, 1] and [-1, 1], of targets and of targets
        #: outside those ranges (the bounded-output test)
        self._bounds: Dict[str, np.ndarray] = {}
        #: the losses that are an XGBoost run's objective (see :meth:`_recorded`)
        self._objectives: set = set()
        self._framework: Optional[str] = None  # the run's, "" when unknown (read when first needed)
        #: Poisson loss -> [targets seen, their sum, how many below 1] (see _poisson)
        self._targets: Dict[str, List] = {}
        #: loss -> (its first input's tensor, its targets' tensor or None) for the test of an output that ignores
        #: the model's input (regression losses, and losses whose output this rule knows nothing else of)
        self._varying: Dict[str, Tuple[str, Optional[str]]] = {}
        #: first input's tensor -> the mode and global steps of its late saves, once training has ended
        self._late: Dict[str, Optional[Tuple[ModeKeys, List[int]]]] = {}
        #: per-token classification loss -> the saves its padding test has judged (see _counted_padding)
        self._padding_saves: Dict[str, int] = {}
        self._said_shifted = False  # (see _labels_shifted_twice: said once)

    def _losses(self) -> Dict[str, Tuple[str, Optional[str], str, str]]:
        """loss -> (the tensor holding its first input, the tensor of its targets or None, what it expects, its
        type), for the losses this rule can judge whose first input the run saved."""
        names = self.base_trial.tensor_names()
        self._varying = {}
        cv = cross_validation(self.base_trial, "predictions")
        if cv is not None and "predictions" not in names:
            self.not_applicable(cv)
            return {}
        recorded = self._recorded()
        found: Dict[str, Tuple[str, Optional[str], str, str]] = {}
        if recorded is not None:
            judged = [loss for loss in recorded
                      if loss.expects != loss_inputs.OTHER or poisson_log_input(loss.type) is not None]
            if recorded and not judged:
                self.not_applicable("the run's losses (" + ", ".join(sorted({loss.type for loss in recorded}))
                                    + ") expect nothing this rule can check of the model's output")
            for loss in judged:
                predictions, targets = loss.prediction_names(names), loss.target_names(names)
                looking_for(f"the inputs of the loss {_label(loss)}", predictions + targets)
                if predictions:
                    found[_label(loss)] = (
                        predictions[0], targets[0] if targets else None, loss.expects, loss.type)
            for loss in recorded:
                predictions, targets = loss.prediction_names(names), loss.target_names(names)
                if (predictions and loss.expects in (loss_inputs.REGRESSION, loss_inputs.OTHER)
                        and _label(loss) not in self._objectives):  # (a booster's: TreeDepth's, see _ignores_input)
                    self._varying[_label(loss)] = (predictions[0], targets[0] if targets else None)
            return _judged_once(found)
        by_class: Dict[str, List[Optional[str]]] = {}
        for name in names:
            m = _LOSS_TENSOR.match(name)
            if m is None or m.group("loss") not in _EXPECTS_BY_CLASS:
                continue
            entry = by_class.setdefault(m.group("loss"), [None, None])
            if name.endswith("_input_0"):
                entry[0] = name
            elif name.endswith("_input_1"):
                entry[1] = name
        # (the names PyTorch's and MXNet's hooks give a loss module's inputs; a Keras hook names none so)
        whose = "a loss module's inputs" if self._run_framework() != "tensorflow" else "a loss module's inputs, " \
            "as PyTorch and MXNet hooks name them"
        looking_for(f"tensors named <Loss>_input_0 / _input_1 ({whose})",
                    [n for pair in by_class.values() for n in pair if n])
        self._varying = {loss: (p, y) for loss, (p, y) in by_class.items()
                         if p and _EXPECTS_BY_CLASS[loss] == loss_inputs.REGRESSION}
        return {loss: (p, y, _EXPECTS_BY_CLASS[loss], loss) for loss, (p, y) in by_class.items() if p}

    def _recorded(self) -> Optional[List[loss_inputs.LossInputs]]:
        """The losses the hook recorded; for an XGBoost run, its objective (the booster's predictions against
        the labels); None when the run tells neither."""
        recorded = loss_inputs.recorded_losses(self.base_trial)
        if recorded is None:
            objective = objective_as_loss(self.base_trial)
            if objective is None:
                return None
            self._objectives.add(_label(objective))
            recorded = [objective]
        return recorded

    def _why_not(self) -> str:
        """What the run lacks for this rule: the inputs of a loss it knows of, or any loss at all."""
        names = self.base_trial.tensor_names()
        why = f"needs a loss's first input with at least min_values={self.min_values} values saved"
        # saves that were there but held NaN or infinity: say so, not that values were missing
        broken = [(loss, seen) for loss, seen in self._seen.items() if seen.nonfinite_saves]
        if broken:
            return why.replace(" values saved", " finite values saved") + "; " + "; ".join(
                f"the input of {loss} is not finite (NaN or infinity) from step {seen.first_nonfinite} on "
                f"({seen.nonfinite_saves} saves holding {seen.nonfinite_values} values; {seen.values} values in "
                "finite saves): no output whose kind can be judged; ExplodingTensor (NaN/infinity) judges such a run"
                for loss, seen in broken)
        recorded = self._recorded()
        if recorded:
            unsaved = [_label(loss) for loss in recorded
                       if loss.expects != loss_inputs.OTHER and not loss.prediction_names(names)]
            if unsaved and loss_inputs.recorded_losses(self.base_trial) is None:  # an XGBoost objective
                return (f"{why}; the run did not save what {', '.join(unsaved)} compares (include the "
                        "'predictions' and 'labels' collections, and give the hook validation_data)")
            own = [_label(loss) for loss in recorded if loss.name == _MODEL_OWN_LOSS and _label(loss) in unsaved]
            losses = self.base_trial.collections().get("losses")
            if unsaved and self._run_framework() == "tensorflow":
                # (a Keras loss is recorded under the name "loss" too: the model computing its own loss is a
                # PyTorch model's way, below)
                return f"{why}; {self._tensorflow_unsaved(unsaved)}"
            if (own and self._run_framework() not in ("tensorflow", "mxnet", "xgboost")  # (a PyTorch model's way)
                    and not any(_MODEL_OWN_LOSS_OUTPUT.match(n) for n in names)
                    and losses is not None and any(losses.matches(n) for n in names)):
                # (not the save config's fault: the losses collection was saved, yet the loss is missing too)
                return (f"{why}; the run saved neither the loss the model computes itself ({', '.join(own)}) nor "
                        "its inputs: the model was called without labels, so it computed no loss (a Hugging Face "
                        "Trainer computing the loss outside the model -- label_smoothing_factor, "
                        "compute_loss_func, a compute_loss override -- calls it so; smdebug-torch's SmdebugCallback "
                        "saves such a loss and its inputs when the batch gives the labels as 'labels')")
            if unsaved:
                return (f"{why}; the run did not save the inputs of {', '.join(unsaved)} (include the "
                        "'loss_inputs' collection, as Hook.recommended does)")
            return why
        unseen = sorted({m.group("loss") for n in names if (m := _LOSS_TENSOR.match(n)) and n.endswith("_output_0")
                         and m.group("loss") not in self._seen})
        if unseen:
            return (f"{why}; the run saved the output of {', '.join(unseen)} but not its inputs (include the "
                    "'loss_inputs' collection, as Hook.recommended does)")
        losses = self.base_trial.collections().get("losses")
        saved = [n for n in names if losses is not None and losses.matches(n)]
        if saved and not any(_LOSS_TENSOR.match(n) for n in names):
            return f"{why}; the run's losses ({', '.join(saved[:3])}) are values and {self._no_loss_recorded()}"
        return why

    def _tensorflow_unsaved(self, unsaved: List[str]) -> str:
        """Why a TensorFlow run holds no inputs of its recorded losses, and how to have them saved: the hook saves
        a loss's inputs (``predictions``, ``labels``) in ``fit`` and in an eager training step inside
        ``hook.wrap_tape``, never in a ``tf.function`` step, which it sees only while tracing (what the hook
        recorded of that, ``_meta.traced_only``, the verdict's detail says)."""
        return (f"the run did not save the inputs of {', '.join(unsaved)} (the 'predictions' and 'labels' a "
                "TensorFlow hook saves in the loss_inputs collection): the hook saves them when the loss runs in "
                "model.fit(..., callbacks=[hook]) or in an eager training step inside "
                "hook.wrap_tape(tf.GradientTape()), with that collection included (KerasHook.recommended "
                "includes it); a training step under @tf.function is only traced, so the hook sees none of its "
                "steps")

    def _no_loss_recorded(self) -> str:
        """Why a run whose losses are plain values has no loss record, and how to give it one, in the words of
        the framework that wrote it. A hook of this writer records its framework in the run; a run without
        that record was written by an older writer (the original smdebug), which records no loss at all."""
        from smdebug.core.run_info import FRAMEWORK_KEY

        meta = getattr(getattr(self.base_trial, "collection_manager", None), "meta", None) or {}
        recorded = meta.get(FRAMEWORK_KEY)
        older = not (isinstance(recorded, str) and recorded.strip())
        how, remedy = _REGISTER_THE_LOSS.get(self._run_framework(), _REGISTER_THE_LOSS[""])
        if older:
            return f"its hook recorded no loss: a run of an older writer, which records none (with this one: {remedy})"
        if self._run_framework() == "xgboost":
            return f"its hook recorded no objective of the booster ({remedy})"
        return f"its hook was told of no loss: a loss computed by hand{' ' + how if how else ''} ({remedy})"

    def _labels_shifted_twice(self, step: int) -> Optional[str]:
        """From the step the PyTorch hook saw a causal language model (its head shifts the labels one token
        itself) given labels that are its input_ids already moved one token ahead (``_meta.labels_shifted_twice``):
        the finding, once. The model learns the token after next; its loss still falls, so no curve shows it
        (probe 19a F2: test loss 6.02 against 1.14)."""
        if self._said_shifted:
            return None
        record = labels_shifted_twice(self.base_trial)
        if record is None or not self.reached(step, record["step"]):
            return None
        self._said_shifted = True
        self.mark_evaluated()
        return (f"the labels are shifted twice: the model's head shifts its labels one token itself (a causal "
                f"language model), and {100 * record['share']:.1f}% of the {record['positions']} label positions "
                f"compared at step {record['step']} already hold the next input token, so each position is trained "
                f"to predict the token after next; pass labels = input_ids (padding as -100) and let the model "
                f"shift them")

    def invoke_at_step(self, step):
        shifted = self._labels_shifted_twice(step)
        if shifted:
            return shifted
        judged = False
        losses = self._losses()
        for loss, (pname, yname, expects, loss_type) in losses.items():
            # (non-finite values say the model diverged, not what kind of output it has: ExplodingTensor's)
            saved = _floats(batches_at(self.base_trial, pname, step))
            outputs = [p for p in saved if np.isfinite(p).all()]
            if len(outputs) < len(saved):  # counted, to say why the rule judged nothing (see _why_not)
                seen = self._seen.setdefault(loss, _Seen())
                if seen.first_nonfinite is None:
                    seen.first_nonfinite = step
                seen.nonfinite_saves += len(saved) - len(outputs)
                seen.nonfinite_values += sum(p.size for p in saved if not np.isfinite(p).all())
            if not outputs:
                continue
            seen = self._seen.setdefault(loss, _Seen())
            for p in outputs:
                seen.low, seen.high = min(seen.low, float(p.min())), max(seen.high, float(p.max()))
                seen.values += p.size
                seen.zeros += int(np.count_nonzero(p == 0))
                seen.outputs_per_row = 1 if p.ndim <= 1 else int(np.prod(p.shape[1:]))
                seen.softmax_rows = seen.softmax_rows and _softmax_rows(p)
                if p.ndim >= 2 and p.shape[-1] >= 2:
                    sums = p.reshape(-1, p.shape[-1]).sum(axis=1, dtype=np.float64)
                    seen.rows += sums.size
                    seen.rows_off += int(np.count_nonzero(np.abs(sums - 1) > ROW_SUM_OFF))
                log_rows = _log_rows_off(p) if expects == loss_inputs.LOG_PROBABILITIES else None
                if log_rows is not None:
                    seen.log_rows += log_rows[0]
                    seen.log_rows_off += log_rows[1]
            if yname is not None and expects == loss_inputs.REGRESSION and self._broadcasts(loss_type):
                mismatch = self._shape_mismatch(loss, pname, yname, step, outputs)
                if mismatch:
                    self.mark_evaluated(pname)
                    return mismatch
            if yname is not None and seen.ids is not None:
                for y in batches_at(self.base_trial, yname, step):
                    if y.dtype.kind in "fiu" and y.size and np.all(y == np.round(y)) and y.min() >= 0:
                        values, counts = np.unique(y, return_counts=True)
                        for v, c in zip(values[: self.max_classes + 1], counts):
                            seen.ids[int(v)] = seen.ids.get(int(v), 0) + int(c)
                    else:
                        seen.ids = None
                        break
            if yname is not None and loss_type in _PER_TOKEN_CLASSIFICATION:
                padded = self._counted_padding(loss, pname, yname, step, expects)
                if padded:
                    self.mark_evaluated(pname)
                    return padded
            if yname is not None and expects in (loss_inputs.LOGITS, loss_inputs.PROBABILITIES):
                invalid = self._targets_outside_probabilities(loss, pname, yname, step, outputs)
                if invalid:
                    self.mark_evaluated(pname)
                    return invalid
            log_input = poisson_log_input(loss_type)
            if yname is not None and log_input is not None:
                self._count_targets(loss, yname, step)
            if seen.values < self.min_values:
                continue
            judged = True
            self.mark_evaluated(pname)
            low, high, n = seen.low, seen.high, seen.values
            if expects == loss_inputs.LOGITS and low >= 0 and high <= 1:
                # a softmax's rows say so at once; values in [0, 1] alone may be the small logits of a model
                # starting out (a zero-initialised head gives all zeros), so they are judged over the whole run
                if seen.softmax_rows:
                    return (f"{loss} applies softmax/sigmoid itself but its input {pname} is all in [{low:.3g}, "
                            f"{high:.3g}] with every row summing to 1, over {n} values: softmax "
                            "probabilities, not logits (remove the output activation, or build the loss to take "
                            "probabilities)")
                if high > low and self._at_last_save(pname, step):
                    return (f"{loss} applies softmax/sigmoid itself but its input {pname} never left [{low:.3g}, "
                            f"{high:.3g}] over the run ({n} values): probabilities, not logits (remove the "
                            "output activation, or build the loss to take probabilities)")
            if expects == loss_inputs.LOGITS and low == 0 and high > 0 and seen.zeros >= CLAMPED_SHARE * n:
                # a linear layer's outputs are exactly 0 only by design (a zero-initialised head, at its first
                # step: then all of them, and they go negative as it learns); never below 0 with many at 0 is a
                # clamp (and a logit held at 0 gets no gradient through the ReLU)
                return (f"{loss} applies softmax/sigmoid to logits, but its input {pname} never went below 0 and "
                        f"{seen.zeros / n:.0%} of its {n} values are exactly 0: logits clamped at 0 (a ReLU after "
                        "the last layer? remove it: logits need negative values)")
            if expects == loss_inputs.PROBABILITIES and (low < -PROBABILITY_TOLERANCE
                                                         or high > 1 + PROBABILITY_TOLERANCE):
                return (f"{loss} expects probabilities (in [0, 1]) but its input {pname} is in [{low:.3g}, "
                        f"{high:.3g}] over {n} values: raw scores (add the softmax/sigmoid output "
                        "activation, or build the loss with from_logits=True)")
            if (expects == loss_inputs.PROBABILITIES and _categorical(loss_type) and seen.rows
                    and 2 * seen.rows_off > seen.rows):
                return (f"{loss} takes one probability distribution per row, but the rows of its input {pname} "
                        f"(in [{low:.3g}, {high:.3g}]) do not sum to 1: {seen.rows_off} of {seen.rows} rows are "
                        f"further than {ROW_SUM_OFF:g} from it: independent sigmoids, not a softmax, so the "
                        "model's outputs are no class probabilities (Keras 3 computes the loss from the logits "
                        "under an output activation of its own, as with a softmax; from any other output it divides "
                        "each row by its sum, silently); use a softmax output activation, or a binary "
                        "cross-entropy if the classes are not exclusive")
            if expects == loss_inputs.LOG_PROBABILITIES and low >= 0:
                return (f"{loss} expects log-probabilities (<= 0) but its input {pname} is all in [{low:.3g}, "
                        f"{high:.3g}] over {n} values: probabilities (use log_softmax)")
            if expects == loss_inputs.LOG_PROBABILITIES and high > LOG_PROBABILITY_TOLERANCE:
                return (f"{loss} expects log-probabilities (<= 0) but its input {pname} reaches {high:.3g} (in "
                        f"[{low:.3g}, {high:.3g}] over {n} values): raw scores, not log-probabilities (apply "
                        f"log_softmax)")
            if (expects == loss_inputs.LOG_PROBABILITIES and seen.log_rows
                    and 2 * seen.log_rows_off > seen.log_rows):
                # NLLLoss picks the target's value: with rows that are no distribution, raising the target's
                # score costs the other classes nothing, and the model learns whatever the wrong axis normalises
                return (f"{loss} expects log-probabilities over the classes, but the exp() of its input {pname} "
                        f"(in [{low:.3g}, {high:.3g}]) does not sum to 1 over the class axis: {seen.log_rows_off} "
                        f"of {seen.log_rows} rows are further than {ROW_SUM_OFF:g} from it: a log-softmax taken "
                        "over another axis (the batch, dim=0?), or log-scores that were never normalised (apply "
                        "log_softmax over the class axis, dim=1 or -1)")
            if (expects in (loss_inputs.LOGITS, loss_inputs.PROBABILITIES, loss_inputs.LOG_PROBABILITIES)
                    and low == high != 0 and yname is not None and self._at_last_save(pname, step)):
                # (all zeros is a zero-initialised head that never moved: the weight and gradient rules' to say)
                varied = self._targets_vary(yname, step)
                if varied >= 2:
                    # a classifier's output that is one value for every row at every save cannot tell the classes
                    # apart: a softmax over a single unit is always 1, and passes no gradient back (Keras'
                    # binary cross-entropy then trains on the logits it kept, so the loss falls while the model's
                    # output never moves)
                    return (f"{loss}: its input {pname} was {low:g} at every save over the run ({n} values) while "
                            f"its targets {yname} take {varied} values: an output that does not depend on the "
                            f"model's input, so it cannot tell the classes apart (a softmax over a single unit is "
                            f"always 1: for one output use a sigmoid)")
            ids = seen.ids
            if (expects == loss_inputs.REGRESSION and seen.outputs_per_row == 1 and ids
                    and 3 <= len(ids) <= self.max_classes and set(ids) == set(range(len(ids)))
                    and max(ids.values()) <= BALANCED_IDS_RATIO * min(ids.values())):
                return (f"{loss} on one output per sample against targets {yname} that are the class ids 0-"
                        f"{len(ids) - 1}, each about as frequent as the others (from {min(ids.values())} to "
                        f"{max(ids.values())} times): a classification trained as a regression on the class index")
            if log_input is not None:
                poisson = self._poisson(loss, pname, yname, step, log_input, low, high, n)
                if poisson:
                    return poisson
            # (a booster's predictions have no output activation to be bounded by)
            if expects == loss_inputs.REGRESSION and yname is not None and loss not in self._objectives:
                bounded = self._bounded(loss, pname, yname, step, outputs, low, high)
                if bounded:
                    return bounded
        for loss, (pname, yname) in self._varying.items():
            compared, ignored = self._ignores_input(loss, pname, yname, step)
            if compared:
                judged = True
                self.mark_evaluated(pname)
                if not losses:  # (no other test of the rule applies to the run's losses: "no issues" is this one's)
                    self.caveat(f"only whether the output depends on the model's input was judged: the run's "
                                f"losses ({', '.join(sorted(self._varying))}) expect nothing else this rule checks")
            if ignored:
                return ignored
        if not judged:
            self.not_evaluated(self._why_not())
        return False

    def _counted_padding(self, loss: str, pname: str, yname: str, step: int, expects: str) -> Optional[str]:
        """The finding of a per-token classification loss that counts the padding of its targets (see
        :mod:`.counted_padding`), judged at the first saves (up to PADDING_SAVES) that hold the loss's integer
        targets and its value: padding is a property of the data and the loss's, the same at every save."""
        if self._padding_saves.get(loss, 0) >= PADDING_SAVES or not pname.endswith("_input_0"):
            return None
        trial = self.base_trial
        output = pname[: -len("_input_0")] + "_output_0"
        values = batches_at(trial, output, step) if trial.has_tensor(output) else []
        targets = self._single(yname, step)
        if len(values) != 1 or values[0].size != 1 or targets is None or targets.dtype.kind not in "iu":
            return None
        self._padding_saves[loss] = self._padding_saves.get(loss, 0) + 1
        saved = float(values[0].reshape(-1)[0])
        inputs = members(trial, "inputs")
        model_rows = [v.shape[0] for n in inputs if (v := self._single(n, step)) is not None and v.ndim >= 2]
        rows = counted_padding.target_rows(targets, model_rows[0] if len(set(model_rows)) == 1 else None)
        padding = counted_padding.padding_id(rows) if rows is not None else None
        scores = self._single(pname, step) if padding is not None else None
        if scores is None:
            return None
        axis = framework_axis(class_axes(tuple(targets.shape), tuple(scores.shape)), self._run_framework())
        judged = (counted_padding.loss_with_padding(scores, targets, axis, expects == loss_inputs.LOG_PROBABILITIES,
                                                    padding.id, saved) if axis is not None else None)
        if judged is None or not judged[0]:
            return None
        left_out = judged[1]
        where = "end" if padding.side == "end" else "start"
        return (f"{loss} counts the padding of its targets: its targets {yname} {where} in runs of id {padding.id} in "
                f"{padding.padded_rows} of {padding.rows} sequences (runs of several lengths, and the id is "
                f"found nowhere else): padding, {padding.share:.0%} of the targets; and the loss saved at step {step} "
                f"({saved:.4g}) is made of every target's loss, the padding included (the average without it: "
                f"{left_out:.4g}). "
                f"The padding is the easiest token to predict: the loss looks better than the model is, and the "
                f"real tokens get a diluted share of the gradient (build the loss with ignore_index={padding.id}, "
                f"or set the targets at padded positions to -100)")

    def _targets_vary(self, yname: str, step: int) -> int:
        """How many distinct values the targets saved at ``step`` take (0 when none were saved)."""
        values = [np.unique(y) for y in batches_at(self.base_trial, yname, step) if y.size]
        return int(np.unique(np.concatenate(values)).size) if values else 0

    def _late_saves(self, pname: str) -> Optional[Tuple[ModeKeys, List[int]]]:
        """Once training has ended, the saves of a loss's first input that show the trained model: the mode (EVAL
        when it has such saves there: no dropout or sampling noise, else TRAIN, else steps of no mode) and the
        global steps of its saves in the second half of the run, after its first save; None when there are none
        (predictions saved early in training only say what an untrained model did) or the run has not ended.
        Worked out once: the saved steps of an ended run do not change."""
        trial = self.base_trial
        if not trial.loaded_all_steps:
            return None
        if pname not in self._late:
            self._late[pname] = None
            everything, run = trial.tensor(pname).steps(), trial.steps()
            if len(everything) >= 2 and run:
                half = everything[0] + (run[-1] - everything[0]) / 2
                for mode in (ModeKeys.EVAL, ModeKeys.TRAIN, ModeKeys.GLOBAL):
                    steps = (everything if mode == ModeKeys.GLOBAL else
                             [trial.global_step(mode, s) for s in trial.tensor(pname).steps(mode=mode)])
                    late = [g for g in steps if g is not None and g >= half and g > everything[0]]
                    if late:
                        self._late[pname] = (mode, late)
                        break
        return self._late[pname]

    def _single(self, name: str, step: int) -> Optional[np.ndarray]:
        """``name``'s finite numeric value at ``step`` with rows (workers' rows pooled), or None."""
        values = batches_at(self.base_trial, name, step)
        if len(values) != 1 or values[0].ndim < 1 or values[0].dtype.kind not in "fiu":
            return None
        value = values[0]
        return value if value.size and np.isfinite(value).all() else None

    def _reference(self, p: np.ndarray, yname: Optional[str], step: int) -> Optional[Tuple[str, str, np.ndarray]]:
        """What output ``p`` should vary with across its rows at ``step``: ``(what, tensor, value)``. The loss's
        targets when they have its rows and one value per row or per output (a class id against scores is in
        other units: a classification loss's own tests judge those); else, for a reconstruction (an output of
        the model's input's shape: an autoencoder, a VAE, whose loss got its target in a tuple it does not save
        as targets), the model's input. None when neither, or when the model's input is the same for every row
        (the model was given nothing to tell the rows apart: UnnormalizedInput's finding)."""
        per_row = p.size // p.shape[0]
        trial = self.base_trial
        names = members(trial, "inputs")
        inputs = [(n, v) for n in names if (v := self._single(n, step)) is not None and v.shape[0] == p.shape[0]]
        if inputs and all(_same_rows(v) for _, v in inputs):
            return None
        y = self._single(yname, step) if yname is not None else None
        if y is not None and y.shape[0] == p.shape[0] and not (y.dtype.kind in "iu" and per_row > 1):
            if y.size // y.shape[0] in (1, per_row):
                return "targets", yname, y
        for name, value in inputs:
            if value.dtype.kind == "f" and value.size // value.shape[0] == per_row:
                return "model's input", name, value
        return None

    def _ignores_input(self, loss: str, pname: str, yname: Optional[str], step: int) -> Tuple[bool, Optional[str]]:
        """(compared, finding) of the test of an output that does not depend on the model's input: at the last
        save of the trained model (see :meth:`_late_saves`), pooled back over its late saves to
        IGNORED_INPUT_ROWS rows at least, the loss's first input spreads across the rows by less than
        IGNORED_INPUT_SHARE of what it should vary with (see :meth:`_reference`), which varies; and it is one
        value for every row at each save, or spreads IGNORED_INPUT_SHRINK times less than at its first save
        (the model learned to ignore its input: a collapsed posterior, dead ReLUs before the output, weights
        decayed to nothing). Runs that a rule stopped, or that did not end normally, hold no trained model and
        are not judged; a (zero-initialised) output that was all zeros at its first save and still is is the
        weight and gradient rules' to say."""
        late = self._late_saves(pname)
        if late is None or step != late[1][-1] or stopped_on_request(self.base_trial) \
                or self.base_trial.abnormal_ends():
            return False, None
        mode, steps = late
        last = self._single(pname, step)
        found = self._reference(last, yname, step) if last is not None else None
        if found is None:
            return False, None
        what, rname, _ = found
        outputs, references, used = [], [], []
        for g in reversed(steps):
            p = self._single(pname, g)
            r = self._single(rname, g) if p is not None and len(p) >= 2 else None  # (one row a save: no rows)
            if r is None or r.shape[0] != p.shape[0] or (p.shape[1:], r.shape[1:]) != (last.shape[1:],
                                                                                       found[2].shape[1:]):
                break  # (pooled while the saves are alike)
            outputs.append(p)
            references.append(r)
            used.append(g)
            if sum(len(o) for o in outputs) >= IGNORED_INPUT_ROWS:
                break
        rows = sum(len(o) for o in outputs)
        if rows < IGNORED_INPUT_ROWS:
            return False, None
        reference = np.concatenate(references)
        spread, varies = _row_spread(np.concatenate(outputs)), _row_spread(reference)
        if _same_rows(reference):
            return False, None  # (the targets are one value: then so is the best output -- a GAN's labels)
        if not spread < IGNORED_INPUT_SHARE * varies:
            return True, None
        first_step = self.base_trial.tensor(pname).steps()[0]
        first = self._single(pname, first_step)
        start = _row_spread(first) if first is not None and len(first) >= 2 else None
        constant = all(_same_rows(o) for o in outputs)
        if constant and not np.any(outputs[0]) and first is not None and not np.any(first):
            return True, None  # (all zeros from the first save: a zero-initialised head that never moved)
        if not (constant or (start is not None and spread * IGNORED_INPUT_SHRINK <= start)):
            return True, None
        where = (f"{mode_label(mode)} {self.base_trial.mode_modestep(used[-1])[1]}" if len(used) == 1 else
                 f"the last {len(used)} saves, {mode_label(mode)}s from {self.base_trial.mode_modestep(used[-1])[1]}")
        how = ("the same value for every row" if constant else
               f"{start / spread:.3g} times less spread than at its first save, step {first_step} ({start:.3g})")
        return True, (
            f"{loss}: its input {pname} barely depends on the model's input: at the end of training ({where}, "
            f"{rows} rows) it spreads across the rows by {spread:.3g} (root-mean-square deviation from the mean "
            f"row), {spread / varies:.2%} of the spread of the {what} {rname} ({varies:.3g}), and is {how}: the "
            f"model gives nearly the same output for every sample (a collapsed latent code -- a VAE's KL term "
            f"too strong --, dead ReLUs before the output layer, a weight decay that shrank the weights to "
            f"nothing: check the layers before the output and the loss's regularisation terms)")

    def _count_targets(self, loss: str, yname: str, step: int) -> None:
        """Pools a Poisson loss's targets over the run: how many, their sum, how many below 1."""
        counts = self._targets.setdefault(loss, [0, 0.0, 0])
        for y in batches_at(self.base_trial, yname, step):
            if y.dtype.kind in "fiu" and y.size and np.isfinite(y).all():
                counts[0] += y.size
                counts[1] += float(y.sum(dtype=np.float64))
                counts[2] += int(np.count_nonzero(y < 1))

    def _poisson(self, loss: str, pname: str, yname: Optional[str], step: int, log_input: bool, low: float,
                 high: float, n: int) -> Optional[str]:
        """The finding on a Poisson loss (see the class docstring): rates fed as log-rates, or log-rates (a
        linear output, below 0) fed as rates."""
        if not log_input and low < 0:
            return (f"{loss} takes rates (log_input=False), which are >= 0, but its input {pname} reaches "
                    f"{low:.3g} (in [{low:.3g}, {high:.3g}] over {n} values): log-rates or a linear output (the "
                    f"loss takes their log and is NaN there: apply exp/softplus, or use log_input=True)")
        targets, total, below = self._targets.get(loss, (0, 0.0, 0))
        if not (log_input and low >= 0 and targets and total < targets and self._at_last_save(pname, step)):
            return None
        # exp(input) >= 1 for every output while the targets average below 1: no rate the model can give is
        # as small as the data's, a rate (softplus, relu, exp) given where the log of one is expected
        return (f"{loss} takes log-rates (log_input=True: the rate is exp(input)) but its input {pname} never went "
                f"below 0 over the run (in [{low:.3g}, {high:.3g}], {n} values), so every predicted rate is at "
                f"least 1, while its targets {yname} average {total / targets:.3g} ({below / targets:.0%} of "
                f"{targets} below 1): rates (a Softplus, ReLU or exp output) fed where log-rates are expected "
                f"(remove that output activation, or build the loss with log_input=False)")

    def _broadcasts(self, loss_type: str) -> bool:
        """Whether the loss broadcasts an output and a target of different shapes: PyTorch's regression losses
        do (with a warning), in a run PyTorch wrote (recorded, or told by its collections); Keras' and Gluon's
        reshape the target to the output, XGBoost's have one shape."""
        return self._run_framework() == "pytorch"

    def _run_framework(self) -> str:
        """The framework that wrote the run (recorded, or told by its collections); "" when unknown."""
        if self._framework is None:
            from smdebug.core.run_info import framework_of

            self._framework = framework_of(self.base_trial) or ""
        return self._framework

    def _shape_mismatch(self, loss, pname, yname, step, outputs) -> Optional[str]:
        """A regression loss given an output and targets whose shapes broadcast to more values than either:
        ``(N, 1)`` against ``(N,)`` gives ``(N, N)``, every output compared with the targets of every sample
        (the model learns their mean; PyTorch only warns)."""
        for p in outputs:
            for y in batches_at(self.base_trial, yname, step):
                shape = _broadcast(tuple(p.shape), tuple(y.shape))
                if shape is not None:
                    return (f"{loss} compares {pname} of shape {tuple(p.shape)} with targets {yname} of shape "
                            f"{tuple(y.shape)}: they broadcast to {shape}, every output against the target of "
                            "every sample, and the model learns the targets' mean (make the shapes equal: "
                            "squeeze the output's last axis or unsqueeze the targets)")
        return None

    def _targets_outside_probabilities(self, loss, pname, yname, step, outputs) -> Optional[str]:
        """A cross-entropy or divergence whose targets hold one value per output compares the output with a
        probability (a 0/1 label, a one-hot row, a soft label): targets beyond [0, 1] are coded for another loss
        (-1/+1 labels, for a hinge loss, make a binary cross-entropy unbounded below: it falls under 0 and
        keeps falling). Targets of another size (class ids) are not probabilities and not judged here."""
        sizes = {p.size for p in outputs}
        for y in batches_at(self.base_trial, yname, step):
            if y.dtype.kind not in "fiu" or y.size not in sizes or not np.isfinite(y).all():
                continue
            low, high = float(y.min()), float(y.max())
            if low < -PROBABILITY_TOLERANCE or high > 1 + PROBABILITY_TOLERANCE:
                return (f"{loss} compares {pname} with targets {yname} in [{low:.3g}, {high:.3g}]: one target per "
                        f"output, so probabilities, which lie in [0, 1] (labels coded -1/+1 make a cross-entropy "
                        f"unbounded below: code them 0/1)")
        return None

    def _at_last_save(self, name: str, step: int) -> bool:
        """Whether training has ended and ``step`` is the last one that saved ``name``."""
        steps = self.base_trial.tensor(name).steps()
        return bool(self.base_trial.loaded_all_steps and steps and step == steps[-1])

    #: the ranges of a squashing output activation: sigmoid, tanh
    _RANGES = ((0.0, 1.0), (-1.0, 1.0))

    def _bounded(self, loss, pname, yname, step, outputs, low, high) -> Optional[str]:
        """The bounded-output test (see the class docstring): counts pooled at every step, judged at the loss's
        last save once training has ended."""
        counts = self._bounds.setdefault(loss, np.zeros(4 + 2 * len(self._RANGES)))
        clamp = 2 + 2 * len(self._RANGES)  # [clamp]: outputs exactly 0; [clamp + 1]: targets below 0
        for p in outputs:
            counts[0] += p.size
            counts[clamp] += int(np.count_nonzero(p == 0))
            for i, (lo, hi) in enumerate(self._RANGES):
                edge = 0.01 * (hi - lo)
                counts[2 + i] += int(np.sum((p <= lo + edge) | (p >= hi - edge)))
        for y in _floats(batches_at(self.base_trial, yname, step)) + [
                y for y in batches_at(self.base_trial, yname, step) if y.dtype.kind in "iu" and y.size]:
            counts[1] += y.size
            counts[clamp + 1] += int(np.sum(y < 0))
            for i, (lo, hi) in enumerate(self._RANGES):
                counts[2 + len(self._RANGES) + i] += int(np.sum((y < lo) | (y > hi)))
        if not self._at_last_save(pname, step) or not counts[1]:
            return None
        zeros, negative = counts[clamp] / counts[0], counts[clamp + 1] / counts[1]
        if low >= 0 and zeros >= CLAMPED_SHARE and negative >= 0.1:
            # a linear output is exactly 0 only by chance; a ReLU's is, for every input below 0
            return (f"{loss}: its input {pname} never went below 0 over the run ({int(counts[0])} values, "
                    f"{zeros:.0%} of them exactly 0) while {negative:.0%} of its targets {yname} are below 0: an "
                    f"output clamped at 0 (a ReLU on the output layer?) that cannot reach them, and gets no "
                    f"gradient where it is 0 (remove it: a regression's output is linear)")
        for i, (lo, hi) in enumerate(self._RANGES):
            if low < lo - PROBABILITY_TOLERANCE or high > hi + PROBABILITY_TOLERANCE:
                continue  # the outputs left the range: no such bound
            pressed, outside = counts[2 + i] / counts[0], counts[2 + len(self._RANGES) + i] / counts[1]
            if pressed >= 0.1 and outside >= 0.1 and low == high:
                # one value at every save: no activation squashed it there, the output ignores its input (a softmax
                # over a single unit is 1 whatever it is given, and passes no gradient back)
                return (f"{loss}: its input {pname} was {low:g} at every save over the run ({int(counts[0])} values) "
                        f"while {outside:.0%} of its targets {yname} lie elsewhere: an output that does not depend "
                        f"on the model's input, and gets no gradient (a softmax over a single unit is always 1: for "
                        f"one output use a sigmoid or none)")
            if pressed >= 0.1 and outside >= 0.1:
                return (f"{loss}: its input {pname} never left [{lo:g}, {hi:g}] over the run ({int(counts[0])} "
                        f"values, {pressed:.0%} of them at its ends) while {outside:.0%} of its targets {yname} lie "
                        f"outside: a "
                        f"bounded output activation (sigmoid, tanh) that cannot reach the targets (remove it, or "
                        f"scale the targets into its range)")
        return None
