"""The verdicts of a held-out batch before any rule was changed for it, kept as a baseline file the report
puts next to today's numbers (report.heldout_lines).

    python -m rule_accuracy.baseline RESULTS.json --prefixes h2_ b2_ -o rule_accuracy/heldout2_baseline.json

``RESULTS.json``: what ``python -m rule_accuracy.bench --only h2_ b2_ --json RESULTS.json`` wrote. Besides the
totals of ``heldout_baseline.json`` (the first batch's), the file keeps every run's verdicts (``per_run``), so a
later change can be compared run by run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from typing import Dict, List, Sequence

from .report import label_ok, summarise


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def document(result: dict, prefixes: Sequence[str], what: str) -> dict:
    records = [r for r in result["records"] if r["id"].startswith(tuple(prefixes))]
    rules: List[str] = result["rules"]
    s = summarise(records, rules)
    valid = [r for r in records if label_ok(r)]
    statuses: Dict[str, int] = {}
    for r in valid:
        if r["healthy"]:
            statuses[r["recommended"]["status"]] = statuses.get(r["recommended"]["status"], 0) + 1
    per_rule = {}
    for rule in rules:
        p = s["per_rule"][rule]
        per_rule[rule] = {
            "false_alarms": [a["run"] for a in p["false_alarms"]], "buggy_caught": len(p["buggy_caught"]),
            "relevant_caught": p["relevant_caught"], "relevant_runs": p["relevant_runs"],
            "not_evaluated": p["statuses"].get("NotEvaluated", 0),
            "not_applicable": p["statuses"].get("NotApplicable", 0), "error": p["statuses"].get("Error", 0),
            # NotEvaluated on healthy runs: a verdict the user cannot act on
            "not_evaluated_healthy": sorted(r["id"] for r in valid if r["healthy"]
                                            and r["rules"][rule]["status"] == "NotEvaluated"),
        }
    per_run = {
        r["id"]: {"healthy": r["healthy"], "classes": r["classes"], "label_ok": label_ok(r),
                  "recommended": {"status": r["recommended"]["status"], "first_rule": r["recommended"]["first_rule"],
                                  "first_reason": r["recommended"]["first_reason"],
                                  "rules": {o["rule"]: o["status"] for o in r["recommended"]["rules"]}},
                  "rules": {rule: o["status"] for rule, o in r["rules"].items()}}
        for r in records}
    return {
        "what": what, "recorded": datetime.date.today().isoformat(), "rules_version": result["rules_version"],
        "commit": _commit(), "runs": len(records), "buggy": s["buggy"], "healthy": s["healthy"],
        "unverified": [u["run"] for u in s["unverified"]],
        "recommended": {
            "caught": s["recommended"]["caught"],
            "false_alarms": [f"{a['run']}: {a['rule']}" for a in s["recommended"]["false_alarms"]],
            "missed": sorted(r["id"] for r in valid if not r["healthy"] and not r["recommended"]["fired"]),
        },
        "any_rule": {"caught": s["any_rule_caught"], "alarms": s["any_rule_alarms"]},
        "per_rule": per_rule, "recommended_status_of_healthy_runs": statuses, "per_run": per_run,
    }


def _cli(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--prefixes", nargs="+", required=True)
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--what", default=None)
    args = parser.parse_args(argv)
    with open(args.results) as f:
        result = json.load(f)
    what = args.what or ("verdicts of every built-in rule and of the recommended set on the held-out batch (rows "
                         f"{'/'.join(args.prefixes)}) before any rule was changed for it")
    with open(args.output, "w") as f:
        json.dump(document(result, args.prefixes, what), f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
