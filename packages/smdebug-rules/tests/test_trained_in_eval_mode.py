"""A loop that trains with the model left in eval() mode is said to, not only "could not judge" (probe 13a F4).

Until the script calls set_mode, the PyTorch hook reads the mode from the model's training flag: a loop whose
validation helper called model.eval() and never model.train() again saved every training step as an EVAL step,
and VanishingGradient, Overfit and Overtraining said NotEvaluated with nothing saying why. Overfit, the rule of
training against validation, now reports it -- also where the first epoch trained in train() mode, and every rule
had passed the run (probe 19a F1)."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.run_info import trained_in_eval  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


def train(out_dir, back_to_train: bool, first_epoch_in_train: bool = False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3))
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    for epoch in range(4):
        model.eval()  # the validation helper, before each epoch; the buggy loop never switches back
        with torch.no_grad():
            loss_fn(model(x[192:]), y[192:])
        if back_to_train or (first_epoch_in_train and epoch == 0):
            model.train()
        for i in range(0, 192, 32):
            opt.zero_grad()
            loss_fn(model(x[i:i + 32]), y[i:i + 32]).backward()
            opt.step()
    hook.close()
    return str(out_dir)


def test_training_in_eval_mode_is_recorded_said_once_and_named_in_the_verdicts(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        run = train(tmp_path / "run", back_to_train=False)
    said = [r for r in caplog.records if "eval() mode" in r.getMessage()]
    assert len(said) == 1 and "model.train()" in said[0].getMessage()
    assert trained_in_eval(create_trial(run)) is not None
    verdicts = {r.name: r for r in run_rules(run, ["VanishingGradient", "Overfit"]).rules}
    assert verdicts["VanishingGradient"].status == "NotEvaluated"
    assert "the model trained in eval() mode" in verdicts["VanishingGradient"].detail, verdicts["VanishingGradient"]
    # Overfit, the rule of training against validation, reports it: such runs passed every rule when their first
    # epoch had trained in train() mode (probe 19a F1)
    overfit = verdicts["Overfit"]
    assert overfit.status == "IssuesFound", (overfit.status, overfit.detail)
    reason = overfit.findings[0].reason
    assert reason.startswith("the model trained in eval() mode: an optimizer stepped it at step "), reason
    assert "call model.train() after each validation pass" in reason, reason


def test_a_loop_that_validates_in_eval_mode_and_trains_in_train_mode_records_nothing(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        run = train(tmp_path / "run", back_to_train=True)
    assert not [r for r in caplog.records if "eval() mode" in r.getMessage()]
    assert trained_in_eval(create_trial(run)) is None
    assert run_rules(run, ["VanishingGradient"]).rules[0].status == "NoIssuesFound"
    overfit = run_rules(run, ["Overfit"]).rules[0]
    assert not any("eval() mode" in f.reason for f in overfit.findings) and "eval() mode" not in (overfit.detail or "")


def test_a_first_epoch_in_train_mode_then_eval_mode_for_good_is_reported(tmp_path):
    run = train(tmp_path / "run", back_to_train=False, first_epoch_in_train=True)
    overfit = run_rules(run, ["Overfit"]).rules[0]
    assert overfit.status == "IssuesFound", (overfit.status, overfit.detail)
    assert overfit.findings[0].reason.startswith("the model trained in eval() mode"), overfit.findings[0].reason
