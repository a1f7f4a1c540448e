"""Until a script calls ``hook.set_mode``, the model's training flag tells the mode of each forward call:
``model.train()`` steps are TRAIN, ``model.eval()`` steps EVAL. A loop written from the quick start (or run
unmodified by ``smdebug run``) then keeps its validation losses out of the training series, and the rules that
compare the two (Overfit) can judge it. Real tiny models, real training."""

import os
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys

TRAIN, EVAL, GLOBAL = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.GLOBAL
SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train_validate.py"


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return x, (x[:, 0] + x[:, 1] > 0).long()


def fit(hook, epochs, train_rows=32, set_mode=False, batch=16):
    """A plain loop: training batches under model.train(), a validation pass under model.eval() and
    no_grad after each epoch. Returns the validation losses as computed, in order."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 2))
    loss_fn = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = data(train_rows, 0)
    vx, vy = data(64, 1)
    if set_mode:
        hook.set_mode(smd.modes.TRAIN)
    validation = []
    for _ in range(epochs):
        model.train()
        for i in range(0, train_rows, batch):
            opt.zero_grad()
            loss_fn(model(x[i:i + batch]), y[i:i + batch]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for i in range(0, len(vx), 32):
                validation.append(loss_fn(model(vx[i:i + 32]), vy[i:i + 32]).item())
    hook.close()
    return validation


def test_validation_under_eval_is_saved_as_eval_steps_without_set_mode(tmp_path):
    out = str(tmp_path / "run")
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1))
    validation = fit(hook, epochs=3)
    trial = smd.create_trial(out)
    assert trial.modes() == {TRAIN, EVAL}
    assert trial.steps(mode=TRAIN) == list(range(6)) and trial.steps(mode=EVAL) == list(range(6))
    loss = trial.tensor("CrossEntropyLoss_output_0")
    saved = [float(loss.value(s, mode=EVAL)) for s in loss.steps(mode=EVAL)]
    assert saved == [float(torch.tensor(v, dtype=torch.float32)) for v in validation]
    # global steps interleave: two training batches, then two validation batches, each epoch
    assert [trial.mode(s) for s in trial.steps()][:4] == [TRAIN, TRAIN, EVAL, EVAL]


def test_a_script_that_calls_set_mode_decides_the_modes(tmp_path):
    out = str(tmp_path / "run")
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1))
    fit(hook, epochs=2, set_mode=True)  # set_mode(TRAIN) once: its validation stays TRAIN, as it said
    trial = smd.create_trial(out)
    assert trial.modes() == {TRAIN} and len(trial.steps(mode=TRAIN)) == 8


def test_a_schedule_written_per_mode_keeps_the_global_mode(tmp_path):
    out = str(tmp_path / "run")
    config = smd.SaveConfig(mode_save_configs={GLOBAL: smd.SaveConfigMode(save_interval=1)})
    hook = smd.Hook(out_dir=out, save_config=config)
    fit(hook, epochs=2)
    trial = smd.create_trial(out)
    assert trial.steps() == list(range(8)) and {trial.mode(s) for s in trial.steps()} == {GLOBAL}


def test_overfit_judges_a_loop_that_never_calls_set_mode(tmp_path):
    from smdebug.rules import run_rules

    out = str(tmp_path / "run")
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1))
    validation = fit(hook, epochs=60, train_rows=16, batch=16)  # 16 rows, 64-unit MLP: memorises them
    assert min(validation) < validation[-1] * 0.8  # (the run really overfits)
    result = run_rules(out, ["overfit"], follow=False)
    (rule,) = result.rules
    assert rule.status == "IssuesFound", (rule.status, rule.detail, rule.error)


def test_smdebug_run_tells_validation_from_training_in_an_unmodified_script(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--collections", "losses",
         "--save-interval", "1", "--", sys.executable, str(SCRIPT)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    trial = smd.create_trial(str(out))
    assert trial.modes() == {TRAIN, EVAL}
    assert len(trial.steps(mode=TRAIN)) == 6 and len(trial.steps(mode=EVAL)) == 3
