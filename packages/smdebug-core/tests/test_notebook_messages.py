"""What a notebook user reads when asking a trial for something the run does not have: the error says
what the run does have (close tensor names, the steps a tensor was saved at), so the next cell is right.

Runs are written by a real hook training a real logistic regression (``_support``)."""

import logging

import pytest

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig, modes
from smdebug.exceptions import (InvalidWorker, NoMoreData, StepUnavailable, TensorUnavailable,
                                TensorUnavailableForStep)
from smdebug.trials import create_trial


@pytest.fixture
def trained(tmp_path):
    """TRAIN steps 0-11 with the loss saved every 3 steps (gradients every 6), then 4 EVAL steps."""
    hook = NumpyHook(out_dir=str(tmp_path / "run"), include_collections=["losses", "gradients"],
                     save_config=SaveConfig(save_interval=3))
    hook.get_collection("gradients").save_config = SaveConfig(save_interval=6)
    train_logistic_regression(hook, steps=12, mode=modes.TRAIN)
    train_logistic_regression(hook, steps=4, mode=modes.EVAL)
    hook.close()
    return create_trial(str(tmp_path / "run"))


def test_a_mistyped_tensor_name_gets_the_close_names(trained):
    with pytest.raises(TensorUnavailable) as info:
        trained.tensor("gradient/weight/w")
    assert str(info.value).startswith("Tensor gradient/weight/w was not saved. Did you mean 'gradient/weights/w'")
    with pytest.raises(TensorUnavailable) as info:
        trained.tensor("accuracy")
    assert str(info.value) == f"Tensor accuracy was not saved. The run has {len(trained.tensor_names())} tensors: " \
                              "trial.tensor_names() lists them."


def test_a_step_not_saved_says_which_steps_were(trained):
    loss = trained.tensor("loss")
    with pytest.raises(StepUnavailable) as info:
        loss.value(4, mode=modes.TRAIN)  # a TRAIN step of the run, at which nothing was due
    assert str(info.value) == "Step 4 of mode TRAIN is not available as it was not saved. " \
                              "loss was saved at TRAIN steps 0, 3, 6, 9."
    with pytest.raises(StepUnavailable) as info:
        loss.value(40, mode=modes.TRAIN)  # past the end of the run
    assert str(info.value).endswith("was not saved. loss was saved at TRAIN steps 0, 3, 6, 9.")
    with pytest.raises(StepUnavailable) as info:
        loss.value(7, mode=modes.EVAL)
    assert str(info.value).endswith("loss was saved at EVAL steps 0, 3.")
    gradient = trained.tensor("gradient/weights/w")
    with pytest.raises(TensorUnavailableForStep) as info:
        gradient.reduction_value(3, "l2", mode=modes.TRAIN)
    assert str(info.value).endswith("gradient/weights/w was saved at TRAIN steps 0, 6.")
    with pytest.raises(StepUnavailable) as info:
        loss.value(0, mode=modes.PREDICT)  # the run never predicted
    assert str(info.value).endswith(
        "loss has no PREDICT step; it was saved at TRAIN steps 0, 3, 6, 9; EVAL steps 0, 3 (pass mode=...).")


def test_a_long_list_of_saved_steps_is_elided(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=2))
    train_logistic_regression(hook, steps=40)
    hook.close()
    with pytest.raises(StepUnavailable) as info:  # (no tensor at all was saved at step 5)
        create_trial(str(tmp_path / "run")).tensor("loss").value(5)
    assert str(info.value).endswith("loss was saved at GLOBAL steps 0, 2, 4, 6, ..., 32, 34, 36, 38 (20 steps).")


def test_an_empty_collection_is_an_answer_a_mistyped_one_a_warning(trained, caplog):
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        assert trained.tensor_names(collection="biases") == []  # the run has it; nothing was saved in it
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        assert trained.tensor_names(collection="gradient") == []
    assert [r.getMessage() for r in caplog.records] == [
        "No tensors matched gradient: the run has no collection 'gradient' (did you mean 'gradients'?)"]


def test_a_worker_or_a_mode_the_run_lacks_is_said_so(trained):
    with pytest.raises(InvalidWorker) as info:
        trained.tensor("loss").value(0, mode=modes.TRAIN, worker="worker_1")
    assert str(info.value) == "Invalid Worker: worker_1 (not a worker of step 0, which has worker_0; the run's " \
                              "workers: worker_0)"
    with pytest.raises(NoMoreData) as info:
        trained.wait_for_steps([3], mode=modes.PREDICT)
    assert str(info.value).endswith("reached end of training. The run has no PREDICT step")  # (was "... is None")
    with pytest.raises(TensorUnavailableForStep) as info:
        trained.tensor("gradient/weights/w").shape(3, mode=modes.TRAIN)
    assert str(info.value).endswith("gradient/weights/w was saved at TRAIN steps 0, 6.")


def test_the_errors_pickle_with_their_hints(trained):
    """(A hint is a function of the trial until shown; a pickled error, sent from a worker process, carries
    its text.)"""
    import pickle

    for ask in (lambda: trained.tensor("los"), lambda: trained.tensor("loss").value(40, mode=modes.TRAIN)):
        with pytest.raises((TensorUnavailable, StepUnavailable)) as info:
            ask()
        copy = pickle.loads(pickle.dumps(info.value))
        assert type(copy) is type(info.value) and str(copy) == str(info.value) and "loss" in copy.hint


def test_a_tensor_shows_where_it_was_saved(trained, tmp_path):
    assert repr(trained.tensor("loss")) == "<Tensor loss of trial run: TRAIN steps 0, 3, 6, 9; EVAL steps 0, 3>"
    hook = NumpyHook(out_dir=str(tmp_path / "plain"), save_config=SaveConfig(save_interval=2))
    train_logistic_regression(hook, steps=40)  # no mode set: GLOBAL steps
    hook.close()
    assert repr(create_trial(str(tmp_path / "plain")).tensor("loss")) == \
        "<Tensor loss of trial plain: GLOBAL steps 0, 2, 4, 6, ..., 32, 34, 36, 38 (20 steps)>"
