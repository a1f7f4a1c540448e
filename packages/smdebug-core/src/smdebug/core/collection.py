"""Collections: named groups of tensors with their own save schedule and reductions."""

from __future__ import annotations

import json
import re
from typing import Iterable, List, Optional, Set

from smdebug.core.names import name_list, shown
from smdebug.core.config_keys import check_known_keys
from smdebug.core.reduction_config import ReductionConfig, _as_bool
from smdebug.core.run_regex import Budget, BoundedPatterns, PatternError, compile_pattern
from smdebug.core.save_config import SaveConfig, schedule_changed
from smdebug.exceptions import CollectionFileCorrupted, SMDebugTypeError


class CollectionKeys:
    DEFAULT = "default"
    ALL = "all"

    INPUTS = "inputs"
    OUTPUTS = "outputs"
    WEIGHTS = "weights"
    GRADIENTS = "gradients"
    LOSSES = "losses"
    BIASES = "biases"
    LAYERS = "layers"
    SCALARS = "scalars"

    # TensorFlow
    OPTIMIZER_VARIABLES = "optimizer_variables"
    TENSORFLOW_SUMMARIES = "tensorflow_summaries"
    METRICS = "metrics"
    SM_METRICS = "sm_metrics"
    SEARCHABLE_SCALARS = "sm_metrics"  # the name the documentation uses for sm_metrics

    # Classifiers: Keras fit/evaluate, XGBoost, the PyTorch/Gluon classification loss modules' inputs
    PREDICTIONS = "predictions"
    LABELS = "labels"
    # Every loss's inputs, whatever the loss (the prediction as the loss gets it and the targets; what each
    # loss expects is recorded beside them: smdebug.core.loss_inputs)
    LOSS_INPUTS = "loss_inputs"

    # Activation layers found by their type, whatever their names (inputs and outputs of each layer; see
    # smdebug.core.activations for which layer types go where)
    RELU_ACTIVATIONS = "relu_activations"
    LEAKY_RELU_ACTIVATIONS = "leaky_relu_activations"
    ELU_ACTIVATIONS = "elu_activations"
    GELU_ACTIVATIONS = "gelu_activations"
    SILU_ACTIVATIONS = "silu_activations"
    TANH_ACTIVATIONS = "tanh_activations"
    SIGMOID_ACTIVATIONS = "sigmoid_activations"
    SOFTMAX_ACTIVATIONS = "softmax_activations"
    SOFTPLUS_ACTIVATIONS = "softplus_activations"

    # XGBoost
    HYPERPARAMETERS = "hyperparameters"
    FEATURE_IMPORTANCE = "feature_importance"
    AVERAGE_SHAP = "average_shap"
    FULL_SHAP = "full_shap"
    TREES = "trees"


# Collections whose tensors are scalars: never reduced, no histograms, scalar TensorBoard summaries.
SCALAR_COLLECTIONS = frozenset(
    {
        CollectionKeys.LOSSES,
        CollectionKeys.METRICS,
        CollectionKeys.FEATURE_IMPORTANCE,
        CollectionKeys.AVERAGE_SHAP,
        CollectionKeys.SM_METRICS,
        CollectionKeys.SCALARS,
    }
)
NON_REDUCTION_COLLECTIONS = SCALAR_COLLECTIONS | {CollectionKeys.TENSORFLOW_SUMMARIES}
NON_HISTOGRAM_COLLECTIONS = NON_REDUCTION_COLLECTIONS
SM_METRIC_COLLECTIONS = frozenset({CollectionKeys.LOSSES, CollectionKeys.METRICS, CollectionKeys.SM_METRICS})
# Never saved in EVAL/PREDICT: there is no backward pass there.
TRAIN_ONLY_COLLECTIONS = frozenset({CollectionKeys.GRADIENTS, CollectionKeys.OPTIMIZER_VARIABLES})

class _Mutations:
    """Counts every change to any collection, so a hook can tell in O(1) whether to re-prepare."""

    count = 0


def mutation_count() -> int:
    return _Mutations.count


_COLLECTION_KEYS = {"name", "include_regex", "tensor_names", "reduction_config", "save_config", "save_histogram"}


class Collection:
    """A named group of tensors: explicit ``tensor_names`` plus every tensor matching ``include_regex``
    (``re.search``, anywhere in the name)."""

    def __init__(
        self,
        name: str,
        include_regex: Optional[Iterable[str]] = None,
        tensor_names: Optional[Iterable[str]] = None,
        reduction_config: Optional[ReductionConfig] = None,
        save_config=None,
        save_histogram: bool = True,
    ):
        if not isinstance(name, str) or not name:
            raise SMDebugTypeError(f"A collection name must be a non-empty string, got {name!r}")
        self.name = name
        self._include_regex: List[str] = []
        self._invalid_regex: List[str] = []  # assigned patterns that do not compile (see the setter)
        self._compiled = None
        # Patterns read from a run's collections file are untrusted: matched in bounded time (run_regex)
        self._budget: Optional[Budget] = None
        self._tensor_names: Set[str] = set()
        self._version = 0  # bumped on every membership change; lets hooks cache matches
        self.include(include_regex or [])
        for t in tensor_names or []:
            self.add_tensor_name(t)
        self.reduction_config = reduction_config
        self.save_config = save_config
        self.save_histogram = save_histogram

    def _touch(self) -> None:
        self._version += 1
        _Mutations.count += 1

    # --- membership -------------------------------------------------------------------------
    @property
    def include_regex(self) -> List[str]:
        return list(self._include_regex)

    @include_regex.setter
    def include_regex(self, value):
        # In 1.0.x include_regex was a plain attribute: scripts assign it, then hand the collection to a
        # hook, and a pattern that does not compile (``"*"``) only failed later, inside training. Assigning
        # keeps that leniency: such a pattern is kept (it is what the user wrote, and is exported as
        # such), matches nothing, and the hook names it once in its log (``invalid_regex``). The
        # constructor and include() still refuse it at once.
        self._include_regex = []
        self._invalid_regex = []
        self._compiled = None
        self._touch()
        self._add_patterns(value or [], strict=False)

    def match_in_bounded_time(self, budget: Budget) -> None:
        """Match this collection's patterns (present and to come) in bounded time, sharing ``budget`` with the
        other patterns of their source (``smdebug.core.run_regex``): for patterns that come from a file, not
        from code. A collection already bounded keeps its budget."""
        if self._budget is None:
            self._budget = budget
            self._compiled = None

    def include(self, regex) -> None:
        self._add_patterns(regex, strict=True)

    def _add_patterns(self, regex, strict: bool) -> None:
        regexes = [regex] if isinstance(regex, str) else list(regex)
        kept = set(self._include_regex)  # (a list's `in` made 300,000 patterns take an hour to load)
        for r in regexes:
            if not isinstance(r, str):
                raise SMDebugTypeError(f"include_regex entries must be strings, got {shown(r)}")
            if r in kept:
                continue
            try:
                if self._budget is None:
                    re.compile(r)
                elif not self._budget.spent:  # (once its file's budget is spent, a pattern is set aside unused)
                    with self._budget.timing():
                        compile_pattern(r)
            except (re.error, PatternError) as e:
                if strict or self._budget is not None:
                    raise SMDebugTypeError(f"Invalid regex {shown(r)} for collection {shown(self.name)}: "
                                           f"{str(e)[:300]}") from None  # (a pattern may be 100 KB long)
                if r not in self._invalid_regex:
                    self._invalid_regex.append(r)
            self._include_regex.append(r)
            kept.add(r)
        self._compiled = None
        self._touch()

    @property
    def invalid_regex(self) -> List[str]:
        """Assigned patterns that do not compile: they match nothing."""
        return list(self._invalid_regex)

    @property
    def tensor_names(self) -> Set[str]:
        return self._tensor_names

    @tensor_names.setter
    def tensor_names(self, value):
        self._tensor_names = set(name_list(value, f"collection {self.name!r}: tensor_names", "tensor", allow_none=True))
        self._touch()

    def add_tensor_name(self, name: str) -> None:
        if name.__class__ is not str:
            name = name_list([name], f"collection {self.name!r}: add_tensor_name", "tensor")[0]
        if name not in self._tensor_names:
            self._tensor_names.add(name)
            self._touch()

    def remove_tensor_name(self, name: str) -> None:
        if name in self._tensor_names:
            self._tensor_names.discard(name)
            self._touch()

    def has_tensor_name(self, name: str) -> bool:
        return name in self._tensor_names

    def has_regex(self) -> bool:
        return bool(self._include_regex)

    def matches_regex(self, name: str) -> bool:
        if not self._include_regex:
            return False
        if self._compiled is None:
            if self._budget is not None:
                self._compiled = BoundedPatterns(self._include_regex, f"collection {self.name!r}", self._budget)
            else:
                valid = [r for r in self._include_regex if r not in self._invalid_regex]
                # (?!) matches nothing: a collection whose every pattern is invalid
                self._compiled = re.compile("|".join(f"(?:{r})" for r in valid) or "(?!)")
        return bool(self._compiled.search(name))

    @property
    def refused_regex(self) -> List[str]:
        """Patterns of a collection read from a run that were set aside because matching took too long."""
        return list(getattr(self._compiled, "refused", ()))

    def matches(self, name: str) -> bool:
        return name in self._tensor_names or self.matches_regex(name)

    def members(self, names: Iterable[str]) -> List[str]:
        """The names (in their order) this collection holds. A pattern read from a run that is set aside
        while matching (too slow, see run_regex) is set aside for every name: the answer is asked again
        without it, so it never depends on which name came first."""
        names = list(names)
        refused = len(self.refused_regex)
        out = self._members(names)
        if len(self.refused_regex) != refused:
            out = self._members(names)
        return out

    def _members(self, names: List[str]) -> List[str]:
        if not self._include_regex or not getattr(self._compiled, "in_use", True):
            # no pattern, or every one set aside: the explicit names only (a run of thousands of
            # collections and names spent seconds per collection calling matches() for nothing)
            explicit = self._tensor_names
            return [n for n in names if n in explicit]
        return [n for n in names if self.matches(n)]

    # --- configs ----------------------------------------------------------------------------
    @property
    def save_config(self) -> Optional[SaveConfig]:
        return self._save_config

    @save_config.setter
    def save_config(self, value):
        self._save_config = None if value is None else SaveConfig.parse(value)
        # (a schedule built before may be assigned mid-run: hooks skip steps by the schedules they last
        # looked at, and prepare and check a collection's schedule again only when told of a change)
        schedule_changed()

    @property
    def reduction_config(self) -> Optional[ReductionConfig]:
        return self._reduction_config

    @reduction_config.setter
    def reduction_config(self, value):
        if value is not None and not isinstance(value, ReductionConfig):
            value = ReductionConfig.from_dict(value)
        self._reduction_config = value

    # --- serialisation ----------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        return {
            "name": self.name,
            # (a pattern that does not compile matches nothing; written out, it would make the run's
            # collections file unreadable)
            "include_regex": [r for r in self._include_regex if r not in self._invalid_regex],
            "tensor_names": sorted(self._tensor_names),
            "reduction_config": self.reduction_config.to_json_dict() if self.reduction_config else None,
            "save_config": self.save_config.to_json_dict() if self.save_config else None,
            "save_histogram": self.save_histogram,
        }

    def to_json(self) -> str:
        """The JSON text of :meth:`to_json_dict` (one entry of a collections file)."""
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_json(cls, text: str, path=None) -> "Collection":
        """The inverse of :meth:`to_json`."""
        try:
            params = json.loads(text)
        except (TypeError, ValueError, RecursionError) as e:
            raise CollectionFileCorrupted(f"A collection is not valid JSON: {e}"[:500], path) from None
        return cls.from_dict(params, path)

    @classmethod
    def from_dict(cls, params: dict, path=None, budget: Optional[Budget] = None) -> "Collection":
        """A collection read from a run's collections file: its patterns are matched in bounded time
        (see :mod:`smdebug.core.run_regex`); ``budget`` is shared by the collections of one file."""
        if not isinstance(params, dict) or "name" not in params:
            raise CollectionFileCorrupted(f"A collection entry must be an object with a name, got {params!r}", path)
        where = f"collection {str(params.get('name'))[:100]!r} of {path or 'a collections file'}"
        # (newer writers may add keys: the file still loads, but a key it meant and this version drops is said)
        check_known_keys(params, sorted(_COLLECTION_KEYS), "a collection", where, ignored=("when_nan",))
        try:
            include = params.get("include_regex") or []
            if isinstance(include, str):
                include = [include]
            names = params.get("tensor_names") or []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                # (a name that is not a string would be saved in no run and fail the file's next write)
                raise CollectionFileCorrupted(
                    f"Invalid collection {params.get('name')!r}: tensor_names must be a list of strings", path)
            coll = cls(
                params["name"],
                tensor_names=names,
                reduction_config=ReductionConfig.from_dict(params.get("reduction_config"), source=where),
                save_config=(SaveConfig.from_dict(params["save_config"], source=where)
                             if params.get("save_config") else None),
                save_histogram=_as_bool(params.get("save_histogram", True), "save_histogram"),
            )
            coll.match_in_bounded_time(budget or Budget(str(path) if path else ""))
            coll.include(include)
            return coll
        except CollectionFileCorrupted:
            raise
        except Exception as e:  # noqa: BLE001 - any bad value becomes one specific error
            raise CollectionFileCorrupted(f"Invalid collection {params.get('name')!r}: {e}", path) from e

    def __eq__(self, other):
        if not isinstance(other, Collection):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return (
            f"<Collection {self.name} include_regex={self._include_regex} "
            f"tensor_names={sorted(self._tensor_names)[:10]}{'...' if len(self._tensor_names) > 10 else ''}>"
        )
