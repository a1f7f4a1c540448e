"""A collections file whose reductions are not the comma-separated string the writers write (red team 9).

A JSON list there ("reductions": ["min", "max"]) failed as "'list' object has no attribute 'split'", naming
nothing the file holds. It is CollectionFileCorrupted saying what the value must be and what it was; the
run's other files are read with skip_damaged as for any damaged collections file. The run is written by the
real writer; only its collections file is edited.
"""

from __future__ import annotations

import json

import pytest

from _hostile import collections_path, write_simple_run
from smdebug.exceptions import CollectionFileCorrupted
from smdebug.trials import create_trial


@pytest.mark.parametrize("reductions", [["min", "max"], {"min": 1}, 5])
def test_reductions_that_are_no_string_are_said_to_be(tmp_path, reductions):
    run = write_simple_run(tmp_path / "run")
    path = collections_path(run)
    with open(path) as f:
        doc = json.load(f)
    doc["collections"]["weights"]["reduction_config"] = {"reductions": reductions}
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(CollectionFileCorrupted, match="reductions must be a comma-separated string") as e:
        create_trial(run)
    assert "worker_0_collections.json" in str(e.value) and "'split'" not in str(e.value)


def test_reductions_as_the_writer_writes_them_still_read(tmp_path):
    run = write_simple_run(tmp_path / "run")
    path = collections_path(run)
    with open(path) as f:
        doc = json.load(f)
    doc["collections"]["weights"]["reduction_config"] = {"reductions": "min,abs_max,l2_norm"}
    with open(path, "w") as f:
        json.dump(doc, f)
    config = create_trial(run).collection("weights").reduction_config
    assert config.reductions == ["min"] and config.abs_reductions == ["max"] and config.norms == ["l2"]
