"""OscillatingLoss on a loss saved sparsely (probe 15d F6): a SaveConfig every 7 steps over a 600-step run saves
the loss 86 times, fewer than the 100 the default blocks of 10 saves need, and the run exited 3 for this rule
alone. With the default window the blocks shrink to fit the saves (here 8), so the run is judged."""

from __future__ import annotations

import pytest

from smdebug.rules.results import NO_ISSUES

torch = pytest.importorskip("torch")

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp, train_torch  # noqa: E402


def test_a_healthy_run_saving_its_loss_every_7_steps_is_judged(tmp_path):
    torch.set_num_threads(1)
    path = train_torch(tmp_path / "run", mlp(), classification_data(), steps=600, lr=0.1, batch_size=32,
                       include_collections=("losses",), save_interval=7)
    r = judged(path, "OscillatingLoss")
    assert r.status == NO_ISSUES, (r.status, r.detail)
