"""A loop that validates under torch.no_grad() without model.eval() is said to (probe 19a F3).

Dropout stays on and BatchNorm normalises by the batch (and learns the validation data's statistics) during
such a validation, and the PyTorch hook, which reads the mode from the model's training flag, files the passes as
training steps: the run looked as if it had no validation, and every rule passed it. The hook records forward
passes without gradients in train() mode that more training follows; Overfit reports them. Not concerned: a
model with nothing mode-dependent, and no-gradient passes with no training after them (update_bn)."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.run_info import evaluated_in_train_mode  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

SAID = "without gradients while in train() mode"


def train(out_dir, eval_mode: bool, dropout: bool = True, epochs: int = 6, update_bn: bool = False,
          dry_run: bool = False, alternate: bool = False, one_sample: bool = False):
    torch.manual_seed(0)
    layers = [nn.Linear(8, 32), nn.ReLU()] + ([nn.Dropout(0.5)] if dropout else []) + [nn.Linear(32, 3)]
    model = nn.Sequential(*layers)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    if dry_run:  # (a dummy batch through the model before training, in train() mode: shapes, a summary)
        with torch.no_grad():
            model(torch.zeros(2, 8))
    loss_fn = nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(384, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    for _ in range(epochs):
        model.train()
        for i in range(0, 256, 32):
            if alternate:  # (as a GAN's generator making the critic's fakes, or pseudo-labels of the batch)
                with torch.no_grad():
                    model(x[i:i + 32])
            opt.zero_grad()
            loss = loss_fn(model(x[i:i + 32]), y[i:i + 32])
            if alternate:  # (and a second training forward in the iteration: the unlabelled batch's)
                loss = loss + loss_fn(model(x[i + 16:i + 48]), y[i + 16:i + 48])
            loss.backward()
            opt.step()
        if eval_mode:
            model.eval()
        with torch.no_grad():
            if one_sample:  # (as a GAN shows its progress: one batch of fixed noise through the generator)
                model(x[256:320])
            else:
                for i in range(256, 384, 64):
                    loss_fn(model(x[i:i + 64]), y[i:i + 64])
    if update_bn:
        # (as torch.optim.swa_utils.update_bn: forward passes in train() mode without gradients, nothing after)
        model.train()
        with torch.no_grad():
            for i in range(0, 256, 64):
                model(x[i:i + 64])
    hook.close()
    return str(out_dir)


def test_validating_in_train_mode_is_recorded_said_once_and_reported(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        run = train(tmp_path / "run", eval_mode=False)
    said = [r for r in caplog.records if SAID in r.getMessage()]
    assert len(said) == 1 and "model.eval()" in said[0].getMessage(), [r.getMessage() for r in said]
    record = evaluated_in_train_mode(create_trial(run))
    # the first validation (2 passes) came before the training of the second epoch
    assert record == {"step": 10, "forwards": 2, "modules": ["2"]}, record
    overfit = run_rules(run, ["Overfit"]).rules[0]
    assert overfit.status == "IssuesFound", (overfit.status, overfit.detail)
    reason = overfit.findings[0].reason
    assert reason.startswith("the model was evaluated in train() mode: 2 forward pass(es) without gradients"), reason
    assert "call model.eval() before validating" in reason, reason


def test_validating_in_eval_mode_records_nothing(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        run = train(tmp_path / "run", eval_mode=True)
    assert not [r for r in caplog.records if SAID in r.getMessage()]
    assert evaluated_in_train_mode(create_trial(run)) is None
    overfit = run_rules(run, ["Overfit"]).rules[0]
    assert "train() mode" not in " ".join(f.reason for f in overfit.findings) + (overfit.detail or "")


@pytest.mark.parametrize("how", ["no dropout", "update_bn at the end", "a dry run before training",
                                 "one in each training iteration", "one batch of samples now and then"])
def test_no_gradient_passes_in_train_mode_that_are_no_validation_are_not_reported(tmp_path, how):
    """A model with no Dropout or BatchNorm gives the same answer in either mode; no-gradient passes in train()
    mode after the last training step (SWA's update_bn recomputing BatchNorm's statistics), before the first
    (a dummy batch to find shapes), within each training iteration (a GAN's generator making fakes for its
    critic, pseudo-labels of an unlabelled batch), or one batch now and then (a GAN's generator showing its
    progress on fixed noise, as PyTorch's DCGAN tutorial does) are not a validation."""
    if how == "no dropout":
        run = train(tmp_path / "run", eval_mode=False, dropout=False)
    elif how == "update_bn at the end":
        run = train(tmp_path / "run", eval_mode=True, update_bn=True)
    elif how == "a dry run before training":
        run = train(tmp_path / "run", eval_mode=True, dry_run=True)
    elif how == "one in each training iteration":
        run = train(tmp_path / "run", eval_mode=True, alternate=True)
    else:
        run = train(tmp_path / "run", eval_mode=False, one_sample=True)
    assert evaluated_in_train_mode(create_trial(run)) is None
