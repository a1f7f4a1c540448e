"""Overfit's NotEvaluated on a run with fewer validation passes than it needs says how many it found, whatever
step the run ends on (fit, then one evaluate and a predict: the predict steps after the pass replaced "needs 6
evaluations" with a reason that read as if no pass had been seen; probe 10 W1). Since probe 14a F1 an ended run with
too few evaluations is NotApplicable, saying what was seen."""

from __future__ import annotations

from smdebug.core.modes import ModeKeys

from _judging import judged
from test_progress_rules import write

TRAIN, EVAL, PREDICT = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT


def test_one_validation_pass_then_predict_says_one_was_found(tmp_path):
    steps = [(TRAIN, {"loss": 1.0 / (1 + i)}) for i in range(20)]
    steps += [(EVAL, {"loss": 0.2}) for _ in range(3)]  # one pass of 3 batches
    steps += [(PREDICT, {"other": 0.0}) for _ in range(3)]
    write(tmp_path, steps)
    r = judged(tmp_path, "Overfit")
    # (the run has ended: NotApplicable, saying what it saw -- no "so far" -- since probe 14a F1)
    assert r.status == "NotApplicable", (r.status, r.detail)
    assert "evaluated only after training ended (1 pass" in r.detail and "so far" not in r.detail, r.detail
