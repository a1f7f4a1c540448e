"""LabelLeak on a network's inputs judges the rows saved so far each time they double, and at the run's last step.
Under Hook.recommended's tapered schedule a run of small batches (8 rows, five classes) has 120 rows at its last
save: too few at the last doubling (64), enough by the end; its last step saves no inputs. The judgement there
read nothing at that step, so the verdict was NotEvaluated ("two classes need 20 rows each") on a healthy run
(probe 18a F5)."""

from __future__ import annotations

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import NO_ISSUES

torch = pytest.importorskip("torch")
pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from _torch_runs import classification_data, mlp, train_recommended  # noqa: E402


def test_rows_enough_only_by_the_end_are_judged_at_the_last_step(tmp_path):
    x, y = classification_data(1600, classes=5)
    train_recommended(tmp_path, mlp(classes=5), x, y, nn.CrossEntropyLoss(), steps=200, lr=0.1, batch_size=8)
    (result,) = run_rules(str(tmp_path), ["LabelLeak"]).rules
    assert result.status == NO_ISSUES, (result.status, result.detail)
    assert result.steps_evaluated >= 1
