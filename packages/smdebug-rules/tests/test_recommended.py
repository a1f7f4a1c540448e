"""The one way to debug a run: ``Hook.recommended(out_dir)``, then ``smdebug rules run RUN`` with no --rule (or
``run_rules(path)``), which evaluates the recommended rules of the framework that wrote the run."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import xgboost as xgb

import smdebug.pytorch as smd
from smdebug import SaveConfig
from smdebug.core.testing import TAPERED_SAVED_STEPS
from smdebug.rules import rule_configs, run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE, NOT_EVALUATED

from _hooks import NumpyHook


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def rules_run(*args):
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", *args, "--json", "-q"],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr


class ImageNet(nn.Module):
    """A small CNN whose activation modules have names no regex would guess."""

    def __init__(self, broken=False):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.nonlin = nn.ReLU()
        self.flat = nn.Flatten()
        self.proj = nn.Linear(4 * 6 * 6, 16)
        self.squash = nn.Tanh()
        self.head = nn.Linear(16, 3)
        if broken:
            with torch.no_grad():
                self.conv.bias.fill_(-50.0)  # every conv unit below 0 for every image: dead ReLUs
                self.proj.weight.mul_(1e4)  # tanh inputs in the thousands: saturated
                self.proj.bias.fill_(30.0)

    def forward(self, x):
        return self.head(self.squash(self.proj(self.flat(self.nonlin(self.conv(x))))))


def train_images(out_dir, broken, steps=40, batch=64):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model, loss_fn = ImageNet(broken), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4 if broken else 0.05)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for _ in range(steps):
        base = torch.randn(batch, 3, 6, 6, generator=g)
        x = base + (5.0 if broken else 0.0)  # broken: not normalised
        # labels the model can learn (random labels would be a run that cannot learn: rules rightly fire)
        y = (base[:, 0].mean(dim=(1, 2)) > 0).long() + (base[:, 1].mean(dim=(1, 2)) > 0).long()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_smdebug_rules_run_with_no_rule_evaluates_the_pytorch_set(tmp_path):
    healthy = train_images(tmp_path / "healthy", broken=False)
    code, result, err = rules_run(healthy)
    assert [r["name"] for r in result["rules"]] == list(rule_configs.RECOMMENDED["pytorch"]), err
    statuses = {r["name"]: r["status"] for r in result["rules"]}
    # a short run without evaluation: the curve rules may have too little to judge and say so; Overfit and
    # Overtraining do not apply to a run that never validated
    assert set(statuses.values()) <= {NO_ISSUES, NOT_EVALUATED, NOT_APPLICABLE}, statuses
    assert statuses["Overfit"] == statuses["Overtraining"] == NOT_APPLICABLE, statuses
    assert all(statuses[r] == NO_ISSUES for r in ("VanishingGradient", "ExplodingTensor", "WeightUpdateRatio",
                                                  "DeadRelu", "SaturatedActivation", "CheckInputImages")), statuses
    assert code == (3 if NOT_EVALUATED in statuses.values() else 0)

    broken = train_images(tmp_path / "broken", broken=True)
    code, result, err = rules_run(broken)
    status = {r["name"]: r for r in result["rules"]}
    assert code == 1
    # found by the modules' types, whatever they are called, and the model's input by the inputs collection
    assert status["DeadRelu"]["status"] == ISSUES and "nonlin_output_0" in status["DeadRelu"]["findings"][0]["reason"]
    assert status["SaturatedActivation"]["status"] == ISSUES
    assert "squash_input_0" in status["SaturatedActivation"]["findings"][0]["reason"]
    assert "tanh" in status["SaturatedActivation"]["findings"][0]["reason"]
    assert status["CheckInputImages"]["status"] == ISSUES
    assert "ImageNet_input_0" in status["CheckInputImages"]["findings"][0]["reason"]

    # the Python API takes the same set
    assert [r.name for r in run_rules(broken).rules] == list(rule_configs.RECOMMENDED["pytorch"])


def test_a_run_without_the_framework_record_is_recognised_by_its_collections(tmp_path):
    run = train_images(tmp_path / "run", broken=False, steps=3)
    folder = os.path.join(run, "collections", "000000000")
    (name,) = os.listdir(folder)
    path = os.path.join(folder, name)
    doc = json.load(open(path))
    del doc["_meta"]["framework"], doc["_meta"]["activation_layers"]  # as the original writes it
    with open(path, "w") as f:
        json.dump(doc, f)
    code, result, err = rules_run(run)
    assert [r["name"] for r in result["rules"]] == list(rule_configs.RECOMMENDED["pytorch"]), err


def test_a_run_of_an_unknown_framework_asks_for_rules(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["losses"])
    hook.begin_step()
    hook.record("loss", np.float32(1.0))
    hook.end_step()
    hook.close()
    code, result, err = rules_run(str(tmp_path / "run"))
    assert code == 2 and result is None
    assert "was written by 'rules-test'" in err and "--rule NAME" in err


@pytest.mark.parametrize("rounds, saved", sorted(TAPERED_SAVED_STEPS.items()))
def test_xgboost_recommended_hook_and_rules(tmp_path, rounds, saved):
    import smdebug.xgboost as smd_xgb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(float)
    train, valid = xgb.DMatrix(X[:150], label=y[:150]), xgb.DMatrix(X[150:], label=y[150:])
    out = str(tmp_path / "run")
    hook = smd_xgb.Hook.recommended(out, validation_data=valid)
    xgb.train({"objective": "binary:logistic", "max_depth": 2, "eta": 0.05, "nthread": 1}, train,
              num_boost_round=rounds, evals=[(train, "train")], verbose_eval=False, callbacks=[hook])
    trial = smd_xgb.create_trial(out)
    # the metrics (a curve) at every round, the other collections on the tapered schedule
    assert trial.steps() == list(range(rounds))
    assert trial.tensor("train-logloss").steps() == list(range(rounds))
    assert trial.tensor("predictions").steps() == sorted(set(saved) | {rounds - 1})  # (and once after the last round)
    code, result, err = rules_run(out)
    assert [r["name"] for r in result["rules"]] == list(rule_configs.RECOMMENDED["xgboost"]), err
    if rounds == 30:
        # a slow, sound learner: nothing fires; the run stays open (SlowConvergence waits for its end), so the
        # verdict is not final and the exit code says so (4, InProgress)
        assert code == 4 and result["status"] == "InProgress", result
        assert not [r["name"] for r in result["rules"] if r["status"] == ISSUES], result


def train_tabular(out_dir, steps=40, eval_every=None):
    """A ReLU MLP on tabular input; with ``eval_every``, an evaluation pass in EVAL mode every so many steps."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model, loss_fn = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2)), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for step in range(steps):
        hook.set_mode(smd.modes.TRAIN)
        x = torch.randn(64, 5, generator=g)
        opt.zero_grad()
        loss_fn(model(x), (x[:, 0] > 0).long()).backward()
        opt.step()
        if eval_every and step % eval_every == eval_every - 1:
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                x = torch.randn(64, 5, generator=g)
                loss_fn(model(x), (x[:, 0] > 0).long())
    hook.close()
    return str(out_dir)


def test_rules_that_do_not_concern_the_run_say_not_applicable(tmp_path):
    """No tanh/sigmoid layer, no image input, no validation: NotApplicable, and the run's verdict is the other
    rules' (NoIssuesFound, exit 0); on a finished run that validated too seldom they say so, NotApplicable too."""
    code, result, err = rules_run(train_tabular(tmp_path / "train-only"))
    statuses = {r["name"]: r["status"] for r in result["rules"]}
    for name in ("SaturatedActivation", "CheckInputImages", "Overfit", "Overtraining"):
        assert statuses[name] == NOT_APPLICABLE, statuses
    details = {r["name"]: r["detail"] for r in result["rules"]}
    assert "no such layers" in details["SaturatedActivation"] and "no image" in details["CheckInputImages"]
    assert "no validation" in details["Overfit"]
    assert statuses["OscillatingLoss"] == NOT_APPLICABLE, statuses  # (40 steps, each saved: too short for it)
    if NOT_EVALUATED not in statuses.values():
        # (40 steps of a model still learning: SlowConvergence rightly fires)
        assert code in (0, 1) and result["status"] in (NO_ISSUES, ISSUES), (statuses, err)

    # the run validated (twice) and ended: too few evaluations to judge, and none can come -- NotApplicable,
    # saying so, not "could not judge" (probe 14a F1)
    code, result, err = rules_run(train_tabular(tmp_path / "validated", eval_every=20))
    statuses = {r["name"]: r["status"] for r in result["rules"]}
    assert statuses["Overfit"] == statuses["Overtraining"] == NOT_APPLICABLE, statuses
    details = {r["name"]: r["detail"] for r in result["rules"]}
    assert "validated 2 times" in details["Overfit"], details["Overfit"]
    if NOT_EVALUATED not in statuses.values():
        assert code in (0, 1) and result["status"] in (NO_ISSUES, ISSUES)  # (40 steps: SlowConvergence may fire)

    # only not-applicable rules: nothing was judged
    code, result, err = rules_run(tmp_path / "train-only", "--rule", "SaturatedActivation", "--rule", "Overfit")
    assert {r["status"] for r in result["rules"]} == {NOT_APPLICABLE}
    assert code == 3 and result["status"] == NOT_EVALUATED
