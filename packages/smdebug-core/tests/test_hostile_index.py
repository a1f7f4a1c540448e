"""Index files that would make the reader give one tensor's or step's data as another's, JSON that would
take gigabytes to parse, and command outputs aimed at a run's own files. Runs are written by the real
writers; only the part under attack is then changed, as someone with write access to the folder could."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from _hostile import edit_index, event_path, index_path, run_smdebug, write_simple_run
from _support import write_run
from smdebug.core import bounded_json
from smdebug.exceptions import CollectionFileCorrupted, EventFileCorrupted, IndexReaderException
from smdebug.trials import create_trial


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


# --- an index file where no writer puts one ------------------------------------------------------------------
@pytest.mark.parametrize("where", [
    "index/000000000/1_worker_0.json",  # no zero padding
    "index/000000000/\u0661_worker_0.json",  # ARABIC-INDIC DIGIT ONE: int() reads it as 1
    "index/000000000/" + "\uff10" * 11 + "\uff11_worker_0.json",  # fullwidth digits
    "index/000000005/000000000001_worker_0.json",  # another step's folder
    "index/elsewhere/deeper/000000000001_worker_0.json",
])
def test_a_second_index_of_a_step_under_another_name_is_refused_not_taken(tmp_path, where):
    run = write_simple_run(tmp_path / "run")
    dst = os.path.join(run, where)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy(index_path(run, 2), dst)  # step 2's index, under a name that reads as step 1
    with pytest.raises(IndexReaderException, match="Invalid File Found") as info:
        create_trial(run)
    assert where.rsplit("/", 1)[1] in str(info.value)
    trial = create_trial(run, skip_damaged=True)  # (skipped with a warning: step 1 keeps its own data)
    assert trial.steps() == [0, 1, 2]
    np.testing.assert_array_equal(trial.tensor("w").value(1), np.full(3, 1, np.float32))


def test_a_step_beyond_twelve_digits_is_where_the_writer_puts_it(tmp_path):
    step = 10 ** 13 + 7
    run = str(tmp_path / "run")
    write_run(run, [step], tensors=lambda s, w: {"w": np.full(2, 5, np.float32)})
    assert os.path.exists(index_path(run, step))
    trial = create_trial(run)
    assert trial.steps() == [step]
    np.testing.assert_array_equal(trial.tensor("w").value(step), np.full(2, 5, np.float32))


# --- an index that points at records that are not the tensor's ------------------------------------------------
@pytest.mark.parametrize("event_file", [
    "events/000000000000/000000000000_worker_0.tfevents",  # step 0's records
    "events/000000000002/000000000000_worker_0.tfevents",
    "index/000000000/000000000001_worker_0.json",
    "collections/000000000/worker_0_collections.json",
    "events/000000000002/000000000002_worker_1.tfevents",  # the same step's file of another worker
])
def test_an_index_naming_another_steps_event_file_is_refused(tmp_path, event_file):
    run = write_simple_run(tmp_path / "run")

    def point_elsewhere(doc):
        doc["meta"]["event_file_name"] = event_file

    edit_index(run, 2, point_elsewhere)
    with pytest.raises(IndexReaderException, match="is not the event file of step 2 of worker 'worker_0'") as info:
        create_trial(run).tensor("w").value(2)
    assert info.value.step == 2
    proc = run_smdebug("show", run, "w", "--step", "2")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "not the event file of step 2" in proc.stderr


@pytest.mark.parametrize("size", [3, 40_000])  # protobuf's path, and the zero-copy walk (64 KiB and more)
def test_index_entries_pointing_at_other_tensors_records_are_refused(tmp_path, size):
    run = str(tmp_path / "run")
    write_run(run, range(2), tensors=lambda s, w: {"w": np.full(size, 1, np.float32),
                                                   "b": np.full(size, 2, np.float32)})

    def swap(doc):  # (as offsets shifted by one record would do)
        entries = {e["tensorname"]: e for e in doc["tensor_payload"]}
        w, b = entries["w"], entries["b"]
        (w["start_idx"], w["length"]), (b["start_idx"], b["length"]) = (b["start_idx"], b["length"]), \
            (w["start_idx"], w["length"])

    edit_index(run, 1, swap)
    trial = create_trial(run)
    with pytest.raises(EventFileCorrupted, match="points at the record of 'b', not of 'w'") as info:
        trial.tensor("w").value(1)
    assert info.value.step == 1 and info.value.path.endswith(event_path("", 1).lstrip("/"))
    with pytest.raises(EventFileCorrupted, match="points at the record of 'w', not of 'b'"):
        trial.tensor("b").values()  # (read in one batch: the same check)
    np.testing.assert_array_equal(trial.tensor("w").value(0), np.full(size, 1, np.float32))


def test_names_the_index_puts_at_one_record_share_it(tmp_path):
    """The writer's aliases: one record indexed under several names (the XGBoost hook's SHAP matrix)."""
    from smdebug.core.modes import ModeKeys
    from smdebug.core.storage.factory import get_storage
    from smdebug.core.tfevent.step_writer import StepWriter

    run = str(tmp_path / "run")
    write_run(run, range(1), tensors=lambda s, w: {"w": np.zeros(2, np.float32)})
    writer = StepWriter(get_storage(run), 1, "worker_0", ModeKeys.TRAIN, 1)
    writer.write_tensor("m", np.arange(6, dtype=np.float32).reshape(2, 3), ModeKeys.TRAIN, 1)
    assert writer.write_alias("m_again", "m")
    writer.close()
    trial = create_trial(run)
    np.testing.assert_array_equal(trial.tensor("m_again").value(1), trial.tensor("m").value(1))


def test_stored_reductions_still_read_through_their_own_records(tmp_path):
    from smdebug.core.reductions import reduction_tensor_name

    run = str(tmp_path / "run")
    write_run(run, range(2), tensors=lambda s, w: {"w": np.arange(4, dtype=np.float32),
                                                   reduction_tensor_name("w", "max", False): np.float32(3)})
    trial = create_trial(run)
    assert trial.tensor("w").reduction_value(1, "max") == 3


# --- shapes an index holds ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, why", [
    ("123", "not a list"),
    ([-5, 3], "negative"),
    ([1] * 65, "not a list of at most 64"),
    ({"a": 1}, "not a list"),
])
def test_shapes_in_the_index_must_be_lists_of_sizes(tmp_path, shape, why):
    run = write_simple_run(tmp_path / "run")

    def set_shape(doc):
        doc["shape_payload"] = [{"tensorname": "w", "originalname": "w", "shape": shape}]

    edit_index(run, 1, set_shape)
    with pytest.raises(IndexReaderException, match=why):
        create_trial(run).tensor("w").shape(1)


# --- JSON that would take gigabytes to parse ------------------------------------------------------------------
def test_json_is_refused_when_parsing_it_could_exceed_the_budget():
    bomb = b"[" + b"[]," * 400_000 + b"[]]"  # 1.2 MB of text, about 30 MB of lists
    with pytest.raises(bounded_json.JsonTooLarge, match="400,002 arrays"):
        bounded_json.loads_bounded(bomb, budget=8 << 20)
    assert len(bounded_json.loads_bounded(bomb, budget=64 << 20)) == 400_001
    ordinary = json.dumps({"tensor_payload": [{"tensorname": f"t{i}", "start_idx": i * 100, "length": 100}
                                              for i in range(20_000)]}).encode()  # an index of 20,000 tensors
    assert len(bounded_json.loads_bounded(ordinary, budget=16 << 20)["tensor_payload"]) == 20_000


def test_index_and_collections_bombs_are_refused_with_the_files_named(tmp_path, monkeypatch):
    monkeypatch.setattr(bounded_json, "MAX_PARSE_BYTES", 8 << 20)
    run = write_simple_run(tmp_path / "run")
    bomb = b'{"meta": {"mode": "GLOBAL", "mode_step": 1}, "tensor_payload": [' + b"[]," * 400_000 + b"[]]}"
    with open(index_path(run, 1), "wb") as f:
        f.write(bomb)
    with pytest.raises(IndexReaderException, match="Index file refused: parsing it could take") as info:
        create_trial(run).tensor_names()
    assert info.value.step == 1
    from _hostile import collections_path

    with open(collections_path(run), "wb") as f:
        f.write(b'{"collections": {"x": {"include_regex": [' + b"[]," * 400_000 + b"[]]}}}")
    with pytest.raises(CollectionFileCorrupted, match="Collections file refused"):
        create_trial(run)


def test_a_rule_results_bomb_is_refused_by_the_report(tmp_path, monkeypatch):
    from smdebug.cli.report.verdicts import RuleResultsError, parse

    monkeypatch.setattr(bounded_json, "MAX_PARSE_BYTES", 8 << 20)
    text = '{"rules": [' + "[]," * 400_000 + "[]]}"
    with pytest.raises(RuleResultsError, match="results.json refused: parsing it could take"):
        parse(text, "results.json")


# --- command outputs aimed at the run's own files -------------------------------------------------------------
@pytest.mark.parametrize("command, target", [
    (["report", "{run}", "-o"], "events/000000000001/000000000001_worker_0.tfevents"),
    (["report", "{run}", "-o"], "collections/000000000/worker_0_collections.json"),
    (["report", "{run}", "-o"], "training_job_end.ts"),
    (["plot", "{run}", "w", "-o"], "index/000000000/report.png"),
    (["rules", "run", "{run}", "--rule", "exploding_tensor", "--output"], "index/000000000/000000000001_worker_0.json"),
])
def test_outputs_are_never_written_over_the_runs_own_files(tmp_path, command, target):
    if command[0] == "rules":
        pytest.importorskip("smdebug.rules")  # (the rules command comes with smdebug-rules)
    run = write_simple_run(tmp_path / "run")
    path = os.path.join(run, target)
    before = open(path, "rb").read() if os.path.exists(path) else None
    proc = run_smdebug(*[a.format(run=run) for a in command], path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "refusing to write" in proc.stderr and "which the run's hook wrote" in proc.stderr
    assert (open(path, "rb").read() if os.path.exists(path) else None) == before
    np.testing.assert_array_equal(create_trial(run).tensor("w").value(1), np.full(3, 1, np.float32))


def test_outputs_beside_the_runs_own_files_are_written(tmp_path):
    run = write_simple_run(tmp_path / "run")
    proc = run_smdebug("report", run, "-o", os.path.join(run, "report.html"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert os.path.getsize(os.path.join(run, "report.html")) > 0
    # (a folder named like a run's part, in a folder that holds no run, is just a folder)
    elsewhere = tmp_path / "site" / "index"
    elsewhere.mkdir(parents=True)
    proc = run_smdebug("report", run, "-o", str(elsewhere / "report.html"))
    assert proc.returncode == 0, proc.stderr[-2000:]
