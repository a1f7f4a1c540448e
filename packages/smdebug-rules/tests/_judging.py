"""Judging a run with one rule, for the rules' real-run tests."""

from __future__ import annotations

from smdebug.rules import run_rules


def judged(path, rule: str, **kwargs):
    """The result of ``rule`` on the run at ``path`` (``run_rules`` keyword arguments pass through); a rule that
    could not be evaluated fails the test with its error."""
    (result,) = run_rules(str(path), [rule], **kwargs).rules
    assert result.error is None, result.error
    return result
