"""An index entry's ``length`` is a claim about the record it points at; the record's own 12-byte header
(length and its checksum) says how long it really is. An index claiming 6 GiB of an event file made as large
as that at no cost (sparse, ``os.truncate``) made the reader map 6 GiB (5 GB resident) and then return the
right value, the damage unseen (red-team pass 4, F2). The two must agree: ``EventFileCorrupted`` naming the
event file and the step otherwise, read before the claimed bytes are. Runs are written by the real writer;
only the index entry and the event file's size are changed. The large cases run in fresh processes under an
address-space limit, so a regression fails the test instead of taking the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from _hostile import HERE, event_path, run_smdebug, set_location, write_simple_run
from smdebug.core.tfevent.records import HEADER_SIZE, check_index_length, encode_record, record_size
from smdebug.exceptions import EventFileCorrupted
from smdebug.trials import create_trial

GIB = 1 << 30
@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _location(run, step: int, name: str):
    from _hostile import index_path

    with open(index_path(run, step)) as f:
        doc = json.load(f)
    item = next(i for i in doc["tensor_payload"] if i["tensorname"] == name)
    return item["start_idx"], item["length"]


def _claim(run, step: int, name: str, length: int, file_size: int = 0):
    """Make the index of ``step`` claim ``length`` bytes for ``name``'s record; the event file grows to
    ``file_size`` bytes (sparse: the holes cost nothing) so that the claim lies inside it."""
    start, real = _location(run, step, name)
    set_location(run, step, name, start, length)
    os.truncate(event_path(run, step), file_size)
    return start, real


# --- the framing helpers --------------------------------------------------------------------------------------
def test_the_header_says_how_long_its_record_is():
    record = encode_record(b"x" * 100)
    assert record_size(record[:HEADER_SIZE]) == len(record)
    check_index_length(record[:HEADER_SIZE], 0, len(record))
    with pytest.raises(EventFileCorrupted, match="index says the record at byte 7 is 6442450944 bytes long, "
                                                 f"but the record's own header says {len(record)}") as info:
        check_index_length(record[:HEADER_SIZE], 7, 6 * GIB, "/run/events/x.tfevents", 3)
    assert (info.value.path, info.value.step) == ("/run/events/x.tfevents", 3)
    forged = (6 * GIB).to_bytes(8, "little") + record[8:HEADER_SIZE]  # (a length whose checksum fails)
    with pytest.raises(EventFileCorrupted, match="length checksum mismatch at byte 0"):
        record_size(forged)
    with pytest.raises(EventFileCorrupted, match="Truncated record header"):
        record_size(record[:5])


# --- a small claim: caught where the record is decoded ---------------------------------------------------------
@pytest.mark.parametrize("extra", [1, 64, 4096])
def test_an_index_length_longer_than_the_record_is_refused(tmp_path, extra):
    run = write_simple_run(tmp_path / "run", names=["w", "v"])
    real = _location(run, 1, "w")[1]
    _claim(run, 1, "w", real + extra, os.path.getsize(event_path(run, 1)) + 8192)
    trial = create_trial(run)
    with pytest.raises(EventFileCorrupted, match=f"record is {real + extra} bytes long, but the record's own "
                                                 f"header says {real}") as info:
        trial.tensor("w").value(1)
    assert info.value.path == event_path(run, 1) and info.value.step == 1
    assert event_path(run, 1) in str(info.value)
    np.testing.assert_array_equal(trial.tensor("v").value(1), np.full(3, 2, np.float32))  # (the rest reads)
    np.testing.assert_array_equal(trial.tensor("w").value(2), np.full(3, 2, np.float32))


# --- a claim of gigabytes into a sparse event file -------------------------------------------------------------
_READ = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
from smdebug.trials import create_trial
from smdebug.exceptions import SMDebugError
trial = create_trial(sys.argv[1])
before = hwm()
from smdebug.trials.table import long_table
reads = {"value": lambda: trial.tensor("w").value(1), "values": lambda: trial.tensor("w").values(),
         "table": lambda: long_table(trial, tensors=["w"])}  # (the bulk reader of report and to_dataframe)
for how, read in reads.items():
    try:
        print(how, "read", read())
    except SMDebugError as e:
        print(how, "error", type(e).__name__, getattr(e, "path", None), getattr(e, "step", None), str(e)[:300])
print(trial.tensor("v").value(1).tolist())
print(hwm() - before)
"""


def test_an_index_length_of_gigabytes_into_a_sparse_event_file_is_refused_in_bounded_memory(tmp_path):
    run = write_simple_run(tmp_path / "run", names=["w", "v"])
    _, real = _claim(run, 1, "w", 6 * GIB, 8 * GIB)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _READ, run], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    growth = int(lines[-1])
    for how, line in zip(("value", "values", "table"), lines[:3]):
        assert line.startswith(f"{how} error EventFileCorrupted {event_path(run, 1)} 1 "), line
        assert f"is 6442450944 bytes long, but the record's own header says {real}" in line, line
    assert lines[3] == "[2.0, 2.0, 2.0]"
    assert growth < 64 << 20, growth


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, 3 * GIB))


def test_smdebug_show_names_the_damaged_file_in_one_line(tmp_path):
    run = write_simple_run(tmp_path / "run", names=["w", "v"])
    _claim(run, 1, "w", 6 * GIB, 8 * GIB)
    exe = os.path.join(os.path.dirname(sys.executable), "smdebug")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "smdebug.cli"]
    out = subprocess.run(cmd + ["show", run, "w", "--step", "1"], capture_output=True, text=True, timeout=120,
                         preexec_fn=_limited)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr and "Cannot allocate memory" not in out.stderr, out.stderr
    assert event_path(run, 1) in out.stderr and "header says" in out.stderr, out.stderr
    assert run_smdebug("show", run, "w", "--step", "2").returncode == 0  # (the other steps read)
