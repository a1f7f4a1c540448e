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


# --- wrong types anywhere in the public reading API (eighth pass) ------------------------------------
# Before: a bare TypeError or AttributeError from deep inside ("'int' object is not iterable" from the
# table code for to_dataframe(tensors=5), "unhashable type: 'list'" for tensor(["w"]), a comparison error
# from bisect for prev_steps("3")), or an argument silently taken for something else: to_dataframe(steps=b"x")
# read step 120, steps=["3"] step 3, tensors=[5] a tensor "5", Tensor.to_dataframe(workers="worker_0") the
# workers "w", "o", ...; reduction_value(abs="False") the absolute reduction; wait_for_steps(timeout=nan)
# waited for ever for a step still to come.

def _wrong_type_calls(trial):
    loss = trial.tensor("loss")
    return {
        "trial.to_dataframe(tensors)": lambda v: trial.to_dataframe(v),
        "trial.to_dataframe(collections)": lambda v: trial.to_dataframe(collections=v),
        "trial.to_dataframe(steps)": lambda v: trial.to_dataframe(steps=v),
        "trial.to_dataframe(modes)": lambda v: trial.to_dataframe(modes=v),
        "trial.to_dataframe(workers)": lambda v: trial.to_dataframe(workers=v),
        "trial.to_dataframe(reductions)": lambda v: trial.to_dataframe(reductions=v),
        "trial.steps(show_incomplete_steps)": lambda v: trial.steps(show_incomplete_steps=v),
        "trial.mode": lambda v: trial.mode(v),
        "trial.mode_step": lambda v: trial.mode_step(v),
        "trial.mode_modestep": lambda v: trial.mode_modestep(v),
        "trial.global_step": lambda v: trial.global_step("train", v),
        "trial.wait_for_steps": lambda v: trial.wait_for_steps(v, timeout=1),
        "trial.wait_for_steps(timeout)": lambda v: trial.wait_for_steps([1], timeout=v),
        "trial.tensor_names(show_prefixed_tensors)": lambda v: trial.tensor_names(v),
        "trial.tensor_names(regex)": lambda v: trial.tensor_names(regex=v),
        "trial.tensor_names(collection)": lambda v: trial.tensor_names(collection=v),
        "trial.has_tensor": lambda v: trial.has_tensor(v),
        "trial.tensor": lambda v: trial.tensor(v),
        "trial.collection": lambda v: trial.collection(v),
        "trial.inputs": lambda v: trial.inputs(v),
        "trial.labels": lambda v: trial.labels(v),
        "trial.predictions": lambda v: trial.predictions(v),
        "tensor.steps(show_incomplete_steps)": lambda v: loss.steps(show_incomplete_steps=v),
        "tensor.prev_steps(step)": lambda v: loss.prev_steps(v),
        "tensor.prev_steps(n)": lambda v: loss.prev_steps(3, n=v),
        "tensor.value(step)": lambda v: loss.value(v),
        "tensor.value(worker)": lambda v: loss.value(1, worker=v),
        "tensor.values(worker)": lambda v: loss.values(worker=v),
        "tensor.workers(step)": lambda v: loss.workers(v),
        "tensor.shape(step)": lambda v: loss.shape(v),
        "tensor.reduction_value(step)": lambda v: loss.reduction_value(v, "max"),
        "tensor.reduction_value(reduction_name)": lambda v: loss.reduction_value(1, v),
        "tensor.reduction_value(abs)": lambda v: loss.reduction_value(1, "max", abs=v),
        "tensor.reduction_values(step)": lambda v: loss.reduction_values(v),
        "tensor.to_dataframe(workers)": lambda v: loss.to_dataframe(workers=v),
        "tensor.to_dataframe(reduction)": lambda v: loss.to_dataframe(reduction=v),
        "tensor.to_dataframe(abs)": lambda v: loss.to_dataframe(reduction="max", abs=v),
    }


#: values of no argument's type except where a call accepts them (below)
_WRONG = {"int": 5, "float": 1.5, "nan": float("nan"), "list-of-int": [5], "dict": {"a": 1}, "bytes": b"x",
          "object": object(), "str": "3", "none": None, "bool": True}

#: (call, value) pairs that are right: these must keep working
_ACCEPTED = {
    ("trial.to_dataframe(tensors)", "str"), ("trial.to_dataframe(collections)", "none"),
    ("trial.to_dataframe(tensors)", "none"), ("trial.to_dataframe(steps)", "none"),
    ("trial.to_dataframe(steps)", "list-of-int"), ("trial.to_dataframe(modes)", "none"),
    ("trial.to_dataframe(workers)", "none"), ("trial.to_dataframe(workers)", "str"),
    ("trial.to_dataframe(reductions)", "none"), ("trial.to_dataframe(collections)", "str"),
    ("trial.steps(show_incomplete_steps)", "bool"), ("tensor.steps(show_incomplete_steps)", "bool"),
    ("trial.tensor_names(show_prefixed_tensors)", "bool"), ("trial.tensor_names(regex)", "str"),
    ("trial.tensor_names(regex)", "none"), ("trial.tensor_names(collection)", "str"),
    ("trial.tensor_names(collection)", "none"), ("trial.has_tensor", "str"), ("trial.collection", "str"),
    ("trial.wait_for_steps", "list-of-int"), ("trial.wait_for_steps(timeout)", "int"),
    ("trial.wait_for_steps(timeout)", "float"), ("trial.wait_for_steps(timeout)", "none"),
    ("tensor.prev_steps(n)", "int"), ("tensor.prev_steps(n)", "none"), ("tensor.value(worker)", "none"),
    ("tensor.values(worker)", "none"), ("tensor.reduction_value(abs)", "bool"),
    ("tensor.to_dataframe(workers)", "none"), ("tensor.to_dataframe(reduction)", "none"),
    ("tensor.to_dataframe(abs)", "bool"), ("trial.mode", "int"), ("trial.mode_step", "int"),
    ("trial.mode_modestep", "int"), ("trial.global_step", "int"), ("trial.inputs", "int"),
    ("trial.labels", "int"), ("trial.predictions", "int"), ("tensor.prev_steps(step)", "int"),
    ("tensor.value(step)", "int"), ("tensor.workers(step)", "int"), ("tensor.shape(step)", "int"),
    ("tensor.reduction_value(step)", "int"), ("tensor.reduction_values(step)", "int"),
}


def test_arguments_of_the_wrong_type_are_clear_errors_naming_the_argument(train_eval_run):
    from smdebug.exceptions import SMDebugError
    from smdebug.trials import create_trial

    trial = create_trial(train_eval_run[0])
    wrong = []
    for call_name, call in _wrong_type_calls(trial).items():
        for value_name, value in _WRONG.items():
            if (call_name, value_name) in _ACCEPTED:
                continue
            try:
                call(value)
                wrong.append(f"{call_name} {value_name}: accepted")
            except SMDebugError:
                pass  # (its own error: a type error naming the argument, or "not saved", "no such tensor")
            except Exception as e:  # noqa: BLE001 - what the test is looking for
                wrong.append(f"{call_name} {value_name}: {type(e).__name__}: {e}")
    assert not wrong, "\n".join(wrong)


def test_the_messages_name_the_argument_and_what_it_takes(train_eval_run):
    from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
    from smdebug.trials import create_trial

    trial = create_trial(train_eval_run[0])
    cases = [
        (lambda: trial.to_dataframe(tensors=5), "tensors must be a tensor name or pattern or a list of them (strings), got 5 (int)"),
        (lambda: trial.to_dataframe(steps="x"), "steps must be a list of integer steps, got 'x' (str)"),
        (lambda: trial.to_dataframe(steps=3), "steps=[3]"),
        (lambda: trial.to_dataframe(steps=["3"]), "it holds '3' (str)"),
        (lambda: trial.to_dataframe(reductions=[1]), "reductions must be a reduction name or a list of them (strings); it holds 1 (int)"),
        (lambda: trial.to_dataframe(modes=1.5), "modes must be a mode"),
        (lambda: trial.tensor(123), "tname must be a name (a string), got 123 (int)"),
        (lambda: trial.tensor("loss").value("3"), "step: a step must be an integer, got '3' (str)"),
        (lambda: trial.tensor("loss").prev_steps(3, n=-1), "n must be 0 or more"),
        (lambda: trial.tensor("loss").reduction_value(1, "max", abs="False"), "abs must be True or False"),
        (lambda: trial.wait_for_steps([100], timeout=float("nan")), "timeout is NaN"),
        (lambda: trial.steps(show_incomplete_steps="yes"), "show_incomplete_steps must be True or False"),
    ]
    for call, text in cases:
        with pytest.raises((SMDebugTypeError, SMDebugValueError)) as info:
            call()
        assert text in str(info.value), (text, str(info.value))


def test_right_arguments_still_read_the_same(train_eval_run):
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    path, train = train_eval_run
    trial = create_trial(path)
    frame = trial.to_dataframe("loss", steps=np.array([1, 2]), modes=("train",), workers="worker_0",
                               reductions=("max",))
    assert frame["step"].tolist() == [1, 2] and frame["max"].tolist() == pytest.approx([train[1][3], train[2][3]])
    assert trial.to_dataframe(tensors=["loss"], steps=range(2))["step"].tolist() == [0, 1]
    loss = trial.tensor("loss")
    assert loss.to_dataframe(workers="worker_0")["worker"].tolist() == ["worker_0"] * len(loss.steps())
    assert loss.prev_steps(np.int64(3), n=np.int64(2)) == [2, 3]
    assert loss.reduction_value(1, "max", abs=np.bool_(False)) == pytest.approx(train[1][3])
    assert trial.mode(np.int64(1)) == ModeKeys.TRAIN and trial.global_step("eval", np.int32(0)) == 5
    trial.wait_for_steps({0, 1}, timeout=0.5)
    assert trial.tensor_names(regex=("^loss$",)) == ["loss"]


def test_create_trial_arguments_of_the_wrong_type_are_clear_errors(train_eval_run):
    """(eighth pass) ``skip_damaged="no"`` is true to Python and turned skipping on, silently; a
    ``poll_interval`` of "x" or NaN failed in ``time.sleep`` at the first wait; a path of the wrong type
    was a plain TypeError."""
    from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
    from smdebug.trials import create_trial

    path = train_eval_run[0]
    for kwargs, text in [({"skip_damaged": "no"}, "skip_damaged must be True or False"),
                         ({"cache": "x"}, "cache must be True or False"),
                         ({"poll_interval": "x"}, "poll_interval must be seconds"),
                         ({"poll_interval": float("nan")}, "poll_interval is NaN"),
                         ({"poll_interval": -1}, "poll_interval must be seconds from 0 to 86400"),
                         ({"name": 5}, "name must be a string")]:
        with pytest.raises((SMDebugTypeError, SMDebugValueError), match=text):
            create_trial(path, **kwargs)
    for bad in (5, b"/tmp/run", [path], None):
        with pytest.raises(SMDebugTypeError):
            create_trial(bad)
    assert create_trial(path, skip_damaged=np.bool_(True), poll_interval=0).skip_damaged is True
