"""What a rule evaluated: the steps it judged on real data, the tensors it read, what it looked for.

Every rule gets honest verdicts from the framework, with no code of its own:

* while :meth:`Rule.invoke` evaluates a step, the rule's trials record what they returned and which
  damaged or missing files they met (:meth:`smdebug.trials.Trial.read_log`). A step at which the rule read
  at least one value counts as *evaluated*; a step at which it met unreadable data raises that error
  (naming the file and the step) even if the rule caught it -- a rule that skips "not saved" with
  ``except TensorUnavailableForStep`` would otherwise skip ``MissingEventFile``, its subclass, too;
* the selection helpers (:func:`smdebug.rules.generic.selection.select_tensors`, ``RequiredTensors.add``...)
  record what the rule looked for with :func:`looking_for`, so a rule that found nothing can say what it
  looked for and what the run has (:meth:`Evaluation.detail`).

Rules whose verdict needs more than "read a value" say so: ``self.not_evaluated(reason)`` when what was
read at a step is not enough to judge (fewer samples than the rule needs), ``self.mark_evaluated()`` when the
step was judged on something other than tensor values (StalledTrainingRule judges step arrival). An
explicit ``mark_evaluated()`` wins over ``not_evaluated()`` at the same step.

``self.not_applicable(reason)`` is for what the rule *knows* from the run does not concern it: the model's
input is not an image, the run has no validation at all, the hook scanned the model and found no layer of
the types the rule judges. A rule that judged no step and said so ends ``NotApplicable`` rather than
``NotEvaluated``: the run was read, and there is nothing of this kind in it to go wrong. The selection
helpers say it for activation collections the hook found no layers for, when nothing else the rule looked
for matched either.
"""

from __future__ import annotations

import weakref

from contextvars import ContextVar
from typing import Dict, Iterable, List, Optional, Set

from smdebug.core.names import clipped
from smdebug.core.run_info import no_gradients, traced_only, trained_in_eval
from smdebug.exceptions import (
    CollectionFileCorrupted,
    IndexReaderException,
    MissingEventFile,
    RuleEvaluationConditionMet,
    SMDebugError,
)

#: errors meaning "the data is there but cannot be read" (each names the file and the step); never a skip
UNREADABLE = (MissingEventFile, IndexReaderException, CollectionFileCorrupted)

#: the evaluation of the step being evaluated now (set by Evaluation.watch), for the selection helpers
_CURRENT: ContextVar[Optional["_Step"]] = ContextVar("smdebug_rule_step", default=None)

_SHOWN_NAMES = 5


class RuleNotEvaluated(SMDebugError):
    """``invoke_rule(..., require_evaluation=True)``: the rule found nothing it could evaluate."""

    def __init__(self, rule_name: str, detail: str):
        super().__init__(rule_name, detail)
        self.rule_name = rule_name
        self.detail = detail

    def __str__(self):
        return f"{self.rule_name} evaluated nothing: {self.detail}"


class _Step:
    """What happened while one step was evaluated."""

    __slots__ = ("evaluation", "judged", "unjudged", "inapplicable", "tensors")

    def __init__(self, evaluation: "Evaluation"):
        self.evaluation = evaluation
        self.judged = False  # mark_evaluated() was called
        self.unjudged: Optional[str] = None  # not_evaluated(reason) was called
        self.inapplicable: Optional[str] = None  # not_applicable(reason) was called
        self.tensors: Set[str] = set()  # named by mark_evaluated() / note_read()


class Evaluation:
    """A rule's record of what it evaluated (``rule.evaluation``), kept across steps and calls."""

    def __init__(self):
        #: steps judged on real data
        self.steps = 0
        #: the last of them
        self.last_step: Optional[int] = None
        #: tensors whose values were read at those steps
        self.tensors: Set[str] = set()
        #: what the rule looked for (a description) -> the tensors of the run that matched it
        self.wanted: Dict[str, Set[str]] = {}
        #: why the rule could not judge, as it last said (``not_evaluated``)
        self.reason: Optional[str] = None
        #: why the run gives the rule nothing to judge, as it last said (``not_applicable``)
        self.inapplicable: Optional[str] = None
        #: what the rule looked for that the hook knows the model lacks (no layers of the type)
        self.absent_by_design: Set[str] = set()
        #: what the rule left unjudged although it judged the run (a test it could not reach), as it last said
        #: (``Rule.caveat``): the detail of a NoIssuesFound verdict, which would otherwise claim that test too
        self.caveat: Optional[str] = None

    # --- one step -------------------------------------------------------------------------------------
    def watch(self, step: int, trials: Iterable) -> "_Watch":
        """Context manager around the evaluation of ``step`` over ``trials`` (see the module docstring)."""
        return _Watch(self, step, list(trials))

    # --- the verdict's words ----------------------------------------------------------------------------
    def looked_for(self) -> str:
        """``collection 'gradients' -> 2 tensors: a, b; tensors matching '.*relu_output' -> none``."""
        parts = []
        for what, names in self.wanted.items():
            parts.append(f"{what} -> {_names(names) if names else 'none'}")
        return "; ".join(parts)

    def not_applicable_reason(self) -> Optional[str]:
        """Why the rule does not apply to the run, or None: its own word, or every collection it looked for
        is one the hook found no layers for and nothing else it looked for matched."""
        if self.inapplicable:
            return self.inapplicable
        if self.absent_by_design and not any(self.wanted.values()):
            return "the model has no layers of the types this rule judges (" + "; ".join(
                sorted(self.absent_by_design)) + ")"
        return None

    def detail(self, trial=None) -> str:
        """Why the rule evaluated nothing: its own reason, what it looked for, what the run has."""
        parts = []
        if self.reason:
            parts.append(self.reason)
        if self.wanted:
            found = set().union(*self.wanted.values())
            parts.append(f"looked for {self.looked_for()}"
                         + ("" if not found or self.reason else " (no value of them at any evaluated step)"))
        elif not self.reason:
            parts.append("read no tensor value")
        if trial is not None:
            gradients = _why_no_gradients(self.wanted, trial)
            if gradients:
                parts.append(gradients)
            in_eval = trained_in_eval(trial)
            if in_eval is not None:
                parts.append(f"the model trained in eval() mode: an optimizer stepped it at step {in_eval} while "
                             f"model.training was False, so the hook saved those steps as EVAL steps (model.eval() "
                             f"left on while training? call model.train() before training)")
            traced = traced_only(trial)
            if traced:
                parts.append(f"{' and '.join(traced)} ran inside a tf.function, seen by the hook only while it was "
                             f"traced: the training steps through it saved nothing (train with model.fit(..., "
                             f"callbacks=[hook]) or an eager step inside hook.wrap_tape(tf.GradientTape()))")
            parts.append(f"the run has {describe_run(trial)}")
        return "; ".join(parts)


def _why_no_gradients(wanted: Dict[str, Set[str]], trial) -> Optional[str]:
    """Why a rule that looked for gradients found none, when the run recorded it (``_meta.no_gradients``: an
    optimizer stepped with no gradient at a step whose gradients were due): the symptom of a training fault, said
    where the user reads the verdict, not only in the training log."""
    if not any("gradient" in what and not names for what, names in wanted.items()):
        return None
    recorded = no_gradients(trial)
    if recorded is None:
        return None
    step, count = recorded
    return (f"no gradient was saved: at step {step}, when gradients were due, none of the {count} parameters the "
            f"optimizer updates had one as it stepped (zero_grad() between backward() and step()? no backward() "
            f"reaching them? all frozen?)")


class _Watch:
    __slots__ = ("evaluation", "step", "trials", "record", "_logs", "_token")

    def __init__(self, evaluation: Evaluation, step: int, trials: List):
        self.evaluation = evaluation
        self.step = step
        self.trials = [t for t in trials if hasattr(t, "read_log")]  # duck-typed trials: no log
        self.record = _Step(evaluation)
        self._logs: List = []
        self._token = None

    def __enter__(self) -> _Step:
        try:
            for trial in self.trials:
                self._logs.append((trial, trial.read_log().__enter__()))
        except BaseException:
            self._close()
            raise
        self._token = _CURRENT.set(self.record)
        return self.record

    def _close(self) -> None:
        for _, log in self._logs:
            log.__exit__(None, None, None)

    def __exit__(self, exc_type, exc, tb) -> bool:
        _CURRENT.reset(self._token)
        self._close()
        reads, tensors, damage = 0, set(), None
        for trial, log in self._logs:
            reads += log.values
            tensors |= log.tensors
            if log.damage and damage is None and not getattr(trial, "skip_damaged", False):
                damage = log.damage[0]
        if damage is not None and not isinstance(exc, UNREADABLE):
            # unreadable data met at this step, whatever the rule made of it: the verdict is an Error
            raise damage from exc
        if exc is None or isinstance(exc, RuleEvaluationConditionMet):
            self._count(reads, tensors)
        return False

    def _count(self, reads: int, tensors: Set[str]) -> None:
        record, ev = self.record, self.evaluation
        if record.unjudged is not None:
            ev.reason = record.unjudged
        ev.inapplicable = record.inapplicable  # as of the last step (a run may start validating later)
        if record.inapplicable is not None:
            record.unjudged = record.unjudged or record.inapplicable  # not a judged step
        watched = bool(self.trials)
        judged = record.judged or (record.unjudged is None and (reads > 0 or bool(record.tensors)
                                                                  or not watched))
        if judged:
            ev.steps += 1
            ev.last_step = self.step
            ev.tensors |= tensors | record.tensors


# --- used by rules and selection helpers while a step is evaluated ----------------------------------------
def looking_for(what: str, names: Iterable[str] = (), absent_by_design: bool = False) -> None:
    """Record that the rule being evaluated looks for ``what`` (``"collection 'gradients'"``) and which
    tensors of the run matched it; ``absent_by_design``: the hook recorded that the model has nothing of
    the kind (no layer of the collection's types). Does nothing outside an evaluation."""
    record = _CURRENT.get()
    if record is not None:
        record.evaluation.wanted.setdefault(what, set()).update(names)
        if absent_by_design:
            record.evaluation.absent_by_design.add(what)


def note_read(name: str) -> None:
    """Record that the rule judged data of tensor ``name`` it had read earlier (its own cache)."""
    record = _CURRENT.get()
    if record is not None:
        record.tensors.add(name)


def mark_evaluated(names: Iterable[str] = ()) -> None:
    record = _CURRENT.get()
    if record is not None:
        record.judged = True
        record.tensors.update(names)


def not_evaluated(reason: str) -> None:
    record = _CURRENT.get()
    if record is not None:
        record.unjudged = reason


def not_applicable(reason: str) -> None:
    record = _CURRENT.get()
    if record is not None:
        record.inapplicable = reason


# --- what the run has -----------------------------------------------------------------------------------
def _names(names: Iterable[str], shown: int = _SHOWN_NAMES) -> str:
    names = sorted(names)
    # (each name clipped: a hostile run's 1 MiB name made this detail a megabyte on one line)
    listed = ", ".join(clipped(n, 100) for n in names[:shown]) + (", ..." if len(names) > shown else "")
    return f"{len(names)} tensor{'s' if len(names) != 1 else ''}: {listed}" if names else "no tensors"


#: per trial, (what describe_run said, the run's size when it said it): every rule's verdict describes the run,
#: and matching every name against every collection for each took seconds on a run of 100,000 names
_DESCRIBED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def describe_run(trial) -> str:
    """``6 steps 0-5 (TRAIN 6); collections biases, losses; 2 tensors: a, b`` -- from the run's index
    only (no tensor data is read)."""
    try:
        size = (trial.step_count(show_incomplete_steps=True), len(trial.tensor_names()), len(trial.collections()),
                trial.loaded_all_steps)
        kept = _DESCRIBED.get(trial)
    except (SMDebugError, TypeError, AttributeError):
        size, kept = None, None
    if kept is not None and kept[1] == size:
        return kept[0]
    said = _describe_run(trial)
    if size is not None:
        try:
            _DESCRIBED[trial] = (said, size)
        except TypeError:  # (an object that takes no weak reference)
            pass
    return said


def _describe_run(trial) -> str:
    try:
        steps = trial.steps()
        counts: Dict[str, int] = {}
        for s in steps:
            mode = trial.mode(s)
            label = getattr(mode, "name", None) or "GLOBAL"
            counts[label] = counts.get(label, 0) + 1
        collections = sorted(trial.collections())
        names = trial.tensor_names()
    except SMDebugError as e:
        return f"an index that cannot be read ({e})"
    if not steps:
        begin, end = getattr(trial, "range_steps", None) or (None, None)
        within = "" if begin is None and end is None else (
            f" from step {begin or 0}" + (f" to {end - 1}" if end is not None else ""))
        what = f"no steps{within}"
    else:
        modes = ", ".join(f"{m} {n}" for m, n in sorted(counts.items()))
        what = f"{len(steps)} step{'s' if len(steps) != 1 else ''} {steps[0]}-{steps[-1]} ({modes})"
    # the collections that hold tensors of the run (a hook exports its empty default collections too)
    holding = [c for c in collections if any(trial.collection(c).matches(n) for n in names)]
    shown = ", ".join(holding[:10]) + (", ..." if len(holding) > 10 else "")
    return f"{what}; collections {shown or 'none with tensors'}; {_names(names)}"
