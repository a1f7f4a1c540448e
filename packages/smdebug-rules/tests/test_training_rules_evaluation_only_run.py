"""A run that only evaluates a trained model (a checkpoint validated, then predicting) gives the rules that judge
training nothing to judge: every one of them says NotApplicable with the same reason, and the run's verdict is
not "could not judge" (probe 15d F3: VanishingGradient, Overfit and Overtraining said NotEvaluated, exit 3, while
LossNotDecreasing and WeightUpdateRatio said "EVAL/PREDICT steps only"). A model trained while left in eval()
mode, whose training steps the hook saves as EVAL steps, did train: those rules still say they could not judge,
and why (test_trained_in_eval_mode)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import NOT_APPLICABLE, NOT_EVALUATED  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

TRAINING_RULES = ("VanishingGradient", "WeightUpdateRatio", "Overfit", "Overtraining", "LossNotDecreasing")


def _evaluate_a_trained_model(out_dir) -> str:
    """Trains a small classifier without a hook, then evaluates it as an evaluation job does: Hook.recommended,
    10 validation batches under model.eval() (the hook reads the EVAL mode from the model's flag), then 5
    batches of predictions after set_mode(PREDICT)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(480, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for i in range(60):  # (the checkpoint: trained before, with no hook)
        j = (i * 32) % 320
        opt.zero_grad()
        loss_fn(model(x[j:j + 32]), y[j:j + 32]).backward()
        opt.step()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    model.eval()
    with torch.no_grad():
        for i in range(10):
            loss_fn(model(x[320 + 16 * i:336 + 16 * i]), y[320 + 16 * i:336 + 16 * i])
        hook.set_mode(smd.modes.PREDICT)
        for i in range(5):
            model(x[320 + 32 * i:352 + 32 * i])
    hook.close()
    return str(out_dir)


def test_the_training_rules_say_an_evaluation_run_trained_nothing(tmp_path):
    run = _evaluate_a_trained_model(tmp_path / "run")
    result = run_rules(run)  # (the recommended rules, as `smdebug rules run RUN`)
    verdicts = {r.name: r for r in result.rules}
    for name in TRAINING_RULES:
        r = verdicts[name]
        assert r.status == NOT_APPLICABLE and "EVAL/PREDICT steps only" in (r.detail or ""), (name, r.status,
                                                                                              r.detail)
    assert "EVAL 10, PREDICT 5 steps" in verdicts["VanishingGradient"].detail, verdicts["VanishingGradient"].detail
    assert result.status != NOT_EVALUATED and result.exit_code != 3, [
        (r.name, r.status, r.detail) for r in result.rules if r.status == NOT_EVALUATED]
