"""Class-index targets a loss leaves out, and loss values that are NaN because their loss counted no target.

A classification loss over ``C`` classes (PyTorch's CrossEntropyLoss, NLLLoss) takes class-index targets and
leaves out those equal to its ``ignore_index``: -100 by default (any negative id: no class is negative), or an id
at or after ``C`` (255 on the unlabelled borders of segmentation masks, a padding id), which the loss would
refuse as a target unless it is the ignored one. The classification rules leave such ids out of their counts
(:func:`beyond_classes`); the same ids explain a NaN loss value: a batch whose targets are *all* ignored (a small
last batch of an epoch, heavily masked data) is averaged over no element, 0/0 = NaN, while its gradient is zero
and the weights stay finite. :class:`UncountedLosses` tells such a save from a loss that blew up, by the loss's
own inputs saved at that step (the targets, and the scores for their class axis); without them it says nothing
and the NaN is judged as any other.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from smdebug.core import loss_inputs
from smdebug.core.run_info import framework_of
from smdebug.exceptions import (
    IndexReaderException,
    InvalidWorker,
    MissingEventFile,
    ShapeUnavailableForStep,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules.generic.selection import value_at


def class_axes(labels_shape: Tuple[int, ...], scores_shape: Tuple[int, ...]) -> List[int]:
    """The axes of scores of ``scores_shape`` that can hold the classes of labels of ``labels_shape``: the
    last (``(N, *S, C)``: Keras's, and every flat classifier's ``(N, C)``) and axis 1 (``(N, C, *S)``:
    PyTorch's dense outputs, which CrossEntropyLoss takes with the classes second). Both when the shapes
    fit either way (``C`` equal to the positions' sizes); none when the scores have no class axis."""
    if len(scores_shape) != len(labels_shape) + 1 or not labels_shape:
        return []
    axes = [-1] if scores_shape[:-1] == labels_shape else []
    if len(labels_shape) >= 2 and scores_shape[:1] + scores_shape[2:] == labels_shape:
        axes.append(1)
    return axes


def framework_axis(axes: List[int], framework: Optional[str]) -> Optional[int]:
    """The class axis among ``axes`` (see :func:`class_axes`): the only one, or when both fit the framework's
    (PyTorch and MXNet put classes second, Keras last); None when none fits, or both do and the framework is
    not known."""
    if len(axes) < 2:
        return axes[0] if axes else None
    if framework in ("pytorch", "mxnet"):
        return 1
    if framework == "tensorflow":
        return -1
    return None


def beyond_classes(ids: np.ndarray, scored: int) -> np.ndarray:
    """Where class ids are ones a model scoring ``scored`` classes cannot predict (``>= scored``): a loss over
    those classes fails on such a target unless it is its ``ignore_index`` (255, a padding id)."""
    return ids >= scored


def ignored_targets(targets: np.ndarray, scores_shape: Optional[Tuple[int, ...]],
                    framework: Optional[str]) -> Optional[np.ndarray]:
    """Where the class-index ``targets`` are ones their loss leaves out: negative ids (-100), and ids at or
    after the number of classes of ``scores_shape``'s class axis when it has one (:func:`beyond_classes`).
    None when the targets are no class ids (floats: probabilities, regression targets), which no loss
    ignores by value."""
    if targets.dtype.kind not in "iu":
        return None
    ignored = targets < 0
    if scores_shape is not None:
        axis = framework_axis(class_axes(tuple(targets.shape), tuple(scores_shape)), framework)
        if axis is not None:
            ignored = ignored | beyond_classes(targets, int(scores_shape[axis]))
    return ignored


#: a loss module's output as the PyTorch and MXNet hooks name it: ``<loss>_output_<call>``
LOSS_OUTPUT = re.compile(r"^(.*)_output_(\d+)$")


def later_call_inputs(record: loss_inputs.LossInputs, call: int) -> Tuple[str, str]:
    """The names of the targets and scores of ``record``'s ``call``-th call in a step (``call`` >= 1), as the
    hooks name a loss module's inputs call after call (``<loss>_input_<2i+1>``, ``<loss>_input_<2i>``); ("", "")
    when the record names its first call's targets otherwise, and later calls cannot be told."""
    if not re.search(record.targets, f"{record.name}_input_1"):
        return "", ""
    return f"{record.name}_input_{2 * call + 1}", f"{record.name}_input_{2 * call}"


def saved_shape(trial, name: str, step: int, worker: Optional[str] = None) -> Optional[Tuple[int, ...]]:
    """The shape of tensor ``name`` as saved at global ``step`` (by ``worker``: None, the one that saved it), read
    from the run without its values; None when only reductions were saved there, or not by that worker.
    Unreadable data is raised: the rule's verdict says it as such."""
    try:
        return tuple(trial.tensor(name).shape(step, **({} if worker is None else {"worker": worker})))
    except (MissingEventFile, IndexReaderException):
        raise
    except (TensorUnavailableForStep, ShapeUnavailableForStep, StepUnavailable, InvalidWorker):
        return None


class UncountedLosses:
    """Which saved loss values of a run are NaN because their loss counted no target at that step.

    The evidence is the loss's saved inputs at that step, as the hook recorded them (``_meta.losses``,
    :mod:`smdebug.core.loss_inputs`): every target of the call that made the value is ignored
    (:func:`ignored_targets`), or the targets are empty (an empty batch). The call is the one the value's name
    says (``<loss>_output_<i>``: the loss's ``i``-th call in the step, whose targets the hook names
    ``<loss>_input_<2i+1>`` and scores ``<loss>_input_<2i>``); a loss logged under a name of its own (a scalar
    a trainer logged) stands for the run's one recorded loss with targets, every call of it in the step. No
    record, no targets saved at that step, or one target counted: not such a value."""

    def __init__(self, trial):
        self.trial = trial
        self._all: Optional[List[loss_inputs.LossInputs]] = None
        self._framework: Optional[str] = None
        #: per loss: the names of its first call's targets and scores, once the run has saved its targets
        self._first_call: Dict[str, Tuple[str, str]] = {}
        #: per tensor: (the steps it was saved at, the run's last step when they were read)
        self._saved: Dict[str, Tuple[set, int]] = {}

    def _recorded(self) -> List[loss_inputs.LossInputs]:
        """The run's recorded losses, read once (asked at every NaN save: a run that blew up has thousands)."""
        if self._all is None:
            self._all = loss_inputs.recorded_losses(self.trial) or []
            self._framework = framework_of(self.trial)
        return self._all

    def _losses(self) -> List[loss_inputs.LossInputs]:
        return [r for r in self._recorded() if r.targets]

    def _calls(self, name: str, step: int) -> List[Tuple[str, str]]:
        """``[(targets, scores)]``: the tensor names of the loss inputs that made the value ``name`` at ``step``
        ([] when the run does not say)."""
        match = LOSS_OUTPUT.match(name)
        if match:
            for record in self._recorded():
                if match.group(1) == record.name:  # (a loss with no targets recorded: nothing to tell)
                    return [self._call_inputs(record, int(match.group(2)))] if record.targets else []
        records = self._losses()
        if len(records) != 1:
            return []  # (a logged loss of a run of several losses: which one it is, the run does not say)
        calls = []  # a logged loss: the mean of every call of the run's one loss at that step
        for i in range(1000):
            targets, scores = self._call_inputs(records[0], i)
            if not targets or not self._was_saved(targets, step):
                break
            calls.append((targets, scores))
        return calls

    def _call_inputs(self, record: loss_inputs.LossInputs, call: int) -> Tuple[str, str]:
        """The names of the targets and scores of ``record``'s ``call``-th call in a step ("" when the record
        names them otherwise than the hooks' ``<loss>_input_<i>``, for a call after the first)."""
        if call == 0:
            found = self._first_call.get(record.name)
            if found is None:
                names = self.trial.tensor_names()
                targets, scores = record.target_names(names), record.prediction_names(names)
                found = (targets[0] if len(targets) == 1 else "", scores[0] if len(scores) == 1 else "")
                if found[0]:  # (kept once the targets are saved: a run still training may save them later)
                    self._first_call[record.name] = found
            return found
        return later_call_inputs(record, call)

    def _was_saved(self, name: str, step: int) -> bool:
        """Whether tensor ``name`` was saved at global ``step`` (its steps read once, and again only for a step
        after the run's last one at that reading: a run still training)."""
        known = self._saved.get(name)
        if known is None or step > known[1]:
            last = self.trial.last_step()
            try:
                known = self._saved[name] = (set(self.trial.tensor(name).steps()), -1 if last is None else last)
            except TensorUnavailable:  # (a tensor the run does not have, yet)
                return False
        return step in known[0]

    def counted_none(self, name: str, step: int, worker: Optional[str] = None) -> bool:
        """Whether the loss value ``name`` saved at global ``step`` (by ``worker``: None, the one that saved it)
        counted no target, by the loss's inputs saved at that step."""
        calls = self._calls(name, step)
        if not calls:
            return False
        kwargs = {} if worker is None else {"worker": worker}
        for targets_name, scores_name in calls:
            if not targets_name or not self._was_saved(targets_name, step):
                return False
            targets = value_at(self.trial, targets_name, step, **kwargs)
            if targets is None:
                return False
            targets = np.asarray(targets)
            if targets.size == 0:
                continue  # (an empty batch: nothing to count)
            ignored = ignored_targets(targets, None, self._framework)  # (negative ids: no scores needed)
            if ignored is not None and not ignored.all():
                ignored = ignored_targets(targets, self._scores_shape(scores_name, step, targets.shape, worker),
                                          self._framework)
            if ignored is None or not ignored.all():
                return False
        return True

    def _scores_shape(self, name: str, step: int, targets_shape: Tuple[int, ...],
                      worker: Optional[str]) -> Optional[Tuple[int, ...]]:
        """The shape of the scores ``name`` the targets of ``targets_shape`` at ``step`` were scored by: as saved
        there, else as saved at the last step before (the first after) with the batch axis of the targets (the
        hook saves a NaN loss's targets, not its scores, which are as large as the model's output: their class
        count is the run's, whatever the step)."""
        if not name:
            return None
        self._was_saved(name, step)  # (reads the steps it was saved at)
        saved = self._saved[name][0] if name in self._saved else set()
        if not saved:
            return None
        earlier = [s for s in saved if s <= step]
        at = max(earlier) if earlier else min(saved)
        shape = saved_shape(self.trial, name, at, worker)
        if shape is None:
            return None  # (only reductions saved there, or not by that worker)
        if at != step and shape and targets_shape:
            shape = (targets_shape[0],) + shape[1:]  # (a batch of another size: the last one of an epoch)
        return shape


def said_steps(steps: List[int], most: int = 8) -> str:
    """Steps as a finding lists them, after "step"/"steps" as many as they are: the first ``most``, then how many
    more."""
    shown = ", ".join(str(s) for s in steps[:most])
    return ("steps " if len(steps) > 1 else "step ") + shown + (
        f" (+{len(steps) - most} more)" if len(steps) > most else "")


def uncounted_note(steps: Dict[str, List[int]]) -> Optional[str]:
    """The sentence a verdict says of the NaN loss values it left out, per loss (None when none)."""
    count = sum(len(s) for s in steps.values())
    if not count:
        return None
    where = "; ".join(f"{name} at {said_steps(s)}" for name, s in steps.items())
    return (f"{count} NaN loss value(s) ({where}) where every target was ignored or none was given (a mean over no "
            "element): not counted as an explosion")
