"""Keys of a reduction config, a save config or a collection that this version does not know (red team 10).

They were dropped without a word: ``{"reductions": "min", "norms": "l2"}`` saved no norm, ``{"TRAIN":
{"save_intervall": 5}}`` kept the default schedule, from code and from a run's collections file alike (where
a collection's unknown keys were logged at debug level only). Given in code such a key is SMDebugValueError
naming it and the keys there are; read from a run's collections file (a newer writer may add keys) the file
still loads, with one warning per key naming it and the file. The historical ``when_nan`` is still taken
silently. Runs are written by the real writer; only their collections file is edited.
"""

from __future__ import annotations


import pytest

from _hostile import edit_collections, run_smdebug, write_simple_run
from smdebug.core.collection import Collection
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig
from smdebug.exceptions import SMDebugValueError


def test_unknown_keys_given_in_code_are_errors_naming_them():
    with pytest.raises(SMDebugValueError, match="unknown key 'norms' in a reduction config; the keys are reductions"):
        Collection("c", reduction_config={"reductions": "min", "norms": "l2"})
    with pytest.raises(SMDebugValueError, match="unknown key 'save_intervall' in a save config"):
        SaveConfig(mode_save_configs={"TRAIN": {"save_intervall": 5}})
    coll = Collection("c")
    with pytest.raises(SMDebugValueError, match="'save_intervall'"):
        coll.save_config = {"TRAIN": {"save_intervall": 5}, "EVAL": {"save_interval": 1}}
    with pytest.raises(SMDebugValueError, match="'abs_reductions', 'save_raw'"):
        ReductionConfig.from_dict({"abs_reductions": "max", "save_raw": True})


def test_keys_as_written_still_read_in_code():
    coll = Collection("c", reduction_config={"reductions": "min,l2_norm", "save_raw_tensor": True},
                      save_config={"TRAIN": {"save_interval": 5, "start_step": 1}})
    assert coll.reduction_config.norms == ["l2"] and coll.save_config.get_save_config("TRAIN").save_interval == 5


def test_unknown_keys_in_a_runs_collections_file_are_warned_naming_them_and_the_run_reads(tmp_path):
    run = write_simple_run(tmp_path / "run", names=("w", "w2"))

    def misspell(doc):
        weights = doc["collections"]["weights"]
        weights["reduction_config"] = {"reductions": "min", "norms": "l2"}
        weights["save_config"] = {"TRAIN": {"save_intervall": 5, "when_nan": []}}
        weights["include_regexes"] = ["^w2"]
        weights["when_nan"] = []

    edit_collections(run, misspell)
    done = run_smdebug("ls", run)
    assert done.returncode == 0, done.stderr
    assert "w2" in done.stdout
    for key, what in (("norms", "a reduction config"), ("save_intervall", "a save config"),
                      ("include_regexes", "a collection")):
        lines = [line for line in done.stderr.splitlines() if f"unknown key '{key}' in {what}" in line]
        assert len(lines) == 1, done.stderr
        assert "worker_0_collections.json" in lines[0]
    assert "when_nan" not in done.stderr
