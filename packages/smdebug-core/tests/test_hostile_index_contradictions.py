"""Index files that contradict other index files or their own records: an entry pointing at another
tensor's record (aliases are declared by the writer), a name listed twice, two steps of one worker claiming
one mode step, workers disagreeing on a step's mode, a step's event file replaced by another step's, and a
run whose collections say more workers than ever wrote to it (two processes under one worker name). Runs
are written by the real hook or the real step writer; only the part under attack is changed afterwards."""

from __future__ import annotations

import json
import logging
import os
import shutil

import numpy as np
import pytest

from _hostile import edit_index, event_path, index_path, run_smdebug
from _support import NumpyHook, train_logistic_regression, write_run
from smdebug import SaveConfig
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import EventFileCorrupted, IndexReaderException
from smdebug.trials import create_trial


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _hook_run(root, steps=6, mode=None, alias=False, **hook_args):
    """A run of the real hook (logistic regression); ``alias``: ``loss_copy`` saved as a second name of
    ``loss``'s record at every step (what the XGBoost hook does for SHAP values)."""
    hook = NumpyHook(out_dir=str(root), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses", "biases"], **hook_args)
    on_step = (lambda step: hook._record_same("loss_copy", "loss")) if alias else None
    train_logistic_regression(hook, steps=steps, mode=mode, on_step=on_step)
    hook.close()
    return str(root)


def _entry(doc, name):
    return next(e for e in doc["tensor_payload"] if e["tensorname"] == name)


# --- F3: an entry pointing at another tensor's record -------------------------------------------------------
def test_an_entry_pointing_at_another_indexed_tensors_record_is_refused(tmp_path):
    run = _hook_run(tmp_path / "run")
    good = create_trial(run).tensor("loss").value(3)

    def point_loss_at_weights(doc):
        w = _entry(doc, "weights/w")
        _entry(doc, "loss").update(start_idx=w["start_idx"], length=w["length"])

    edit_index(run, 3, point_loss_at_weights)
    trial = create_trial(run)
    with pytest.raises(EventFileCorrupted, match="not of 'loss'") as info:
        trial.tensor("loss").value(3)
    assert info.value.step == 3 and info.value.path.endswith(".tfevents")
    np.testing.assert_array_equal(trial.tensor("weights/w").value(3), create_trial(run).tensor("weights/w").value(3))
    assert trial.tensor("loss").value(2).shape == good.shape  # other steps are untouched


def test_declared_aliases_read_and_only_they_may_share_a_record(tmp_path):
    run = _hook_run(tmp_path / "run", alias=True)
    with open(index_path(run, 2)) as f:
        doc = json.load(f)
    assert doc["meta"]["declares_aliases"] is True
    copy, loss = _entry(doc, "loss_copy"), _entry(doc, "loss")
    assert copy["alias_of"] == "loss" and (copy["start_idx"], copy["length"]) == (loss["start_idx"], loss["length"])
    trial = create_trial(run)
    for step in trial.steps():
        np.testing.assert_array_equal(trial.tensor("loss_copy").value(step), trial.tensor("loss").value(step))

    # an undeclared entry at the (aliased) loss record: refused, though loss is indexed there
    def point_bias_at_loss(doc):
        _entry(doc, "biases/b").update(start_idx=loss["start_idx"], length=loss["length"])

    edit_index(run, 2, point_bias_at_loss)
    with pytest.raises(EventFileCorrupted, match="record of 'loss'"):
        create_trial(run).tensor("biases/b").value(2)
    np.testing.assert_array_equal(create_trial(run).tensor("loss_copy").value(2), trial.tensor("loss").value(2))


def test_runs_without_alias_marks_keep_the_permissive_rule(tmp_path):
    """smdebug 1.0.x and older writers declare nothing: a second name at a record indexed under its tag
    still reads (their aliases look like that)."""
    run = _hook_run(tmp_path / "run", alias=True)
    for step in range(6):
        def strip(doc):
            doc["meta"].pop("declares_aliases", None)
            for e in doc["tensor_payload"]:
                e.pop("alias_of", None)
        edit_index(run, step, strip)
    trial = create_trial(run)
    np.testing.assert_array_equal(trial.tensor("loss_copy").value(4), trial.tensor("loss").value(4))


# --- F4: a name twice in one index; one worker claiming a mode step twice ---------------------------------------
@pytest.mark.parametrize("forged_first", [False, True])
def test_a_name_listed_twice_in_one_index_is_damage(tmp_path, forged_first):
    run = _hook_run(tmp_path / "run")

    def twice(doc):
        other = dict(_entry(doc, "loss"))
        w = _entry(doc, "weights/w")
        other.update(start_idx=w["start_idx"], length=w["length"])
        doc["tensor_payload"].insert(0 if forged_first else len(doc["tensor_payload"]), other)

    edit_index(run, 3, twice)
    with pytest.raises(IndexReaderException, match="lists tensor 'loss' more than once") as info:
        trial = create_trial(run)
        trial.tensor("loss").values()
    assert info.value.step == 3
    trial = create_trial(run, skip_damaged=True)  # the file holds nothing: step 3 has no loss
    assert 3 not in trial.tensor("loss").steps() and trial.tensor("loss").steps() == [0, 1, 2, 4, 5]


def test_two_index_files_of_one_worker_claiming_one_mode_step(tmp_path, caplog):
    run = _hook_run(tmp_path / "run", steps=8, mode=ModeKeys.TRAIN)
    edit_index(run, 5, lambda doc: doc["meta"].update(mode_step=4))
    with pytest.raises(IndexReaderException, match="claims TRAIN step 4") as info:
        create_trial(run)
    assert info.value.step == 5 and "000000000004_worker_0.json" in str(info.value)
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        trial = create_trial(run, skip_damaged=True)
    assert any("000000000005_worker_0.json" in r.getMessage() for r in caplog.records)
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3, 4, 6, 7]
    assert trial.tensor("loss").steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3, 4, 6, 7]
    np.testing.assert_array_equal(trial.tensor("loss").value(4, mode=ModeKeys.TRAIN), trial.tensor("loss").value(4))


# --- F4: workers disagreeing on a step's mode or mode step ------------------------------------------------------
def _two_worker_run(root, change_worker_1):
    run = str(root)
    write_run(run, range(6), workers=("worker_0", "worker_1"), mode_of=lambda s: (ModeKeys.TRAIN, s),
              tensors=lambda s, w: {"loss": np.full(1, s, np.float32)})
    for s in range(6):
        path = index_path(run, s, "worker_1")
        with open(path) as f:
            doc = json.load(f)
        change_worker_1(s, doc["meta"])
        with open(path, "w") as f:
            json.dump(doc, f)
    return run


@pytest.mark.parametrize("change,mode_of_worker_1", [
    (lambda s, meta: meta.update(mode="EVAL", mode_step=100 + s), ModeKeys.EVAL),
    (lambda s, meta: meta.update(mode_step=100 + s), ModeKeys.TRAIN),
])
def test_workers_disagreeing_on_a_steps_mode_give_one_warning_and_one_answer(tmp_path, caplog, change,
                                                                              mode_of_worker_1):
    """Workers number their own global steps: worker_1's files at global steps 0-5 claim mode steps worker_0
    has nowhere. Steps are aligned by (mode, mode step): worker_0's numbering is the run's, and worker_1's
    mode steps, which worker_0 lacks, follow worker_0's steps (6-11) instead of being read as worker_0's."""
    run = _two_worker_run(tmp_path / "run", change)
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        trial = create_trial(run)
        trial.steps()
    warnings = [r.getMessage() for r in caplog.records if "disagree" in r.getMessage()]
    assert len(warnings) == 1
    assert "000000000000_worker_0.json" in warnings[0] and "000000000000_worker_1.json" in warnings[0]
    assert "Aligning workers by (mode, mode step)" in warnings[0]
    worker_1_steps = [100 + s for s in range(6)]
    expected_train = list(range(6)) + (worker_1_steps if mode_of_worker_1 == ModeKeys.TRAIN else [])
    assert trial.steps(mode=ModeKeys.TRAIN) == trial.tensor("loss").steps(mode=ModeKeys.TRAIN) == expected_train
    assert [trial.mode_modestep(g) for g in range(6)] == [(ModeKeys.TRAIN, g) for g in range(6)]
    assert [trial.mode_modestep(g) for g in range(6, 12)] == [(mode_of_worker_1, m) for m in worker_1_steps]
    assert trial.steps(mode=mode_of_worker_1)[-6:] == worker_1_steps
    assert trial.tensor("loss").workers(3, ModeKeys.TRAIN) == ["worker_0"]
    # (its index file of own step 3; the value is not read: the forged index no longer matches its record)
    (f,) = trial.index_files_with_tensor("loss", 103, mode_of_worker_1)
    assert (f.worker, f.step) == ("worker_1", 3)
    out = run_smdebug("ls", run, "--json")
    doc = json.loads(out.stdout)
    assert doc["modes"]["TRAIN"]["steps"] == expected_train
    assert doc["modes"][mode_of_worker_1.name]["steps"][-6:] == worker_1_steps


def test_a_worker_read_first_does_not_decide_a_disagreement(tmp_path):
    """A live run: worker_1's file of a step is read before worker_0's. Once worker_0's arrives, the steps
    are placed as for a reader that opens the finished run."""
    run = _two_worker_run(tmp_path / "run", lambda s, meta: meta.update(mode="EVAL", mode_step=100 + s))
    fresh = create_trial(run)
    os.remove(os.path.join(run, "training_job_end.ts"))
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    shutil.move(index_path(run, 5), hidden / "i5")
    trial = create_trial(run)
    assert trial.mode_modestep(5) == (ModeKeys.EVAL, 100)  # (worker_0 has no step 5 yet: the next free one)
    shutil.move(hidden / "i5", index_path(run, 5))
    trial.refresh_data()
    assert trial.mode_modestep(5) == (ModeKeys.TRAIN, 5)
    everything = trial.steps(show_incomplete_steps=True)
    assert everything == fresh.steps() == list(range(12))
    assert [trial.mode_modestep(g) for g in everything] == [fresh.mode_modestep(g) for g in everything]
    assert trial.steps(mode=ModeKeys.EVAL, show_incomplete_steps=True) == [100 + s for s in range(6)]
    assert trial.steps(mode=ModeKeys.TRAIN, show_incomplete_steps=True) == list(range(6))
    for s in range(6):
        (f,) = trial.index_files_with_tensor("loss", 100 + s, ModeKeys.EVAL)
        assert (f.worker, f.step) == ("worker_1", s)


# --- F4: a record's own step, mode and mode step against its index ----------------------------------------------
@pytest.mark.parametrize("size", [1, 40_000])  # (40,000 float32: the large-record path that reads no copy)
def test_an_event_file_of_another_step_in_a_steps_place_is_damage(tmp_path, size):
    run = str(tmp_path / "run")
    write_run(run, range(5), tensors=lambda s, w: {"w": np.full(size, s, np.float32)})
    shutil.copy(event_path(run, 4), event_path(run, 3))  # same layout: every location still fits
    trial = create_trial(run)
    with pytest.raises(EventFileCorrupted, match="record is of step 4, not of step 3") as info:
        trial.tensor("w").value(3)
    assert info.value.step == 3 and info.value.path.endswith("000000000003_worker_0.tfevents")
    assert trial.tensor("w").value(4)[0] == 4


def test_an_index_meta_that_contradicts_its_records_mode_is_damage(tmp_path):
    run = _hook_run(tmp_path / "run", mode=ModeKeys.TRAIN)
    edit_index(run, 3, lambda doc: doc["meta"].update(mode="EVAL", mode_step=77))
    trial = create_trial(run)
    with pytest.raises(EventFileCorrupted, match="TRAIN step 3, but its index says EVAL step 77"):
        trial.tensor("loss").value(77, mode=ModeKeys.EVAL)


def test_a_mode_switched_within_a_step_leaves_records_that_agree_with_their_index(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    hook.set_mode(ModeKeys.TRAIN)
    for step in range(3):
        hook.begin_step()
        hook.record("loss", np.array([step], np.float32))
        hook.set_mode(ModeKeys.EVAL)  # (a validation loop begins before the next step does)
        hook.save_scalar("val_loss", float(step))
        hook.set_mode(ModeKeys.TRAIN)
        hook.end_step()
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert [float(trial.tensor("scalar/val_loss").value(s)[0]) for s in trial.steps()] == [0.0, 1.0, 2.0]


# --- F2 (reader): the collections say 2 workers, one name wrote, and it ended -------------------------------------
def _one_of_two_workers(root, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TEST_RANK", "0")
    monkeypatch.setenv("SMDEBUG_TEST_WORLD_SIZE", "2")
    run = _hook_run(root, steps=5, include_workers="all")
    monkeypatch.delenv("SMDEBUG_TEST_RANK")
    monkeypatch.delenv("SMDEBUG_TEST_WORLD_SIZE")
    assert os.listdir(os.path.join(run, "workers_ended")) == ["worker_0"]
    assert not os.path.exists(os.path.join(run, "training_job_end.ts"))
    return run


def test_fewer_workers_than_the_collections_say_all_ended_reads_as_ended_and_says_so(tmp_path, monkeypatch, caplog):
    run = _one_of_two_workers(tmp_path / "run", monkeypatch)
    monkeypatch.setenv("SMDEBUG_ENDED_WORKERS_WAIT", "0")
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        trial = create_trial(run, wait_for_collections=0.1)
    assert trial.loaded_all_steps and trial.steps() == [0, 1, 2, 3, 4]
    note = trial.missing_workers_note
    assert "2 workers" in note and "worker_0" in note and "one worker name" in note
    assert sum("one worker name" in r.getMessage() for r in caplog.records) == 1
    out = run_smdebug("ls", run)
    assert "(finished)" in out.stdout and "one worker name" in out.stdout


def test_a_late_second_worker_is_still_waited_for(tmp_path, monkeypatch):
    run = _one_of_two_workers(tmp_path / "run", monkeypatch)
    monkeypatch.setenv("SMDEBUG_ENDED_WORKERS_WAIT", "3600")  # the seen worker ended moments ago
    trial = create_trial(run, wait_for_collections=0.1)
    assert not trial.loaded_all_steps and "one worker name" in trial.missing_workers_note
    # a second worker that has started (its collections are there) but not ended: still training
    monkeypatch.setenv("SMDEBUG_ENDED_WORKERS_WAIT", "0")
    shutil.copy(os.path.join(run, "collections/000000000/worker_0_collections.json"),
                os.path.join(run, "collections/000000000/worker_1_collections.json"))
    trial = create_trial(run, wait_for_collections=0.1)
    assert not trial.loaded_all_steps and trial.missing_workers_note is None
