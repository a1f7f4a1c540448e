"""Hostile names and data: nothing a tensor, collection or worker name or an index file says can put a
file outside out_dir or make a reader open one; reading a run never unpickles."""

from __future__ import annotations

import os

import numpy as np
import pytest

from _support import NumpyHook, write_run
from smdebug import SaveConfig
from smdebug.exceptions import IndexReaderException
from smdebug.trials import create_trial

HOSTILE = ["../escape", "../../../../tmp/x", "/etc/passwd", "a/../../b", "nul\x00byte", "x" * 5000,
           "ünïcødé/张量/🙂", "..", ".", "C:\\windows\\x", "a\\..\\..\\b", "tab\tnew\nline"]


def test_hostile_tensor_and_collection_names_stay_inside(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    (tmp_path / "sandbox").mkdir()
    out = tmp_path / "sandbox" / "run"
    outside = {str(p) for p in tmp_path.rglob("*")}
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["all"],
                     save_all=True)
    for name in HOSTILE:
        hook.get_collection(name).include(".*")
    for step in range(2):
        hook.begin_step()
        for i, name in enumerate(HOSTILE):
            hook.record(name, np.full(3, i + step, np.float32))
        hook.end_step()
    hook.close()
    assert not hook.disabled
    new_outside = {str(p) for p in tmp_path.rglob("*")} - outside
    assert all(p.startswith(str(out)) for p in new_outside), sorted(p for p in new_outside if not p.startswith(str(out)))
    trial = create_trial(str(out))
    for i, name in enumerate(HOSTILE):
        np.testing.assert_array_equal(trial.tensor(name).value(1), np.full(3, i + 1, np.float32))


@pytest.mark.parametrize("worker", ["../../evil", "/abs", "a/../../b", "..", "nul\x00", "ü/../x"])
def test_hostile_worker_names_stay_inside(tmp_path, worker):
    from smdebug.core.locations import collections_file_name, event_file_name, index_file_name

    root = os.path.realpath(tmp_path / "run")
    for key in (event_file_name(3, worker), index_file_name(3, worker), collections_file_name(worker)):
        if "\x00" in key:
            continue
        full = os.path.realpath(os.path.join(root, key))
        assert full.startswith(root + os.sep), key


@pytest.mark.parametrize("event_file", ["../../../../etc/passwd", "/etc/passwd", "events/../../secret.tfevents",
                                        "events/1/..", "C:\\x\\y.tfevents", "events/0/a\x00.tfevents"])
def test_index_cannot_point_outside_the_run(tmp_path, event_file):
    root = tmp_path / "run"
    secret = tmp_path / "secret.tfevents"
    secret.write_bytes(b"do not read me")
    write_run(str(root), range(3))
    import json

    key = root / "index/000000000/000000000001_worker_0.json"
    doc = json.loads(key.read_text())
    doc["meta"]["event_file_name"] = event_file
    key.write_text(json.dumps(doc))
    with pytest.raises(IndexReaderException, match="outside the run") as info:
        create_trial(str(root))
    assert info.value.step == 1
    trial = create_trial(str(root), skip_damaged=True)
    assert trial.steps() == [0, 2]


def test_storage_refuses_keys_leaving_the_root(tmp_path):
    from smdebug.core.storage.local import LocalStorage

    s = LocalStorage(str(tmp_path / "run"))
    for key in ("../x", "/etc/passwd", "a/../../x", "a\x00b"):
        with pytest.raises(ValueError):
            s.read(key)
        with pytest.raises(ValueError):
            s.write_atomic(key, b"x")
    assert not (tmp_path / "x").exists()


def test_reading_never_unpickles(tmp_path, monkeypatch):
    import pickle

    def boom(*a, **k):
        raise AssertionError("a reader unpickled data")

    write_run(str(tmp_path / "run"), range(3), tensors=lambda s, w: {"w": np.arange(4) + s, "s": np.array(["a", "b"])})
    monkeypatch.setattr(pickle, "loads", boom)
    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(np, "load", boom)
    trial = create_trial(str(tmp_path / "run"))
    for s in trial.steps():
        trial.tensor("w").value(s)
        trial.tensor("s").value(s)
    # and an event record carrying a pickle is just bytes that fail to decode, never executed
    import smdebug.core.tfevent.tensor_codec as codec
    from smdebug.exceptions import EventFileCorrupted
    from smdebug.core.tfevent.records import encode_record

    with pytest.raises(EventFileCorrupted):
        codec.decode_tensor_record(encode_record(pickle.dumps(os.system)), "x", 0)
