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

from smdebug.core.collection import mutation_count
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import InvalidWorker, MissingEventFile, StepUnavailable, TensorUnavailableForStep
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


#: per trial, which of its names each collection or pattern selects, with the names and collection it was worked
#: out for: every rule selects its tensors at every step, and matching every name of a run of 100,000 names at
#: each of its steps, for each rule, took minutes (probe 17b F11); a run's names only grow, and a collection read
#: again from a changed collections file is a new object, so the answer stands while both are the same
_MEMBERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _members(trial, key, matcher, all_names: List[str]) -> List[str]:
    """The names of ``all_names`` that ``matcher`` (a collection's ``matches``, a pattern's ``search``) takes,
    kept per trial under ``key`` while the names and the matcher's owner are the same."""
    # (mutation_count: any collection changed since -- a pattern added in place, a collections file read again)
    version = (len(all_names), all_names[-1] if all_names else None, id(getattr(matcher, "__self__", matcher)),
               mutation_count())
    try:
        cache = _MEMBERS.setdefault(trial, {})
    except TypeError:  # (an object that takes no weak reference: worked out each time)
        return [n for n in all_names if matcher(n)]
    kept = cache.get(key)
    if kept is None or kept[0] != version:
        kept = cache[key] = (version, [n for n in all_names if matcher(n)])
    return kept[1]


def select_tensors(trial, collection_names: List[str], tensor_regex: List[str]) -> List[str]:
    """Names of the tensors of the named collections and of those matching a regex (``re.search``). What
    was looked for is recorded for the rule's verdict (see :func:`smdebug.rules.evaluation.looking_for`)."""
    all_names = trial.tensor_names()
    names = set()
    for cname in collection_names:
        coll = trial.collection(cname)
        found = _members(trial, ("collection", cname), coll.matches, all_names)
        looking_for(f"collection {cname!r}", found)
        names.update(found)
    for regex in tensor_regex or ():
        compiled = _pattern_for(trial, regex)
        found = _members(trial, ("regex", regex), compiled.search, all_names)
        looking_for(f"tensors matching {regex!r}", found)
        names.update(found)
    return sorted(names)


def every_tensor(trial) -> List[str]:
    """Every tensor of the run (a rule given no selection), recorded like :func:`select_tensors`."""
    names = trial.tensor_names()
    looking_for("every tensor", names)
    return names


def members(trial, collection: str) -> List[str]:
    """The saved tensors of the run's collection ``collection``, [] when the run has none. Quiet: to a rule, a
    collection a run lacks or holds empty (no ``metrics`` logged, no ``loss_inputs`` of a custom loop) is an
    answer, while ``trial.tensor_names(collection=...)`` warns of it as of a user's typo (probe 18a W7: a warning
    on every healthy run that lacked one)."""
    coll = trial.collections().get(collection)
    return [] if coll is None else _members(trial, ("collection", collection), coll.matches, trial.tensor_names())


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
            if not recorded:
                what = f"collection {cname!r} (the hook found no such layers in the model)"
            elif found:
                what = f"collection {cname!r} ({role} of its layers)"
            else:
                # the layers are there, their tensors are not: say why that happens, not only "none"
                shown = ", ".join(layer.name for layer in recorded[:3]) + (", ..." if len(recorded) > 3 else "")
                what = (f"collection {cname!r} ({role} of its layers: the hook found {len(recorded)} ({shown}) but "
                        f"the run holds none of their {role}: " + _why_unsaved(trial, cname) + ")")
        else:
            found = members(trial, cname)
            what = f"collection {cname!r}"
        looking_for(what, found, absent_by_design=recorded is not None and not recorded)
        out.update((n, cname) for n in found if n not in out)
    return out


def _why_unsaved(trial, collection: str) -> str:
    """Why a collection whose layers the hook found holds no tensor, in the run's framework's terms."""
    from smdebug.core.run_info import framework_of

    hidden = {"pytorch": "the layers ran inside a compiled region (torch.compile) the hook cannot see into",
              "mxnet": "the layers ran inside a hybridized Gluon block the hook cannot see into",
              "tensorflow": "the layers ran inside a graph the hook cannot see into"}.get(
        framework_of(trial) or "", "the layers ran inside a graph the hook cannot see into (a compiled model, a "
                                   "hybridized Gluon block)")
    return (f"the collection was not saved (include {collection!r} in the hook's include_collections), or "
            f"{hidden} (the training log says so)")


GRADIENTS = "gradients"
#: the largest class id a label may be: counting classes allocates one slot per id up to the largest (a label of
#: 3e9 among a booster's made the rules grow to 24 GB; probe 17b F5), and no classifier scores a million classes
#: (a language model's vocabulary is a few hundred thousand). Larger values are no class ids.
MAX_CLASS_ID = 1 << 20


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

    def all_zero(self, name: str, step: int, worker: Optional[str] = None) -> bool:
        """Whether the gradient of parameter ``name`` saved at global step ``step`` (by ``worker`` when given) is
        exactly zero everywhere (False when it was not saved there, or only as reductions without a maximum)."""
        gradient = (self._gradients_at(step) or {}).get(name)
        if gradient is None:
            return False
        largest = reduction_at(self.trial, gradient, step, "max", abs=True, worker=worker)
        return largest is not None and scalar(largest) == 0

    def frozen(self, name: str, steps: Iterable[int]) -> Optional[bool]:
        """Whether parameter ``name`` had no gradient at any of the global ``steps`` that saved gradients of
        other parameters (frozen there, on purpose); None when none of them saved a gradient (nothing tells)."""
        known = [g for g in (self.at(step) for step in steps) if g is not None]
        if not known:
            return None
        return all(name not in g for g in known)


def value_at(trial, name: str, step: int, **kwargs):
    """The tensor's value at ``step``, or None if it was not saved there (only reductions, or not at all; with
    ``worker=``, not by that worker)."""
    tensor = trial.tensor(name)
    try:
        return tensor.value(step, **kwargs)
    except MissingEventFile:
        raise
    except (TensorUnavailableForStep, InvalidWorker):
        return None


def workers_at(trial, name: str, step: int, mode=None) -> List[str]:
    """The workers that saved anything of the tensor at ``step`` (a step of ``mode``; GLOBAL when None), sorted;
    [] when none did. A rule that keeps state across steps keys it by these names: worker_1's weights are no
    update of worker_0's."""
    try:
        return trial.tensor(name).workers(step, ModeKeys.GLOBAL if mode is None else mode)
    except (TensorUnavailableForStep, StepUnavailable):
        return []


def values_by_worker(trial, name: str, step: int, mode=None) -> "List[Tuple[Optional[str], np.ndarray]]":
    """``[(worker, value)]``: the tensor's value at ``step`` (a step of ``mode``) from each worker that saved one
    (``worker`` None when only one did, as :func:`value_at`). A run whose workers all save a tensor
    (``include_workers="all"``) may hold a NaN in one worker's copy only: reading the first worker's would miss
    it."""
    workers = workers_at(trial, name, step, mode)
    kwargs = {} if mode is None else {"mode": mode}
    if len(workers) <= 1:
        value = value_at(trial, name, step, **kwargs) if workers else None
        return [] if value is None else [(None, value)]
    import numpy as np

    found = []
    for worker in workers:
        value = value_at(trial, name, step, worker=worker, **kwargs)
        if value is not None:  # (None: only reductions or a shape saved by that worker)
            found.append((worker, np.asarray(value)))
    return found


def worker_named(name: str, worker: Optional[str]) -> str:
    """How a finding names one worker's copy of a tensor: ``<name> (worker <w>)``; ``name`` alone for a tensor
    one worker saved (``worker`` None), so a run of one worker reads as it always did."""
    return name if worker is None else f"{name} (worker {worker})"


def first_finding(failing: "List[Tuple[Optional[str], str]]") -> Optional[str]:
    """The finding of a tensor whose copies are at fault on the workers ``failing`` (``[(worker, reason)]``,
    workers in order): the first worker's reason (its own numbers), then which other workers' copies are at
    fault too. Healthy DDP workers hold identical copies, so a fault of one is often a fault of all: said once,
    naming the others, not once per worker. None when ``failing`` is empty."""
    if not failing:
        return None
    reason = failing[0][1]
    others = [w for w, _ in failing[1:] if w is not None]
    if not others:
        return reason
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return f"{reason}; also on {shown}"


def reduction_at(trial, name: str, step: int, reduction: str, abs: bool = False, worker: Optional[str] = None):
    """A reduction of the tensor at ``step`` (stored, else computed from the value; ``worker``'s copy when
    given), or None if neither was saved there."""
    tensor = trial.tensor(name)
    try:
        return tensor.reduction_value(step, reduction, abs=abs, worker=worker)
    except MissingEventFile:
        raise
    except (TensorUnavailableForStep, InvalidWorker):
        return None


def ndim_at(trial, name: str, step: int, worker: Optional[str] = None):
    """The number of dimensions of the tensor saved at ``step`` (from the index, without reading the value;
    ``worker``'s copy when given), or None when unknown (only reductions saved, or a run that did not record
    shapes)."""
    from smdebug.exceptions import ShapeUnavailableForStep

    try:
        return len(trial.tensor(name).shape(step, worker=worker))
    except MissingEventFile:
        raise
    except (TensorUnavailableForStep, ShapeUnavailableForStep, InvalidWorker):
        return None


def scalar(value) -> float:
    """A reduction as a float (stored reductions are 1-element arrays, computed ones numpy scalars)."""
    import numpy as np

    return float(np.asarray(value).reshape(-1)[0])


_BIAS_PART = re.compile(r"(?:^|_)bias(?:$|_)")


def is_bias(name: str) -> bool:
    """Whether the parameter ``name`` (or its gradient's name) is a layer's bias, by the name every framework
    gives one: the last part of the path (``fc1.bias`` in PyTorch, ``dense/bias`` or ``dense/bias:0`` in Keras,
    ``dense0_bias`` in MXNet, ``bias_ih_l0`` / ``in_proj_bias`` in PyTorch's recurrent and attention layers).
    Rank alone does not tell: Keras' ``EinsumDense`` layers, which ``MultiHeadAttention`` is built of, hold biases
    of shape ``(heads, key_dim)``; and an attention key projection's bias gets a gradient of exactly zero (it
    shifts all of a query's logits alike, which the softmax ignores), as a bias before BatchNorm does."""
    last = re.split(r"[/.]", name.split(":", 1)[0])[-1].lower()
    return bool(_BIAS_PART.search(last))


def stopped_on_request(trial) -> Optional[str]:
    """The trial's sentence when a rule's request stopped the training (``--follow --stop-training``:
    :meth:`~smdebug.trials.trial.Trial.stopped_on_request`), None otherwise, while the run goes on, and for a
    trial of another kind (which records no stop). Such a run ends normally, with its end marker, but where it
    was stopped: the tests of "the end of training" and of "the trained model" do not judge it as finished."""
    said = getattr(trial, "stopped_on_request", None)
    return (said() if callable(said) else None) or None
