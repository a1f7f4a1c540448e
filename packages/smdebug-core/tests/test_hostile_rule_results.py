"""A damaged or hand-made ``rule_results.json`` must never show as a pass (eighth red-team pass).

Before: the report worked out the overall verdict from the statuses it knew, so a rule whose status was
no string (``[1]``) or a word this version does not know (``"Passed"``, ``"noissuesfound"``) counted as
nothing, and a file whose only rule had such a status showed "overall NoIssuesFound"; so did a file with
one passing rule beside entries that could not be read at all, or one whose own ``status`` said
NoIssuesFound above a rule that fired.
"""

from __future__ import annotations

import json

import pytest

from smdebug.cli.report.verdicts import parse


def _doc(*rules, **top):
    return json.dumps({"rules": list(rules), **top})


PASS = {"name": "AllZero", "status": "NoIssuesFound"}


@pytest.mark.parametrize("doc", [
    _doc({"name": "A", "status": [1]}),
    _doc({"name": "A", "status": "Passed"}),
    _doc({"name": "A", "status": "noissuesfound"}),
    _doc(PASS, {"name": "B", "status": None}),
    _doc(PASS, 5),
    _doc(PASS, None, "x"),
    _doc(PASS, {"name": "B", "status": "IssuesFound"}, status="NoIssuesFound"),
    _doc({"name": "A", "status": "NotEvaluated"}, status="NoIssuesFound"),
], ids=["status-not-text", "unknown-word", "wrong-case", "one-unreadable-status", "entry-not-an-object",
        "entries-not-objects", "overall-pass-above-a-firing-rule", "overall-pass-above-not-evaluated"])
def test_rules_whose_verdicts_cannot_be_read_never_make_a_pass(doc):
    results = parse(doc, "rule_results.json")
    assert results.status != "NoIssuesFound", results
    assert results.problems, results  # (and the page says what was wrong)


def test_readable_verdicts_keep_their_overall(tmp_path):
    assert parse(_doc(PASS, {"name": "B", "status": "NotApplicable"}), "f").status == "NoIssuesFound"
    assert parse(_doc(PASS, status="NoIssuesFound"), "f").problems == []
    assert parse(_doc(PASS, {"name": "B", "status": "IssuesFound"}), "f").status == "IssuesFound"
    fired = parse(_doc(PASS, {"name": "B", "status": "IssuesFound"}, status="IssuesFound"), "f")
    assert fired.status == "IssuesFound" and fired.problems == []
    # a document whose own overall is stricter than its rules (the runner's InProgress while a run trains) stays
    assert parse(_doc(PASS, status="InProgress"), "f").status == "InProgress"
