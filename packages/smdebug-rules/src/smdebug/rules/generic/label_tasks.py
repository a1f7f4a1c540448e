"""Label tensors of different tasks are judged apart: ClassImbalance and Confusion of a multi-task run.

A multi-task model trains several heads, each on its own targets: a digit head with ``CrossEntropyLoss`` (ten
classes) and a yes/no head with ``BCEWithLogitsLoss`` (two), or a Keras model with two outputs. Their label
tensors are each a task's classes: class 0 of the yes/no head is not class 0 of the digit head, and counting
them in one histogram made a balanced digit set "imbalanced" (probe 11: every "odd" of the yes/no head was
counted as a zero digit).

The task of a label tensor is told by its name, as the hooks write it:

* a loss's inputs, ``<Loss>_input_<i>`` (PyTorch, MXNet): the loss's class. Two instances of one class
  (``BCEWithLogitsLoss`` and ``BCEWithLogitsLoss_1``: a GAN's discriminator and generator losses) share a label
  space and stay one task: the generator's targets are all "real" by design, which judged alone would read as
  a one-class data set. One loss called twice in a step (``_input_1``, ``_input_3``) is one task too;
* the hooks' own ``labels``, ``labels_<i>``, ``labels/<output>`` (Keras, XGBoost): the output they belong to,
  paired with ``predictions``, ``predictions_<i>``, ``predictions/<output>``;
* any other name is a task of its own.

When the run has label tensors of two tasks or more, each task is judged by a rule of its own, with the same
parameters and only that task's labels and predictions; a run of one task is judged as before.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from smdebug.core.loss_inputs import recorded_losses

#: what a PyTorch/MXNet loss's input tensors end with, before their index
_LOSS_INPUT = "_input_"
_DIGITS = "0123456789"


def task_of(name: str, role: str) -> str:
    """The task of label (``role="labels"``) or prediction (``role="predictions"``) tensor ``name``."""
    stem = name.rstrip(_DIGITS)  # (no regex: a run's name may end in 100,000 digits)
    if stem != name and stem.endswith(_LOSS_INPUT):
        loss = stem[: -len(_LOSS_INPUT)]
        instance = loss.rstrip(_DIGITS)  # (BCEWithLogitsLoss_1: a second loss module of the class)
        return "loss " + (instance[:-1] if instance != loss and instance.endswith("_") else loss)
    if name.startswith(role):
        return "output " + name[len(role):]
    return "tensor " + name


def tasks(label_names: List[str], prediction_names: List[str], trial=None) -> List[Tuple[str, List[str], List[str]]]:
    """``[(task, its label tensors, its prediction tensors)]`` in the order of the labels; one entry, with
    every name, when the labels are of one task. A task whose predictions the names do not give is paired
    through the losses the run's hook recorded (``trial``'s, when given): a Keras model's list of outputs
    (``predictions_0``) trained on a dict of targets (``labels/<output name>``) is named two ways, and the record
    of each output's loss says which prediction tensor goes with which labels."""
    labels: Dict[str, List[str]] = {}
    for name in label_names:
        labels.setdefault(task_of(name, "labels"), []).append(name)
    if len(labels) < 2:
        return [("", list(label_names), list(prediction_names))]
    predictions: Dict[str, List[str]] = {}
    for name in prediction_names:
        predictions.setdefault(task_of(name, "predictions"), []).append(name)
    return [(task, names, predictions.get(task) or _recorded_pair(trial, names, prediction_names))
            for task, names in labels.items()]


def _recorded_pair(trial, label_names: List[str], prediction_names: List[str]) -> List[str]:
    """The prediction tensors of the recorded loss whose targets are ``label_names`` ([] when none says)."""
    for loss in (recorded_losses(trial) or []) if trial is not None else []:
        if loss.targets and set(label_names) <= set(loss.target_names(label_names)):
            return loss.prediction_names(prediction_names)
    return []


def said(labels: List[str]) -> str:
    """How a task is named in a verdict: its label tensor(s)."""
    return labels[0] if len(labels) == 1 else f"{labels[0]} (and {len(labels) - 1} more)"


def judge_each_task(rule, step: int, per_task: List[Tuple[str, List[str], List[str]]], make_rule):
    """Judge ``step`` task by task, each by its own rule (``make_rule()``: a fresh rule of ``rule``'s kind and
    parameters, kept in ``rule`` for the steps to come), limited to the task's tensors (``_only``). Returns the
    tasks' findings, each naming its labels, or False.

    Each task's rule keeps its own record of what it judged (its own ``evaluation``, watched without trials:
    the reads are counted by ``rule``'s watch); ``rule``'s step is judged when some task's was, else it says
    why none was; a task never judged while another was is said as ``rule``'s caveat, so "no issues" does not
    claim it."""
    rules = rule.__dict__.setdefault("_task_rules", {})
    findings, unjudged, inapplicable, judged = [], [], [], False
    for task, labels, predictions in per_task:
        task_rule = rules.get(task)
        if task_rule is None:
            task_rule = rules[task] = make_rule()
        task_rule._only = (labels, predictions)  # (the task's tensors as of this step: the run may grow)
        before = task_rule.evaluation.steps
        with task_rule.evaluation.watch(step, ()):
            met = task_rule.invoke_at_step(step)
        name = said(labels)
        if met:
            findings.append(f"{name}: {met if isinstance(met, str) else 'condition met'}")
        if met or task_rule.evaluation.steps > before:
            judged = True
            rule.mark_evaluated(*labels)
        elif task_rule.evaluation.inapplicable:
            inapplicable.append(f"{name}: {task_rule.evaluation.inapplicable}")
        else:
            unjudged.append(f"{name}: {task_rule.evaluation.reason or 'not judged'}")
    if not judged:
        if unjudged:
            rule.not_evaluated("; ".join(unjudged + inapplicable))
        elif inapplicable:
            rule.not_applicable("; ".join(inapplicable))
    notes = []
    for task_rule in rules.values():
        labels, ev = task_rule._only[0], task_rule.evaluation
        if ev.steps == 0 and not ev.inapplicable:
            notes.append(f"{said(labels)} not judged ({ev.reason or 'no step offered its labels'})")
        elif ev.caveat:
            notes.append(f"{said(labels)}: {ev.caveat}")
    rule.caveat("; ".join(notes) or None)
    return "; ".join(findings) or False
