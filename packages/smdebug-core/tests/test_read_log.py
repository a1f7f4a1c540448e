"""``Trial.read_log()``: what a reader read from a trial, and the unreadable data it met even when it caught
the exception -- so "not saved" (skip) and "saved but unreadable" (an error) can be told apart. Also the
trial's own helpers that used to skip a missing event file as if the tensor had not been saved."""

import numpy as np
import pytest

from _support import write_run
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import EventFileCorrupted, MissingEventFile, TensorUnavailableForStep
from smdebug.trials import create_trial

EVENTS = "events/{0:012d}/{0:012d}_worker_0.tfevents"


@pytest.fixture(autouse=True)
def fast_end_refresh(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def test_values_read_are_recorded_while_a_log_is_open(run_loc):
    write_run(run_loc, range(3), tensors=lambda step, w: {"w": np.full(3, step, np.float32),
                                                          "b": np.ones(2, np.float32)})
    trial = create_trial(str(run_loc), cache=True)
    trial.tensor("w").value(0)  # no log open: nothing kept
    with trial.read_log() as log:
        trial.tensor("w").value(0)  # cached value: still a value the reader got
        trial.tensor("b").reduction_value(1, "mean")
        trial.tensor("w").values()
        trial.tensor_names()  # the index only
    assert (log.values, log.tensors, log.steps, log.damage) == (5, {"w", "b"}, {0, 1, 2}, [])
    with trial.read_log() as nothing:
        trial.tensor("w").steps()
    assert nothing.values == 0 and trial._read_logs == []


def test_unreadable_data_is_recorded_even_when_the_reader_swallows_it(run_loc):
    write_run(run_loc, range(3))
    run_loc.remove(EVENTS.format(1))
    run_loc.write(EVENTS.format(2), run_loc.read(EVENTS.format(2))[:-9] + b"\0" * 9)  # a damaged record
    trial = create_trial(str(run_loc))
    with trial.read_log() as log:
        for step in range(3):
            try:
                trial.tensor("w").value(step)
            except TensorUnavailableForStep:  # meant for "not saved"; MissingEventFile is a subclass
                pass
            except Exception:  # noqa: BLE001 - a careless reader
                pass
    assert log.values == 1 and [type(e) for e in log.damage] == [MissingEventFile, EventFileCorrupted]
    assert [e.step for e in log.damage] == [1, 2] and log.damage[0].path.endswith(EVENTS.format(1))


def test_bulk_reads_record_a_missing_file_too(run_loc):
    write_run(run_loc, range(3))
    run_loc.remove(EVENTS.format(2))
    trial = create_trial(str(run_loc))
    with trial.read_log() as log, pytest.raises(MissingEventFile):
        trial.tensor("w").values()
    assert [e.step for e in log.damage] == [2]


def test_a_missing_event_file_is_not_taken_for_an_unsaved_tensor(run_loc):
    modes = lambda step: (ModeKeys.TRAIN, step)  # noqa: E731
    write_run(run_loc, range(2), mode_of=modes,
              tensors=lambda step, w: {"labels_0": np.arange(3), "predictions_0": np.arange(3)})
    run_loc.remove(EVENTS.format(1))
    trial = create_trial(str(run_loc))
    np.testing.assert_array_equal(trial.labels(0)[0], [0, 1, 2])
    with pytest.raises(MissingEventFile):
        trial.labels(1)
    with pytest.raises(MissingEventFile):
        trial.tensor("predictions_0").to_dataframe()
    skipping = create_trial(str(run_loc), skip_damaged=True)
    assert skipping.labels(1) == [] and list(skipping.tensor("labels_0").to_dataframe()["step"]) == [0]
