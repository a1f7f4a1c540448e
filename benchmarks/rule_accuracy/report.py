"""The benchmark's numbers from the per-run records, and their markdown.

A record is one scenario's run: its definition, its label checks, each rule's outcome, the recommended
set's outcome. From them: per problem class, the recall of the recommended set, of every rule together,
and of the rules that stayed quiet on every healthy run; per rule, its false alarms (with the step and
the reason of the first finding), what it caught, time to detection (first firing step as a share of the
run) and evaluation time. Runs whose label did not check out are listed and left out of every rate.
"""

from __future__ import annotations

import json
import os
import statistics
from typing import Dict, List, Optional

TARGET_RECALL = 0.9


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def _median(values: List[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def _fmt(value: Optional[float], spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def label_ok(rec: dict) -> bool:
    checks = rec["labels"].values()
    if rec["healthy"]:
        return all(c["holds"] is False for c in checks)
    return all(c["holds"] is True for c in checks)


def _fraction(step: Optional[int], rec: dict) -> Optional[float]:
    if step is None or not rec.get("last_step"):
        return None
    return step / rec["last_step"]


def _any_fired(rec: dict) -> bool:
    return any(o["status"] == "IssuesFound" for o in rec["rules"].values())


def summarise(records: List[dict], rules: List[str]) -> dict:
    """Every number the report shows, as plain data (also written to the JSON)."""
    valid = [r for r in records if label_ok(r)]
    buggy = [r for r in valid if not r["healthy"]]
    healthy = [r for r in valid if r["healthy"]]
    per_rule = {}
    for rule in rules:
        outcomes = [(r, r["rules"][rule]) for r in valid if rule in r["rules"]]
        alarms = [(r["id"], o) for r, o in outcomes if r["healthy"] and o["status"] == "IssuesFound"]
        caught = [(r, o) for r, o in outcomes if not r["healthy"] and o["status"] == "IssuesFound"]
        relevant = [r for r, _ in outcomes if not r["healthy"] and rule in r["relevant"]]
        statuses: Dict[str, int] = {}
        for _, o in outcomes:
            statuses[o["status"]] = statuses.get(o["status"], 0) + 1
        classes: Dict[str, int] = {}
        for r, _ in caught:
            for c in r["classes"]:
                classes[c] = classes.get(c, 0) + 1
        per_rule[rule] = {
            "params": next((r["rule_params"].get(rule, {}) for r in valid), {}),
            "false_alarms": [{"run": run, "step": o["first_step"], "mode": o["first_mode"],
                              "reason": o["first_reason"]} for run, o in alarms],
            "healthy_runs": sum(1 for r, _ in outcomes if r["healthy"]),
            "buggy_caught": [r["id"] for r, _ in caught], "buggy_runs": sum(1 for r, _ in outcomes if not r["healthy"]),
            "relevant_runs": len(relevant),
            "relevant_caught": sum(1 for r, o in caught if rule in r["relevant"]),
            "classes_caught": classes, "statuses": statuses,
            "errors": [{"run": r["id"], "error": o["error"]} for r, o in outcomes if o["status"] == "Error"],
            "detection_fraction_median": _median([f for r, o in caught
                                                  if (f := _fraction(o["first_step"], r)) is not None]),
            "seconds_total": sum(o["seconds"] for _, o in outcomes),
            "seconds_median": _median([o["seconds"] for _, o in outcomes]),
        }
    quiet_rules = [rule for rule in rules if not per_rule[rule]["false_alarms"]]
    classes = sorted({c for r in buggy for c in r["classes"]})
    per_class = {}
    for cls in classes:
        runs = [r for r in buggy if cls in r["classes"]]
        per_class[cls] = {
            "runs": len(runs),
            "recommended": sum(1 for r in runs if r["recommended"]["fired"]),
            "any_rule": sum(1 for r in runs if _any_fired(r)),
            "quiet_rules": sum(1 for r in runs if any(r["rules"][q]["status"] == "IssuesFound" for q in quiet_rules
                                                      if q in r["rules"])),
            "rules": sorted({rule for r in runs for rule, o in r["rules"].items() if o["status"] == "IssuesFound"}),
        }
    rec_fired_buggy = [r for r in buggy if r["recommended"]["fired"]]
    rec_alarms = [r for r in healthy if r["recommended"]["fired"]]
    return {
        "runs": len(records), "runs_valid": len(valid), "buggy": len(buggy), "healthy": len(healthy),
        "unverified": [{"run": r["id"], "labels": r["labels"]} for r in records if not label_ok(r)],
        "recommended": {
            "caught": len(rec_fired_buggy), "recall": len(rec_fired_buggy) / len(buggy) if buggy else None,
            "false_alarms": [{"run": r["id"], "rule": r["recommended"]["first_rule"],
                              "step": r["recommended"]["first_step"], "reason": r["recommended"]["first_reason"]}
                             for r in rec_alarms],
            "errors": sorted({f"{o['rule']}: {o['error']}" for r in valid for o in r["recommended"]["rules"]
                              if o["status"] == "Error"}),
            "detection_fraction_median": _median([f for r in rec_fired_buggy
                                                  if (f := _fraction(r["recommended"]["first_step"], r)) is not None]),
            "seconds_median": _median([r["recommended"]["seconds"] for r in valid]),
        },
        "any_rule_caught": sum(1 for r in buggy if _any_fired(r)),
        "any_rule_alarms": sum(1 for r in healthy if _any_fired(r)),
        "quiet_rules": quiet_rules,
        "quiet_rules_caught": sum(1 for r in buggy if any(r["rules"][q]["status"] == "IssuesFound"
                                                          for q in quiet_rules if q in r["rules"])),
        "rules_with_false_alarms": sorted(rule for rule in rules if per_rule[rule]["false_alarms"]),
        "per_rule": per_rule, "per_class": per_class,
    }


def _short(text: Optional[str], n: int = 110) -> str:
    text = (text or "").replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def verdicts(s: dict) -> List[str]:
    """The target lines (the bench runner's 'Targets at a glance' picks lines ending in (met)/(not met ...))."""
    rec = s["recommended"]
    recall = rec["recall"] or 0.0
    met = recall >= TARGET_RECALL
    fa = len(rec["false_alarms"])
    bad_rules = s["rules_with_false_alarms"]
    missed = [cls for cls, c in s["per_class"].items() if c["recommended"] == 0]
    alarm_rules = sorted({a["rule"] for a in rec["false_alarms"] if a["rule"]})
    return [
        f"- recommended set detects >= 90% of the buggy runs: {_pct(rec['caught'], s['buggy'])} "
        + ((f"(met on recall alone, but with {fa} of {s['healthy']} healthy runs raising an alarm too: the target "
            "is both together)" if fa else "(met)") if met
           else f"(not met: it catches no run of {', '.join(missed) or '-'})"),
        f"- recommended set raises 0 false alarms on healthy runs: {fa} of {s['healthy']} healthy runs "
        + ("(met)" if fa == 0 else f"(not met: first alarms from {', '.join(alarm_rules)})"),
        f"- every rule at its defaults raises 0 false alarms on healthy runs: {len(bad_rules)} rules raise some "
        + ("(met)" if not bad_rules else f"(not met: {', '.join(bad_rules)})"),
    ]


_HERE = os.path.dirname(os.path.abspath(__file__))
#: the held-out batches: (name, prefixes of their rows, the file of their verdicts before any rule was changed
#: for them, whether the rules have been fixed on them since -- then "now" is no longer a held-out number)
HELDOUT_BATCHES = (
    ("Held-out batch", ("hh_", "bh_"), os.path.join(_HERE, "heldout_baseline.json"), True),
    ("Second held-out batch", ("h2_", "b2_"), os.path.join(_HERE, "heldout2_baseline.json"), True),
)
HELDOUT_PREFIXES = tuple(p for _, prefixes, _, _ in HELDOUT_BATCHES for p in prefixes)


def heldout_lines(records: List[dict], rules: List[str]) -> List[str]:
    """Each held-out batch's numbers now, next to those recorded before any rule was changed for it."""
    out: List[str] = []
    for name, prefixes, baseline, fixed_on in HELDOUT_BATCHES:
        out += _batch_lines(name, prefixes, baseline, fixed_on, records, rules)
    return out


def _batch_lines(name: str, prefixes, baseline: str, fixed_on: bool, records: List[dict],
                 rules: List[str]) -> List[str]:
    held = [r for r in records if r["id"].startswith(prefixes)]
    if not held or not os.path.exists(baseline):
        return []
    with open(baseline) as f:
        before = json.load(f)
    now = summarise(held, rules)
    rec = now["recommended"]
    missed = sorted(r["id"] for r in held if label_ok(r) and not r["healthy"] and not r["recommended"]["fired"])
    statuses: Dict[str, int] = {}
    for r in held:
        if label_ok(r) and r["healthy"]:
            statuses[r["recommended"]["status"]] = statuses.get(r["recommended"]["status"], 0) + 1
    rows = "/".join(f"`{p}`" for p in prefixes)
    out = [f"**{name}** (rows {rows}: written and recorded apart from the runs the rules were designed "
           f"against; before = the verdicts of {before['recorded']}, commit {before['commit']}, before any rule was "
           "changed for them" + ("; the fixes were made on this batch, so 'now' is no longer a held-out number)"
                                 if fixed_on else ")"), "",
           "| | recommended set: buggy detected | recommended set: healthy with an alarm | every rule: buggy | every rule: "
           "healthy with an alarm | recommended set's status on healthy runs |", "|---|---:|---:|---:|---:|---|",
           f"| before | {_pct(before['recommended']['caught'], before['buggy'])} | "
           f"{_pct(len(before['recommended']['false_alarms']), before['healthy'])} | "
           f"{_pct(before['any_rule']['caught'], before['buggy'])} | {_pct(before['any_rule']['alarms'], before['healthy'])} | "
           + ", ".join(f"{k} {v}" for k, v in sorted(before["recommended_status_of_healthy_runs"].items())) + " |",
           f"| now | {_pct(rec['caught'], now['buggy'])} | {_pct(len(rec['false_alarms']), now['healthy'])} | "
           f"{_pct(now['any_rule_caught'], now['buggy'])} | {_pct(now['any_rule_alarms'], now['healthy'])} | "
           + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) + " |", "",
           "Before: recommended-set alarms " + ("; ".join(before["recommended"]["false_alarms"]) or "none") + "; missed "
           + (", ".join(before["recommended"]["missed"]) or "none") + ". Now: alarms "
           + ("; ".join(f"{a['run']}: {a['rule']}" for a in rec["false_alarms"]) or "none") + "; missed "
           + (", ".join(missed) or "none") + ".", "",
           "| rule | false alarms before | now | relevant caught before | now |", "|---|---|---|---:|---:|"]
    for rule in rules:
        b, n = before["per_rule"].get(rule), now["per_rule"][rule]
        if b is None or (not b["false_alarms"] and not n["false_alarms"]
                         and b["relevant_caught"] == n["relevant_caught"]):
            continue
        out.append(f"| {rule} | {', '.join(b['false_alarms']) or '-'} | "
                   f"{', '.join(a['run'] for a in n['false_alarms']) or '-'} | "
                   f"{b['relevant_caught']}/{b['relevant_runs']} | {n['relevant_caught']}/{n['relevant_runs']} |")
    return out + [""]


def format_markdown(s: dict, records: List[dict], rules: List[str], not_applicable: Dict[str, str]) -> str:
    out: List[str] = []
    rec = s["recommended"]
    out += [f"{s['runs']} runs: {s['buggy']} buggy and {s['healthy']} healthy with verified labels"
            + (f"; {len(s['unverified'])} left out because their label did not check out: "
               + ", ".join(u["run"] for u in s["unverified"]) if s["unverified"] else "") + ".", ""]
    out += ["| rule set | buggy runs detected | healthy runs with an alarm | median detection (share of run) |",
            "|---|---:|---:|---:|",
            f"| recommended set | {_pct(rec['caught'], s['buggy'])} | {_pct(len(rec['false_alarms']), s['healthy'])} "
            f"| {_fmt(rec['detection_fraction_median'])} |",
            f"| every rule at its defaults, together | {_pct(s['any_rule_caught'], s['buggy'])} | "
            f"{_pct(s['any_rule_alarms'], s['healthy'])} | - |",
            f"| the rules quiet on every healthy run ({len(s['quiet_rules'])}: "
            f"{', '.join(s['quiet_rules']) or 'none'}) | {_pct(s['quiet_rules_caught'], s['buggy'])} | 0 | - |", ""]
    out += heldout_lines(records, rules)
    if rec["errors"]:
        out += ["Recommended-set rules that could not run: " + "; ".join(_short(e, 200) for e in rec["errors"]), ""]
    out += ["**Per problem class** (a run counts for each of its classes; detected = any rule of the set fired)", "",
            "| class | runs | recommended set | any rule | quiet rules | rules that fired |",
            "|---|---:|---:|---:|---:|---|"]
    for cls, c in s["per_class"].items():
        out.append(f"| {cls} | {c['runs']} | {_pct(c['recommended'], c['runs'])} | {_pct(c['any_rule'], c['runs'])} | "
                   f"{_pct(c['quiet_rules'], c['runs'])} | {', '.join(c['rules']) or '-'} |")
    out += ["", "**Per rule** (at its defaults; relevant = runs whose class is the rule's job; detection = first "
            "firing step / last step; time = one `run_rules` call per run, trial opening included)", "",
            "| rule | params | false alarms (healthy) | buggy caught | relevant caught | classes caught | "
            "NotEvaluated | Error | median detection | eval s (median, total) |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for rule in rules:
        p = s["per_rule"][rule]
        params = ", ".join(f"{k}={v}" for k, v in p["params"].items()) or "defaults"
        not_evaluated = p["statuses"].get("NotEvaluated", 0)
        errors = p["statuses"].get("Error", 0)
        classes = ", ".join(f"{c} {n}" for c, n in sorted(p["classes_caught"].items())) or "-"
        out.append(f"| {rule} | {params} | {_pct(len(p['false_alarms']), p['healthy_runs'])} | "
                   f"{_pct(len(p['buggy_caught']), p['buggy_runs'])} | "
                   f"{_pct(p['relevant_caught'], p['relevant_runs'])} | "
                   f"{classes} | {not_evaluated} | {errors} | {_fmt(p['detection_fraction_median'])} | "
                   f"{_fmt(p['seconds_median'], '.3f')}, {p['seconds_total']:.1f} |")
    for rule, why in not_applicable.items():
        out.append(f"| {rule} | - | not measured: {why} | | | | | | | |")
    out += ["", "**False alarms on healthy runs** (first finding of each rule on each healthy run)", "",
            "| rule | healthy run | step (mode) | reason |", "|---|---|---|---|"]
    for rule in rules:
        for fa in s["per_rule"][rule]["false_alarms"]:
            out.append(f"| {rule} | {fa['run']} | {fa['step']} ({fa['mode']}) | {_short(fa['reason'])} |")
    errors = [(rule, s["per_rule"][rule]["errors"]) for rule in rules if s["per_rule"][rule]["errors"]]
    if errors:
        out += ["", "**Rules that ended in Error** (every run's error is in the JSON)", "",
                "| rule | runs | first error |", "|---|---:|---|"]
        out += [f"| {rule} | {len(errs)} | {errs[0]['run']}: {_short(errs[0]['error'], 160)} |" for rule, errs in errors]
    out += ["", "**Runs** (labels checked on the written run; fired = rules with IssuesFound)", "",
            "| run | framework | classes | label check | recommended | rules fired |", "|---|---|---|---|---|---|"]
    for r in records:
        fired = [name for name, o in r["rules"].items() if o["status"] == "IssuesFound"]
        evidence = "; ".join(f"{c}: {_short(v['evidence'], 70)}" for c, v in r["labels"].items()
                             if not r["healthy"] or v["holds"] is not False)
        check = ("ok" if label_ok(r) else "NOT VERIFIED") + (f" ({evidence})" if evidence else "")
        out.append(f"| {r['id']} | {r['framework']} | {', '.join(r['classes']) or 'healthy'} | {_short(check, 160)} | "
                   f"{'fired' if r['recommended']['fired'] else 'quiet'} | {', '.join(fired) or '-'} |")
    out += ["", *verdicts(s)]
    return "\n".join(out)
