"""The hook's collections (part of :class:`smdebug.core.hook.BaseHook`): which collections exist, which are
included, which collections a tensor name belongs to, and exporting their definitions to the run.

Preparation runs at step boundaries and is cheap when nothing changed (:meth:`HookCollections._token`):
it gives every collection a full save and reduction configuration and picks the included ones.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from smdebug.core.activations import ACTIVATION_COLLECTIONS
from smdebug.core.collection import (
    NON_HISTOGRAM_COLLECTIONS,
    NON_REDUCTION_COLLECTIONS,
    Collection,
    CollectionKeys,
    mutation_count,
)
from smdebug.core.locations import collections_file_name
from smdebug.core.logger import get_logger
from smdebug.core.modes import ModeKeys
from smdebug.core.names import clipped, did_you_mean, listed, name_list
from smdebug.core.run_info import MODES_SET_KEY
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, schedule_changes
from smdebug.exceptions import InvalidCollectionConfiguration, InvalidConfigurationError, SMDebugTypeError

SCALAR_PREFIX = "scalar/"
#: built-in collections that may be empty without a configuration error
_QUIET_WHEN_EMPTY = frozenset((CollectionKeys.DEFAULT, CollectionKeys.ALL, CollectionKeys.INPUTS, CollectionKeys.OUTPUTS,
                               CollectionKeys.PREDICTIONS, CollectionKeys.LABELS, CollectionKeys.LOSS_INPUTS,
                               *ACTIVATION_COLLECTIONS))
logger = get_logger()


def included_collection_names(include_collections, default_include_collections, include_regex, save_all) -> List[str]:
    """The names a hook includes: those asked for, the framework's defaults, ``default`` when
    ``include_regex`` is given and ``all`` with ``save_all``."""
    if include_collections is not None:
        if isinstance(include_collections, str) or not all(isinstance(c, str) for c in include_collections):
            raise InvalidConfigurationError("include_collections must be a list of collection names")
    names: List[str] = list(include_collections or [])
    for name in default_include_collections:
        if name not in names:
            names.append(name)
    if include_regex and CollectionKeys.DEFAULT not in names:
        names.append(CollectionKeys.DEFAULT)
    if save_all and CollectionKeys.ALL not in names:
        names.append(CollectionKeys.ALL)
    return names


class HookCollections:
    """Mixed into BaseHook: its collection manager (``collection_manager``), ``include_collections`` and
    the prepared state (``_included``, ``_prepared_token``, ``_match_cache``, ``_plans``)."""

    def _core_collections(self) -> List[Collection]:
        return [
            self.collection_class(CollectionKeys.DEFAULT),
            self.collection_class(CollectionKeys.ALL),
            self.collection_class(CollectionKeys.SCALARS, include_regex=["^" + re.escape(SCALAR_PREFIX)]),
        ]

    def default_collections(self) -> List[Collection]:
        """Collections a framework creates with their default regexes. Plugins override this."""
        return []

    def get_collection(self, name: str, create: bool = True) -> Collection:
        coll = self.collection_manager.get(name, create=create)
        self._prepared_token = None
        return coll

    def get_collections(self) -> Dict[str, Collection]:
        return self.collection_manager.get_collections()

    def add_collection(self, collection: Collection) -> None:
        if not isinstance(collection, Collection):
            raise SMDebugTypeError(f"add_collection expects a Collection, got {type(collection).__name__}")
        self.collection_manager.add(collection)
        self._prepared_token = None

    def add_to_collection(self, collection_name: str, args) -> None:
        """Add tensor names (a name or a list of names) to a collection, creating it if needed.
        SMDebugTypeError, before anything changes, for anything else (an int raised a bare TypeError; a
        list of ints was kept and made the run's collections file unreadable)."""
        names = name_list(args, "add_to_collection", "tensor")
        coll = self.get_collection(collection_name)
        for n in names:
            coll.add_tensor_name(n)
        if collection_name not in self.include_collections:
            self.include_collections.append(collection_name)
        self._prepared_token = None

    def _token(self):
        # Cheap on purpose (it runs every step): any change to any collection bumps mutation_count(), any
        # change of a schedule (a collection given a new one) schedule_changes().
        return (tuple(self.include_collections), mutation_count(), schedule_changes(),
                id(self.collection_manager.collections))

    def _prepare_collections(self) -> None:
        """Give every collection a full save config and reduction config; pick the included ones.

        Raises :class:`InvalidCollectionConfiguration` (as 1.0.x did) when an included collection the
        user made can never match a tensor (no regex, no tensor names), and :class:`InvalidConfigurationError`
        when an included collection's own schedule is one the hook refuses for itself (a ``start_step`` at
        or after ``end_step``, steps past int64: :meth:`SaveConfig.problem`), after preparing the others.
        The hook's own step boundaries call :meth:`_refresh_collections`, which only logs them: such a
        collection is left out, training goes on and the other collections are saved."""
        token = self._token()
        if token == self._prepared_token:
            return
        self._before_prepare()
        included, unusable, refused = [], [], []
        checked: Dict[int, Optional[str]] = {}  # (schedules shared by collections are checked once)
        self._usable_names = None  # (worked out once per preparation, for the hints of empty collections)
        for name in self.include_collections:
            coll = self.collection_manager.collections.get(name)
            known = coll is not None
            if coll is None:
                coll = self.collection_manager.get(name)
            if not coll.has_regex() and not coll.tensor_names:
                if self._may_be_empty(name):
                    # empty built-ins simply match nothing; those a framework hook fills from the model may
                    # be empty because the model has nothing of the kind (no tanh layer, no classification
                    # loss), which the run records (smdebug.core.activations), or not registered yet
                    continue
                self._report_empty_collection(name, known)
                if known and name not in self._builtin_collection_names():
                    unusable.append(name)
                continue
            problem = coll.save_config.problem(checked) if coll.save_config is not None else None
            if problem is not None:
                self._report_refused_schedule(name, problem)
                refused.append((name, problem))
                continue
            if coll.invalid_regex:
                self._report_invalid_regex(coll)
            included.append(coll)
        for coll in self.collection_manager.collections.values():
            if coll.save_config is None:
                coll.save_config = SaveConfig(
                    mode_save_configs={m: self.save_config.get_save_config(m) for m in ModeKeys}
                )
            coll.save_config.merge_default(self.save_config)
            if coll.name in NON_REDUCTION_COLLECTIONS:
                coll.reduction_config = ReductionConfig(save_raw_tensor=True)
            elif coll.reduction_config is None:
                # what the collection's tensors get: the hook's (as in 1.0.x, where a prepared collection
                # always had one; the run's collections file records it)
                coll.reduction_config = self.reduction_config
            if coll.name in NON_HISTOGRAM_COLLECTIONS:
                coll.save_histogram = False
        self._included = included
        self._match_cache.clear()
        self._plans.clear()
        self._prepared_token = self._token()
        self._after_prepare()
        if unusable:
            raise InvalidCollectionConfiguration(unusable[0])
        if refused:
            raise InvalidConfigurationError(f"Invalid save_config of collection {clipped(refused[0][0])!r}: "
                                            f"{refused[0][1]}")

    def _refresh_collections(self) -> None:
        """:meth:`_prepare_collections` at the hook's own step boundaries: a collection that can match
        nothing was reported once in the log and is left out; the hook goes on with the others."""
        try:
            self._prepare_collections()
        except (InvalidCollectionConfiguration, InvalidConfigurationError):
            pass

    def _builtin_collection_names(self) -> frozenset:
        """The collections the hook creates itself (core and framework defaults): empty ones are left
        out quietly or with a log line, never an error. (Asked only when such a collection is empty.)"""
        return frozenset(c.name for c in (*self._core_collections(), *self.default_collections()))

    def _report_invalid_regex(self, coll: Collection) -> None:
        """Once per collection and pattern: an assigned include_regex that does not compile."""
        for pattern in coll.invalid_regex:
            key = (coll.name, pattern)
            if key in self._reported_collections:
                continue
            self._reported_collections.add(key)
            logger.error("smdebug: collection %r has include_regex %r, which is not a valid regular expression; "
                         "it matches nothing (the collection's other patterns and tensor names still apply).",
                         coll.name, pattern)

    def _report_refused_schedule(self, name: str, problem: str) -> None:
        """Once per collection and problem: an included collection whose own schedule the hook refuses, as
        it refuses its own (smdebug 1.0.x took it and never saved the collection, without a word)."""
        key = ("schedule", name, problem)
        if key in self._reported_collections:
            return
        self._reported_collections.add(key)
        logger.error("smdebug: collection %r has a save_config the hook refuses (%s); the collection is not "
                     "saved until its schedule is fixed.", clipped(name), problem)

    def _may_be_empty(self, collection: str) -> bool:
        """Whether an included collection with nothing in it yet is normal (skipped quietly) rather than a
        configuration error. Plugins add the collections they fill at run time."""
        return collection in _QUIET_WHEN_EMPTY

    #: empty collections named one by one; beyond, one line says how many more (a configuration listing
    #: 50,000 empty collections logged 50,000 lines and took 500 s, each line scanning every collection)
    MAX_EMPTY_COLLECTION_REPORTS = 20

    def _report_empty_collection(self, name: str, known: bool) -> None:
        """Once per name: an included collection that can match nothing, most often a typo."""
        if name in self._reported_collections:
            return
        self._reported_collections.add(name)
        if len(self._reported_collections) > self.MAX_EMPTY_COLLECTION_REPORTS:
            if len(self._reported_collections) == self.MAX_EMPTY_COLLECTION_REPORTS + 1:
                logger.error("smdebug: more included collections can match no tensor (first: %r); they are "
                             "skipped, and not named one by one.", clipped(name))
            return
        usable = getattr(self, "_usable_names", None)
        if usable is None:
            usable = self._usable_names = [c.name for c in self.collection_manager.collections.values()
                                           if c.has_regex() or c.tensor_names]
        hint = did_you_mean(name, usable)
        name = clipped(name)
        if known and name not in self._builtin_collection_names():
            # (a collection another framework's hook fills, asked of this one: `--collections weights` for an
            # XGBoost script was told only "no include_regex", as if a regex were what it lacked)
            which = f"the {self.framework_name} hook" if self.framework_name != "generic" else "this hook"
            logger.error("smdebug: collection %r has no include_regex and no tensor_names, and %s fills no "
                         "collection of that name%s, so it can never match a tensor; it is skipped (its "
                         "collections: %s; or give it a regex or tensor names).", name, which, hint,
                         listed(sorted(usable), limit=20))
        elif known:
            logger.error("smdebug: collection %r has no include_regex and no tensor_names%s, so it can never match "
                         "a tensor; it is skipped (give it a regex or tensor names).", name, hint)
        else:
            logger.error("smdebug: include_collections names %r, which is not a collection of this hook%s; it is "
                         "skipped (collections: %s).", name, hint, ", ".join(sorted(usable)) or "none")

    def _before_prepare(self) -> None:
        """Plugins: resolve framework objects in collections (e.g. modules) before they are prepared."""

    def _after_prepare(self) -> None:
        """Plugins: react to the included collections having changed (e.g. attach framework hooks)."""

    def _matching(self, name: str) -> Tuple[Collection, ...]:
        colls = self._match_cache.get(name)
        if colls is None:
            colls = tuple(c for c in self._included if c.matches(name))
            if len(self._match_cache) > 100_000:
                self._match_cache.clear()
            self._match_cache[name] = colls
        return colls

    def has_default_hook_configuration(self) -> bool:
        return set(self.include_collections) == set(self.default_include_collections)

    def should_save_tensor_or_collection(self, tensor_name: str, collection_name: str) -> bool:
        if self._prepared_token is None:
            return False
        if collection_name in self._due:
            return True
        return self.is_due(tensor_name)

    def _export_collections(self) -> None:
        if self._writer is None:
            return
        self.collection_manager.set_num_workers(self.num_workers)
        modes_set = getattr(self, "_modes_set", None)
        if modes_set:  # (the modes the script asked for with set_mode; 1.0.x readers accept any _meta key)
            self.collection_manager.meta[MODES_SET_KEY] = sorted(m.name for m in modes_set)
        payload = self.collection_manager.dumps().encode("utf-8")
        self._writer.call(self._storage.write_atomic, collections_file_name(self.worker), payload)
        self._exported_collections += 1

    def export_collections(self) -> None:
        self._export_collections()
