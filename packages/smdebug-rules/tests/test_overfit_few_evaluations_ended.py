"""Overfit and Overtraining on a finished run that validated a few times (probe 14a F1/F6, probe 14b F6).

``fit(epochs=5, validation_data=...)`` validates 5 times where Overfit's medians need 6, and a loop that evaluates
once after training (a test pass) gives one evaluation: both rules said NotEvaluated "... found so far" and the
healthy run exited 3, while the same run with no evaluation at all exited 0. On a run that has ended no more
evaluations can come: Overfit judges 4 or 5 evaluations with shorter medians, and fewer, or an evaluation only after
training, is NotApplicable, saying what was seen; never "so far"."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.results import NO_ISSUES, NOT_APPLICABLE

from _tensorflow import tensorflow_one_thread  # noqa: E402
from _torch_runs import classification_data, mlp  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

RULES = ["Overfit", "Overtraining", "LossNotDecreasing"]


def loop_run(path, eval_after: list) -> str:
    """A torch loop of 60 steps under Hook.recommended, evaluated (EVAL mode, the whole held-out set) after the
    training steps listed in ``eval_after``."""
    x, y = classification_data(n=192, seed=0)
    model = mlp(seed=0)
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(60):
        hook.set_mode(smd.modes.TRAIN)
        start = (step * 32) % 128
        opt.zero_grad()
        loss_fn(model(x[start:start + 32]), y[start:start + 32]).backward()
        opt.step()
        if step in eval_after:
            hook.set_mode(smd.modes.EVAL)
            with torch.no_grad():
                loss_fn(model(x[128:]), y[128:])
    hook.close()
    return str(path)


def verdicts(path):
    result = run_rules(path, RULES)
    return result, {r.name: r for r in result.rules}


def test_one_test_evaluation_after_training_is_not_applicable_and_the_run_exits_0(tmp_path):
    result, by_rule = verdicts(loop_run(tmp_path / "run", eval_after=[59]))
    for name in ("Overfit", "Overtraining"):
        r = by_rule[name]
        assert r.status == NOT_APPLICABLE, (name, r.status, r.detail)
        assert "evaluated only after training ended" in r.detail and "so far" not in r.detail, r.detail
        assert "hook.set_mode(modes.EVAL)" in r.detail, r.detail
    assert result.exit_code == 0, [(r.name, r.status, r.detail) for r in result.rules]


def test_two_validations_during_training_say_how_many_and_what_is_needed(tmp_path):
    result, by_rule = verdicts(loop_run(tmp_path / "run", eval_after=[19, 39]))
    r = by_rule["Overfit"]
    assert r.status == NOT_APPLICABLE and "validated 2 times" in r.detail, (r.status, r.detail)
    assert "needs at least 4 evaluations" in r.detail and "so far" not in r.detail, r.detail
    r = by_rule["Overtraining"]
    assert r.status == NOT_APPLICABLE and "validated 2 times" in r.detail, (r.status, r.detail)
    assert result.exit_code == 0, [(r.name, r.status, r.detail) for r in result.rules]


def test_keras_fit_with_five_epochs_of_validation_is_judged(tmp_path):
    """The tutorial shape: fit(epochs=5, validation_data=...) -- 5 evaluations, judged with medians of 2."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    g = np.random.default_rng(0)
    x = g.standard_normal((400, 8)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int64")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    hook = smd_tf.KerasHook.recommended(str(tmp_path / "run"))
    model.fit(x[:300], y[:300], validation_data=(x[300:], y[300:]), epochs=5, batch_size=32, verbose=0,
              callbacks=[hook])
    hook.close()
    result, by_rule = verdicts(str(tmp_path / "run"))
    for name in ("Overfit", "Overtraining"):
        assert by_rule[name].status == NO_ISSUES, (name, by_rule[name].status, by_rule[name].detail)
    assert result.exit_code == 0, [(r.name, r.status, r.detail) for r in result.rules]


def test_keras_fit_without_validation_then_evaluate_advises_validation_data(tmp_path):
    """fit without validation, then model.evaluate on a test set with the same hook: a test pass after training."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    g = np.random.default_rng(1)
    x = g.standard_normal((300, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int64")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    hook = smd_tf.KerasHook.recommended(str(tmp_path / "run"))
    model.fit(x[:200], y[:200], epochs=8, batch_size=32, verbose=0, callbacks=[hook])
    model.evaluate(x[200:], y[200:], verbose=0, callbacks=[hook])
    hook.close()
    result, by_rule = verdicts(str(tmp_path / "run"))
    for name in ("Overfit", "Overtraining"):
        r = by_rule[name]
        assert r.status == NOT_APPLICABLE, (name, r.status, r.detail)
        assert "evaluated only after training ended" in r.detail and "validation_data=" in r.detail, r.detail
    # (the run's verdict is another rule's judgement, not "could not judge": NotApplicable does not count)
    assert result.exit_code != 3, [(r.name, r.status, r.detail) for r in result.rules]
