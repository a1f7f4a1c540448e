"""Large tensors end to end: written through a hook (checksummed while written, aligned in the file), read
back as views on a file map (no copy), and damaged files still give the documented errors, never a crash."""

from __future__ import annotations

import os

import numpy as np
import pytest

from _support import NumpyHook
from smdebug import SaveConfig, modes
from smdebug.core.storage.local import MAP_MIN_BYTES
from smdebug.exceptions import EventFileCorrupted
from smdebug.trials import create_trial


def _write_run(out, steps=3):
    rng = np.random.default_rng(7)
    saved = {}
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.set_mode(modes.TRAIN)
    for step in range(steps):
        hook.begin_step()
        for name, n in (("weights/big", MAP_MIN_BYTES // 4 + 3), ("weights/small", 5)):
            arr = rng.normal(size=n).astype(np.float32)
            hook.record(name, arr)
            saved[(name, step)] = arr.copy()
            arr[:] = -1  # the caller reuses its buffer: the hook must have saved a snapshot
        hook.end_step()
    hook.close()
    return saved


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    out = str(tmp_path / "run")
    return out, _write_run(out)


def test_large_values_read_back_as_aligned_read_only_views(run):
    out, saved = run
    trial = create_trial(out)
    for (name, step), expected in saved.items():
        value = trial.tensor(name).value(step)
        np.testing.assert_array_equal(value, expected)
        assert value.flags.aligned and not value.flags.writeable
    big = trial.tensor("weights/big")
    assert list(big.values()) == [0, 1, 2]
    for step, value in big.values().items():
        np.testing.assert_array_equal(value, saved[("weights/big", step)])
        assert value.base is not None  # a view (on the map), not a private copy


def test_values_stay_valid_after_the_run_is_deleted(run):
    out, saved = run
    trial = create_trial(out)
    values = trial.tensor("weights/big").values()
    for root, _dirs, files in os.walk(out):
        for f in files:
            os.remove(os.path.join(root, f))
    for step, value in values.items():
        np.testing.assert_array_equal(value, saved[("weights/big", step)])


def test_truncated_event_file_of_a_large_value_is_reported_not_fatal(run):
    out, saved = run
    trial = create_trial(out)
    events = sorted(os.path.join(r, f) for r, _d, fs in os.walk(os.path.join(out, "events")) for f in fs)
    with open(events[1], "r+b") as f:  # step 1: cut inside the large record
        f.truncate(MAP_MIN_BYTES // 2)
    with pytest.raises(EventFileCorrupted) as info:
        trial.tensor("weights/big").value(1)
    assert info.value.step == 1 and events[1] in str(info.value.path)
    np.testing.assert_array_equal(trial.tensor("weights/big").value(2), saved[("weights/big", 2)])


def test_flipped_byte_in_a_large_value_fails_its_checksum(run):
    out, _saved = run
    trial = create_trial(out)
    events = sorted(os.path.join(r, f) for r, _d, fs in os.walk(os.path.join(out, "events")) for f in fs)
    with open(events[0], "r+b") as f:
        f.seek(MAP_MIN_BYTES // 2)
        b = f.read(1)
        f.seek(MAP_MIN_BYTES // 2)
        f.write(bytes([b[0] ^ 0x40]))
    with pytest.raises(EventFileCorrupted, match="checksum"):
        trial.tensor("weights/big").value(0)


def test_snapshot_buffers_are_reused_across_steps_without_mixing_steps(tmp_path, monkeypatch):
    """A hook saving the same large tensor every step reuses the snapshot buffers once written; every
    step still reads back its own values."""
    from smdebug.core import snapshot

    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    snapshot.clear()
    before = snapshot.reused
    out = str(tmp_path / "run")
    n = snapshot.POOL_MIN_BYTES // 4
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    weights = np.zeros(n, dtype=np.float32)
    for step in range(12):
        hook.begin_step()
        weights[:] = step  # updated in place, as an optimizer does
        hook.record("weights/w", weights)
        hook.end_step()
        if step % 2:
            hook.flush()  # written: its buffer is back in the pool before the next snapshot
    hook.close()
    # Every step after a flush reuses a buffer (others may too, when the writer was quick enough).
    assert snapshot.reused - before >= 6
    trial = create_trial(out)
    for step in range(12):
        value = trial.tensor("weights/w").value(step)
        assert value.shape == (n,) and value[0] == step and value[-1] == step


def test_a_snapshot_still_referenced_elsewhere_is_not_reused():
    from smdebug.core import snapshot

    snapshot.clear()
    value = np.ones(snapshot.POOL_MIN_BYTES // 8, dtype=np.float64)
    snap = snapshot.snapshot(value)
    keep = snap[:10]  # someone else's view of the data
    snapshot.give_back(snap, holders=1)
    assert snapshot._idle_bytes == 0
    del keep
    other = snap  # a second reference the caller did not declare
    snapshot.give_back(snap, holders=1)
    assert snapshot._idle_bytes == 0
    del other
    snapshot.give_back(snap, holders=1)
    assert snapshot._idle_bytes == snap.nbytes
    again = snapshot.snapshot(value * 2)
    np.testing.assert_array_equal(again, value * 2)
    assert snapshot._idle_bytes == 0
