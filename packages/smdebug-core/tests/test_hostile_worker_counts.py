"""A collections file whose ``_meta.num_workers`` no writer writes (red team 10).

10^18 workers was refused only once the run had ended (MissingCollectionFiles after listing for them); while
the run had no end marker every step was "not complete yet", waiting for workers that cannot exist, so
``smdebug show`` said the tensor "has no saved step" of a run holding five. ``true`` was read as one worker and
``2.7`` as two (Python's bool is an int; int() truncates). Each is CollectionFileCorrupted naming the file and
the value, from the API and as one line from the CLI. The run is written by the real writer; only its
collections file is edited, and its end marker removed where the run must look live.
"""

from __future__ import annotations

import os

import pytest

from _hostile import edit_collections, run_smdebug, write_simple_run
from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.exceptions import CollectionFileCorrupted
from smdebug.trials import create_trial


def _run_claiming(tmp_path, num_workers, live: bool) -> str:
    run = write_simple_run(tmp_path / "run", steps=range(5))

    def claim(doc):
        doc["_meta"]["num_workers"] = num_workers

    edit_collections(run, claim)
    if live:
        os.unlink(os.path.join(run, END_OF_JOB_FILE))
    return run


@pytest.mark.parametrize("num_workers", [10**18, 1e18, 2**63, True, 2.7, "2"])
@pytest.mark.parametrize("live", [True, False], ids=["live", "ended"])
def test_worker_counts_no_writer_writes_make_the_collections_file_corrupted(tmp_path, num_workers, live):
    run = _run_claiming(tmp_path, num_workers, live)
    with pytest.raises(CollectionFileCorrupted, match="num_workers") as e:
        create_trial(run)
    assert "worker_0_collections.json" in str(e.value)


def test_the_cli_says_so_in_one_line_for_a_live_run(tmp_path):
    run = _run_claiming(tmp_path, 10**18, live=True)
    done = run_smdebug("show", run, "w")
    assert done.returncode != 0
    assert "more workers than any run holds" in done.stderr and "Traceback" not in done.stderr
    assert "has no saved step" not in done.stderr + done.stdout


@pytest.mark.parametrize("num_workers", [1, 3, 3.0, 1 << 24])
def test_worker_counts_writers_write_still_read(tmp_path, num_workers):
    run = _run_claiming(tmp_path, num_workers, live=True)
    trial = create_trial(run, wait_for_collections=0.1)  # (the other workers of a live run are not waited for)
    assert trial.num_workers == int(num_workers)
