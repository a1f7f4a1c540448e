"""OscillatingLoss on a run too short to judge says how many saves it needs and how many the run has, in numbers:
a 60-step run read "needs at least 2 * window * (min_swings + 1) saves of a loss" (probe 14a x F6, z F7), and a
finished run is not said to have them "so far". A finished run that saved its loss at every step it trained is too
short for the rule: NotApplicable (no more saves can come, and saving more often would not help), so a healthy
40-step run does not exit 3; one that saved it every 2 steps could have been judged: NotEvaluated. (The default
blocks shrink to 5 saves for a loss saved fewer than 100 times: 50 saves are the fewest judged.)"""

from __future__ import annotations

import pytest

from smdebug.rules.results import NOT_APPLICABLE, NOT_EVALUATED

torch = pytest.importorskip("torch")

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp, train_torch  # noqa: E402


def test_a_short_finished_run_is_told_the_saves_needed_and_had(tmp_path):
    torch.set_num_threads(1)
    path = train_torch(tmp_path / "run", mlp(), classification_data(), steps=40, lr=0.1, batch_size=32,
                       include_collections=("losses",))
    r = judged(path, "OscillatingLoss")
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert "too short for this rule: its loss was saved at every step it trained" in r.detail, r.detail
    assert "needs at least 50 saves of a loss (window 5, min_swings 4); the run has 40" in r.detail, r.detail
    assert "so far" not in r.detail and "2 * window" not in r.detail, r.detail


def test_a_run_that_saved_its_loss_sparsely_could_have_been_judged(tmp_path):
    torch.set_num_threads(1)
    path = train_torch(tmp_path / "run", mlp(), classification_data(), steps=80, lr=0.1, batch_size=32,
                       include_collections=("losses",), save_interval=2)
    r = judged(path, "OscillatingLoss")
    assert r.status == NOT_EVALUATED, (r.status, r.detail)
    assert "needs at least 50 saves of a loss (window 5, min_swings 4); the run has 40" in r.detail, r.detail


def test_a_loss_logged_sparsely_beside_one_saved_every_step_does_not_make_a_short_run_judgeable(tmp_path):
    """The Hugging Face Trainer's pattern: the model's loss saved at every step, the Trainer's logged ``loss`` every
    ``logging_steps`` (in the losses collection too), and a ``test_loss`` once after training. Saved more often, the logged loss could
    never have more saves than the model's own, which is too short already: NotApplicable, not NotEvaluated (exit 3
    on a healthy 45-step fine-tune: probe 19a F5)."""
    import smdebug.pytorch as smd

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = classification_data(256)
    model, loss_fn = mlp(), torch.nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    logged = []
    for step in range(45):
        hook.set_mode(smd.modes.TRAIN)
        start = (step * 32) % 256
        loss = loss_fn(model(x[start:start + 32]), y[start:start + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        logged.append(loss.item())
        if (step + 1) % 5 == 0:
            hook.record_tensor_value("loss", torch.tensor(sum(logged) / len(logged)))
            logged = []
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        hook.record_tensor_value("test_loss", loss_fn(model(x), y))
    hook.close()
    r = judged(str(tmp_path / "run"), "OscillatingLoss")
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert "too short for this rule" in r.detail, r.detail
