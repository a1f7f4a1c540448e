"""Divergence on a run that trains from scratch again partway: cross-validation folds (or seeds) trained in turn
under one hook, the model re-initialised for each. The training loss goes back to where it started at each fold
and falls again as it did the first time: no progress given back (probe 17a F4 fired at the second fold's start:
"gave back 84% of the progress it had made"). A loss that jumps back and stays there still fires."""

from __future__ import annotations

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402

from _torch_runs import classification_data, mlp  # noqa: E402


def _folds(out_dir, folds: int, shuffle_labels_after_first: bool = False) -> str:
    """``folds`` folds of 6 epochs on 4/5 of the data each, the same model re-initialised at each fold (or, with
    ``shuffle_labels_after_first``, kept, its labels shuffled from the second fold on: the loss goes back up to
    chance, and stays there)."""
    torch.manual_seed(0)
    x, y = classification_data(600)
    hook = smd.Hook.recommended(str(out_dir))
    loss_fn = nn.CrossEntropyLoss()
    model = mlp()
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    index = torch.arange(len(x))
    for k in range(folds):
        if shuffle_labels_after_first and k == 1:
            y = y[torch.randperm(len(y))]
        elif not shuffle_labels_after_first:
            for module in model.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        train, held_out = index[index % folds != k], index[k::folds]
        for _ in range(6):
            hook.set_mode(smd.modes.TRAIN)
            order = train[torch.randperm(len(train))]
            for i in range(0, len(order), 32):
                batch = order[i:i + 32]
                opt.zero_grad()
                loss_fn(model(x[batch]), y[batch]).backward()
                opt.step()
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                loss_fn(model(x[held_out]), y[held_out])
    hook.close()
    return str(out_dir)


def test_folds_trained_in_turn_under_one_hook_are_no_divergence(tmp_path):
    (result,) = run_rules(_folds(tmp_path / "folds", 5), ["Divergence"]).rules
    assert result.status == NO_ISSUES, (result.status, result.detail, result.findings)


def test_a_loss_that_goes_back_to_its_start_and_stays_there_still_fires(tmp_path):
    (result,) = run_rules(_folds(tmp_path / "shuffled", 3, shuffle_labels_after_first=True), ["Divergence"]).rules
    assert result.status == ISSUES, (result.status, result.detail)
    assert "gave back" in result.findings[0].reason, result.findings[0].reason
