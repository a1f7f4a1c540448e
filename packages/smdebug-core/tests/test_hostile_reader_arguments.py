"""Arguments of the reading API that are no mode, no step or no reduction (seventh red-team pass).

Before: a mode that was not a ``ModeKeys`` member was taken for a mode without data, silently:
``trial.steps(mode="train")`` answered ``[]`` on a run with ten TRAIN steps, ``tensor.value(2, mode="TRAIN")``
said the step was not saved, ``tensor_names(mode="x")`` answered ``[]``; ``has_passed_step("1")`` raised a
bare ``TypeError`` from ``bisect``; ``reduction_value(step, "l9")`` a bare ``ValueError``.
``to_dataframe(modes=...)`` already took a mode's name; now every method that takes a mode does.
"""

from __future__ import annotations

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression


@pytest.fixture(scope="module")
def train_eval_run(tmp_path_factory):
    from smdebug.core.modes import ModeKeys
    from smdebug.core.save_config import SaveConfig

    out = tmp_path_factory.mktemp("modes") / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "losses"])
    train = train_logistic_regression(hook, steps=5, mode=ModeKeys.TRAIN)
    train_logistic_regression(hook, steps=3, mode=ModeKeys.EVAL)
    hook.close()
    return str(out), train


def test_a_mode_named_or_numbered_reads_that_mode(train_eval_run):
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    path, train = train_eval_run
    trial = create_trial(path)
    assert trial.steps(mode=ModeKeys.TRAIN) == list(range(5))
    for name in ("train", "TRAIN", " Train ", 1):
        assert trial.steps(mode=name) == list(range(5)), name
        assert trial.tensor("loss").steps(mode=name) == list(range(5))
        assert trial.tensor("loss").value(2, mode=name)[0] == pytest.approx(train[2][3])
        np.testing.assert_array_equal(trial.tensor("weights/w").values(mode=name)[4], train[4][1])
        assert "loss" in trial.tensor_names(mode=name, step=1)
        assert trial.global_step(name, 4) == trial.global_step(ModeKeys.TRAIN, 4)
    assert trial.steps(mode="eval") == [0, 1, 2]
    assert trial.tensor("loss").reduction_value(1, "max", mode="eval") is not None
    trial.wait_for_steps([0, 1], mode="eval", timeout=1)
    assert trial.steps(mode=None) == trial.steps()  # (None: the default, GLOBAL)


@pytest.mark.parametrize("mode", ["x", "training", 7, 2.0, True, object()])
def test_a_mode_that_is_no_mode_is_a_clear_error(train_eval_run, mode):
    from smdebug.exceptions import SMDebugValueError
    from smdebug.trials import create_trial

    trial = create_trial(train_eval_run[0])
    calls = [lambda: trial.steps(mode=mode), lambda: trial.tensor("loss").steps(mode=mode),
             lambda: trial.tensor("loss").value(1, mode=mode), lambda: trial.tensor("loss").values(mode=mode),
             lambda: trial.tensor_names(mode=mode), lambda: trial.tensor_names(step=1, mode=mode),
             lambda: trial.has_passed_step(1, mode=mode), lambda: trial.wait_for_steps([1], mode=mode, timeout=1),
             lambda: trial.global_step(mode, 1), lambda: trial.last_step(mode)]
    for call in calls:
        with pytest.raises(SMDebugValueError, match="Invalid mode"):
            call()


def test_steps_and_reductions_that_are_none_are_clear_errors(train_eval_run):
    from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
    from smdebug.trials import create_trial

    trial = create_trial(train_eval_run[0])
    for step in ("1", None, 1.5):
        with pytest.raises(SMDebugTypeError, match="a step must be an integer"):
            trial.has_passed_step(step)
    with pytest.raises(SMDebugValueError, match="Unknown reduction 'l9'; choose from"):
        trial.tensor("weights/w").reduction_value(1, "l9")
