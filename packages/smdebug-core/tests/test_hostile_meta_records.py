"""Red team 12: the run's ``_meta`` records (framework, xgboost_cv, modes_set, ...) in a hostile collections
file. Readers quote these records in messages (rules run: "... was written by '<framework>'", an XGBoost rule:
"an xgboost.cv run (<nfold> folds)"), so a 20 MB framework name or a 4,000-digit fold count was printed
whole; a framework name holding control characters was taken as the run's framework. Records out of any
hook's range are now dropped when the collections file is read (one warning naming the record), and a
recorded framework must look like a framework's name."""

from __future__ import annotations

import pytest

from _hostile import edit_collections, write_simple_run
from smdebug.core.run_info import framework_of, modes_set
from smdebug.core.testing import capture_smdebug_log
from smdebug.trials import create_trial


def _run_with_meta(tmp_path, **records) -> str:
    run = write_simple_run(tmp_path / "run")
    edit_collections(run, lambda doc: doc.setdefault("_meta", {}).update(records))
    return run


@pytest.mark.parametrize("records, dropped, why", [
    ({"framework": "x" * 20_000_000}, "framework", "a string of 20,000,000 characters"),
    ({"xgboost_cv": {"nfold": 10 ** 4000}}, "xgboost_cv", "a whole number of 4001 digits"),
    ({"modes_set": ["EVAL", [[{"k": -(2 ** 70)}]]]}, "modes_set", "a whole number of 22 digits"),
    ({"activation_layers": {"relu": ["y" * 70_000]}}, "activation_layers", "a string of 70,000 characters"),
])
def test_a_record_no_hook_writes_is_dropped_and_said(tmp_path, records, dropped, why):
    run = _run_with_meta(tmp_path, **records, kept_record={"nfold": 5})
    with capture_smdebug_log() as log:
        trial = create_trial(run)
        meta = trial.collection_manager.meta
    assert dropped not in meta
    assert meta["kept_record"] == {"nfold": 5}  # (the file's other records are read as before)
    assert f"_meta.{dropped} of " in log.text and why in log.text and "ignored" in log.text
    assert len(log.text) < 2000  # (the value itself is not quoted)
    assert trial.steps() == [0, 1, 2]  # (the run is read: only the record is set aside)


@pytest.mark.parametrize("name", ["pytorch\x1b[2J\r", "tensorflow\u202e", "a framework with spaces",
                                  "p" * 41, "", "5torch"])
def test_a_framework_record_that_is_no_name_tells_nothing(tmp_path, name):
    run = _run_with_meta(tmp_path, framework=name)
    assert framework_of(create_trial(run)) is None  # (inferred from the collections: none of a framework here)


@pytest.mark.parametrize("name", ["pytorch", "tensorflow", "xgboost", "mxnet", "my_framework-2.0"])
def test_framework_names_as_hooks_write_them_are_read(tmp_path, name):
    assert framework_of(create_trial(_run_with_meta(tmp_path, framework=name))) == name


def test_records_within_range_are_kept_as_written(tmp_path):
    records = {"xgboost_cv": {"nfold": 2 ** 63 - 1, "seed": -(2 ** 63)}, "modes_set": ["EVAL", "TRAIN"],
               "note": "z" * 65536}
    meta = create_trial(_run_with_meta(tmp_path, **records)).collection_manager.meta
    assert {k: meta[k] for k in records} == records
    assert modes_set(create_trial(_run_with_meta(tmp_path / "b", **records))) == ["EVAL", "TRAIN"]


def test_the_torch_hooks_slip_records_are_read_only_when_well_formed(tmp_path):
    """The records the PyTorch hook keeps of a loop's slips (validation in train() mode, labels shifted twice,
    parameters frozen on purpose): a record out of shape reads as no record, never as a finding."""
    from smdebug.core.run_info import evaluated_in_train_mode, labels_shifted_twice, untrained_parameters

    good = {"evaluated_in_train_mode": {"step": 10, "forwards": 2, "modules": ["drop", 7, "bn"]},
            "labels_shifted_twice": {"step": 0, "positions": 512, "share": 1.0},
            "untrained_parameters": {"steps": 3, "upto": 9, "not_stepped": [], "no_gradient": [],
                                     "frozen": ["body.0.weight", None]}}
    trial = create_trial(_run_with_meta(tmp_path / "good", **good))
    assert evaluated_in_train_mode(trial) == {"step": 10, "forwards": 2, "modules": ["drop", "bn"]}
    assert labels_shifted_twice(trial) == {"step": 0, "positions": 512, "share": 1.0}
    assert untrained_parameters(trial)["frozen"] == ["body.0.weight"]
    older = {"untrained_parameters": {"steps": 3, "upto": 9, "not_stepped": [], "no_gradient": []}}
    assert untrained_parameters(create_trial(_run_with_meta(tmp_path / "older", **older)))["frozen"] == []
    for i, bad in enumerate([{"evaluated_in_train_mode": {"step": -1, "forwards": 2}},
                             {"evaluated_in_train_mode": ["step", 10]},
                             {"labels_shifted_twice": {"step": 0, "positions": 512, "share": 1.5}},
                             {"labels_shifted_twice": {"step": 0, "positions": 512, "share": True}},
                             {"labels_shifted_twice": {"step": "0", "positions": 512, "share": 1.0}}]):
        trial = create_trial(_run_with_meta(tmp_path / f"bad{i}", **bad))
        assert evaluated_in_train_mode(trial) is None and labels_shifted_twice(trial) is None, bad
