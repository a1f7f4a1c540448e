"""Plain records that plugins hand to the core: frameworks, rules and the identity of a worker.

They are frozen dataclasses that hold only strings and numbers. A plugin describes its classes by
``"module:attribute"`` strings, so registering a framework never imports the framework: the string is
resolved only when the class is first needed (:meth:`FrameworkInfo.load_hook_class`, :meth:`RuleInfo.load`).
"""

from __future__ import annotations

import importlib
import operator
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Optional, Tuple

__all__ = ["FrameworkInfo", "RuleInfo", "WorkerInfo", "resolve_target"]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_TARGET_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def resolve_target(target: str) -> Any:
    """Import ``"package.module:Attribute"`` (the attribute may be dotted) and return the attribute."""
    if not isinstance(target, str) or not _TARGET_RE.match(target):
        raise ValueError(f"expected a 'module:attribute' string, got {target!r}")
    module_name, _, attr_path = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"{target!r}: module {module_name!r} has no attribute {attr_path!r}") from None
    return obj


def _check_name(kind: str, name: object) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"{kind} name must be a non-empty identifier-like string, got {name!r}")


def _check_target(kind: str, target: object) -> None:
    if not isinstance(target, str) or not _TARGET_RE.match(target):
        raise ValueError(f"{kind} must be a 'module:attribute' string, got {target!r}")


@dataclass(frozen=True)
class FrameworkInfo:
    """What a framework plugin contributes.

    :param name: the framework's name in smdebug (``"pytorch"``, ``"tensorflow"``...), unique among plugins.
    :param module: the Python package of the plugin's public API (``"smdebug.pytorch"``).
    :param import_name: the framework's own top-level import name (``"torch"``).
    :param hook_classes: hook class names mapped to ``"module:Class"`` strings
        (``{"Hook": "smdebug.pytorch.hook:Hook"}``); nothing is imported until
        :meth:`load_hook_class` is called.
    :param default_collections: collections the framework's hooks always save.
    :param description: one line for ``smdebug plugins``.
    :param zero_code: ``"module:function"`` that attaches a hook to an unmodified training script
        (``smdebug run``); called once, right after the framework is imported. Optional.
    """

    name: str
    module: str
    import_name: str
    hook_classes: Mapping[str, str] = field(default_factory=dict)
    default_collections: Tuple[str, ...] = ()
    description: str = ""
    zero_code: Optional[str] = None

    def __post_init__(self) -> None:
        _check_name("framework", self.name)
        for label, value in (("module", self.module), ("import_name", self.import_name)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"framework {self.name!r}: {label} must be a non-empty string, got {value!r}")
        if not isinstance(self.hook_classes, Mapping):
            raise ValueError(f"framework {self.name!r}: hook_classes must be a mapping of name -> 'module:Class'")
        for key, target in self.hook_classes.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"framework {self.name!r}: hook class names must be strings, got {key!r}")
            _check_target(f"framework {self.name!r}: hook class {key!r}", target)
        if self.zero_code is not None:
            _check_target(f"framework {self.name!r}: zero_code", self.zero_code)
        if isinstance(self.default_collections, str):
            raise ValueError(f"framework {self.name!r}: default_collections must be a sequence of names, not a string")
        # Store read-only copies so a registered record cannot change behind the registry's back.
        object.__setattr__(self, "hook_classes", MappingProxyType(dict(self.hook_classes)))
        object.__setattr__(self, "default_collections", tuple(self.default_collections))

    def __hash__(self) -> int:
        return hash((self.name, self.module, self.import_name, tuple(sorted(self.hook_classes.items())),
                     self.default_collections, self.description, self.zero_code))

    def load_hook_class(self, name: str = "Hook") -> type:
        """Import and return the hook class registered as ``name``."""
        try:
            target = self.hook_classes[name]
        except KeyError:
            known = ", ".join(sorted(self.hook_classes)) or "none"
            raise KeyError(f"framework {self.name!r} has no hook class {name!r} (known: {known})") from None
        return resolve_target(target)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "module": self.module,
            "import_name": self.import_name,
            "hook_classes": dict(self.hook_classes),
            "default_collections": list(self.default_collections),
            "description": self.description,
            "zero_code": self.zero_code,
        }


@dataclass(frozen=True)
class RuleInfo:
    """A rule offered by a rule pack.

    :param name: the rule's name (``"VanishingGradient"``), unique among rule packs.
    :param target: ``"module:Class"`` of the rule class; imported only by :meth:`load`.
    :param pack: the name of the pack that provides it (``"builtin"``).
    :param description: one line for ``smdebug plugins`` and ``smdebug rules``.
    """

    name: str
    target: str
    pack: str
    description: str = ""

    def __post_init__(self) -> None:
        _check_name("rule", self.name)
        _check_target(f"rule {self.name!r}: target", self.target)
        if not isinstance(self.pack, str) or not self.pack:
            raise ValueError(f"rule {self.name!r}: pack must be a non-empty string, got {self.pack!r}")

    def load(self) -> type:
        """Import and return the rule class."""
        return resolve_target(self.target)

    def to_dict(self) -> dict:
        return {"name": self.name, "target": self.target, "pack": self.pack, "description": self.description}


_COMMAND_RE = re.compile(r"^[a-z][a-z0-9-]*$")
_MODULE_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


@dataclass(frozen=True)
class CommandInfo:
    """A subcommand of the ``smdebug`` command line offered by a plugin (``smdebug NAME ...``).

    :param name: the subcommand, lowercase letters, digits and ``-`` (``"rules"``); unique among plugins, and
        never one of smdebug-core's own commands (``ls``, ``show``, ``plot``, ``report``...).
    :param module: the module that implements it, imported only when the command runs or its help is asked:
        ``add_arguments(parser)`` (an ``argparse`` parser of its own), ``run(args) -> int`` (the exit
        status); its docstring is the command's description.
    :param help: one line for ``smdebug --help``, which lists every command without importing any of them.
    """

    name: str
    module: str
    help: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _COMMAND_RE.match(self.name):
            raise ValueError(f"command name must be lowercase letters, digits and '-', got {self.name!r}")
        if not isinstance(self.module, str) or not _MODULE_RE.match(self.module):
            raise ValueError(f"command {self.name!r}: module must be a dotted module name, got {self.module!r}")
        if not isinstance(self.help, str):
            raise ValueError(f"command {self.name!r}: help must be a string, got {type(self.help).__name__}")

    def load(self):
        """Import and return the module implementing the command (ImportError/AttributeError when it
        cannot: missing, or without ``add_arguments`` and ``run``)."""
        module = importlib.import_module(self.module)
        missing = [f for f in ("add_arguments", "run") if not callable(getattr(module, f, None))]
        if missing:
            raise AttributeError(f"module {self.module!r} has no {' and no '.join(missing)}() function")
        return module

    def to_dict(self) -> dict:
        return {"name": self.name, "module": self.module, "help": self.help}


@dataclass(frozen=True)
class WorkerInfo:
    """Who this process is in a distributed job.

    :param rank: 0-based index of this worker.
    :param size: number of workers in the job.
    :param name: the worker name used in file names; defaults to ``worker_<rank>``.
    """

    rank: int
    size: int
    name: Optional[str] = None

    def __post_init__(self) -> None:
        for label, value in (("rank", self.rank), ("size", self.size)):
            if isinstance(value, bool):
                raise ValueError(f"WorkerInfo.{label} must be an integer, got {value!r}")
            try:
                value = operator.index(value)  # accepts numpy integers, rejects floats
            except TypeError:
                raise ValueError(f"WorkerInfo.{label} must be an integer, got {value!r}") from None
            object.__setattr__(self, label, value)
        if self.size < 1:
            raise ValueError(f"WorkerInfo.size must be >= 1, got {self.size}")
        if not 0 <= self.rank < self.size:
            raise ValueError(f"WorkerInfo.rank must be in [0, {self.size}), got {self.rank}")
        if self.name is None:
            object.__setattr__(self, "name", f"worker_{self.rank}")
        elif not isinstance(self.name, str) or not self.name:
            raise ValueError(f"WorkerInfo.name must be a non-empty string, got {self.name!r}")
