"""A collection name with a typo gets the close names it probably meant, wherever a user names one."""

from __future__ import annotations

import logging

import pytest

from _cli_runs import mlp_run  # noqa: F401 - a fixture
from _support import NumpyHook, train_logistic_regression
from smdebug.core.names import did_you_mean
from smdebug.core.save_config import SaveConfig
from smdebug.trials import create_trial


@pytest.fixture(autouse=True)
def fast_end_refresh(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def test_did_you_mean():
    names = ["weights", "biases", "gradients", "losses", "default", "all"]
    assert did_you_mean("gradient", names) == " (did you mean 'gradients'?)"
    assert did_you_mean("weigths", names) == " (did you mean 'weights'?)"
    assert did_you_mean("Weights", names) == " (did you mean 'weights'?)"
    assert did_you_mean("relu_outptu", ["relu_output", "relu_input"]) == " (did you mean 'relu_output' or 'relu_input'?)"
    assert did_you_mean("optimizer_variables", names) == ""
    assert did_you_mean("weights", names) == ""  # a name is not its own suggestion


def test_hook_suggests_and_saves_the_rest(tmp_path, smdebug_log):
    out = tmp_path / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1),
                     include_collections=["gradient", "weigths", "biases"])
    custom = hook.get_collection("custom_stats")  # created, but given neither regex nor names
    hook.include_collections.append(custom.name)
    train_logistic_regression(hook, steps=3)
    hook.close()
    errors = smdebug_log.messages(logging.ERROR)
    assert len(errors) == 3, errors  # each bad name once, though collections are prepared at every change
    assert any("'gradient'" in e and "did you mean 'gradients'?" in e and "skipped" in e for e in errors), errors
    assert any("'weigths'" in e and "did you mean 'weights'?" in e for e in errors), errors
    assert any("'custom_stats' has no include_regex" in e for e in errors), errors
    assert not any(".;" in e for e in errors)
    trial = create_trial(str(out))
    assert trial.tensor_names(collection="biases") == ["biases/b"]  # the good name is saved


def test_trial_tensor_names_of_a_misspelt_collection(tmp_path, smdebug_log):
    out = tmp_path / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    train_logistic_regression(hook, steps=2)
    hook.close()
    trial = create_trial(str(out))
    assert trial.tensor_names(collection="weight") == []
    assert any("no collection 'weight' (did you mean 'weights'?)" in w for w in smdebug_log.messages(logging.WARNING))


def test_cli_collection_options_suggest(mlp_run, smdebug_cli):
    path, _ = mlp_run
    for command in (["ls", str(path), "--collection", "gradient"],
                    ["plot", str(path), "--collection", "gradient", "-o", str(path.parent / "x.png")]):
        out = smdebug_cli(*command)
        assert out.returncode == 1, out
        assert "no collection 'gradient' in the run (did you mean 'gradients'?)" in out.stderr, out.stderr
