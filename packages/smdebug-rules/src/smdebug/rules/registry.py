"""Finding rules by name among every installed rule pack, and building them from string parameters."""

from __future__ import annotations

import inspect
import re
from typing import Dict, List, Mapping, Optional

from smdebug.exceptions import SMDebugValueError


def _key(name: str) -> str:
    """``vanishing_gradient``, ``VanishingGradient`` and ``vanishing-gradient`` name the same rule."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def list_rules() -> List:
    """Every registered rule (:class:`smdebug.core.plugins.RuleInfo`), built-in pack and third-party packs,
    sorted by name."""
    from smdebug.core.plugins import rules

    return sorted(rules().values(), key=lambda info: info.name)


def find_rule(name: str):
    """The RuleInfo of rule ``name`` (case, ``_`` and ``-`` ignored; ``StalledTraining`` also finds
    ``StalledTrainingRule``). Raises SMDebugValueError naming the close matches (``did you mean
    VanishingGradient?``), or every registered rule when none is close."""
    if not isinstance(name, str):
        raise SMDebugValueError(f"a rule name must be a string, got {type(name).__name__}")
    infos = list_rules()
    wanted = _key(name)
    for info in infos:
        if _key(info.name) in (wanted, wanted + "rule"):
            return info
    close = close_rule_names(name, infos)
    if close:
        raise SMDebugValueError(f"unknown rule {name!r}; did you mean {' or '.join(close)}? "
                                "(`smdebug rules list` shows every rule)")
    known = ", ".join(info.name for info in infos) or "none (is smdebug-rules installed?)"
    raise SMDebugValueError(f"unknown rule {name!r}; registered rules: {known}")


def close_rule_names(name: str, infos=None) -> List[str]:
    """Registered rule names close to ``name`` (spelling ignored as in :func:`find_rule`), best first."""
    import difflib

    by_key = {}
    for info in infos if infos is not None else list_rules():
        by_key.setdefault(_key(info.name), info.name)
    wanted = _key(name)
    keys = [k for k in by_key if len(wanted) >= 4 and wanted in k]  # a part of the name: "loss", "stalled"
    keys += [k for k in difflib.get_close_matches(wanted, list(by_key), n=3, cutoff=0.75) if k not in keys]
    return [by_key[k] for k in keys[:3]]


def rule_parameters(rule_class) -> Dict[str, Optional[str]]:
    """The parameters a rule accepts (besides the trials and the action string), with their defaults
    (None marks a required parameter)."""
    params = {}
    for pname, p in inspect.signature(rule_class.__init__).parameters.items():
        if pname in ("self", "base_trial", "other_trials", "action_str") or p.kind in (p.VAR_POSITIONAL,
                                                                                      p.VAR_KEYWORD):
            continue
        params[pname] = None if p.default is inspect.Parameter.empty else p.default
    return params


def build_rule(name_or_class, trial, params: Optional[Mapping[str, object]] = None, other_trials=None,
               action_str: Optional[str] = None):
    """Instantiate a rule with parameters given as strings (as on the command line and in SageMaker's
    RuleParameters). Unknown or missing parameters raise SMDebugValueError naming them."""
    rule_class = find_rule(name_or_class).load() if isinstance(name_or_class, str) else name_or_class
    params = dict(params or {})
    accepted = rule_parameters(rule_class)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise SMDebugValueError(
            f"{rule_class.__name__}: unknown parameter(s) {', '.join(unknown)}; "
            f"it accepts: {', '.join(accepted) or 'no parameters'}")
    required = inspect.signature(rule_class.__init__).parameters
    missing = [p for p in accepted if required[p].default is inspect.Parameter.empty and p not in params]
    if missing:
        raise SMDebugValueError(f"{rule_class.__name__}: missing required parameter(s) {', '.join(missing)}")
    kwargs = dict(params)
    if other_trials:
        kwargs["other_trials"] = other_trials
    if action_str:
        kwargs["action_str"] = action_str
    return rule_class(trial, **kwargs)
