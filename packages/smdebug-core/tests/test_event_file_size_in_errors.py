"""An index that places a record past the end of its event file says the file's real size (probe 14c F7).

The message said the record's start offset for the size whenever the file ends before the record begins: an
emptied event file "has 2733" bytes. The run is written by the real writer; only its event file is cut."""

from __future__ import annotations

import os

import pytest

from smdebug.exceptions import EventFileCorrupted
from smdebug.trials import create_trial

from _hostile import event_path, write_simple_run


@pytest.fixture
def run(tmp_path):
    return write_simple_run(tmp_path / "run", names=("w", "x", "y"), steps=range(3))


def _cut(path: str, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def _last_record_start(trial, step: int) -> int:
    f = trial.index_file_for("y", step, "GLOBAL", None)
    return f.location("y")[0]


@pytest.mark.parametrize("keep", ["nothing", "a third", "all but one byte"])
def test_the_error_says_how_long_the_file_is(run, keep):
    trial = create_trial(run)
    path = event_path(run, 1)
    start = _last_record_start(trial, 1)
    size = {"nothing": 0, "a third": start // 3, "all but one byte": os.path.getsize(path) - 1}[keep]
    _cut(path, size)
    with pytest.raises(EventFileCorrupted) as e:
        trial.tensor("y").value(1)
    assert f"the file has {size:,} bytes" in str(e.value), str(e.value)
    assert e.value.step == 1


def test_reading_many_steps_at_once_says_it_too(run):
    trial = create_trial(run)
    _cut(event_path(run, 2), 0)
    with pytest.raises(EventFileCorrupted) as e:
        trial.tensor("y").values()
    assert "the file has 0 bytes" in str(e.value), str(e.value)
    assert e.value.step == 2
