"""Damaged runs: every kind of damage gives a specific, documented exception naming the file and the
step, and ``create_trial(..., skip_damaged=True)`` skips the damage with a warning so the rest of the
run stays readable. (RELIABILITY.md lists the exceptions.)"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from _support import write_run
from smdebug.exceptions import (
    CollectionFileCorrupted,
    EventFileCorrupted,
    IndexReaderException,
    MissingEventFile,
    SMDebugError,
)
from smdebug.trials import create_trial

INDEX = "index/000000000/{:012d}_worker_0.json"
EVENTS = "events/{0:012d}/{0:012d}_worker_0.tfevents"
COLLECTIONS = "collections/000000000/worker_0_collections.json"


def tensors(step, worker):
    return {"w": np.full(50, step, np.float32), "b": np.arange(3, dtype=np.int64) + step}


@pytest.fixture(autouse=True)
def _no_end_delay(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


@pytest.fixture
def run(tmp_path):
    root = tmp_path / "run"
    write_run(str(root), range(6), tensors=tensors)
    return root


@pytest.fixture
def warnings_log():
    records = []

    class H(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    h = H(logging.WARNING)
    logging.getLogger("smdebug").addHandler(h)
    yield records
    logging.getLogger("smdebug").removeHandler(h)


def _names(err, step, filename):
    text = str(err)
    assert isinstance(err, SMDebugError)
    assert filename in text, text
    assert f"step={step}" in text or f"step {step}" in text, text
    assert err.step == step
    assert err.path.endswith(filename)


def _all_values_except(trial, bad):
    for s in trial.steps():
        if s in bad:
            continue
        for name, want in tensors(s, "worker_0").items():
            np.testing.assert_array_equal(trial.tensor(name).value(s), want)


def _damage(root, key, fn):
    path = root / key
    path.write_bytes(fn(path.read_bytes()))


def test_truncated_record(run, warnings_log):
    _damage(run, EVENTS.format(2), lambda b: b[: len(b) - 7])
    t = create_trial(str(run))
    with pytest.raises(EventFileCorrupted) as info:
        t.tensor("b").value(2)  # the last record of the file lost its tail
    _names(info.value, 2, "000000000002_worker_0.tfevents")
    np.testing.assert_array_equal(t.tensor("w").value(2), tensors(2, "")["w"])  # its first record is intact
    _all_values_except(t, {2})
    with pytest.raises(EventFileCorrupted):
        t.tensor("b").values()
    t2 = create_trial(str(run), skip_damaged=True)
    assert sorted(t2.tensor("b").values()) == [0, 1, 3, 4, 5]
    assert any("Skipping damaged step 2" in m for m in warnings_log)


@pytest.mark.parametrize("where", [0, 5, 12, 40, -3])
def test_flipped_byte_is_a_checksum_mismatch(run, where, warnings_log):
    def flip(b):
        b = bytearray(b)
        b[where] ^= 0x20
        return bytes(b)

    _damage(run, EVENTS.format(3), flip)
    t = create_trial(str(run))
    name = "w" if where >= 0 else "b"
    with pytest.raises(EventFileCorrupted, match="checksum|Truncated|past the end") as info:
        t.tensor(name).value(3)
    _names(info.value, 3, "000000000003_worker_0.tfevents")
    _all_values_except(t, {3})
    t2 = create_trial(str(run), skip_damaged=True)
    assert 3 not in t2.tensor(name).values() and len(t2.tensor(name).values()) == 5
    assert warnings_log


@pytest.mark.parametrize("garbage", [b"", b"\x00\xff garbage", b"[1, 2]", b'{"meta": {}}',
                                     b'{"meta": {"mode": "NOPE", "mode_step": 1}}', b'{"meta": ' + b"[" * 100000])
def test_garbage_index_json(run, garbage, warnings_log):
    (run / INDEX.format(4)).write_bytes(garbage)
    with pytest.raises(IndexReaderException) as info:
        create_trial(str(run))
    _names(info.value, 4, "000000000004_worker_0.json")
    t = create_trial(str(run), skip_damaged=True)
    assert t.steps() == [0, 1, 2, 3, 5]
    _all_values_except(t, set())
    assert any("000000000004_worker_0.json" in m for m in warnings_log)


def test_index_pointing_past_end_of_event_file(run):
    _damage(run, EVENTS.format(1), lambda b: b[:30])
    t = create_trial(str(run))
    with pytest.raises(EventFileCorrupted, match="past the end") as info:
        t.tensor("w").value(1)
    _names(info.value, 1, "000000000001_worker_0.tfevents")
    with pytest.raises(EventFileCorrupted, match="past the end"):
        t.tensor("w").values()  # the batched path says the same
    assert sorted(create_trial(str(run), skip_damaged=True).tensor("w").values()) == [0, 2, 3, 4, 5]


def test_missing_event_file(run, warnings_log):
    (run / EVENTS.format(5)).unlink()
    t = create_trial(str(run))
    with pytest.raises(MissingEventFile) as info:
        t.tensor("w").value(5)
    _names(info.value, 5, "000000000005_worker_0.tfevents")
    _all_values_except(t, {5})
    assert sorted(create_trial(str(run), skip_damaged=True).tensor("w").values()) == [0, 1, 2, 3, 4]
    assert any("000000000005_worker_0.tfevents" in m for m in warnings_log)


@pytest.mark.parametrize("content", [
    b'{"collections": {}, "_meta": {"num_workers": 1}, "when_nan": []}',
    b'{"collections": {"w": {"name": "w", "include_regex": 5}}}',
    b'{"collections": []}',
    b"\xff\xfe",
])
def test_collection_file_damaged(run, content, warnings_log):
    (run / COLLECTIONS).write_bytes(content)
    with pytest.raises(CollectionFileCorrupted) as info:
        create_trial(str(run))
    assert info.value.path.endswith("worker_0_collections.json") and "worker_0_collections.json" in str(info.value)
    t = create_trial(str(run), skip_damaged=True)
    assert t.steps() == list(range(6))
    _all_values_except(t, set())
    assert any("collections" in m for m in warnings_log)


def test_unknown_keys_inside_a_collection_are_ignored(run):
    # Keys the original wrote once (when_nan) or a newer writer may add: readers ignore them.
    import json

    data = json.loads((run / COLLECTIONS).read_text())
    for c in data["collections"].values():
        c["when_nan"] = ["x"]
        c["future_key"] = {"a": 1}
    (run / COLLECTIONS).write_text(json.dumps(data))
    assert "weights" in create_trial(str(run)).collections()


def test_thousands_of_damaged_files_skipped_are_named_a_few_times_not_each(tmp_path):
    """skip_damaged names each damaged file it skips: 100,000 empty index files logged 100,000 warnings (20 MB
    on stdout, where smdebug logs by default). The first 20 are named, one line says the rest are counted;
    ``trial.skipped_damaged`` counts them all."""
    from _support import NumpyHook, train_logistic_regression
    from smdebug import SaveConfig
    from smdebug.core.locations import index_file_name
    from smdebug.core.skip_notes import NAMED
    from smdebug.core.testing import capture_smdebug_log

    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "losses"])
    train_logistic_regression(hook, steps=3)
    hook.close()
    damaged = 3000
    for step in range(3, 3 + damaged):  # empty index files, each where a writer would put it
        path = run / index_file_name(step, "worker_0")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    # the tensor values of a damaged step are skipped through the same notes
    (run / "events" / "000000000001" / "000000000001_worker_0.tfevents").write_bytes(b"")
    with capture_smdebug_log() as log:
        trial = create_trial(str(run), skip_damaged=True)
        assert trial.steps() == [0, 1, 2]
        assert sorted(trial.tensor("loss").values()) == [0, 2]
    skipped = [r for r in log.records if "Skipping damaged" in r.getMessage()]
    assert len(skipped) == NAMED, len(skipped)
    assert sum("more damaged files or steps are skipped" in r.getMessage() for r in log.records) == 1
    assert trial.skipped_damaged == damaged + 1
