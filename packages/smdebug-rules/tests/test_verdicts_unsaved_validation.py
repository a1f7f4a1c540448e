"""Overfit and Overtraining say what a run shows of its validation when they judge nothing: "no validation"
only when the run never left TRAIN mode. A run that validated (hook.set_mode(modes.EVAL)) but saved nothing
there, or saved other tensors but no loss there, is NotEvaluated, and the verdict says which.

Real tiny PyTorch runs, read by ``run_rules``."""

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import NOT_APPLICABLE, NOT_EVALUATED

torch = pytest.importorskip("torch")
nn = torch.nn
smd = pytest.importorskip("smdebug.pytorch")

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _run(path, *, validate, collections, eval_loss=False, steps=30):
    """SGD on a tiny classifier; with ``validate``, an EVAL-mode pass every 5 steps that computes accuracy
    (and, with ``eval_loss``, the registered loss)."""
    torch.manual_seed(0)
    x = torch.randn(64, 5)
    y = (x[:, 0] > 0).long()
    model, loss_fn = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2)), nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=list(collections))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        hook.set_mode(smd.modes.TRAIN)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        if validate and step % 5 == 4:
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                out = model(x)
                if eval_loss:
                    loss_fn(out, y)
    hook.close()
    return path


@pytest.mark.parametrize("rule", ["Overfit", "Overtraining"])
def test_validation_that_saved_nothing_is_said_as_such(tmp_path, rule):
    # EVAL steps where only the loss would be saved, and no loss is computed there: nothing saved in EVAL
    path = _run(tmp_path / "unsaved", validate=True, collections=["losses"])
    r = run_rules(str(path), [(rule, {})]).rules[0]
    assert r.status == NOT_EVALUATED, (r.status, r.detail)
    assert "saved nothing in EVAL mode" in r.detail and "5 of the global steps" in r.detail, r.detail
    assert "no validation" not in r.detail, r.detail


@pytest.mark.parametrize("rule", ["Overfit", "Overtraining"])
def test_eval_steps_without_a_loss_are_said_as_such(tmp_path, rule):
    # EVAL steps that saved the model's weights and outputs, but the validation computed no loss
    path = _run(tmp_path / "no_loss", validate=True, collections=["losses", "weights"])
    r = run_rules(str(path), [(rule, {})]).rules[0]
    assert r.status == NOT_EVALUATED, (r.status, r.detail)
    assert "6 saved EVAL-mode steps, but none of its losses (CrossEntropyLoss_output_0)" in r.detail, r.detail


@pytest.mark.parametrize("rule", ["Overfit", "Overtraining"])
def test_a_run_that_never_validated_has_no_validation(tmp_path, rule):
    path = _run(tmp_path / "train_only", validate=False, collections=["losses", "weights"])
    r = run_rules(str(path), [(rule, {})]).rules[0]
    assert r.status == NOT_APPLICABLE and "no validation" in r.detail, (r.status, r.detail)
