"""SimilarAcrossRuns: a run's tensors must equal the same tensors of other runs, step by step."""

from __future__ import annotations

import re

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import (
    InvalidWorker,
    MissingEventFile,
    NoMoreData,
    SMDebugValueError,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.evaluation import looking_for
from smdebug.rules.generic.selection import NamePattern, first_finding, value_at, worker_named, workers_at
from smdebug.rules.params import as_float, as_list
from smdebug.rules.rule import Rule


class SimilarAcrossRuns(Rule):
    """Fires when a tensor of the base run differs from the same tensor of another run at the same step.

    Steps are matched by mode: a step saved as ``(TRAIN, 7)`` in the base run is compared with ``(TRAIN, 7)``
    of the other run, whatever their global step numbers; steps saved without a mode are matched by global
    step. Steps and tensors the other run does not have are skipped (logged at debug level), as are tensors
    saved only as reductions. A step the other run has not reached yet is waited for only while the run is
    followed (up to the runner's timeout; without limit when the rule is invoked on its own, as the original
    did): judged afterwards, the steps past the other run's last are not compared, and the verdict says so (a
    run whose job was killed never reaches them).

    A tensor differs when the shapes differ, or when any value differs: for numbers, ``not numpy.isclose(a,
    b, rtol, atol, equal_nan=True)``, i.e. ``|a - b| > atol + rtol * |b|`` (NaN matches NaN); with the
    default ``rtol = atol = 0`` values must be exactly equal. Other types are compared with ``==``.

    In a run whose workers all saved a tensor (``include_workers="all"``) each worker's copy is compared with the
    same worker's copy in the other run, and a finding names the worker (``<tensor> (worker worker_1)``; a tensor
    that differs on several workers is said once, naming the others); the other run's copy of a worker it does not
    have is not compared. A run of one worker is compared as it always was.

    :param other_trials: the runs to compare with (trials or paths, one or more). Required.
    :param collection_names: collections to compare (list or comma-separated string). Default None.
    :param tensor_regex: regexes of tensor names to compare. Default None. With neither, every tensor of
        the base run is compared; with both, their union.
    :param rtol: relative tolerance (>= 0). Default ``"0"``.
    :param atol: absolute tolerance (>= 0). Default ``"0"``.
    """

    def __init__(self, base_trial, collection_names=None, tensor_regex=None, rtol="0", atol="0", other_trials=None,
                 action_str=None):
        super().__init__(base_trial, other_trials=other_trials, action_str=action_str)
        name = self.rule_name
        if not self.other_trials:
            raise SMDebugValueError(f"{name}: other_trials is required (the run(s) to compare with)")
        self.collection_names = as_list(name, "collection_names", collection_names)
        self.tensor_regex = as_list(name, "tensor_regex", tensor_regex)
        try:
            self._regexes = [NamePattern(r, name) for r in self.tensor_regex]
        except re.error as e:
            raise SMDebugValueError(f"{name}: tensor_regex is not a valid regular expression: {e}") from None
        #: (other run, mode) -> the first step of that mode the other run had not reached when it was compared
        self._behind = {}
        self.rtol = as_float(name, "rtol", rtol)
        self.atol = as_float(name, "atol", atol)
        for pname, value in (("rtol", self.rtol), ("atol", self.atol)):
            if not value >= 0:
                raise SMDebugValueError(f"{name}: {pname} must be >= 0, got {value!r}")

    def _selected(self, names):
        if not (self.collection_names or self._regexes):
            looking_for("every tensor", names)
            return sorted(names)
        chosen = set()
        for cname in self.collection_names:
            coll = self.base_trial.collection(cname)
            found = [n for n in names if coll.matches(n)]
            looking_for(f"collection {cname!r}", found)
            chosen.update(found)
        for regex in self._regexes:
            found = [n for n in names if regex.search(n)]
            looking_for(f"tensors matching {regex.pattern!r}", found)
            chosen.update(found)
        return sorted(chosen)

    def _other_value(self, other, name, mode, mode_step, worker=None):
        """The other run's value of ``name`` at ``(mode, mode_step)`` (``worker``'s copy when given), or None if it
        has none there."""
        try:
            if not self._reached(other, mode, mode_step):
                return None
            if not other.has_tensor(name):
                self.logger.debug("%s: %s has no tensor %s", self.rule_name, other.name, name)
                return None
            by_worker = {} if worker is None else {"worker": worker}
            return other.tensor(name).value(mode_step, mode=mode, **by_worker)
        except MissingEventFile:
            raise  # saved, but its file is gone: an error, not "nothing to compare"
        except (StepUnavailable, NoMoreData, TensorUnavailable, TensorUnavailableForStep, InvalidWorker) as e:
            self.logger.debug("%s: nothing to compare in %s for %s: %s", self.rule_name, other.name, name, e)
            return None

    def _reached(self, other, mode, mode_step) -> bool:
        """Whether ``other`` has reached ``(mode, mode_step)``, waiting no longer than the rule may
        (``others_wait_left``); a step it has not reached is remembered, and so are the later ones."""
        behind = self._behind.get((id(other), mode))
        if behind is not None and mode_step >= behind:
            return False
        left = self.others_wait_left()
        for look in range(2):
            try:
                other.wait_for_steps([mode_step], mode=mode, timeout=left)
                return True
            except TimeoutError:
                if left != 0 or look:
                    break
                other.refresh_data()  # not waiting: one look at what it has written since it was opened
        self._behind[(id(other), mode)] = mode_step
        return False

    def _lagging(self, mode, mode_step):
        """The other runs that had not reached ``(mode, mode_step)``, and the words for them."""
        behind = [o for o in self.other_trials
                  if self._behind.get((id(o), mode)) is not None and mode_step >= self._behind[(id(o), mode)]]
        if not behind:
            return [], ""
        first = min(self._behind[(id(o), mode)] for o in behind)
        where = f"step {first}" if mode == ModeKeys.GLOBAL else f"{mode.name} step {first}"
        names = ", ".join(o.name for o in behind)
        return behind, (f"run {names} had not reached {where} when it was compared (its training has not ended, "
                        f"or its job died); steps from there were not compared: judge again once it has ended, or "
                        f"follow both (--follow)")

    def invoke_at_step(self, step):
        base = self.base_trial
        mode, mode_step = base.mode_modestep(step)
        if mode is None or mode == ModeKeys.GLOBAL:
            mode, mode_step = ModeKeys.GLOBAL, step
        where = f"step {step}" if mode == ModeKeys.GLOBAL else f"{mode.name} step {mode_step}"
        compared = False
        for name in self._selected(base.tensor_names(step=step)):
            failing = []  # [(worker, finding)]
            for worker in self._workers(name, step):
                by_worker = {} if worker is None else {"worker": worker}
                mine = value_at(base, name, step, **by_worker)
                if mine is None:  # only reductions saved
                    continue
                mine = np.asarray(mine)
                for other in self.other_trials:
                    theirs = self._other_value(other, name, mode, mode_step, worker)
                    if theirs is None:
                        continue
                    compared = True
                    theirs = np.asarray(theirs)
                    difference = self._difference(mine, theirs)
                    if difference:
                        failing.append((worker, f"{worker_named(name, worker)} at {where} differs from run "
                                                f"{other.name}: {difference}"))
                        break
            if failing:
                return first_finding(failing)
        behind, words = self._lagging(mode, mode_step)
        if behind:
            self.caveat(words)  # (a NoIssuesFound verdict on the steps compared before must not claim these)
        if not compared:
            self.not_evaluated(words if behind else f"found no tensor saved both here and in "
                                                    f"{', '.join(t.name for t in self.other_trials)} at the same step")
        return False

    def _workers(self, name, step):
        """The workers whose copies of ``name`` at global ``step`` are compared, each with the same worker's copy in
        the other run: ``[None]`` (the run's one copy, read as always) unless several workers saved it
        (``include_workers="all"``): then every one, as a replica that departs from its counterpart -- its data
        loader seeded differently, its shard changed -- shows in its own copy first."""
        workers = workers_at(self.base_trial, name, step)
        return workers if len(workers) > 1 else [None]

    def _difference(self, a: np.ndarray, b: np.ndarray):
        """A description of how ``a`` differs from ``b``, or None if they match."""
        if a.shape != b.shape:
            return f"shape {a.shape} vs {b.shape}"
        if a.dtype.kind in "fciu" and b.dtype.kind in "fciu":
            with np.errstate(all="ignore"):
                differ = ~np.isclose(a, b, rtol=self.rtol, atol=self.atol, equal_nan=True)
                count = int(differ.sum())
                if not count:
                    return None
                kind = np.complex128 if "c" in (a.dtype.kind, b.dtype.kind) else np.float64
                gaps = np.abs(a[differ].astype(kind) - b[differ].astype(kind))
                gaps = gaps[~np.isnan(gaps)]
                largest = float(gaps.max()) if gaps.size else float("nan")
            return f"{count} of {a.size} values differ (largest difference {largest:.4g})"
        differ = a != b
        count = int(np.sum(differ))
        return f"{count} of {a.size} values differ" if count else None
