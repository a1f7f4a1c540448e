"""The quick subset of the rule-accuracy benchmark (benchmarks/rule_accuracy), as tests.

Real tiny PyTorch and XGBoost runs (the scenarios marked ``quick``) are trained once per test session into a
shared cache, their labels are checked on the written runs, and the rules are held to what the issue asks:
no rule at its defaults and not the recommended set may raise an alarm on a healthy run; the recommended set
and the rules relevant to a bug must detect it. The pairs that fail with today's rules are marked
``xfail(strict=True)`` with the reason measured by the benchmark's baseline, so that whoever fixes a rule
removes its marks one by one (a fixed pair then fails as XPASS until its mark goes).
"""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

pytest.importorskip("torch")
pytest.importorskip("xgboost")

from rule_accuracy import evaluate, properties  # noqa: E402
from rule_accuracy.hooks import recommended_rules  # noqa: E402
from rule_accuracy.runs import ensure_run  # noqa: E402
from rule_accuracy.scenarios import SCENARIOS  # noqa: E402

QUICK = [s for s in SCENARIOS if s.quick and s.framework in ("torch", "xgboost")]
HEALTHY = [s for s in QUICK if s.healthy]
BUGGY = [s for s in QUICK if not s.healthy]
RULES = [r for r in evaluate.builtin_rules() if r not in evaluate.NOT_APPLICABLE]

# Pairs that fail today are listed in these tables with the reason, and marked ``xfail(strict=True)`` (a fixed
# pair then fails as XPASS until its entry goes). Every rule at its defaults and the recommended set meet the
# targets on the quick subset today: the tables are empty.
#: (scenario, rule) -> why the rule fires on this healthy run today (or ends in Error)
FALSE_ALARMS_TODAY: dict = {}
#: scenario -> why the recommended set fires on this healthy run today
RECOMMENDED_ALARMS_TODAY: dict = {}
#: scenario -> why the recommended set misses this buggy run today
RECOMMENDED_MISSES_TODAY: dict = {}
#: scenario -> why no rule relevant to the bug fires today
RELEVANT_MISSES_TODAY: dict = {}


def _xfail(reasons, key):
    reason = reasons.get(key)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    """One cache for the session's workers (the basetemp's parent is shared under pytest-xdist): each run is
    trained once, by whichever worker needs it first."""
    shared = os.environ.get("SMDEBUG_RULE_ACCURACY_CACHE")
    if shared:
        return shared
    root = tmp_path_factory.getbasetemp()
    root = root.parent if root.name.startswith("popen-gw") else root
    return str(root / "rule-accuracy-cache")


def _run(scenario, cache):
    return ensure_run(scenario, cache)


@pytest.mark.parametrize("scenario", QUICK, ids=lambda s: s.id)
def test_labels_hold_on_the_written_run(scenario, cache):
    """The run really shows its bug (or, healthy, none of the symptoms): the benchmark's labels are honest."""
    run = _run(scenario, cache)
    checks = properties.check_labels(run.path, run.facts, list(scenario.classes))
    if scenario.healthy:
        assert all(holds is False for holds, _ in checks.values()), checks
    else:
        assert all(holds is True for holds, _ in checks.values()), checks


@pytest.mark.parametrize("scenario,rule", [
    pytest.param(s, r, id=f"{s.id}-{r}", marks=_xfail(FALSE_ALARMS_TODAY, (s.id, r))) for s in HEALTHY for r in RULES])
def test_no_rule_fires_on_a_healthy_run(scenario, rule, cache):
    run = _run(scenario, cache)
    outcome = evaluate.evaluate_rule(run.path, rule, evaluate.REQUIRED_PARAMS.get(rule))
    assert outcome.status != evaluate.ERROR, outcome.error
    assert not outcome.fired, f"{rule} fired at step {outcome.first_step}: {outcome.first_reason}"


@pytest.mark.parametrize("scenario", [
    pytest.param(s, id=s.id, marks=_xfail(RECOMMENDED_ALARMS_TODAY, s.id)) for s in HEALTHY])
def test_recommended_set_is_quiet_on_a_healthy_run(scenario, cache):
    run = _run(scenario, cache)
    result = evaluate.evaluate_set(run.path, recommended_rules(scenario.framework))
    assert not result["fired"], f"{result['first_rule']} fired at step {result['first_step']}: {result['first_reason']}"


@pytest.mark.parametrize("scenario", [
    pytest.param(s, id=s.id, marks=_xfail(RECOMMENDED_MISSES_TODAY, s.id)) for s in BUGGY])
def test_recommended_set_detects_a_buggy_run(scenario, cache):
    run = _run(scenario, cache)
    result = evaluate.evaluate_set(run.path, recommended_rules(scenario.framework))
    assert result["fired"], f"no rule of {recommended_rules(scenario.framework)} fired on {scenario.bug}"


@pytest.mark.parametrize("scenario", [
    pytest.param(s, id=s.id, marks=_xfail(RELEVANT_MISSES_TODAY, s.id)) for s in BUGGY if s.relevant])
def test_a_relevant_rule_detects_a_buggy_run(scenario, cache):
    run = _run(scenario, cache)
    outcomes = [evaluate.evaluate_rule(run.path, rule, evaluate.REQUIRED_PARAMS.get(rule))
                for rule in scenario.relevant]
    assert any(o.fired for o in outcomes), {o.rule: o.status for o in outcomes}


def test_the_quick_subset_covers_both_frameworks_and_both_kinds():
    assert {s.framework for s in HEALTHY} == {"torch", "xgboost"} and len(HEALTHY) >= 3
    assert {s.framework for s in BUGGY} == {"torch", "xgboost"} and len(BUGGY) >= 4
