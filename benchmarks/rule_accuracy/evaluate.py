"""Evaluating rules on a written run the way a user does: ``run_rules`` (what ``smdebug rules run`` calls).

Every built-in rule is evaluated on its own at its defaults, plus the minimum parameters a rule cannot be
built without (:data:`REQUIRED_PARAMS`); each evaluation opens the run afresh, so its time includes opening
the trial, as a user's ``smdebug rules run RUN --rule X`` does. The recommended set is evaluated the same
way in one call with all its rules. Statuses are kept as the runner reports them, including ``NotEvaluated``
(no data to judge) where the runner has it, and ``Error``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence

#: parameters some rules cannot be built without (they have no default), the minimum chosen here:
#: what the rule's documentation suggests its purpose is, on the collections every framework's hook saves
REQUIRED_PARAMS: Dict[str, Dict[str, str]] = {
    "AllZero": {"collection_names": "weights,gradients"},
    "TensorVariance": {"collection_names": "weights,gradients", "max_threshold": "1000"},
}
#: rules that cannot be judged on one run by construction
NOT_APPLICABLE: Dict[str, str] = {
    "SimilarAcrossRuns": "compares a run with another run (other_trials); no single-run verdict to measure",
}

FIRED = "IssuesFound"
QUIET = "NoIssuesFound"
ERROR = "Error"


@dataclass
class RuleOutcome:
    rule: str
    status: str
    first_step: Optional[int] = None
    first_mode: Optional[str] = None
    first_reason: Optional[str] = None
    findings_total: int = 0
    steps_evaluated: int = 0
    seconds: float = 0.0
    error: Optional[str] = None
    detail: Optional[str] = None

    @property
    def fired(self) -> bool:
        return self.status == FIRED

    def to_dict(self) -> dict:
        return asdict(self)


def builtin_rules() -> List[str]:
    """Every rule of the built-in pack, by name, sorted (the pack's own table: no plugin discovery)."""
    from smdebug.rules.plugin import RULES

    return sorted(info.name for info in RULES)


def _outcome(rule_result, seconds: float) -> RuleOutcome:
    first = rule_result.first_finding
    return RuleOutcome(
        rule=rule_result.name, status=rule_result.status,
        first_step=None if first is None else first.step,
        first_mode=None if first is None else first.mode,
        first_reason=None if first is None else first.reason,
        findings_total=rule_result.findings_total, steps_evaluated=rule_result.steps_evaluated,
        seconds=seconds, error=rule_result.error,
        # the runner's explanation of a NotEvaluated/Error verdict, where it gives one
        detail=getattr(rule_result, "detail", None),
    )


def evaluate_rule(path: str, rule: str, params: Optional[Dict[str, str]] = None) -> RuleOutcome:
    """One rule over the whole run, as ``smdebug rules run PATH --rule RULE [--param ...]``."""
    from smdebug.rules.runner import run_rules

    started = time.perf_counter()
    result = run_rules(path, [(rule, dict(params or {}))])
    return _outcome(result.rules[0], time.perf_counter() - started)


def evaluate_set(path: str, rules: Sequence[str]) -> dict:
    """A set of rules in one runner call (each at its defaults): fired if any rule fired."""
    from smdebug.rules.runner import run_rules

    started = time.perf_counter()
    result = run_rules(path, list(rules))
    seconds = time.perf_counter() - started
    outcomes = [_outcome(r, 0.0) for r in result.rules]
    fired = [o for o in outcomes if o.fired]
    first = min(fired, key=lambda o: o.first_step) if fired else None
    return {"rules": [o.to_dict() for o in outcomes], "fired": bool(fired), "status": result.status,
            "first_step": None if first is None else first.first_step,
            "first_rule": None if first is None else first.rule,
            "first_reason": None if first is None else first.first_reason, "seconds": seconds}


def last_step(path: str) -> Optional[int]:
    from smdebug.trials import create_trial

    steps = create_trial(path).steps()
    return steps[-1] if steps else None
