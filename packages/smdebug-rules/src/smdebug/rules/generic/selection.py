"""Which tensors a rule inspects (the union of named collections and regexes), and reading a value that may
not have been saved at a step.

"Not saved at this step" is normal and skipped (None). "Saved, but unreadable" is not: ``MissingEventFile``
(a subclass of ``TensorUnavailableForStep``), ``EventFileCorrupted`` and ``IndexReaderException``
propagate, so the rule's verdict is an Error naming the file and the step.
"""

from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Set, Tuple

from smdebug.exceptions import MissingEventFile, StepUnavailable, TensorUnavailableForStep
from smdebug.rules.evaluation import looking_for

if TYPE_CHECKING:  # (numpy is not imported at module level: `smdebug --help` reaches this module)
    import numpy as np


class NamePattern:
    """A rule's regex over the run's tensor names, ``re.search`` semantics, matched in bounded time: the
    names come from the run, and a hostile one (100,000 characters against ``.*relu_output``) made Python's
    ``re`` take minutes. A leading ``.*`` is dropped (it changes no answer of a search, and costs the square
    of the name's length on names that do not match); every match is bounded by the core's run patterns
    (``smdebug.core.run_regex``: a match that takes too long sets the pattern aside, with a warning).

    :raises re.error: an invalid pattern (what ``re.compile`` says of it).
    """

    def __init__(self, pattern: str, owner: str = "a rule"):
        from smdebug.core.run_regex import BoundedPatterns, PatternError

        re.compile(pattern)  # (re's own error for an invalid pattern)
        self.pattern = pattern
        try:
            self._bounded = BoundedPatterns([_search_form(pattern)], f"{owner} (tensor pattern)")
        except PatternError as e:
            raise re.error(str(e)) from None

    def search(self, name: str) -> bool:
        return self._bounded.search(name)


def _search_form(pattern: str) -> str:
    """``pattern`` without a leading ``.*`` that a search does not need (not ``.*?``, ``.*+``, ``.**``)."""
    while pattern.startswith(".*") and pattern[2:3] not in ("?", "+", "*", "{"):
        pattern = pattern[2:]
    return pattern


#: per trial, the patterns select_tensors has compiled (rules call it at every step)
_PATTERNS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _pattern_for(trial, regex: str) -> NamePattern:
    try:
        cache = _PATTERNS.setdefault(trial, {})
    except TypeError:  # (an object that takes no weak reference: compiled each time)
        return NamePattern(regex)
    if regex not in cache:
        cache[regex] = NamePattern(regex)
    return cache[regex]


def select_tensors(trial, collection_names: List[str], tensor_regex: List[str]) -> List[str]:
    """Names of the tensors of the named collections and of those matching a regex (``re.search``). What
    was looked for is recorded for the rule's verdict (see :func:`smdebug.rules.evaluation.looking_for`)."""
    all_names = trial.tensor_names()
    names = set()
    for cname in collection_names:
        coll = trial.collection(cname)
        found = [n for n in all_names if coll.matches(n)]
        looking_for(f"collection {cname!r}", found)
        names.update(found)
    for regex in tensor_regex or ():
        compiled = _pattern_for(trial, regex)
        found = [n for n in all_names if compiled.search(n)]
        looking_for(f"tensors matching {regex!r}", found)
        names.update(found)
    return sorted(names)


def every_tensor(trial) -> List[str]:
    """Every tensor of the run (a rule given no selection), recorded like :func:`select_tensors`."""
    names = trial.tensor_names()
    looking_for("every tensor", names)
    return names


def collection_tensors(trial, collection_names: Iterable[str], role: str = "") -> Dict[str, str]:
    """``{tensor name: collection}`` for the saved tensors of ``collection_names`` (collections the run does
    not have hold nothing).

    ``role`` (``"inputs"`` or ``"outputs"``) narrows an activation collection (``relu_activations``...) to the
    inputs or the outputs of its layers, as the hook recorded them (``smdebug.core.activations``); without
    that record (a run of the original smdebug) the collection's tensors are all taken.
    """
    from smdebug.core.activations import activation_layers

    collections = trial.collections()
    layers = activation_layers(trial) if role else None
    names = None
    out: Dict[str, str] = {}
    for cname in collection_names:
        coll = collections.get(cname)
        if coll is None:
            looking_for(f"collection {cname!r}", ())
            continue
        if names is None:
            names = trial.tensor_names()
        recorded = layers.get(cname) if layers is not None else None
        if recorded is not None:
            found = []
            for layer in recorded:
                found += layer.input_names(names) if role == "inputs" else layer.output_names(names)
            what = (f"collection {cname!r} ({role} of its layers)" if recorded
                    else f"collection {cname!r} (the hook found no such layers in the model)")
        else:
            found = [n for n in names if coll.matches(n)]
            what = f"collection {cname!r}"
        looking_for(what, found, absent_by_design=recorded is not None and not recorded)
        out.update((n, cname) for n in found if n not in out)
    return out


GRADIENTS = "gradients"


def trained_parameters(trial) -> Optional[Set[str]]:
    """The parameters the run saved a gradient of (``gradient/fc1.weight`` -> ``fc1.weight``; the hooks name a
    gradient after its parameter below one prefix: ``gradient/`` for PyTorch and MXNet, ``gradients/`` for
    TensorFlow), or None when the run saved no gradient at all (then nothing tells a frozen parameter from a
    trained one).

    The hooks save a parameter's gradient as the optimizer sees it: a parameter with no gradient while others
    have one is not being trained -- frozen on purpose (``requires_grad=False``, ``trainable=False``, left out
    of the optimizer for fine-tuning) -- so its staying unchanged is no fault. A parameter that does get a
    gradient and stays unchanged is."""
    names = [n for n in trial.tensor_names(collection=GRADIENTS)] if GRADIENTS in trial.collections() else []
    if not names:
        return None
    return {n.split("/", 1)[1] for n in names if "/" in n}


class GradientsByStep:
    """Which parameters the run saved a gradient of at a given step, read once per step: a parameter frozen at
    some steps only (gradual unfreezing: the top of a pre-trained body joins training after a few epochs) is
    frozen at those, and trained at the others. See :func:`trained_parameters` for what a saved gradient means.
    """

    def __init__(self, trial):
        self.trial = trial
        #: global step -> {parameter: its gradient's tensor name}, or None when the step saved no gradient
        self._at: Dict[int, Optional[Dict[str, str]]] = {}

    def _gradients_at(self, step: int) -> Optional[Dict[str, str]]:
        from smdebug.exceptions import StepNotYetAvailable, StepUnavailable

        if step not in self._at:
            coll = self.trial.collections().get(GRADIENTS)
            try:
                names = self.trial.tensor_names(step=step) if coll is not None else []
            except (StepUnavailable, StepNotYetAvailable):
                names = []
            found = {n.split("/", 1)[1]: n for n in names if coll.matches(n) and "/" in n} if names else {}
            self._at[step] = found or None
        return self._at[step]

    def at(self, step: int) -> Optional[Set[str]]:
        """The parameters with a gradient saved at global step ``step``, or None when the step saved none."""
        found = self._gradients_at(step)
        return None if found is None else set(found)

    def all_zero(self, name: str, step: int) -> bool:
        """Whether the gradient of parameter ``name`` saved at global step ``step`` is exactly zero everywhere
        (False when it was not saved there, or only as reductions without a maximum)."""
        gradient = (self._gradients_at(step) or {}).get(name)
        if gradient is None:
            return False
        largest = reduction_at(self.trial, gradient, step, "max", abs=True)
        return largest is not None and scalar(largest) == 0

    def frozen(self, name: str, steps: Iterable[int]) -> Optional[bool]:
        """Whether parameter ``name`` had no gradient at any of the global ``steps`` that saved gradients of
        other parameters (frozen there, on purpose); None when none of them saved a gradient (nothing tells)."""
        known = [g for g in (self.at(step) for step in steps) if g is not None]
        if not known:
            return None
        return all(name not in g for g in known)


def value_at(trial, name: str, step: int, **kwargs):
    """The tensor's value at ``step``, or None if it was not saved there (only reductions, or not at all)."""
    tensor = trial.tensor(name)
    try:
        return tensor.value(step, **kwargs)
    except MissingEventFile:
        raise
    except TensorUnavailableForStep:
        return None


def values_by_worker(trial, name: str, step: int) -> "List[Tuple[Optional[str], np.ndarray]]":
    """``[(worker, value)]``: the tensor's value at ``step`` from each worker that saved one (``worker`` None when
    only one did, as :func:`value_at`). A run whose workers all save a tensor (``include_workers="all"``) may
    hold a NaN in one worker's copy only: reading the first worker's would miss it."""
    tensor = trial.tensor(name)
    try:
        workers = tensor.workers(step)
    except (TensorUnavailableForStep, StepUnavailable):
        return []
    if len(workers) <= 1:
        value = value_at(trial, name, step)
        return [] if value is None else [(None, value)]
    import numpy as np

    found = []
    for worker in sorted(workers):
        try:
            found.append((worker, np.asarray(tensor.value(step, worker=worker))))
        except MissingEventFile:
            raise
        except TensorUnavailableForStep:  # only reductions or a shape saved by that worker
            continue
    return found


def reduction_at(trial, name: str, step: int, reduction: str, abs: bool = False):
    """A reduction of the tensor at ``step`` (stored, else computed from the value), or None if neither
    was saved there."""
    tensor = trial.tensor(name)
    try:
        return tensor.reduction_value(step, reduction, abs=abs)
    except MissingEventFile:
        raise
    except TensorUnavailableForStep:
        return None


def ndim_at(trial, name: str, step: int):
    """The number of dimensions of the tensor saved at ``step`` (from the index, without reading the value),
    or None when unknown (only reductions saved, or a run that did not record shapes)."""
    from smdebug.exceptions import ShapeUnavailableForStep

    try:
        return len(trial.tensor(name).shape(step))
    except MissingEventFile:
        raise
    except (TensorUnavailableForStep, ShapeUnavailableForStep):
        return None


def scalar(value) -> float:
    """A reduction as a float (stored reductions are 1-element arrays, computed ones numpy scalars)."""
    import numpy as np

    return float(np.asarray(value).reshape(-1)[0])
