"""The rule-accuracy benchmark: train (or take from the cache) every scenario, check its labels on the
written run, evaluate every built-in rule and the recommended set, report.

    python benchmarks/run.py --only rule_accuracy [--quick] [--no-record]
    python -m rule_accuracy.bench [--quick] [--only ID_PREFIX ...] [--json PATH]   (from benchmarks/)

``--quick`` takes the CI subset (the scenarios marked ``quick``). A framework that is not installed is
skipped with a note (the bench_rules nox session installs torch, TensorFlow/Keras and XGBoost).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import time
from functools import lru_cache
from typing import Dict, List, Optional

from . import evaluate, properties, report
from .hooks import recommended_rules, recommended_set_description
from .runs import cache_root, code_version, ensure_run
from .scenarios import SCENARIOS, Scenario

HERE = os.path.dirname(os.path.abspath(__file__))
JSON_PATH = os.path.join(os.path.dirname(HERE), "RESULTS_rule_accuracy.json")
_FRAMEWORK_MODULES = {"torch": "torch", "keras": "keras", "xgboost": "xgboost"}


def available(framework: str) -> bool:
    return importlib.util.find_spec(_FRAMEWORK_MODULES[framework]) is not None


def select(quick: bool = False, only: Optional[List[str]] = None) -> List[Scenario]:
    chosen = [s for s in SCENARIOS if (not quick or s.quick) and (not only or any(s.id.startswith(p) for p in only))]
    return chosen


def rule_params() -> Dict[str, Dict[str, str]]:
    return {rule: dict(evaluate.REQUIRED_PARAMS.get(rule, {})) for rule in evaluate.builtin_rules()
            if rule not in evaluate.NOT_APPLICABLE}


@lru_cache(maxsize=None)
def rules_version() -> str:
    """Hash of the code that evaluates rules: the smdebug-rules and smdebug-core sources."""
    import smdebug
    import smdebug.rules

    digest = hashlib.sha256()
    for package in (smdebug.rules, smdebug):
        root = os.path.dirname(package.__file__)
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(f for f in files if f.endswith(".py")):
                with open(os.path.join(folder, name), "rb") as f:
                    digest.update(name.encode() + f.read())
    return digest.hexdigest()[:12]


def _evaluations(path: str, params: Dict[str, Dict[str, str]], recommended: list) -> dict:
    """Every rule's outcome and the recommended set's, kept next to the run and reused while the rules'
    code, the parameters and the set are unchanged (changing a rule re-evaluates everything)."""
    key = hashlib.sha256(json.dumps([rules_version(), params, recommended], sort_keys=True).encode()).hexdigest()[:12]
    saved = os.path.join(os.path.dirname(path), f"evaluation-{key}.json")
    if os.path.exists(saved):
        with open(saved) as f:
            return {**json.load(f), "reused": True}
    result = {"rules": {rule: evaluate.evaluate_rule(path, rule, p).to_dict() for rule, p in params.items()},
              "recommended": {"names": [name for name, _ in recommended], **evaluate.evaluate_set(path, recommended)}}
    with open(saved + ".tmp", "w") as f:
        json.dump(result, f, default=str)
    os.replace(saved + ".tmp", saved)
    return {**result, "reused": False}


def run_scenario(scenario: Scenario, params: Dict[str, Dict[str, str]], cache: Optional[str] = None,
                 log=print) -> dict:
    """Train (or load) one scenario, check its labels, evaluate every rule and the recommended set."""
    trained = ensure_run(scenario, cache)
    if scenario.label_twin:  # the same training recorded another way: its run carries the label
        from .scenarios import by_id

        twin = ensure_run(by_id()[scenario.label_twin], cache)
        labels = {c: (h, f"on twin {scenario.label_twin}: {e}") for c, (h, e) in
                  properties.check_labels(twin.path, twin.facts, list(scenario.classes)).items()}
    else:
        labels = properties.check_labels(trained.path, trained.facts, list(scenario.classes))
    recommended = recommended_rules(scenario.framework)
    evaluated = _evaluations(trained.path, params, recommended)
    outcomes = evaluated["rules"]
    record = {
        "id": scenario.id, "framework": scenario.framework, "architecture": scenario.architecture,
        "task": scenario.task, "optimizer": scenario.optimizer, "seed": scenario.seed, "bug": scenario.bug,
        "classes": list(scenario.classes), "healthy": scenario.healthy, "relevant": list(scenario.relevant),
        "train_seconds": trained.train_seconds, "cached": trained.cached, "path": trained.path,
        "last_step": evaluate.last_step(trained.path),
        "labels": {c: {"holds": h, "evidence": e} for c, (h, e) in labels.items()},
        "rule_params": params, "rules": outcomes, "recommended": evaluated["recommended"],
        "evaluation_reused": evaluated["reused"],
    }
    fired = [r for r, o in outcomes.items() if o["status"] == evaluate.FIRED]
    log(f"  {scenario.id}: {'cached' if trained.cached else f'trained in {trained.train_seconds:.1f} s'}"
        f"{', evaluation reused' if evaluated['reused'] else ''}; "
        f"labels {'ok' if report.label_ok(record) else 'NOT VERIFIED'}; fired: {', '.join(fired) or 'none'}")
    return record


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _run_all(scenarios: List[Scenario], params, cache, jobs: int) -> List[dict]:
    """Every scenario, in ``jobs`` processes (spawned: no framework state is shared); records in table order."""
    if jobs <= 1:
        return [run_scenario(s, params, cache, log=_log) for s in scenarios]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(run_scenario, s, params, cache, _log) for s in scenarios]
        return [f.result() for f in futures]


def main(quick: bool = False, only: Optional[List[str]] = None, cache: Optional[str] = None,
         json_path: Optional[str] = JSON_PATH, jobs: int = 2) -> dict:
    started = time.perf_counter()
    if importlib.util.find_spec("sklearn") is None:
        raise SystemExit("the rule-accuracy benchmark trains on scikit-learn's bundled data sets, and scikit-learn "
                         "is not installed here: run it with `nox -s bench_rules` (torch, TensorFlow, XGBoost, "
                         "scikit-learn)")
    scenarios = select(quick, only)
    skipped = sorted({s.framework for s in scenarios if not available(s.framework)})
    scenarios = [s for s in scenarios if s.framework not in skipped]
    params = rule_params()
    print(f"rule accuracy: {len(scenarios)} scenarios, {len(params)} rules, cache {cache or cache_root()}",
          file=sys.stderr)
    records = _run_all(scenarios, params, cache, jobs)
    rules = list(params)
    summary = report.summarise(records, rules)
    result = {
        "summary": summary, "records": records, "rules": rules, "required_params": evaluate.REQUIRED_PARAMS,
        "not_applicable": evaluate.NOT_APPLICABLE, "skipped_frameworks": skipped, "quick": quick,
        "code_version": {**{f: code_version(f) for f in sorted({s.framework for s in scenarios})},
                         **{t: code_version(s.framework, t) for s in scenarios
                            if (t := s.train.get("trainer"))}},
        "recommended_set": recommended_set_description(),
        "train_seconds": sum(r["train_seconds"] for r in records if not r["cached"]),
        "trained": sum(1 for r in records if not r["cached"]),
        "train_seconds_all": sum(r["train_seconds"] for r in records),
        "eval_seconds": sum(o["seconds"] for r in records for o in r["rules"].values())
        + sum(r["recommended"]["seconds"] for r in records),
        "evaluations_reused": sum(1 for r in records if r["evaluation_reused"]), "rules_version": rules_version(),
        "wall_seconds": time.perf_counter() - started, "jobs": jobs,
    }
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return result


def _train_one(scenario: Scenario, cache: Optional[str]) -> str:
    trained = ensure_run(scenario, cache)
    return f"{scenario.id}: {'cached' if trained.cached else f'trained in {trained.train_seconds:.1f} s'}"


def train_only(quick: bool, only: Optional[List[str]], cache: Optional[str], jobs: int) -> int:
    """Fill the cache with the selected scenarios' runs (e.g. before iterating on rules), in ``jobs`` processes."""
    scenarios = [s for s in select(quick, only) if available(s.framework)]
    if jobs <= 1:
        for s in scenarios:
            _log(_train_one(s, cache))
        return 0
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in as_completed([pool.submit(_train_one, s, cache) for s in scenarios]):
            _log(future.result())
    return 0


def header_lines(result: dict) -> List[str]:
    """The section's lines after the machine/versions lines (benchmarks/run.py adds those)."""
    required = "; ".join(f"{rule}: " + ", ".join(f"{k}={v}" for k, v in p.items())
                         for rule, p in result["required_params"].items())
    versions = ", ".join(f"{k} {v}" for k, v in result["code_version"].items())
    lines = [
        f"- recommended set: {result['recommended_set']}",
        f"- every built-in rule at its defaults; required parameters: {required}",
        f"- runs: {len(result['records'])}, {result['trained']} trained by this command "
        f"({result['train_seconds']:.0f} s), the rest from the cache; training all of them took "
        f"{result['train_seconds_all']:.0f} s as measured when each was trained (code versions {versions}); rule "
        f"evaluation {result['eval_seconds']:.0f} s in all (of which {result['evaluations_reused']} runs' evaluations "
        f"were reused from an earlier run of the same rules code {result['rules_version']}, times as measured "
        f"then); wall {result['wall_seconds']:.0f} s with {result['jobs']} processes on a shared 2-core machine "
        "(times are noisy)",
        "- machine-readable: [RESULTS_rule_accuracy.json](RESULTS_rule_accuracy.json)",
    ]
    if result["skipped_frameworks"]:
        lines.append(f"- skipped (framework not installed): {', '.join(result['skipped_frameworks'])}")
    return lines


def format_table(result: dict) -> str:
    return report.format_markdown(result["summary"], result["records"], result["rules"], result["not_applicable"])


def _cli(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", help="scenario id prefixes")
    parser.add_argument("--cache", help="cache folder (default: $SMDEBUG_RULE_ACCURACY_CACHE or ~/.cache/...)")
    parser.add_argument("--json", default=None, help="write the JSON here (default: not written)")
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--train-only", action="store_true", help="only train (fill the cache); evaluate nothing")
    args = parser.parse_args(argv)
    if args.train_only:
        return train_only(args.quick, args.only, args.cache, args.jobs)
    result = main(args.quick, args.only, args.cache, args.json, args.jobs)
    print("\n".join(header_lines(result)) + "\n\n" + format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
