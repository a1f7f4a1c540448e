"""The words of ClassImbalance's "trained model" test when the training loss rose.

A run whose loss rose late (probe 13a's: gradients never zeroed, until the steps overshot) was described as "the
training loss had reached its final level: 33.5 then, 86.13 at the end", which contradicts itself (probe 13a F7);
a run whose loss rose over the run and was falling again after its last labels (a resumed run that diverged) was
described as "... from 0.01216: 6077...120% of its fall to come", a share of a fall that never happened, a
300-digit percentage (probe 15d F4). The test's judgements are unchanged; the words say the loss rose."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from smdebug.rules.generic.classification_rules import _trained_by  # noqa: E402
from smdebug.rules.results import NO_ISSUES  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp  # noqa: E402
import smdebug.pytorch as smd  # noqa: E402


def _train(out, wrong_from: int, lr_after: float):
    """300 steps of an MLP under Hook.recommended whose data goes wrong at ``wrong_from`` (every target moves to
    the next class) while the learning rate drops to ``lr_after``; the training losses."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = classification_data(n=512)
    model = mlp(hidden=32)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(out))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for step in range(300):
        start = (step * 64) % 512
        target = y[start:start + 64] if step < wrong_from else (y[start:start + 64] + 1) % 3
        if step == wrong_from:
            opt.param_groups[0]["lr"] = lr_after
        opt.zero_grad()
        loss = loss_fn(model(x[start:start + 64]), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    return losses


def test_a_loss_that_rose_after_the_step_is_said_to_have_risen(tmp_path):
    losses = _train(tmp_path, wrong_from=200, lr_after=0.001)  # (and the loss stays up)
    assert np.median(losses[-30:]) > 2 * np.median(losses[100:130])  # (the case: it rose late)
    ok, words = _trained_by(create_trial(str(tmp_path)), 120)
    assert ok, words
    assert "had reached its final level" not in words
    assert "not still falling after it" in words and "(it rose after)" in words, words


def test_a_loss_that_rose_over_the_run_is_said_to_have_risen(tmp_path):
    # (wrong from step 60: the loss shoots up, and a small learning rate brings it down only slowly: it ends above
    # where it began, still falling)
    losses = _train(tmp_path, wrong_from=60, lr_after=0.004)
    assert np.median(losses[-30:]) > np.median(losses[:30])  # (the case: the loss rose over the run)
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert r.detail and "over the run the loss rose" in r.detail, r.detail
    assert "of its fall to come" not in r.detail and not re.search(r"\d{12}", r.detail), r.detail
