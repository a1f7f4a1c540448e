"""Hostile configurations and records that used to be taken on trust: an empty LocalPath in the hook
configuration, mode metadata of a record that is not a mode (legacy FileReader), a string record whose
values do not fill its shape. Records are built with the real protobuf messages and framing and put in
runs written by the real writers; each must be refused with smdebug's own error naming what is wrong."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from _hostile import event_path, put_record, write_simple_run
from _support import NumpyHook
from smdebug.core.json_config import DEFAULT_LOCAL_PATH, parse_hook_config
from smdebug.core.modes import MODE_PLUGIN_NAME, MODE_STEP_PLUGIN_NAME, ModeKeys
from smdebug.core.reader import FileReader
from smdebug.core.tfevent.proto.event_pb2 import Event
from smdebug.core.tfevent.records import encode_record
from smdebug.core.tfevent.tensor_codec import decode_tensor_record
from smdebug.exceptions import EventFileCorrupted, InvalidConfigurationError
from smdebug.trials import create_trial


# --- LocalPath -------------------------------------------------------------------------------------
@pytest.mark.parametrize("local_path", ["", "   ", "\t\n"])
def test_an_empty_local_path_is_refused_not_replaced_by_the_default(tmp_path, local_path):
    """Before: an empty LocalPath fell through to /opt/ml/output/tensors and the run was written there."""
    existed = os.path.exists(DEFAULT_LOCAL_PATH)
    with pytest.raises(InvalidConfigurationError, match="LocalPath is empty"):
        parse_hook_config({"LocalPath": local_path})
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": local_path, "HookParameters": {"save_interval": "1"}}))
    with pytest.raises(InvalidConfigurationError, match="LocalPath is empty") as info:
        NumpyHook.create_from_json_file(str(config))
    assert str(config) in str(info.value)
    assert os.path.exists(DEFAULT_LOCAL_PATH) == existed


@pytest.mark.parametrize("local_path", [0, False, [], {}])
def test_a_local_path_that_is_not_a_string_is_refused(local_path):
    """Before: any falsy value (0, false, [], {}) meant the default directory too."""
    with pytest.raises(InvalidConfigurationError, match="LocalPath must be a string"):
        parse_hook_config({"LocalPath": local_path})


def test_a_missing_or_null_local_path_still_means_the_default():
    assert parse_hook_config({})["out_dir"] == DEFAULT_LOCAL_PATH
    assert parse_hook_config({"LocalPath": None})["out_dir"] == DEFAULT_LOCAL_PATH


@pytest.mark.parametrize("out_dir", ["", "  "])
def test_an_empty_out_dir_is_a_configuration_error(out_dir):
    # (already refused before the LocalPath fix; kept so the two ways of configuring a hook agree)
    with pytest.raises(InvalidConfigurationError, match="out_dir is required"):
        NumpyHook(out_dir=out_dir)


@pytest.mark.parametrize("config, where", [
    ({"HookParameters": {"include_regex": "(unclosed"}}, "include_regex: '(unclosed'"),
    ({"CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"include_regex": "[z-a]"}}]},
     "c.include_regex: '[z-a]'"),
])
def test_a_bad_regex_in_the_configuration_is_a_configuration_error(tmp_path, config, where):
    """Before: the collection it reached raised SMDebugTypeError, naming neither the file nor the key."""
    path = tmp_path / "hook.json"
    path.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), **config}))
    with pytest.raises(InvalidConfigurationError, match="is not a valid regex") as info:
        NumpyHook.create_from_json_file(str(path))
    assert str(path) in str(info.value) and where in str(info.value)


def test_a_huge_collection_name_is_clipped_in_the_log(tmp_path, caplog):
    path = tmp_path / "hook.json"
    path.write_text(json.dumps({"LocalPath": str(tmp_path / "run"),
                                "CollectionConfigurations": [{"CollectionName": "x" * 100_000}]}))
    with caplog.at_level("ERROR", logger="smdebug"):
        hook = NumpyHook.create_from_json_file(str(path))
        hook.begin_step()
        hook.record("w", np.ones(2, np.float32))
        hook.close()
    lines = [r.getMessage() for r in caplog.records if "can never match" in r.getMessage()]
    assert lines and all(len(line) < 1000 for line in lines) and "(100,000 characters)" in lines[0]


# --- records ---------------------------------------------------------------------------------------
def tensor_record(tag="w", shape=(1,), content=b"\0\0\x80?", strings=None, mode_step=None, mode=None,
                  step=1) -> bytes:
    """A framed event record of one tensor: float32 ``content`` or, with ``strings``, a DT_STRING tensor;
    ``shape`` as claimed; ``mode_step`` / ``mode`` as the plugin metadata's text (None: left out)."""
    ev = Event()
    ev.step = step
    value = ev.summary.value.add()
    value.tag = tag
    for d in shape:
        value.tensor.tensor_shape.dim.add().size = d
    if strings is None:
        value.tensor.dtype = 1
        value.tensor.tensor_content = content
    else:
        value.tensor.dtype = 7
        value.tensor.string_val.extend(strings)
    for name, text in ((MODE_STEP_PLUGIN_NAME, mode_step), (MODE_PLUGIN_NAME, mode)):
        if text is not None:
            pd = value.metadata.plugin_data.add()
            pd.plugin_name = name
            pd.content = text
    return encode_record(ev.SerializeToString())


def event_file_with(tmp_path, record: bytes) -> tuple:
    """(path, offset): a real run's event file of step 1 with ``record`` appended at ``offset``."""
    path = event_path(write_simple_run(tmp_path / "run"), 1)
    offset = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(record)
    return path, offset


BAD_MODES = {
    "mode step not a number": dict(mode_step="abc", mode="1"),
    "mode step of 5,000 digits": dict(mode_step="9" * 5000, mode="1"),
    "mode step past int64": dict(mode_step=str(1 << 63), mode="1"),
    "unknown mode 99": dict(mode_step="1", mode="99"),
    "mode not a number": dict(mode_step="1", mode="TRAIN"),
    "empty mode": dict(mode_step="1", mode=""),
}
BAD_TENSORS = {
    "content shorter than the shape": dict(shape=(2,)),
    "strings fewer than the shape": dict(shape=(1000, 1000), strings=[b"a"]),
    "strings more than the shape": dict(shape=(2,), strings=[b"a", b"b", b"c"]),
    "strings for a scalar": dict(shape=(), strings=[b"a", b"b"]),
    "no strings for a shape": dict(shape=(3,), strings=[]),
}


@pytest.mark.parametrize("case", sorted(BAD_MODES) + sorted(BAD_TENSORS))
def test_legacy_file_reader_reports_a_damaged_record_as_the_file_s_damage(tmp_path, case):
    """Before: ValueError from int() or from the ModeKeys enum, or a decoder error, escaped read_tensors."""
    path, offset = event_file_with(tmp_path, tensor_record(**{**BAD_MODES, **BAD_TENSORS}[case]))
    reader = FileReader(path)
    with pytest.raises(EventFileCorrupted, match=f"record at byte {offset}") as info:
        list(reader.read_tensors())
    assert info.value.path == path and "'w'" in str(info.value)
    if case in BAD_TENSORS:  # (read_events takes no mode from the metadata)
        with pytest.raises(EventFileCorrupted, match=f"record at byte {offset}"):
            reader.read_events()


def test_legacy_file_reader_still_reads_what_the_writers_write(tmp_path):
    path, _ = event_file_with(tmp_path, tensor_record(mode_step=" 7 ", mode=str(ModeKeys.EVAL.value)))
    records = list(FileReader(path).read_tensors())
    assert [(name, step) for name, step, *_ in records] == [("w", 1), ("w", 1)]
    np.testing.assert_array_equal(records[0][2], np.full(3, 1, np.float32))
    assert records[1][3:] == (ModeKeys.EVAL, 7)
    np.testing.assert_array_equal(records[1][2], np.ones(1, np.float32))


@pytest.mark.parametrize("case", sorted(BAD_TENSORS))
def test_the_trial_reports_the_same_records_as_damaged(tmp_path, case):
    run = write_simple_run(tmp_path / "run")
    put_record(run, 1, "w", tensor_record(**BAD_TENSORS[case]))
    with pytest.raises(EventFileCorrupted, match="Cannot decode tensor w") as info:
        create_trial(run).tensor("w").value(1)
    assert info.value.path.endswith(".tfevents") and info.value.step == 1


@pytest.mark.parametrize("case", sorted(BAD_MODES))
def test_the_trial_takes_modes_from_the_index_not_from_the_record(tmp_path, case):
    # A trial never reads a record's mode metadata (the index says the mode and mode step), so a record
    # with bad metadata but a sound tensor still gives its value there.
    run = write_simple_run(tmp_path / "run")
    put_record(run, 1, "w", tensor_record(**BAD_MODES[case]))
    np.testing.assert_array_equal(create_trial(run).tensor("w").value(1), np.ones(1, np.float32))


@pytest.mark.parametrize("shape, strings", [((2, 2), [b"a", b"b", b"c", b"d"]), ((), [b"x"]), ((0, 3), []),
                                            ((1,), [b"only"])])
def test_string_records_that_fill_their_shape_still_decode(shape, strings):
    value = decode_tensor_record(tensor_record(shape=shape, strings=strings))
    assert value.shape == shape
    np.testing.assert_array_equal(value.reshape(-1), np.array([s.decode() for s in strings], dtype=str))


def test_a_string_record_with_neither_shape_nor_values_is_empty_as_before():
    assert decode_tensor_record(tensor_record(shape=(), strings=[])).size == 0


def test_a_string_record_claiming_a_million_values_for_one_is_refused_as_numeric_ones_are():
    """Before: shape (1000, 1000) holding one string decoded as array(['a']) with no error."""
    with pytest.raises(EventFileCorrupted, match=r"holds 1 values, shape \(1000, 1000\) needs 1000000"):
        decode_tensor_record(tensor_record(shape=(1000, 1000), strings=[b"a"]), "f.tfevents", 1, "w")
    with pytest.raises(EventFileCorrupted, match=r"Tensor content has 4 bytes, shape \(1000, 1000\)"):
        decode_tensor_record(tensor_record(shape=(1000, 1000)), "f.tfevents", 1, "w")


def test_save_steps_longer_than_a_schedule_needs_are_refused():
    """A configuration listing a million steps took 3 GB before training began: past 100,000 listed steps the
    schedule is an interval, and saying so is the error."""
    from smdebug.core.save_config import MAX_SAVE_STEPS, SaveConfigMode
    from smdebug.exceptions import SMDebugValueError

    assert len(SaveConfigMode(save_steps=range(MAX_SAVE_STEPS)).save_steps) == MAX_SAVE_STEPS
    with pytest.raises(SMDebugValueError, match="give a save_interval"):
        SaveConfigMode(save_steps=range(MAX_SAVE_STEPS + 1))
    with pytest.raises(SMDebugValueError, match="more than 100,000 steps"):
        SaveConfigMode(save_steps=iter(range(10 ** 12)))  # (a generator is not drained)


# --- a configuration file that is there but cannot be read (eighth pass) ---------------------------
def _link_loop(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    return str(tmp_path / "loop")


def _name_too_long(tmp_path):
    return str(tmp_path / ("c" * 300 + ".json"))


def _below_a_file(tmp_path):
    (tmp_path / "a_file").write_text("{}")
    return str(tmp_path / "a_file" / "config.json")


@pytest.mark.parametrize("make", [_link_loop, _name_too_long], ids=["link-loop", "name-too-long"])
def test_a_configuration_that_cannot_be_read_is_an_error_not_no_configuration(tmp_path, make, monkeypatch):
    """Before: ``os.path.exists`` said False for a path it could not look at (a link loop, a name too long,
    a folder the user may not enter), the hook configuration was "not found", and ``get_hook`` made no hook:
    the script trained without debugging, without a word."""
    from smdebug.core.singleton import get_hook, set_hook

    path = make(tmp_path)
    with pytest.raises(InvalidConfigurationError, match="cannot be read") as info:
        NumpyHook.create_from_json_file(path)
    assert len(str(info.value)) < 600  # (the path is clipped: it may be thousands of characters)
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", path)
    set_hook(None)
    with pytest.raises(InvalidConfigurationError):
        get_hook(hook_class=NumpyHook, create_if_not_exists=True)


def test_a_configuration_that_is_not_there_is_still_no_configuration(tmp_path, monkeypatch):
    from smdebug.core.singleton import get_hook, set_hook

    for path in (str(tmp_path / "missing.json"), _below_a_file(tmp_path)):
        with pytest.raises(FileNotFoundError):
            NumpyHook.create_from_json_file(path)
        monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", path)
        set_hook(None)
        assert get_hook(hook_class=NumpyHook, create_if_not_exists=True) is None
