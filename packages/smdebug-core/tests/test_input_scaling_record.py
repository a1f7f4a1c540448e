"""The record of how a model rescales its own input (``_meta.input_scaling``, smdebug.core.input_scaling): what
a hook writes is read back, and an entry no hook writes (values that are no numbers, too many channels, no
layers named) is read as no record: the input is then judged as saved."""

from __future__ import annotations

import numpy as np
import pytest

from _hostile import edit_collections, write_simple_run
from smdebug.core.input_scaling import MAX_CHANNELS, recorded_input_scaling
from smdebug.trials import create_trial


def _run(tmp_path, record) -> str:
    run = write_simple_run(tmp_path / "run")
    edit_collections(run, lambda doc: doc.setdefault("_meta", {}).update(input_scaling=record))
    return run


def test_a_recorded_map_is_read_and_applied_per_channel(tmp_path):
    run = _run(tmp_path, {"inputs": {"scale": [0.5, 0.25], "offset": [-1.0, 0.0],
                                     "layers": ["Normalization 'normalization'"]}})
    scaling = recorded_input_scaling(create_trial(run), "inputs")
    assert scaling.describe() == "Normalization 'normalization'"
    assert scaling.channel_means(np.array([4.0, 8.0])).tolist() == [1.0, 2.0]
    assert scaling.channel_means(np.array([4.0, 8.0, 1.0])) is None  # (three channels: the map has two)
    assert recorded_input_scaling(create_trial(run), "inputs_1") is None


def test_one_value_applies_to_every_channel(tmp_path):
    run = _run(tmp_path, {"inputs": {"scale": [1 / 255], "offset": [0], "layers": ["Rescaling 'rescaling'"]}})
    assert recorded_input_scaling(create_trial(run), "inputs").channel_means(np.array([255.0, 51.0])).tolist() == [
        pytest.approx(1.0), pytest.approx(0.2)]


@pytest.mark.parametrize("entry", [
    {"scale": ["x"], "offset": [0], "layers": ["a"]},
    {"scale": [1e400], "offset": [0], "layers": ["a"]},  # (JSON's 1e400 reads as infinity)
    {"scale": [True], "offset": [0], "layers": ["a"]},
    {"scale": [0.5] * (MAX_CHANNELS + 1), "offset": [0], "layers": ["a"]},
    {"scale": [], "offset": [0], "layers": ["a"]},
    {"scale": [0.5], "offset": [0], "layers": []},
    {"scale": [0.5], "offset": [0], "layers": [7]},
    {"scale": 0.5, "offset": [0], "layers": ["a"]},
    "Rescaling",
])
def test_an_entry_no_hook_writes_is_no_record(tmp_path, entry):
    assert recorded_input_scaling(create_trial(_run(tmp_path, {"inputs": entry})), "inputs") is None


def test_a_record_that_is_no_mapping_is_none(tmp_path):
    assert recorded_input_scaling(create_trial(_run(tmp_path, ["inputs"])), "inputs") is None
