"""Discovering, loading and asking plugins.

Discovery is lazy: ``import smdebug`` loads no plugin. The first call that needs plugins
(:func:`frameworks`, :func:`tensor_to_numpy`, :func:`detect_worker`, :func:`get_plugin_manager`...) runs
:func:`load_plugins` once per process, under a lock.

Loading reads the entry-point groups ``smdebug.frameworks`` and ``smdebug.rules``. Each entry point names
a module (or object) that is registered as a pluggy plugin. Loading never stops at one bad plugin:

* a plugin for a framework that is not installed (its ``FRAMEWORK_IMPORT`` module cannot be found) is
  **skipped** quietly (debug log); so is one whose import fails for lack of some other module;
* a plugin whose installed framework is outside the range of its ``framework`` extra is **skipped**;
* a plugin that raises anything else on import, fails pluggy's validation, implements unknown hooks or
  raises inside a ``smdebug_register_*`` hook is **failed**: a warning names it, and the error is kept
  for :func:`plugin_report` (``smdebug plugins``);
* ``SMDEBUG_DISABLE_PLUGINS`` (comma-separated entry-point or distribution names, or ``*``) and
  ``SMDEBUG_LOAD_PLUGINS`` (an allow-list; set but empty means "load none") mark plugins **disabled**.

Tests and applications may also register plugins directly: ``get_plugin_manager().register(obj)``.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import importlib.util
import logging
import os
import re
import sys
import threading
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Set, Tuple

import pluggy

from smdebug.core.plugins import hookspecs
from smdebug.core.plugins.info import CommandInfo, FrameworkInfo, RuleInfo, WorkerInfo
from smdebug.core.plugins.markers import PROJECT_NAME
from smdebug.core.plugins.worker_env import apply_overrides, worker_from_env

__all__ = [
    "FRAMEWORKS_GROUP",
    "RULES_GROUP",
    "ENTRY_POINT_GROUPS",
    "DISABLE_ENV",
    "LOAD_ENV",
    "PluginStatus",
    "SmdebugPluginManager",
    "get_plugin_manager",
    "load_plugins",
    "plugins_loaded",
    "plugin_report",
    "frameworks",
    "framework_plugin",
    "rules",
    "commands",
    "command_plugin",
    "tensor_to_numpy",
    "detect_worker",
    "reset_for_tests",
]

FRAMEWORKS_GROUP = "smdebug.frameworks"
RULES_GROUP = "smdebug.rules"
ENTRY_POINT_GROUPS = (FRAMEWORKS_GROUP, RULES_GROUP)
DISABLE_ENV = "SMDEBUG_DISABLE_PLUGINS"
LOAD_ENV = "SMDEBUG_LOAD_PLUGINS"
#: group shown in the report for plugins registered by code rather than by an entry point
RUNTIME_GROUP = "runtime"
#: name of the optional-dependency extra that states a plugin's framework requirement
FRAMEWORK_EXTRA = "framework"

LOADED, SKIPPED, FAILED, DISABLED = "loaded", "skipped", "failed", "disabled"
STATUSES = (LOADED, SKIPPED, FAILED, DISABLED)


@dataclass(frozen=True)
class PluginStatus:
    """What discovery did with one plugin.

    :param name: the entry-point name (also the plugin's name in the pluggy manager).
    :param group: the entry-point group, or ``"runtime"`` for plugins registered by code.
    :param distribution: the distribution that declares the entry point.
    :param version: that distribution's version.
    :param status: ``loaded``, ``skipped``, ``failed`` or ``disabled``.
    :param detail: why, for anything but ``loaded``.
    :param target: the entry point's value (``smdebug.pytorch.plugin``).
    """

    name: str
    group: str
    distribution: Optional[str]
    version: Optional[str]
    status: str
    detail: str = ""
    target: str = ""

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "group": self.group,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "detail": self.detail,
            "target": self.target,
        }


class SmdebugPluginManager(pluggy.PluginManager):
    """A pluggy manager for project ``smdebug`` that knows when its set of plugins changed."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        #: bumped by every register/unregister; cached registries compare against it
        self.generation = 0

    def register(self, plugin: Any, name: Optional[str] = None) -> Optional[str]:
        try:
            return super().register(plugin, name)
        finally:
            self.generation += 1

    def unregister(self, plugin: Any = None, name: Optional[str] = None) -> Any:
        try:
            return super().unregister(plugin=plugin, name=name)
        finally:
            self.generation += 1


# --------------------------------------------------------------------------------------------------
# process-wide state (all writes under _lock)
# --------------------------------------------------------------------------------------------------
_lock = threading.RLock()
_pm: Optional[SmdebugPluginManager] = None
_loaded = False
_loading = False
_statuses: List[PluginStatus] = []
_entry_point_plugins: Dict[str, int] = {}  # pluggy name -> index in _statuses, for loaded plugins
_env_blocked: Set[str] = set()
_runtime_failures: Dict[str, str] = {}  # plugins registered by code that failed in a register hook
_registry_generation = -1
#: what plugins register: kind -> (registration hook spec, record type)
_KINDS: Dict[str, Tuple[str, type]] = {
    "framework": ("smdebug_register_frameworks", FrameworkInfo),
    "rule": ("smdebug_register_rules", RuleInfo),
    "command": ("smdebug_register_commands", CommandInfo),
}
#: kind -> name -> (record, name of the plugin that registered it)
_registered: Dict[str, Dict[str, Tuple[Any, str]]] = {kind: {} for kind in _KINDS}

_DEFAULT_WORKER = WorkerInfo(rank=0, size=1, name="worker_0")


def _log() -> logging.Logger:
    try:
        from smdebug.core.logger import get_logger

        return get_logger("smdebug.plugins")
    except Exception:  # noqa: BLE001 - logging must never be the reason plugins fail
        return logging.getLogger("smdebug.plugins")


def _get_pm() -> SmdebugPluginManager:
    global _pm
    if _pm is None:
        with _lock:
            if _pm is None:
                _pm = SmdebugPluginManager()
    return _pm


def get_plugin_manager(load: bool = True) -> SmdebugPluginManager:
    """The process-wide plugin manager.

    :param load: discover installed plugins first (once per process). Pass ``False`` to get the manager
        without triggering discovery, e.g. to ``set_blocked`` a plugin before it loads.
    """
    pm = _get_pm()
    if load and not _loaded:
        load_plugins()
    return pm


def plugins_loaded() -> bool:
    """Whether entry-point discovery has run in this process."""
    return _loaded


# --------------------------------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------------------------------
def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).strip().lower()


def _env_names(var: str) -> Optional[Set[str]]:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {_normalize(part) for part in raw.split(",") if part.strip()}


def _disabled_reason(name: str, dist: Optional[str]) -> Optional[str]:
    keys = {_normalize(name)} | ({_normalize(dist)} if dist else set())
    disabled = _env_names(DISABLE_ENV)
    if disabled and ("*" in disabled or keys & disabled):
        return f"disabled by {DISABLE_ENV}"
    allowed = _env_names(LOAD_ENV)
    if allowed is not None and "*" not in allowed and not keys & allowed:
        return f"not listed in {LOAD_ENV}"
    return None


def _package_root(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "smdebug" and len(parts) > 1:
        return ".".join(parts[:2])  # smdebug is shared: the plugin owns smdebug.<name>
    return parts[0]


def _is_own_module(missing: Optional[str], entry_module: str) -> bool:
    """Is the module that could not be found part of the plugin itself (a broken install)?"""
    if not missing:
        return True
    root = _package_root(entry_module)
    return missing == root or missing.startswith(root + ".") or entry_module.startswith(missing + ".")


def _module_available(name: str) -> bool:
    top = name.strip().split(".")[0]
    if not top:
        return False
    if top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _framework_imports(obj: Any) -> Tuple[str, ...]:
    value = getattr(obj, "FRAMEWORK_IMPORT", None)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _framework_version_problem(dist: Optional[metadata.Distribution]) -> Optional[str]:
    """Check the installed framework against the plugin's ``framework`` extra, from metadata only.

    Returns a reason to skip the plugin, or None. Best effort: without ``packaging``, or with a
    framework installed under another distribution name (tensorflow vs tensorflow-cpu), nothing is
    checked; presence itself is decided by ``FRAMEWORK_IMPORT``.
    """
    if dist is None:
        return None
    try:
        from packaging.requirements import Requirement
        from packaging.version import Version
    except ImportError:
        return None
    try:
        requires = dist.requires or []
    except Exception:  # noqa: BLE001
        return None
    first = True
    for line in requires:
        try:
            req = Requirement(line)
            if req.marker is None or not req.marker.evaluate({"extra": FRAMEWORK_EXTRA}):
                continue
            if req.marker.evaluate({"extra": ""}):
                continue  # a base dependency, not specific to the extra
            is_framework, first = first, False
            try:
                installed = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                if is_framework:
                    # the extra names the framework first: without it, what else the extra pins (numpy for
                    # MXNet) is no news; the import check says the framework is missing
                    return None
                continue
            if req.specifier and not req.specifier.contains(Version(installed), prereleases=True):
                return f"{req.name} {installed} is installed; this plugin needs {req.name}{req.specifier}"
        except Exception:  # noqa: BLE001 - malformed metadata must not stop discovery
            continue
    return None


def _dist_info(ep: metadata.EntryPoint) -> Tuple[Optional[metadata.Distribution], Optional[str], Optional[str]]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None, None
    try:
        name = dist.metadata["Name"]
    except Exception:  # noqa: BLE001
        name = None
    try:
        version = dist.version
    except Exception:  # noqa: BLE001
        version = None
    return dist, name, version


def _entry_points(group: str) -> List[metadata.EntryPoint]:
    try:
        return list(metadata.entry_points(group=group))
    except Exception as e:  # noqa: BLE001 - a corrupt dist-info elsewhere must not stop smdebug
        _log().warning("smdebug: could not read entry points of group %s: %s", group, e)
        return []


def _unknown_hooks(pm: SmdebugPluginManager, plugin: Any) -> List[str]:
    names = []
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and not impl.optionalhook:
                names.append(caller.name)
    return names


def _load_entry_point(pm: SmdebugPluginManager, group: str, ep: metadata.EntryPoint) -> PluginStatus:
    name = ep.name
    dist, dist_name, version = _dist_info(ep)
    log = _log()

    def status(state: str, detail: str = "") -> PluginStatus:
        return PluginStatus(name, group, dist_name, version, state, detail, ep.value)

    def failed(detail: str, exc: Optional[BaseException] = None) -> PluginStatus:
        where = f"{dist_name} {version}" if dist_name else ep.value
        log.warning("smdebug: plugin %r (%s, group %s) failed and was not loaded: %s", name, where, group, detail)
        if exc is not None:
            log.debug("smdebug: traceback of plugin %r", name, exc_info=exc)
        return status(FAILED, detail)

    reason = _disabled_reason(name, dist_name)
    if reason is not None:
        if not pm.has_plugin(name):
            pm.set_blocked(name)
            _env_blocked.add(name)
        log.debug("smdebug: plugin %r %s", name, reason)
        return status(DISABLED, reason)
    if pm.is_blocked(name):
        return status(DISABLED, "blocked (set_blocked)")

    problem = _framework_version_problem(dist)
    if problem is not None:
        log.info("smdebug: plugin %r skipped: %s", name, problem)
        return status(SKIPPED, problem)

    try:
        obj = ep.load()
    except ModuleNotFoundError as e:
        if _is_own_module(e.name, ep.module):
            return failed(f"ModuleNotFoundError: {e}", e)
        log.debug("smdebug: plugin %r skipped: %s is not installed", name, e.name)
        return status(SKIPPED, f"{e.name} is not installed")
    except Exception as e:  # noqa: BLE001 - one broken plugin must not stop the others
        return failed(f"{type(e).__name__}: {e}", e)

    missing = [m for m in _framework_imports(obj) if not _module_available(m)]
    if missing:
        log.debug("smdebug: plugin %r skipped: %s not installed", name, ", ".join(missing))
        return status(SKIPPED, f"{', '.join(missing)} is not installed")

    existing = pm.get_plugin(name)
    if existing is obj:
        return status(LOADED, "already registered")
    if existing is not None:
        return failed(f"the plugin name {name!r} is already taken by {existing!r}")
    if pm.is_registered(obj):
        return status(LOADED, f"same plugin as {pm.get_name(obj)!r}")
    try:
        registered = pm.register(obj, name=name)
    except Exception as e:  # noqa: BLE001 - PluginValidationError, ValueError...
        return failed(f"{type(e).__name__}: {e}", e)
    if registered is None:
        return status(DISABLED, "blocked (set_blocked)")
    unknown = _unknown_hooks(pm, obj)
    if unknown:
        pm.unregister(obj)
        return failed(f"implements unknown hook(s) {', '.join(sorted(set(unknown)))}")
    log.debug("smdebug: plugin %r loaded from %s", name, ep.value)
    return status(LOADED)


def load_plugins(force: bool = False) -> List[PluginStatus]:
    """Discover and register the installed plugins, once per process.

    :param force: forget the previous discovery (unregistering the plugins it loaded; plugins registered
        by code stay) and run it again, re-reading the environment variables.
    :return: the status of every entry point seen, in discovery order.
    """
    global _loaded, _loading
    if _loaded and not force:
        return list(_statuses)
    with _lock:
        if _loading:  # a plugin being imported asked for plugins: answer with what is loaded so far
            return list(_statuses)
        if _loaded and not force:
            return list(_statuses)
        pm = _get_pm()
        _loading = True
        try:
            if force:
                _forget_discovery(pm)
            statuses: List[PluginStatus] = []
            for group in ENTRY_POINT_GROUPS:
                for ep in _entry_points(group):
                    st = _load_entry_point(pm, group, ep)
                    statuses.append(st)
                    if st.status == LOADED and pm.get_plugin(st.name) is not None:
                        _entry_point_plugins.setdefault(st.name, len(statuses) - 1)
            _statuses[:] = statuses
            try:
                pm.check_pending()
            except pluggy.PluginValidationError as e:
                _log().warning("smdebug: a registered plugin implements an unknown hook: %s", e)
            _loaded = True
        finally:
            _loading = False
        _refresh_registry()
        return list(_statuses)


def _forget_discovery(pm: SmdebugPluginManager) -> None:
    global _registry_generation
    for name in list(_entry_point_plugins):
        if pm.get_plugin(name) is not None:
            pm.unregister(name=name)
    for name in _env_blocked:
        pm.unblock(name)
    _entry_point_plugins.clear()
    _env_blocked.clear()
    _statuses.clear()
    _registry_generation = -1


def _mark_failed(plugin_name: str, detail: str) -> None:
    index = _entry_point_plugins.pop(plugin_name, None)
    if index is not None and index < len(_statuses):
        _statuses[index] = replace(_statuses[index], status=FAILED, detail=detail)
    else:
        _runtime_failures[plugin_name] = detail



def plugin_report() -> List[PluginStatus]:
    """What discovery did with each plugin, plus plugins registered by code (group ``runtime``)."""
    load_plugins()
    _refresh_registry()
    with _lock:
        report = list(_statuses)
        pm = _get_pm()
        for name, plugin in pm.list_name_plugin():
            if plugin is None or name in _entry_point_plugins:
                continue
            if any(st.name == name and st.status == LOADED for st in report):
                continue
            report.append(PluginStatus(name, RUNTIME_GROUP, None, None, LOADED, "registered by code",
                                       getattr(plugin, "__name__", type(plugin).__qualname__)))
        for name, detail in _runtime_failures.items():
            report.append(PluginStatus(name, RUNTIME_GROUP, None, None, FAILED, detail, ""))
        return report


# --------------------------------------------------------------------------------------------------
# registries: frameworks and rules
# --------------------------------------------------------------------------------------------------
def _collect(pm: SmdebugPluginManager, hook_name: str, kind: str, expected: type, failures: Dict[Any, str]):
    found: Dict[str, Tuple[Any, str]] = {}
    caller = getattr(pm.hook, hook_name)
    # get_hookimpls() lists implementations in registration order: the first plugin to claim a name keeps it.
    for impl in caller.get_hookimpls():
        if getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False):
            continue
        mine: List[str] = []

        def register(info: Any, _plugin: str = impl.plugin_name, _mine: List[str] = mine) -> None:
            if not isinstance(info, expected):
                raise TypeError(f"register() takes a {expected.__name__}, got {type(info).__name__}")
            if info.name in found:
                first = found[info.name][1]
                if first != _plugin or found[info.name][0] != info:
                    _log().warning(
                        "smdebug: plugin %r registers %s %r, which plugin %r registered first; ignoring it",
                        _plugin, kind, info.name, first,
                    )
                return
            found[info.name] = (info, _plugin)
            _mine.append(info.name)

        args = {"register": register}
        try:
            impl.function(*[args[a] for a in impl.argnames])
        except Exception as e:  # noqa: BLE001
            for name in mine:
                found.pop(name, None)
            failures[impl.plugin] = f"{hook_name} raised {type(e).__name__}: {e}"
            _log().warning("smdebug: plugin %r failed in %s: %s: %s", impl.plugin_name, hook_name, type(e).__name__, e)
            _log().debug("smdebug: traceback", exc_info=e)
    return found


def _refresh_registry() -> None:
    global _registry_generation, _registered
    pm = _get_pm()
    if _registry_generation == pm.generation:
        return
    with _lock:
        while _registry_generation != pm.generation:
            failures: Dict[Any, str] = {}
            found = {kind: _collect(pm, spec, kind, cls, failures) for kind, (spec, cls) in _KINDS.items()}
            if failures:
                # A plugin that cannot even describe itself is not trusted with the other hooks.
                for plugin, detail in failures.items():
                    name = pm.get_name(plugin)
                    if name is not None:
                        pm.unregister(plugin)
                        _mark_failed(name, detail)
                continue
            _registered = found
            _registry_generation = pm.generation


def _registry(kind: str) -> Dict[str, Tuple[Any, str]]:
    load_plugins()
    _refresh_registry()
    return _registered[kind]


def frameworks() -> Dict[str, FrameworkInfo]:
    """Frameworks registered by the loaded plugins, by name."""
    return {name: info for name, (info, _) in _registry("framework").items()}


def framework_plugin(name: str) -> Optional[str]:
    """The name of the plugin that registered framework ``name`` (None if unknown)."""
    return _registry("framework").get(name, (None, None))[1]


def rules() -> Dict[str, RuleInfo]:
    """Rules registered by the loaded rule packs, by name."""
    return {name: info for name, (info, _) in _registry("rule").items()}


def rule_plugin(name: str) -> Optional[str]:
    """The name of the plugin that registered rule ``name`` (None if unknown)."""
    return _registry("rule").get(name, (None, None))[1]


def commands() -> Dict[str, CommandInfo]:
    """``smdebug`` subcommands registered by the loaded plugins, by name."""
    return {name: info for name, (info, _) in _registry("command").items()}


def command_plugin(name: str) -> Optional[str]:
    """The name of the plugin that registered command ``name`` (None if unknown)."""
    return _registry("command").get(name, (None, None))[1]


# --------------------------------------------------------------------------------------------------
# asking plugins
# --------------------------------------------------------------------------------------------------
def _type_name(value: Any) -> str:
    t = type(value)
    module = getattr(t, "__module__", "")
    return t.__qualname__ if module in ("builtins", "") else f"{module}.{t.__qualname__}"


def tensor_to_numpy(value: Any):
    """Convert ``value`` to a numpy array.

    numpy arrays come back as they are; numpy and Python scalars, lists and tuples go through
    ``numpy.asarray``. Anything else is offered to the plugins' ``smdebug_tensor_to_numpy``; objects
    no plugin claims but that implement the numpy array protocol are converted by numpy.

    :raises TypeError: nothing knows how to convert the value.
    """
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (np.generic, bool, int, float, complex, list, tuple)):
        return np.asarray(value)
    pm = get_plugin_manager()
    result = pm.hook.smdebug_tensor_to_numpy(value=value)
    if result is not None:
        return result if isinstance(result, np.ndarray) else np.asarray(result)
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        return np.asarray(value)
    raise TypeError(_conversion_error(value))


def _conversion_error(value: Any) -> str:
    type_name = _type_name(value)
    message = f"smdebug cannot convert a value of type {type_name} to a numpy array: no installed plugin handles it"
    try:
        from smdebug.core.plugins.missing import plugin_for_framework_import

        hint = plugin_for_framework_import(type(value).__module__.split(".")[0])
    except Exception:  # noqa: BLE001
        hint = None
    known = ", ".join(sorted(_registered["framework"])) or "none"
    if hint is not None:
        from smdebug.core.plugins.missing import install_command

        message += f". Install the {hint[0]} plugin: {install_command(f'smdebug-core[{hint[1]}]')}"
    return message + f" (frameworks available: {known}; see `smdebug plugins`)"


def detect_worker(framework: Optional[str] = None) -> WorkerInfo:
    """Who this process is in a distributed job.

    The first plugin that knows answers (framework APIs); if none does, launcher environment variables
    decide; ``SMDEBUG_WORKER_NAME``/``SMDEBUG_NUM_WORKERS`` override either (see
    :mod:`smdebug.core.plugins.worker_env`). A plugin that raises or answers nonsense is logged and ignored.

    :param framework: the framework asking (``"pytorch"``), passed on to the plugins.
    :return: the worker; ``WorkerInfo(0, 1, "worker_0")`` when nothing says otherwise.
    """
    return apply_overrides(_plugin_worker(framework) or worker_from_env() or _DEFAULT_WORKER)


def _plugin_worker(framework: Optional[str]) -> Optional[WorkerInfo]:
    pm = get_plugin_manager()
    try:
        answer = pm.hook.smdebug_detect_worker(framework=framework)
    except Exception as e:  # noqa: BLE001
        _log().warning("smdebug: worker detection failed in a plugin (%s: %s); using the environment",
                       type(e).__name__, e)
        return None
    if answer is None or isinstance(answer, WorkerInfo):
        return answer
    try:
        return WorkerInfo(answer.rank, answer.size, getattr(answer, "name", None))
    except Exception as e:  # noqa: BLE001
        _log().warning("smdebug: a plugin answered smdebug_detect_worker with %r (%s); using the environment",
                       answer, e)
        return None


# --------------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------------
def reset_for_tests() -> None:
    """Forget everything: a fresh manager, no plugin loaded, discovery not run yet.

    Modules already imported stay in ``sys.modules``; entry points are re-read at the next discovery.
    """
    global _pm, _loaded, _loading, _registry_generation, _registered
    with _lock:
        _pm = None
        _loaded = False
        _loading = False
        _statuses.clear()
        _entry_point_plugins.clear()
        _env_blocked.clear()
        _runtime_failures.clear()
        _registry_generation = -1
        _registered = {kind: {} for kind in _KINDS}
        importlib.invalidate_caches()
