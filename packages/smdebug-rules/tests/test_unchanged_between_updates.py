"""UnchangedTensor on a model called several times per optimizer step (a hook step is a forward call): a triplet
net embeds anchor, positive and negative with three calls, so its weights are bit-identical over three saved
steps between two updates while training is healthy (probe 10: a WGAN-GP critic called on real, fake and
interpolated batches fired "unchanged over TRAIN steps 0, 1, 2"). Weights that never move still fire."""

from __future__ import annotations

import copy

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.save_config import SaveConfig  # noqa: E402

from _judging import judged  # noqa: E402
from _torch_runs import classification_data  # noqa: E402


def triplet_run(path, optimise_a_copy: bool) -> str:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = classification_data(n=240, classes=3)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
    trained = copy.deepcopy(model) if optimise_a_copy else model  # the bug: an optimizer over another model
    opt = torch.optim.SGD(trained.parameters(), lr=0.05)
    hook = smd.Hook.recommended(str(path), save_config=SaveConfig(save_interval=1))
    hook.register_module(model)
    triplet = nn.TripletMarginLoss(margin=1.0)
    for step in range(40):
        i = torch.randint(0, len(x), (16,))
        same = torch.stack([torch.nonzero(y == y[k]).flatten()[step % 5] for k in i])
        other = torch.stack([torch.nonzero(y != y[k]).flatten()[step % 7] for k in i])
        loss = triplet(model(x[i]), model(x[same]), model(x[other]))  # three hook steps per update
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    return str(path)


def test_weights_unchanged_between_updates_are_no_fault(tmp_path):
    r = judged(triplet_run(tmp_path / "run", optimise_a_copy=False), "UnchangedTensor")
    assert r.status == NO_ISSUES, (r.status, [f.reason for f in r.findings], r.detail)


def test_weights_that_never_move_still_fire(tmp_path):
    r = judged(triplet_run(tmp_path / "run", optimise_a_copy=True), "UnchangedTensor")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "unchanged over TRAIN steps 0, 1, 2" in r.findings[0].reason, r.findings[0].reason
