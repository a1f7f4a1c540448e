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
