"""Trials: steps, modes, workers, completeness, live refresh, lazy loading and damaged files.

Every test that reads a run takes ``run_loc``: it runs once on a local directory and once on S3 (a moto
server over HTTP), with the same expectations.
"""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression, write_run
from smdebug import SaveConfig, modes
from smdebug.analysis.utils import no_refresh, refresh
from smdebug.core.access_layer.utils import has_training_ended
from smdebug.core.tensor import StepState
from smdebug.exceptions import (
    CollectionFileCorrupted,
    EventFileCorrupted,
    IndexReaderException,
    InvalidWorker,
    MissingCollectionFiles,
    MissingEventFile,
    NoMoreData,
    SMDebugNotImplementedError,
    SMDebugValueError,
    StepNotYetAvailable,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.trials import LocalTrial, S3Trial, create_trial

HERE = os.path.dirname(__file__)


@pytest.fixture(autouse=True)
def fast_end_refresh(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def open_trial(path, **kw):
    kw.setdefault("wait_for_collections", 10)
    kw.setdefault("poll_interval", 0.05)
    return create_trial(str(path), **kw)


def test_create_trial_basics(run_loc):
    write_run(run_loc, range(3))
    t = create_trial(f"  {run_loc}  ")
    assert isinstance(t, S3Trial if run_loc.is_s3 else LocalTrial) and t.name == "run"
    assert t.steps() == [0, 1, 2] and t.workers() == ["worker_0"] and t.num_workers == 1
    assert has_training_ended(str(run_loc))
    assert {k: v.tolist() for k, v in t.tensor("w").values().items()} == {0: [0] * 3, 1: [1] * 3, 2: [2] * 3}
    with pytest.raises(TensorUnavailable):
        t.tensor("nope")
    assert not t.has_tensor("nope")
    with pytest.raises(SMDebugNotImplementedError):
        t.tensor("w").step(0)
    assert t.tensor("w").prev_steps(2, 2) == [1, 2]
    assert t.tensor("w").workers(1) == ["worker_0"]
    with pytest.raises(InvalidWorker):
        t.tensor("w").value(1, worker="worker_9")


def test_step_errors_on_finished_run(run_loc):
    write_run(run_loc, [0, 1, 2, 3], tensors=lambda s, w: {"w": np.ones(2)} if s % 2 == 0 else {"v": np.ones(1)})
    t = open_trial(run_loc)
    with pytest.raises(StepUnavailable):
        t.tensor("w").value(10)
    with pytest.raises(TensorUnavailableForStep):
        t.tensor("w").value(1)
    with pytest.raises(NoMoreData) as info:
        t.wait_for_steps([10])
    assert info.value.last_step == 3 and "Max step available is 3" in str(info.value)
    assert t.has_passed_step(10) == StepState.UNAVAILABLE


def test_has_passed_step_single_worker_missing_step(run_loc):
    write_run(run_loc, [0, 1, 2, 3, 5, 6], end=False)
    t = open_trial(run_loc)
    assert t.has_passed_step(4) == StepState.UNAVAILABLE
    assert t.has_passed_step(8) == StepState.NOT_YET_AVAILABLE
    assert t.has_passed_step(5) == StepState.AVAILABLE
    with pytest.raises(StepUnavailable):
        t.wait_for_steps([3, 4])
    with pytest.raises(TimeoutError):
        t.wait_for_steps([7], timeout=0.3)
    with pytest.raises(StepNotYetAvailable):
        t.tensor("w").value(7)
    run_loc.write(END_OF_JOB_FILE, b"")
    t.refresh_data()
    assert t.has_passed_step(8) == StepState.UNAVAILABLE
    with pytest.raises(NoMoreData):
        t.wait_for_steps([2, 7])
    with pytest.raises(StepUnavailable):
        t.wait_for_steps([4])


def test_has_passed_step_two_modes(run_loc):
    def mode_of(step):
        return (modes.TRAIN, step) if step <= 30 else (modes.EVAL, step - 40)

    write_run(run_loc, [0, 10, 20, 30] + list(range(40, 71)), mode_of=mode_of, end=False)
    t = open_trial(run_loc)
    assert t.steps(modes.TRAIN) == [0, 10, 20, 30]
    assert t.has_passed_step(23, modes.TRAIN) == StepState.UNAVAILABLE
    assert t.has_passed_step(40, modes.TRAIN) == StepState.NOT_YET_AVAILABLE
    assert t.has_passed_step(30, modes.EVAL) == StepState.AVAILABLE
    assert t.has_passed_step(80) == StepState.NOT_YET_AVAILABLE
    assert t.tensor_names(step=5, mode=modes.EVAL) == ["w"]
    np.testing.assert_array_equal(t.tensor("w").value(5, mode=modes.EVAL), t.tensor("w").value(45))


def test_two_workers_missing_steps_and_completeness(run_loc):
    # worker_1 misses steps 3 and 4 but wrote 5: those steps are complete (a later step completed)
    write_run(run_loc, range(6), workers=("worker_0", "worker_1"), end=False,
              skip=lambda s, w: w == "worker_1" and s in (3, 4),
              tensors=lambda s, w: {"w": np.full(2, s * 10 + int(w[-1]), np.float32)})
    t = open_trial(run_loc)
    assert t.workers() == ["worker_0", "worker_1"] and t.num_workers == 2
    assert t.steps() == [0, 1, 2, 3, 4, 5]
    assert all(t.has_passed_step(s) == StepState.AVAILABLE for s in range(6))
    assert t.tensor("w").workers(3) == ["worker_0"]
    assert t.tensor("w").workers(5) == ["worker_0", "worker_1"]
    np.testing.assert_array_equal(t.tensor("w").value(5, worker="worker_1"), [51, 51])
    np.testing.assert_array_equal(t.tensor("w").value(5), [50, 50])  # smallest worker by default


def test_two_workers_one_stopped(run_loc):
    write_run(run_loc, range(6), workers=("worker_0", "worker_1"), end=False,
              skip=lambda s, w: w == "worker_1" and s > 2)
    t = open_trial(run_loc)
    assert t.steps() == [0, 1, 2]
    assert t.last_complete_step == 2
    assert t.steps(show_incomplete_steps=True) == [0, 1, 2, 3, 4, 5]
    assert t.has_passed_step(4) == StepState.NOT_YET_AVAILABLE
    t.treat_as_ended()  # a documented way to read a crashed run to its end
    assert t.steps() == [0, 1, 2, 3, 4, 5]


def test_three_workers_window_gives_up_on_old_incomplete_steps(run_loc, monkeypatch):
    monkeypatch.setenv("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW", "10")
    write_run(run_loc, range(20), workers=("a", "b", "c"), end=False, skip=lambda s, w: w != "a")
    t = open_trial(run_loc)
    assert t.last_complete_step >= 4
    first = t.last_complete_step
    t.refresh_data()
    assert t.last_complete_step >= first


def test_window_moves_on_at_every_refresh_of_a_stalled_run(run_loc, monkeypatch):
    """Workers b and c never wrote (a live run, no end marker): each look at the run gives up on another
    half window of incomplete steps, new files or not, until fewer than a window remain; the last index
    token is named after the run's last worker, as 1.0.x named it."""
    monkeypatch.setenv("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW", "10")
    write_run(run_loc, range(20), workers=("worker_0", "worker_1", "worker_2"), end=False,
              skip=lambda s, w: w != "worker_0")
    t = open_trial(run_loc)
    assert t.last_complete_step == 4
    assert t.last_index_token.endswith("index/000000000/000000000004_worker_2.json")
    assert t.workers() == ["worker_0", "worker_1", "worker_2"]  # looks for new data first
    assert t.last_complete_step == 9
    assert t.steps(show_incomplete_steps=True) == list(range(20))
    assert t.steps() == list(range(10))
    t.tensor_names()
    t.refresh_data()
    assert t.last_complete_step == 9  # 19 - 9 is not more than the window
    assert t.last_index_token.endswith("index/000000000/000000000009_worker_2.json")


def test_real_multi_process_run_with_missing_step(run_loc):
    """Two worker processes with include_workers='all'; worker 1 skips step 3."""
    code = textwrap.dedent(
        f"""
        import os, numpy as np
        from _support import NumpyHook
        from smdebug import SaveConfig
        rank = int(os.environ["SMDEBUG_TEST_RANK"])
        hook = NumpyHook(out_dir={str(run_loc)!r}, save_config=SaveConfig(save_interval=1),
                         include_collections=["weights"], include_workers="all")
        for step in range(6):
            hook.begin_step()
            if not (rank == 1 and step == 3):
                hook.record("weights/w", np.full(4, step * 10 + rank, np.float32))
            hook.end_step()
        hook.close()
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code],
                         env={**os.environ, "PYTHONPATH": HERE, "SMDEBUG_TEST_RANK": str(r), "SMDEBUG_TEST_WORLD_SIZE": "2",
                              "TRAINING_JOB_NAME": "no-end-marker"})
        for r in range(2)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    t = open_trial(run_loc)
    assert t.workers() == ["worker_0", "worker_1"] and t.num_workers == 2
    assert not t.loaded_all_steps
    assert t.steps() == [0, 1, 2, 3, 4, 5]
    w = t.tensor("weights/w")
    assert w.workers(3) == ["worker_0"]
    assert w.workers(4) == ["worker_0", "worker_1"]
    np.testing.assert_array_equal(w.value(4, worker="worker_1"), np.full(4, 41))
    df = w.to_dataframe(workers="all")
    assert len(df) == 11 and set(df.worker) == {"worker_0", "worker_1"}


def test_live_trial_while_training(run_loc, tmp_path):
    go = tmp_path / "go"
    code = textwrap.dedent(
        f"""
        import os, time
        from _support import NumpyHook, train_logistic_regression
        from smdebug import SaveConfig
        hook = NumpyHook(out_dir={str(run_loc)!r}, save_config=SaveConfig(save_interval=1))

        def pace(step):
            # Step 5 waits for the reader's go (not for a time: a loaded machine must not reorder the test).
            while step == 5 and not os.path.exists({str(go)!r}):
                time.sleep(0.01)
            time.sleep(0.05)

        train_logistic_regression(hook, steps=12, on_step=pace)
        hook.close()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": HERE})
    try:
        t = open_trial(run_loc, wait_for_collections=60)
        seen = []
        t.wait_for_steps([3], timeout=60)
        seen.append(len(t.steps()))
        assert not t.loaded_all_steps
        assert t.has_passed_step(11) == StepState.NOT_YET_AVAILABLE
        go.write_text("")
        with no_refresh(t):
            frozen = t.steps()
            time.sleep(1.0)  # the writer goes on meanwhile
            assert t.steps() == frozen
        t.wait_for_steps([11], timeout=60)
        seen.append(len(t.steps()))
        assert proc.wait(timeout=60) == 0
        with pytest.raises(NoMoreData):
            t.wait_for_steps([12], timeout=30)
        assert t.loaded_all_steps and t.steps() == list(range(12))
        assert seen[0] < 12 and seen == sorted(seen)
        loss = t.tensor("loss").values()
        assert len(loss) == 12 and loss[11] < loss[0]  # the model actually trained
    finally:
        proc.kill()


def test_refresh_context_managers_restore_state(run_loc):
    write_run(run_loc, range(2))
    t = open_trial(run_loc)
    with no_refresh(t):
        assert not t.dynamic_refresh
    assert t.dynamic_refresh
    with refresh([t]):
        assert t.dynamic_refresh
    assert t.dynamic_refresh


def test_opening_reads_no_payloads_and_value_reads_one_step(run_loc):
    write_run(run_loc, range(50), tensors=lambda s, w: {f"t{i}": np.full(2, s, np.float32) for i in range(20)})
    t = open_trial(run_loc)
    assert t.steps() == list(range(50))
    files = [f for step in t._files.values() for f in step.values()]
    assert not any(f.parsed for f in files)
    np.testing.assert_array_equal(t.tensor("t3").value(40), [40, 40])
    assert sum(f.parsed for f in files) <= 2  # found t3 in the first file, then step 40
    assert len(t.tensor_names()) == 20


def test_tensor_names_filters(run_loc):
    hook = NumpyHook(out_dir=str(run_loc), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses", "biases"])
    train_logistic_regression(hook, steps=2)
    hook.close()
    t = open_trial(run_loc)
    assert t.tensor_names(regex="^gradient") == ["gradient/biases/b", "gradient/weights/w"]
    assert t.tensor_names(regex=["loss", "^biases"]) == ["biases/b", "loss"]
    assert t.tensor_names(collection="losses") == ["loss"]
    assert t.tensor_names(collection=t.collection("biases")) == ["biases/b"]
    assert t.tensor_names(step=1) == sorted(t.tensor_names())
    assert t.tensor_names(regex="zzz") == []
    with pytest.raises(ValueError):
        t.tensor_names(regex="a", collection="losses")
    with pytest.raises(StepUnavailable):
        t.tensor_names(step=7)
    # a collection the run does not have: created empty and kept by the trial (as in smdebug 1.0.x), so it
    # can be defined for later queries; the run's files are untouched
    assert t.collection("no_such").tensor_names == set() and "no_such" in t.collections()
    t.collection("mine").include("^bias")
    t.collection("mine").add_tensor_name("loss")
    assert t.tensor_names(collection="mine") == ["biases/b", "loss"]
    assert "mine" not in open_trial(run_loc).collections()


def test_range_steps(run_loc):
    write_run(run_loc, range(10))
    t = open_trial(run_loc, range_steps=(3, 7))
    assert t.steps() == [3, 4, 5, 6]
    for bad in [(5, 2), (-1, 3), ("a", None), 5]:
        with pytest.raises(SMDebugValueError):
            create_trial(str(run_loc), range_steps=bad)


def test_dataframe(run_loc):
    hook = NumpyHook(out_dir=str(run_loc), save_config=SaveConfig(save_interval=2),
                     include_collections=["weights", "losses"])
    train_logistic_regression(hook, steps=6, mode=modes.TRAIN)
    hook.close()
    t = open_trial(run_loc)
    df = t.tensor("loss").to_dataframe()
    assert list(df.step) == [0, 2, 4] and list(df["mode"]) == ["TRAIN"] * 3
    assert df.value.is_monotonic_decreasing
    norms = t.tensor("weights/w").to_dataframe(reduction="l2")
    assert norms.value.iloc[0] == 0.0 and norms.value.iloc[-1] > 0


def test_tmp_files_are_ignored(run_loc):
    write_run(run_loc, range(2))
    run_loc.write("index/000000000/000000000002_worker_0.json.tmp", "{partial")
    assert open_trial(run_loc).steps() == [0, 1]


# --- damaged runs ---------------------------------------------------------------------------

INDEX = "index/000000000/{:012d}_worker_0.json"
EVENTS = "events/{0:012d}/{0:012d}_worker_0.tfevents"


def test_garbage_index_file(run_loc):
    write_run(run_loc, range(4))
    run_loc.write(INDEX.format(2), "garbage")
    with pytest.raises(IndexReaderException) as info:
        open_trial(run_loc)
    assert info.value.step == 2 and info.value.path.endswith("000000000002_worker_0.json")
    t = open_trial(run_loc, skip_damaged=True)
    assert t.steps() == [0, 1, 3]


def test_garbage_index_payload_found_lazily(run_loc):
    write_run(run_loc, range(4))
    run_loc.write(INDEX.format(1),
                  '{"meta": {"mode": "GLOBAL", "mode_step": 1, "event_file_name": "events/000000000001/000000000001_worker_0.tfevents"}, "tensor_payload": [{"oops": 1}]}')
    t = open_trial(run_loc)
    with pytest.raises(IndexReaderException, match="malformed") as info:
        t.tensor_names()
    assert info.value.step == 1
    t2 = open_trial(run_loc, skip_damaged=True)
    assert t2.tensor_names() == ["w"] and t2.tensor("w").steps() == [0, 2, 3]


def test_invalid_file_name_in_index(run_loc):
    write_run(run_loc, range(4))
    run_loc.write("index/000000000/notes.json", "{}")
    with pytest.raises(IndexReaderException, match="Invalid File Found"):
        open_trial(run_loc)


def test_truncated_and_flipped_event_files(run_loc):
    write_run(run_loc, range(4))
    run_loc.write(EVENTS.format(1), run_loc.read(EVENTS.format(1))[:-10])
    flipped = bytearray(run_loc.read(EVENTS.format(2)))
    flipped[len(flipped) // 2] ^= 0xFF
    run_loc.write(EVENTS.format(2), bytes(flipped))
    t = open_trial(run_loc)
    with pytest.raises(EventFileCorrupted, match="past the end") as info:
        t.tensor("w").value(1)
    assert info.value.step == 1 and info.value.path.endswith("000000000001_worker_0.tfevents")
    with pytest.raises(EventFileCorrupted, match="checksum") as info:
        t.tensor("w").value(2)
    assert info.value.step == 2
    np.testing.assert_array_equal(t.tensor("w").value(3), [3, 3, 3])  # the rest stays usable


def test_missing_event_file(run_loc):
    write_run(run_loc, range(4))
    run_loc.remove(EVENTS.format(1))
    t = open_trial(run_loc)
    with pytest.raises(MissingEventFile) as info:
        t.tensor("w").value(1)
    assert isinstance(info.value, TensorUnavailableForStep)
    assert info.value.path.endswith("000000000001_worker_0.tfevents") and info.value.step == 1


def test_bad_collection_files(run_loc):
    write_run(run_loc, range(2))
    cfile = "collections/000000000/worker_0_collections.json"
    run_loc.write(cfile, '{"collections": {}, "_meta": {"num_workers": 1}, "surprise": true}')
    with pytest.raises(CollectionFileCorrupted, match="unknown top-level keys") as info:
        open_trial(run_loc)
    assert info.value.path.endswith("worker_0_collections.json")
    run_loc.write(cfile, "{")
    with pytest.raises(CollectionFileCorrupted, match="not valid JSON"):
        open_trial(run_loc)


def test_missing_collection_files(run_loc):
    write_run(run_loc, range(2), workers=("worker_0",), num_workers=2)
    with pytest.raises(MissingCollectionFiles):
        open_trial(run_loc)
    with pytest.raises(MissingCollectionFiles):
        open_trial(run_loc.sub("empty"), wait_for_collections=0.2)


def test_has_passed_step_looks_for_new_steps(run_loc):
    write_run(run_loc, [0, 1], end=False)
    t = open_trial(run_loc)
    assert t.has_passed_step(2) == StepState.NOT_YET_AVAILABLE
    write_run(run_loc, [2], end=False)
    assert t.has_passed_step(2) == StepState.AVAILABLE  # no explicit refresh needed
    with no_refresh(t):
        write_run(run_loc, [3], end=False)
        assert t.has_passed_step(3) == StepState.NOT_YET_AVAILABLE
    assert t.has_passed_step(3) == StepState.AVAILABLE


def test_legacy_trial_constructors_and_index_token(run_loc):
    import pathlib

    from smdebug.core.storage.base import parse_s3_path

    write_run(run_loc, [0, 1, 2])
    if run_loc.is_s3:
        bucket, prefix = parse_s3_path(run_loc.path)
        t = S3Trial(name="r", bucket_name=bucket, prefix_name=prefix)
        expected_token = f"{prefix.rstrip('/')}/index/000000000/000000000002_worker_0.json"
    else:
        t = LocalTrial(name="r", dirname=pathlib.Path(run_loc.path))
        expected_token = os.path.join(run_loc.path, "index/000000000/000000000002_worker_0.json")
        assert LocalTrial("r", run_loc.path).steps() == [0, 1, 2]
        with pytest.raises(ValueError):
            LocalTrial(name="r", path=run_loc.path, dirname=run_loc.path)
    assert t.steps() == [0, 1, 2] and t.loaded_all_steps
    assert t.last_index_token == expected_token
    t.training_end_delay_refresh = 0.25
    assert t.end_delay_refresh == 0.25


def test_index_files_without_an_event_file(run_loc):
    """Index files whose meta.event_file_name is "" (smdebug 1.0.x's own test helpers write them): steps,
    modes and names are read; a value, which such a file cannot locate, is reported unavailable."""
    import json

    write_run(run_loc, [], end=True)
    for step, (mode, mode_step) in enumerate([("TRAIN", 0), ("TRAIN", 10), ("EVAL", 0)]):
        doc = {"meta": {"mode": mode, "mode_step": mode_step, "event_file_name": ""},
               "tensor_payload": [{"tensorname": "gradients/dummy:0", "start_idx": 0, "length": 1}]}
        run_loc.write(f"index/000000000/{step:012d}_worker_0.json", json.dumps(doc))
    t = open_trial(run_loc)
    assert t.steps() == [0, 1, 2] and t.steps(modes.TRAIN) == [0, 10] and t.steps(modes.EVAL) == [0]
    assert t.has_passed_step(5, modes.TRAIN) == StepState.UNAVAILABLE
    assert t.tensor_names() == ["gradients/dummy:0"]
    with pytest.raises(TensorUnavailableForStep, match="gradients/dummy:0"):
        t.tensor("gradients/dummy:0").value(1)
