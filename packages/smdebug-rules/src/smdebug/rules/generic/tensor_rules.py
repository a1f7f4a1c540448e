"""Rules over any tensors chosen by ``collection_names`` and/or ``tensor_regex``."""

from __future__ import annotations

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.reductions import EmptyTensorError
from smdebug.exceptions import SMDebugError, SMDebugValueError
from smdebug.rules.generic.selection import (
    GradientsByStep,
    every_tensor,
    first_finding,
    reduction_at,
    scalar,
    select_tensors,
    trained_parameters,
    value_at,
    values_by_worker,
    worker_named,
    workers_at,
)
from smdebug.rules.evaluation import note_read
from smdebug.rules.generic.identical_saves import IdenticalSaves
from smdebug.rules.generic.ignored_targets import UncountedLosses, uncounted_note
from smdebug.rules.params import as_bool, as_float, as_int, as_list, in_range
from smdebug.rules.rule import Rule


class _TensorRule(Rule):
    requires_selection = False

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, other_trials=None, action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        self.collection_names = as_list(self.rule_name, "collection_names", collection_names)
        self.tensor_regex = as_list(self.rule_name, "tensor_regex", tensor_regex)
        if self.requires_selection and not (self.collection_names or self.tensor_regex):
            raise SMDebugValueError(f"{self.rule_name}: give collection_names or tensor_regex")

    #: the collections whose tensors are the model's parameters (their first save is the initialisation;
    #: they change in training steps only)
    PARAMETERS = ("weights", "biases")

    def is_parameter(self, name: str) -> bool:
        cache = self.__dict__.setdefault("_is_parameter", {})
        if name not in cache:
            collections = self.base_trial.collections()
            cache[name] = any(c in collections and collections[c].matches(name) for c in self.PARAMETERS)
        return cache[name]

    def tensors(self):
        if not (self.collection_names or self.tensor_regex):
            return every_tensor(self.base_trial)
        return select_tensors(self.base_trial, self.collection_names, self.tensor_regex)

    def _not_evaluated_empty(self, empty) -> None:
        self.not_evaluated(f"the tensors it inspects are empty (shape with a 0): {', '.join(empty[:3])}"
                           + (", ..." if len(empty) > 3 else ""))

    def copies(self, step):
        """(name, [(worker, value)]) of the inspected numeric tensors saved at ``step`` that hold values: each
        worker's copy when several workers saved one (``include_workers="all"``), ``worker`` None when one did
        (see :func:`values_by_worker`). An empty tensor (shape (0,)) is no evidence either way: a step where every
        inspected tensor was empty is not evaluated."""
        empty = []
        held = False
        try:  # (the names saved at this step: looking up each of a run's 100,000 names at every step took minutes)
            at_step = set(self.base_trial.tensor_names(step=step))
        except SMDebugError:
            at_step = None
        for name in self.tensors():
            if at_step is not None and name not in at_step:
                continue
            found = []
            for worker, value in values_by_worker(self.base_trial, name, step):
                if value.dtype.kind not in "fciub":
                    continue
                if value.size == 0:
                    if name not in empty:
                        empty.append(name)
                    continue
                found.append((worker, value))
            if found:
                held = True
                yield name, found
        if empty and not held:
            self._not_evaluated_empty(empty)


class ExplodingTensor(_TensorRule):
    """Fires when an inspected tensor holds NaN, or +-inf unless ``only_nan``.

    With neither ``collection_names`` nor ``tensor_regex``, every tensor of the run except those of the
    ``trees`` collection: XGBoost's tree table holds NaN by construction (a split on no category, a leaf's
    missing split condition). Name the collection to judge it anyway.

    A tensor several workers saved (``include_workers="all"``) is judged on each worker's copy: a NaN in one
    worker's gradients only fires, naming the worker (``gradient/w (worker worker_1) has 1 NaN ...``).

    A loss value (a tensor of the ``losses`` collection) that is NaN because its loss counted no target at that
    step is no explosion: a batch whose class-index targets are all the loss's ``ignore_index`` (-100, or 255 on
    segmentation masks), or empty, is averaged over no element (0/0), its gradient is zero and the weights stay
    finite. The evidence is the loss's own targets saved at that step (:mod:`.ignored_targets`); such values are
    left out and said in the verdict's detail. Without that evidence a NaN loss fires as any NaN does, and an
    infinite loss, or a NaN in any other tensor, always does."""

    def tensors(self):
        names = super().tensors()
        if self.collection_names or self.tensor_regex or "trees" not in self.base_trial.collections():
            return names
        trees = self.base_trial.collection("trees")
        return [n for n in names if not trees.matches(n)]

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, only_nan="False", other_trials=None,
                 action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.only_nan = as_bool(self.rule_name, "only_nan", only_nan)
        self._uncounted = UncountedLosses(base_trial)
        #: per loss value (named with its worker): the steps whose NaN was left out, its loss having counted no target
        self._left_out = {}
        #: per tensor: whether it is a loss value (in the ``losses`` collection)
        self._is_loss: dict = {}

    def is_loss(self, name: str) -> bool:
        if name not in self._is_loss:
            collections = self.base_trial.collections()
            self._is_loss[name] = "losses" in collections and collections["losses"].matches(name)
        return self._is_loss[name]

    def _no_target_counted(self, name: str, worker, step: int, value, nans: int) -> bool:
        """Whether ``value`` (``name`` at ``step``, by ``worker``) is a loss value that is all NaN, and no
        infinity, because its loss counted no target there (see :class:`.ignored_targets.UncountedLosses`):
        recorded for the verdict's detail."""
        if nans != value.size or not self.is_loss(name) or np.isinf(value).any():
            return False
        if not self._uncounted.counted_none(name, step, worker):
            return False
        self._left_out.setdefault(worker_named(name, worker), []).append(step)
        self.caveat(uncounted_note(self._left_out))
        return True

    def invoke_at_step(self, step):
        # (every worker's copy: a NaN in one worker's gradients, with include_workers="all", is no less a NaN)
        for name, copies in self.copies(step):
            failing = []
            for worker, value in copies:
                nans = int(np.isnan(value).sum())
                infs = 0 if self.only_nan else int(np.isinf(value).sum())
                if nans and self._no_target_counted(name, worker, step, value, nans):
                    continue  # (a mean over no element: no explosion, said in the verdict's detail)
                if nans or infs:
                    failing.append((worker, f"{worker_named(name, worker)} has {nans} NaN and {infs} infinite "
                                            f"values out of {value.size}"))
            if failing:
                return first_finding(failing)
        return False


class AllZero(_TensorRule):
    """Fires when at least ``threshold`` percent (default 100) of an inspected tensor's values are zero.

    The first save of a tensor of the ``weights`` or ``biases`` collections is its initialisation, where
    zeros are the norm (biases, normalisation shifts): it is not judged; the same tensor still all zeros at
    a later save is.

    Any other tensor (a gradient, an activation, an output) is a quantity of one batch: it must meet the
    threshold at ``patience`` consecutive saves of the step's mode, and a single value is not judged. One
    batch can make such a tensor exactly zero by chance -- the gradient of a one-output layer's bias under a
    sign-based loss (L1, hinge) is the mean sign of the residuals, exactly 0 whenever they balance, at one
    save in five near convergence -- while a layer cut off from the loss (dead ReLUs upstream, a detached
    branch) stays zero save after save.

    A tensor several workers saved (``include_workers="all"``) is judged on each worker's copy, its
    ``patience`` counted over that worker's saves: a tensor of zeros on one worker only fires, naming the
    worker (``w (worker worker_1) is 100% zeros ...``), and the other workers whose copies are zeros too are
    named after it.

    :param threshold: percent of zeros (default 100).
    :param patience: consecutive saves at which a tensor that is not a parameter must meet it (>= 1; default
        3).
    """

    requires_selection = True

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, threshold="100", patience="3",
                 other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        # (a percent of zeros: below 0 every tensor would fire, above 100 none could)
        self.threshold = in_range(self.rule_name, "threshold", as_float(self.rule_name, "threshold", threshold), 0, 100)
        self.patience = as_int(self.rule_name, "patience", patience, minimum=1)
        #: per (tensor, worker, mode): {mode step: met} of its recent saves (worker None: the one that saved it)
        self._recent = {}

    def _initial(self, name: str, step: int) -> bool:
        """Whether ``step`` is the first save of a parameter tensor (weights, biases)."""
        if not self.is_parameter(name):
            return False
        first = self.__dict__.setdefault("_first_save", {})
        if name not in first:
            steps = self.base_trial.tensor(name).steps()
            if not steps:
                return False
            first[name] = steps[0]
        return first[name] == step

    def _persistent(self, name: str, worker, step: int, met: bool) -> bool:
        """Record ``met`` at ``step``; whether ``worker``'s copy of the tensor met the threshold at its last
        ``patience`` saves of the step's mode (those saves: the tensor's saved mode steps, read from the index)."""
        mode, mode_step = self.base_trial.mode_modestep(step)
        if mode is None:
            mode, mode_step = ModeKeys.GLOBAL, step
        history = self._recent.setdefault((name, worker, mode), {})
        history[mode_step] = met
        if self.patience == 1:
            return met
        steps = self.base_trial.tensor(name).prev_steps(mode_step, self.patience, mode=mode)
        if len(steps) < self.patience or steps[-1] != mode_step:
            return False
        for s in steps[:-1]:
            if s not in history:  # evaluation started after that save: read it now
                value = value_at(self.base_trial, name, s, mode=mode, worker=worker)
                history[s] = value is not None and value.size > 1 and self._zero_percent(value) >= self.threshold
        for old in [s for s in history if s < steps[0]]:
            del history[old]
        return all(history[s] for s in steps)

    @staticmethod
    def _zero_percent(value) -> float:
        return (value == 0).mean() * 100 if value.size else 0.0

    def invoke_at_step(self, step):
        for name, copies in self.copies(step):
            if self._initial(name, step):
                continue
            failing = []
            for worker, value in copies:
                reason = self._judge(name, worker, step, value)
                if reason:
                    failing.append((worker, reason))
            if failing:
                return first_finding(failing)
        return False

    def _judge(self, name: str, worker, step: int, value):
        """The finding on ``worker``'s copy of the tensor at ``step``, or None."""
        zero_percent = self._zero_percent(value)
        met = bool(value.size) and zero_percent >= self.threshold
        if not self.is_parameter(name):
            if value.size <= 1:
                return None  # one value being 0 is no tensor of zeros
            if not self._persistent(name, worker, step, met):
                return None
            if self.patience > 1:
                return (f"{worker_named(name, worker)} is {zero_percent:.4g}% zeros (threshold {self.threshold:g}%) "
                        f"at its last {self.patience} saves")
        if met:
            return f"{worker_named(name, worker)} is {zero_percent:.4g}% zeros (threshold {self.threshold:g}%)"
        return None


class UnchangedTensor(_TensorRule):
    """Fires when an inspected tensor has not changed over its last ``num_steps`` saved steps (the current
    one included), compared with ``numpy.allclose(rtol, atol, equal_nan)``.

    The saves compared are those of the current step's mode (TRAIN saves with TRAIN saves, EVAL with EVAL:
    an activation's batch differs between training and evaluation); runs without modes compare global
    steps. Saves whose shapes differ (a smaller last batch) count as changed. The model's parameters (the
    ``weights`` and ``biases`` collections) are judged at TRAIN (and GLOBAL) steps only: evaluation does
    not update them, so their being unchanged over EVAL steps is expected.

    With neither ``collection_names`` nor ``tensor_regex``: the ``weights`` and ``biases`` collections (the
    original inspected every tensor, so data that never changes by design -- the labels of a fixed data
    set, the importance of an unused feature -- fired). Of that default selection, a parameter the run saved no
    gradient of at the compared steps (the last one aside: its gradient is not applied yet), while it saved
    gradients of others there, is frozen on purpose then (fine-tuning; with gradual unfreezing, until its
    layer joins) and not judged; when those steps saved no gradient at all, one with no gradient in the whole
    run while others have one is frozen (with no gradient saved at all, every parameter is judged); a tensor
    named by ``collection_names`` or ``tensor_regex`` is judged whatever its gradient: the user asked about it.

    Of the default selection, a parameter saved bit-identical over the compared saves while it moves at other
    saves of the run is not judged there: no optimizer step came between those saves (a hook step is a forward call: a model called
    several times per update -- triplet, siamese and multi-view code, a WGAN critic on real, fake and interpolated
    batches -- or gradient accumulation), as WeightUpdateRatio reads it (:mod:`.identical_saves`); a parameter
    that never moves, or stops moving for longer than the run's own period between updates, is judged, and so is
    one whose gradient saved there is exactly zero (the optimizer stepped with nothing to apply: dead units).

    A tensor several workers saved (``include_workers="all"``) is judged on each worker's copy, compared with
    that worker's own earlier saves (never another worker's): a replica that stopped changing on one worker only
    fires, naming the worker (``w (worker worker_1) unchanged over ...``); identical healthy replicas (DDP) are
    quiet.
    """

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, num_steps="3", rtol="1e-05",
                 atol="1e-08", equal_nan="False", other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.num_steps = as_int(self.rule_name, "num_steps", num_steps, minimum=2)
        self.rtol = as_float(self.rule_name, "rtol", rtol)
        self.atol = as_float(self.rule_name, "atol", atol)
        self.equal_nan = as_bool(self.rule_name, "equal_nan", equal_nan)
        # the values read at recent steps, per (tensor, worker, mode): consecutive evaluations share num_steps - 1
        self._recent = {}
        self._gradients = GradientsByStep(base_trial)
        self._identical = IdenticalSaves(base_trial)

    def tensors(self):
        if not (self.collection_names or self.tensor_regex):
            return select_tensors(self.base_trial, list(self.PARAMETERS), [])
        return super().tensors()

    def _value(self, name, worker, mode, step):
        """``worker``'s value at mode step ``step`` (the one worker's when None; None if only reductions were
        saved there, or nothing by that worker)."""
        recent = self._recent.setdefault((name, worker, mode), {})
        if step in recent:
            note_read(name)
        else:
            if len(recent) >= 2 * self.num_steps:
                for old in sorted(recent)[: self.num_steps]:
                    del recent[old]
            recent[step] = value_at(self.base_trial, name, step, mode=mode, worker=worker)
        return recent[step]

    def _same(self, a, b) -> bool:
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fciub" and b.dtype.kind in "fciub":
            return bool(np.allclose(a, b, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan))
        return bool(np.array_equal(a, b))  # strings and other non-numbers: exactly equal

    def invoke_at_step(self, step):
        mode, mode_step = self.base_trial.mode_modestep(step)
        if mode is None or mode == ModeKeys.GLOBAL:
            mode, mode_step = ModeKeys.GLOBAL, step
        where = "steps" if mode == ModeKeys.GLOBAL else f"{mode.name} steps"
        judged = False
        frozen = None
        for name in self.tensors():
            if mode in (ModeKeys.EVAL, ModeKeys.PREDICT) and self.is_parameter(name):
                continue
            steps = self.base_trial.tensor(name).prev_steps(mode_step, self.num_steps, mode=mode)
            if len(steps) < self.num_steps or steps[-1] != mode_step:
                continue
            default_parameter = self.is_parameter(name) and not (self.collection_names or self.tensor_regex)
            applied = []  # (global steps of the compared saves whose update is applied: the last one's is not yet)
            if default_parameter:
                applied = [g for g in (self.base_trial.global_step(mode, t) for t in steps[:-1]) if g is not None]
                frozen_then = self._gradients.frozen(name, applied)
                if frozen_then is None:  # those steps saved no gradient: the whole run decides
                    if frozen is None:
                        trained = trained_parameters(self.base_trial)
                        frozen = set() if trained is None else {n for n in self.tensors() if n not in trained}
                    frozen_then = name in frozen
                if frozen_then:
                    continue  # no gradient while other parameters have one: frozen on purpose
            workers = workers_at(self.base_trial, name, mode_step, mode)
            failing = []
            # each worker's copy against that worker's earlier saves ([None]: the one worker that saved it)
            for worker in workers if len(workers) > 1 else [None]:
                values = [self._value(name, worker, mode, s) for s in steps]
                if any(v is None for v in values):
                    continue
                values = [np.asarray(v) for v in values]
                if values[-1].size == 0:
                    continue  # (an empty tensor holds nothing that could change)
                judged = True
                if all(self._same(values[-1], v) for v in values[:-1]):
                    # (a gradient of exactly zero saved there: the optimizer stepped with nothing to apply, units
                    # dead after a blow-up, which leaves the weight unchanged as much as no step does: reported)
                    if default_parameter and not any(self._gradients.all_zero(name, g, worker=worker)
                                                     for g in applied):
                        skipped = self._identical.no_optimizer_step(
                            name, worker, mode, self.base_trial.tensor(name).steps(mode=mode), steps[0], steps[-1])
                        if skipped is not None:
                            # bit-identical while it moves at other saves: no optimizer step between these saves
                            # (a model called several times per update, gradient accumulation), no fault
                            self.logger.debug("%s: %s unchanged over %s %s: no optimizer step between them (%s)",
                                              self.rule_name, worker_named(name, worker), where, steps, skipped)
                            continue
                    failing.append((worker, f"{worker_named(name, worker)} unchanged over {where} "
                                            f"{', '.join(map(str, steps))}"))
            if failing:
                return first_finding(failing)
        if not judged:
            self.not_evaluated(f"needs a tensor saved at num_steps={self.num_steps} steps of one mode "
                               "(the current step included)")
        return False


class TensorVariance(_TensorRule):
    """Fires when the variance of an inspected tensor is above ``max_threshold`` or below ``min_threshold``
    (computed from the value, or the stored ``variance`` reduction when only reductions were saved).

    A tensor several workers saved (``include_workers="all"``) is judged on each worker's copy: a variance out of
    bounds on one worker only fires, naming the worker (``w (worker worker_1): variance ...``)."""

    requires_selection = True

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, max_threshold=None,
                 min_threshold=None, other_trials=None, action_str=None):
        super().__init__(base_trial, collection_names, tensor_regex, other_trials, action_str)
        self.max_threshold = as_float(self.rule_name, "max_threshold", max_threshold, allow_none=True)
        self.min_threshold = as_float(self.rule_name, "min_threshold", min_threshold, allow_none=True)
        for name in ("max_threshold", "min_threshold"):  # (variances are >= 0)
            if getattr(self, name) is not None:
                in_range(self.rule_name, name, getattr(self, name), 0)
        if self.max_threshold is None and self.min_threshold is None:
            raise SMDebugValueError(f"{self.rule_name}: give max_threshold and/or min_threshold")

    def invoke_at_step(self, step):
        empty, judged = [], False
        for name in self.tensors():
            workers = workers_at(self.base_trial, name, step)
            failing = []
            for worker in workers if len(workers) > 1 else [None]:  # (None: the one worker that saved it)
                try:
                    value = reduction_at(self.base_trial, name, step, "variance", worker=worker)
                except EmptyTensorError:
                    if name not in empty:  # (an empty tensor has no variance: nothing to judge)
                        empty.append(name)
                    continue
                if value is None:  # not saved at this step
                    continue
                variance = scalar(value)
                judged = True
                label = worker_named(name, worker)
                if self.max_threshold is not None and variance > self.max_threshold:
                    failing.append((worker, f"{label}: variance {variance:.4g} > max_threshold {self.max_threshold:g}"))
                elif self.min_threshold is not None and variance < self.min_threshold:
                    failing.append((worker, f"{label}: variance {variance:.4g} < min_threshold {self.min_threshold:g}"))
            if failing:
                return first_finding(failing)
        if empty and not judged:
            self._not_evaluated_empty(empty)
        return False
