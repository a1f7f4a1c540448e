"""The words of ClassImbalance's "trained model" test when the training loss ended above where it began.

A run whose loss rose over the run and was falling again after its last labels (a resumed run that diverged)
was described as "... from 0.01216: 6077...120% of its fall to come": a share of a fall that never happened,
a 300-digit percentage (probe 15d F4). The judgement is unchanged (labels saved while the loss still fell do
not stand for the trained model); the words say the loss rose over the run."""

from __future__ import annotations

import re

import numpy as np
import pytest

from smdebug.rules.results import NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _torch_runs import classification_data, mlp  # noqa: E402
from _judging import judged  # noqa: E402
import smdebug.pytorch as smd  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_a_loss_that_rose_over_the_run_is_said_to_have_risen(tmp_path):
    x, y = classification_data(n=512)
    model = mlp(hidden=32)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for step in range(300):
        start = (step * 64) % 512
        # (the data goes wrong at step 60: every target moves to the next class, the loss shoots up, and a small
        # learning rate brings it down only slowly: it ends above where it began, still falling)
        target = y[start:start + 64] if step < 60 else (y[start:start + 64] + 1) % 3
        if step == 60:
            opt.param_groups[0]["lr"] = 0.004
        opt.zero_grad()
        loss = loss_fn(model(x[start:start + 64]), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    assert np.median(losses[-30:]) > np.median(losses[:30])  # (the case: the loss rose over the run)
    r = judged(tmp_path, "ClassImbalance")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings])
    assert r.detail and "over the run the loss rose" in r.detail, r.detail
    assert "of its fall to come" not in r.detail and not re.search(r"\d{12}", r.detail), r.detail
