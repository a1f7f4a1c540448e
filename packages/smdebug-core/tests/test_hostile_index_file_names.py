"""A file in a run's index folder whose name is not a step file's: the refusal says the name is the problem
and shows it escaped (bytes that are not UTF-8, control characters), so the user can find and remove it.
Runs are written by the real writers; the stray file is then added, as someone with write access could."""

from __future__ import annotations

import os

import pytest

from _hostile import index_path, run_smdebug, write_simple_run
from smdebug.exceptions import IndexReaderException
from smdebug.trials import create_trial


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


@pytest.mark.parametrize("name, shown", [
    (b"\xff.json", "\\udcff.json"),  # not UTF-8 (Python reads it as a lone surrogate)
    (b"00000000000\xff_worker_0.json", "00000000000\\udcff_worker_0.json"),  # a step that is not digits
    (b"a\x1b[31mb.json", "a\\x1b[31mb.json"),  # a terminal escape sequence
])
def test_a_stray_index_file_name_is_named_as_the_problem(tmp_path, name, shown):
    run = write_simple_run(tmp_path / "run")
    folder = os.path.dirname(index_path(run, 0))
    with open(os.path.join(os.fsencode(folder), name), "wb") as f:
        f.write(b"{}")
    with pytest.raises(IndexReaderException) as info:
        create_trial(run)
    message = str(info.value)
    assert f"the file name '{shown}' is not a step's file name" in message
    assert "not UTF-8" in message

    done = run_smdebug("ls", run)  # the command line says the same, on one line
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "\x1b" not in done.stderr
    assert f"the file name '{shown}'" in done.stderr

    trial = create_trial(run, skip_damaged=True)  # (a stray file skipped: the run reads as written)
    assert trial.steps() == [0, 1, 2]
