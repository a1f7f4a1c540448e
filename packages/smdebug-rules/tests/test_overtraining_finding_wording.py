"""Overtraining's finding says where the best validation loss was in training (the TRAIN step early stopping
would have kept) and where the validation loss is now, with its rise (probe 14a x/z: the finding gave the best
median at an EVAL step only, and no final value)."""

from __future__ import annotations

import re

import pytest

from _judging import judged  # noqa: E402
from test_overfit_rise_over_validation_rows import validated_run  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_the_finding_gives_the_best_point_as_a_training_step_and_the_final_value_with_its_rise(tmp_path):
    # validated every 20 steps; the validation loss bottoms out early (two mislabelled rows then drive it up)
    r = judged(validated_run(tmp_path / "run", n_train=200, n_val=100, flip_val=2, lr=0.003), "Overtraining")
    assert r.status == "IssuesFound", (r.status, r.detail)
    reason = r.findings[0].reason
    found = re.search(r"best median ([0-9.]+) at EVAL step (\d+), after TRAIN step (\d+); now ([0-9.]+) "
                      r"\(\+([0-9.]+)%\)", reason)
    assert found, reason
    best, eval_step, train_step, now, rise = found.groups()
    assert int(train_step) == 20 * (int(eval_step) + 1) - 1, reason  # (evaluated after every 20th TRAIN step)
    assert float(now) > float(best) and abs(float(rise) - 100 * (float(now) / float(best) - 1)) < 0.1, reason
