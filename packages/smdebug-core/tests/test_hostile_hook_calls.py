"""Bad arguments to the hook's public calls (red-team pass 5, F6), schedules that can never save (F8) and
duplicate keys in the hook's JSON configuration (F9).

RELIABILITY.md: a bad call is refused on the caller's thread, before anything is queued, with one clear
message per name; the hook keeps running and nothing else is lost. A value the writer thread cannot encode
costs that record only, never the step in flight or the hook.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from _support import NumpyHook
from smdebug import SaveConfig
from smdebug.core.json_config import load_hook_config
from smdebug.core.modes import ModeKeys
from smdebug.core.save_config import SaveConfigMode
from smdebug.exceptions import InvalidConfigurationError, SMDebugTypeError, SMDebugValueError
from smdebug.trials import create_trial

STEPS = 6
BAD_AT = 2


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


class Unconvertible:
    def __float__(self):
        raise RuntimeError("boom")

    def __array__(self, *a, **k):
        raise RuntimeError("array boom")


def train(out, bad_call, repeat=False):
    """A real hook over a real loop: the loss every step, ``bad_call(hook)`` at step BAD_AT (every step
    from then on with ``repeat``), then the run as a reader sees it."""
    hook = NumpyHook(str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses", "default"])
    for step in range(STEPS):
        hook.begin_step()
        hook.record("loss", np.array([float(step)], dtype=np.float32))
        if step == BAD_AT or (repeat and step > BAD_AT):
            bad_call(hook)
        hook.end_step()
    hook.close()
    assert not hook.disabled, hook._failure
    return create_trial(str(out))


BAD_CALLS = {
    "scalar_none": lambda h: h.save_scalar("s", None),
    "scalar_unconvertible": lambda h: h.save_scalar("s", Unconvertible()),
    "scalar_surrogate_name": lambda h: h.save_scalar("a\udcff", 1.0),
    "scalar_timestamp_text": lambda h: h.save_scalar("s", 1.0, timestamp="abc"),
    "scalar_timestamp_nan": lambda h: h.save_scalar("s", 1.0, timestamp=float("nan")),
    "scalar_timestamp_inf": lambda h: h.save_scalar("s", 1.0, timestamp=float("inf")),
    "tensor_collections_int": lambda h: h.save_tensor("t", np.ones(2), collections_to_write=5),
    "tensor_collections_of_ints": lambda h: h.save_tensor("t", np.ones(2), collections_to_write=[1, 2]),
    "tensor_unconvertible": lambda h: h.save_tensor("t", Unconvertible()),
    "tensor_object": lambda h: h.save_tensor("t", object()),
    "tensor_surrogate_name": lambda h: h.save_tensor("t\udcff", np.ones(2)),
    "trace_nan_timestamp": lambda h: h.record_trace_events(float("nan"), "train", "op"),
    "trace_inf_duration": lambda h: h.record_trace_events(1.0, "train", "op", duration=float("inf")),
    "trace_text_timestamp": lambda h: h.record_trace_events("soon", "train", "op"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_a_bad_call_costs_that_call_only(tmp_path, smdebug_log, case):
    """Before: each of these disabled the hook for the rest of training (3 of 6 steps kept), and the two
    that reached the writer thread lost the step in flight too (2 of 6)."""
    trial = train(tmp_path / "run", BAD_CALLS[case], repeat=True)
    assert trial.steps() == list(range(STEPS))
    assert trial.tensor("loss").steps() == list(range(STEPS))
    np.testing.assert_array_equal(trial.tensor("loss").value(STEPS - 1), [STEPS - 1])
    said = [m for m in smdebug_log.messages() if "ignored" in m or "not saving" in m or "not saved" in m]
    assert len(said) == 1, smdebug_log.messages()  # one message, though the call came at 4 steps
    assert not any("disabled" in m for m in smdebug_log.messages())
    assert not any(n.startswith("scalar/") or n == "t" for n in trial.tensor_names())


def test_good_calls_next_to_bad_ones_are_saved(tmp_path):
    def calls(h):
        h.save_scalar("bad", None)
        h.save_scalar("good", 2.5, timestamp=1234.5)
        h.save_tensor("t", Unconvertible())
        h.save_tensor("u", np.arange(3.0), collections_to_write=("mine", "default"))
        h.record_trace_events(float("nan"), "train", "op")
        h.record_trace_events(1.0, "train", "op", duration=0.5, note=float("nan"))

    trial = train(tmp_path / "run", calls)
    assert trial.tensor("scalar/good").steps() == [BAD_AT]
    np.testing.assert_array_equal(trial.tensor("u").value(BAD_AT), np.arange(3.0))
    assert "scalar/bad" not in trial.tensor_names() and "t" not in trial.tensor_names()
    # the trace file is strict JSON (a NaN argument is kept as text, not as a bare NaN)
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "run" / "framework") for f in fs]
    assert len(files) == 1
    events = json.loads(open(files[0]).read(), parse_constant=lambda c: pytest.fail(f"bare {c} in trace JSON"))
    assert [e["args"]["note"] for e in events if e.get("name") == "op"] == ["nan"]


def test_bad_calls_between_steps_are_refused_before_queueing(tmp_path, smdebug_log):
    hook = NumpyHook(str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    hook.begin_step()
    hook.record("loss", np.array([1.0], dtype=np.float32))
    hook.end_step()
    hook.save_tensor("t", Unconvertible())  # between steps: kept for the next step, converted now
    hook.save_scalar("s", 1.0, timestamp="abc")
    hook.save_tensor("v", np.ones(2))
    hook.begin_step()
    hook.record("loss", np.array([2.0], dtype=np.float32))
    hook.end_step()
    hook.close()
    assert not hook.disabled
    trial = create_trial(str(tmp_path / "run"))
    assert trial.steps() == [0, 1] and trial.tensor("v").steps() == [1]
    assert "t" not in trial.tensor_names() and "scalar/s" not in trial.tensor_names()


def test_a_value_the_writer_thread_cannot_encode_costs_that_record_only(tmp_path, smdebug_log):
    """Converts on the training thread, but the codec has no dtype for it. Before: the writer thread
    failed, the hook was disabled and the step in flight (with its loss) was lost."""
    dates = np.array(["2020-01-01"], dtype="datetime64[D]")

    def calls(h):
        h.save_tensor("d", dates, collections_to_write="losses")
        h.record("loss_dates", dates)

    trial = train(tmp_path / "run", calls, repeat=True)
    assert trial.steps() == list(range(STEPS))
    assert trial.tensor("loss").steps() == list(range(STEPS))
    assert "d" not in trial.tensor_names() and "loss_dates" not in trial.tensor_names()
    said = [m for m in smdebug_log.warnings if "could not be encoded" in m]
    assert len(said) == 2 and "'d'" in said[0] + said[1], said


# --- F8: schedules that can never save ------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: SaveConfig(start_step=100, end_step=5),
    lambda: SaveConfig(start_step=5, end_step=5),
    lambda: SaveConfigMode(start_step="100", end_step="5"),
    lambda: {"TRAIN": {"start_step": 100, "end_step": 5}},
])
def test_a_hook_refuses_a_schedule_that_can_never_save(tmp_path, make):
    """smdebug 1.0.x built these and saved nothing, without a word (a 200-step run: no step saved)."""
    with pytest.raises(InvalidConfigurationError, match="start_step .* must be before end_step"):
        NumpyHook(str(tmp_path / "run"), save_config=make())
    with pytest.raises(InvalidConfigurationError, match="start_step"):
        NumpyHook(str(tmp_path / "run"), save_config=make(), dry_run=True)


@pytest.mark.parametrize("make", [
    lambda: SaveConfig(save_steps=[1, 10 ** 400]),
    lambda: SaveConfig(start_step=2 ** 63),
    lambda: SaveConfigMode(end_step=str(2 ** 64)),
])
def test_steps_beyond_int64_are_refused(make):
    with pytest.raises(SMDebugValueError, match="largest step"):
        make()


def test_end_step_zero_still_switches_the_interval_off(tmp_path):
    """smdebug 1.0.x's documented way to disable a schedule (the conformance suite relies on it)."""
    assert not any(SaveConfig(end_step=0).should_save_step(ModeKeys.TRAIN, n) for n in range(5))
    hook = NumpyHook(str(tmp_path / "run"), save_config=SaveConfig(end_step=0, save_steps=[2]))
    hook.close()


def test_old_runs_with_such_schedules_still_read():
    """A collection file of smdebug 1.0.x may hold such a schedule: it is read as written."""
    sc = SaveConfig.from_json(json.dumps({"TRAIN": {"save_interval": 1, "start_step": 100, "end_step": 5,
                                                    "save_steps": []}, "EVAL": None, "PREDICT": None,
                                          "GLOBAL": None}))
    assert sc.mode_save_configs[next(iter(sc.mode_save_configs))].start_step == 100


def _config(tmp_path, text: str) -> str:
    path = tmp_path / "hook.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("params, match", [
    ('{"start_step": "100", "end_step": "5"}', "start_step"),
    ('{"train.start_step": "7", "train.end_step": "7"}', "start_step"),
    ('{"save_steps": "1,' + "9" * 400 + '"}', "largest step"),
])
def test_the_json_configuration_refuses_it_too(tmp_path, params, match):
    path = _config(tmp_path, '{"LocalPath": "%s", "HookParameters": %s}' % (tmp_path / "out", params))
    with pytest.raises(InvalidConfigurationError, match=match):
        load_hook_config(path)


# --- F9: duplicate keys in the hook's JSON configuration -------------------------------------------------
def test_a_duplicate_key_in_the_configuration_is_named_once(tmp_path, smdebug_log):
    first, second = tmp_path / "first", tmp_path / "second"
    path = _config(tmp_path, '{"LocalPath": "%s", "LocalPath": "%s", "HookParameters": {"save_interval": "2", '
                             '"save_interval": "3"}}' % (first, second))
    kwargs = load_hook_config(path)
    assert kwargs["out_dir"] == str(second)  # the last one, as json.loads has it
    said = [m for m in smdebug_log.warnings if "times in one object" in m]
    assert len(said) == 2 and any("'LocalPath' 2 times" in m for m in said) and any("'save_interval'" in m for m in said)


def test_a_configuration_without_duplicates_says_nothing(tmp_path, smdebug_log):
    path = _config(tmp_path, '{"LocalPath": "%s", "HookParameters": {"save_interval": "2"}}' % (tmp_path / "o"))
    load_hook_config(path)
    assert not [m for m in smdebug_log.warnings if "times in one object" in m]


def test_the_legacy_functions_say_duplicate_keys_as_the_hook_does(tmp_path, smdebug_log, monkeypatch):
    """smdebug 1.0.x's ``get_json_config_as_dict`` and ``get_tensorboard_dir_from_json_config`` read the same
    files with plain json.load: a repeated LocalPath moved the run (or the TensorBoard folder) without a word."""
    from smdebug.core.json_config import get_json_config_as_dict, get_tensorboard_dir_from_json_config

    first, second = tmp_path / "first", tmp_path / "second"
    path = _config(tmp_path, '{"LocalPath": "%s", "LocalPath": "%s", "HookParameters": {"save_interval": "2", '
                             '"save_interval": "3"}}' % (first, second))
    assert get_json_config_as_dict(path)["LocalPath"] == str(second)  # the last one, as json.loads has it
    said = [m for m in smdebug_log.warnings if "times in one object" in m]
    assert len(said) == 2 and all(path in m for m in said), said
    tb = tmp_path / "tensorboard.json"
    tb.write_text('{"LocalPath": "%s", "LocalPath": "%s"}' % (first, second))
    monkeypatch.setenv("TENSORBOARD_CONFIG_FILE_PATH", str(tb))
    assert get_tensorboard_dir_from_json_config() == str(second)
    said = [m for m in smdebug_log.warnings if "times in one object" in m and "TensorBoard configuration" in m]
    assert len(said) == 1 and "'LocalPath' 2 times" in said[0], smdebug_log.warnings


@pytest.mark.timeout(60)
def test_the_legacy_functions_refuse_what_the_hook_refuses(tmp_path):
    from smdebug.core.json_config import get_json_config_as_dict

    with pytest.raises(FileNotFoundError):
        get_json_config_as_dict(str(tmp_path / "missing.json"))
    with pytest.raises(InvalidConfigurationError, match="not valid JSON"):
        get_json_config_as_dict(_config(tmp_path, '{"LocalPath": '))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # (json.load on open() blocked here until someone wrote to the FIFO)
    with pytest.raises(InvalidConfigurationError, match="FIFO"):
        get_json_config_as_dict(str(fifo))


# --- public calls at the wrong time or with arguments of the wrong kind (red team, hook side) ----------------
@pytest.mark.parametrize("args", [[1, 2], 5, None, ["ok", b"bytes"], {"a": 1}])
def test_add_to_collection_refuses_what_is_not_a_name_before_changing_anything(tmp_path, args):
    """A list of ints was kept as the collection's tensor names, and the run's collections file holding them
    was refused by every reader (the whole run unreadable); an int or None raised a bare TypeError."""
    out = tmp_path / "run"
    hook = NumpyHook(str(out), save_config=SaveConfig(save_interval=1))
    with pytest.raises(SMDebugTypeError, match="add_to_collection takes"):
        hook.add_to_collection("mine", args)
    assert "mine" not in hook.include_collections and "mine" not in hook.get_collections()
    for step in range(2):
        hook.begin_step()
        hook.record("loss", np.array([float(step)], dtype=np.float32))
        hook.end_step()
    hook.close()
    assert create_trial(str(out)).tensor("loss").steps() == [0, 1]


def test_a_collections_tensor_names_are_names(tmp_path):
    from smdebug.core.collection import Collection

    coll = Collection("mine")
    with pytest.raises(SMDebugTypeError, match="tensor names"):
        coll.add_tensor_name(3)
    with pytest.raises(SMDebugTypeError, match="tensor names"):
        coll.tensor_names = ["a", 3]
    with pytest.raises(SMDebugTypeError, match="tensor names"):
        Collection("other", tensor_names=[None])
    coll.tensor_names = "one"  # one name (it was taken as the set of its letters)
    assert coll.tensor_names == {"one"}
    coll.tensor_names = None
    assert coll.tensor_names == set()


def test_calls_after_close_are_refused_with_one_message(tmp_path, smdebug_log):
    """They reopened writing, found the run's end marker and blamed "another process" (save_scalar), or went
    nowhere without a word (record_trace_events, save_tensor)."""
    out = tmp_path / "run"
    hook = NumpyHook(str(out), save_config=SaveConfig(save_interval=1))
    for step in range(2):
        hook.begin_step()
        hook.record("loss", np.array([float(step)], dtype=np.float32))
        hook.end_step()
    hook.close()
    for _ in range(3):
        hook.save_scalar("late", 1.0)
        hook.save_tensor("late_t", np.ones(2))
        hook.record_trace_events(1.0, "train", "op")
        hook.begin_step()
        assert hook.record("loss", np.array([9.0], dtype=np.float32)) is False
        hook.end_step()
    hook.close()
    assert not hook.disabled
    said = [m for m in smdebug_log.messages() if "after the hook was closed" in m]
    assert len(said) == 1 and "save_scalar()" in said[0], smdebug_log.messages()
    assert not any("another process" in m for m in smdebug_log.messages())
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1] and trial.tensor_names() == ["loss"]
    assert not (out / "framework").exists()


def test_flush_refuses_a_timeout_that_is_no_number(tmp_path):
    hook = NumpyHook(str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    hook.begin_step()
    hook.record("loss", np.array([1.0], dtype=np.float32))
    with pytest.raises(SMDebugTypeError, match=r"flush\(timeout=...\) must be a number of seconds"):
        hook.flush(timeout="soon")  # (a bare TypeError from inside the writer before)
    with pytest.raises(SMDebugValueError, match="finite"):
        hook.flush(timeout=float("nan"))
    assert hook.flush(timeout=30) is True
    hook.close()
    assert create_trial(str(tmp_path / "run")).tensor("loss").steps() == [0]
