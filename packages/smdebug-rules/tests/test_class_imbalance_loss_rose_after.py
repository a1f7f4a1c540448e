"""The words of ClassImbalance's "trained model" test when the training loss rose after the last labels.

A run whose loss rose late (probe 13a's: gradients never zeroed, until the steps overshot) was described as "the training
loss had reached its final level: 33.5 then, 86.13 at the end", which contradicts itself (probe 13a F7). The
test's judgement is unchanged (a model that is not still learning is judged by its last labels); the words say
the loss rose after."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from smdebug.rules.generic.classification_rules import _trained_by  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

from _torch_runs import classification_data, mlp  # noqa: E402
import smdebug.pytorch as smd  # noqa: E402


def test_a_loss_that_rose_after_the_step_is_said_to_have_risen(tmp_path):
    torch.manual_seed(0)
    torch.set_num_threads(1)
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
        target = y[start:start + 64] if step < 200 else (y[start:start + 64] + 1) % 3  # (the data goes wrong)
        if step == 200:
            opt.param_groups[0]["lr"] = 0.001  # (and the loss stays up)
        opt.zero_grad()
        loss = loss_fn(model(x[start:start + 64]), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    assert np.median(losses[-30:]) > 2 * np.median(losses[100:130])  # (the case: it rose late)
    ok, words = _trained_by(create_trial(str(tmp_path)), 120)
    assert ok, words
    assert "had reached its final level" not in words
    assert "not still falling after it" in words and "(it rose after)" in words, words
