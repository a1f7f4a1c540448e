"""Overfit on healthy full-batch runs with small validation sets (probe 16a F3). A model near-perfect on 36
validation rows has a best validation loss near 0 (1.1 at the start, 0.0131 at its best), and one row whose margin
shrinks makes it rise by 10% of itself (-> 0.0146) steadily, evaluation after evaluation: with no predictions saved
near the best (a tapered schedule), the per-row test could not run and the rise was reported as overfitting.
Without rows, a rise must be at least 1% of the validation loss's fall. And a finished run whose validation loss
came back to its best after such a bump did not end overfitted. Real overfitting still fires."""

from __future__ import annotations

import numpy as np

from smdebug.rules.generic import Overfit
from smdebug.rules.rule_invoker import invoke_rule

from test_progress_rules import evaluations, run

N = 120
TRAINING = list(np.geomspace(1.1, 0.0008, N))  # full batch: the training loss falls smoothly to ~0


def _validation(best, end, back_to=None):
    """Falls from 1.1 to ``best`` at evaluation 40, then rises steadily to ``end`` (and, with ``back_to``, comes
    back down to it over the last 20 evaluations)."""
    fall = list(np.geomspace(1.1, best, 40))
    rise_to = N - 40 - (20 if back_to is not None else 0)
    rise = list(np.linspace(best, end, rise_to + 1)[1:])
    back = list(np.linspace(end, back_to, 21)[1:]) if back_to is not None else []
    return fall + rise + back


def test_a_rise_of_a_near_zero_best_too_small_to_matter_is_not_reported_without_rows(tmp_path):
    assert invoke_rule(Overfit(run(tmp_path / "a", evaluations(TRAINING, _validation(0.0131, 0.0146))))) == []
    # the same shape with a rise that is a visible part of the fall (4% of it) is overfitting
    fired = invoke_rule(Overfit(run(tmp_path / "b", evaluations(TRAINING, _validation(0.0131, 0.057)))))
    assert fired, fired


def test_a_bump_that_came_back_to_its_best_by_the_end_is_no_overfitting(tmp_path):
    # 0.119 -> 0.132 (+11%, 2.3% of the fall) and back to 0.117 at the end of the run
    val = _validation(0.119, 0.132, back_to=0.117)
    assert invoke_rule(Overfit(run(tmp_path / "a", evaluations(TRAINING, val)))) == []
    # ending above its best, it fired
    val = _validation(0.119, 0.132, back_to=0.125)
    assert invoke_rule(Overfit(run(tmp_path / "b", evaluations(TRAINING, val)))) != []
