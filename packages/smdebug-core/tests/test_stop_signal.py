"""The stop signal with the default settings: a local run stops at the first step boundary after the
signal is written, the stop is said once, and a signal left by an earlier run costs nothing per step."""

from __future__ import annotations

import json
import logging
import os
import time

import numpy as np
import pytest

from _support import NumpyHook
from smdebug.core import stop_signal
from smdebug.core.save_config import SaveConfig
from smdebug.core.stop_signal import StopSignalWatcher, write_stop_signal
from smdebug.exceptions import TrainingStopRequested
from smdebug.trials import create_trial

#: a training step is at least this long here; the local watcher looks at most once a millisecond
STEP_S = 0.002


@pytest.fixture(autouse=True)
def default_interval(monkeypatch):
    monkeypatch.delenv("SMDEBUG_STOP_CHECK_INTERVAL", raising=False)  # the defaults, not a test's override
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _step(hook, value=1.0):
    hook.begin_step()
    hook.record("weights/w", np.full(3, value, np.float32))
    time.sleep(STEP_S)
    hook.end_step()


def _stop_logs(log):
    return [m for m in log.messages() if "stop" in m.lower()]


def test_a_local_run_stops_at_the_next_step_boundary_and_says_it_once(tmp_path, smdebug_log):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    done = []
    with pytest.raises(TrainingStopRequested) as info:
        for step in range(100):
            _step(hook, step)
            done.append(step)
            if step == 4:
                write_stop_signal(out, "ExplodingTensor", 4, "w is too big")
    assert done[-1] == 4  # the next boundary (begin of step 5) raised: no step ran after the signal
    assert "ExplodingTensor asked to stop training (condition met at step 4): w is too big" in str(info.value)
    assert _stop_logs(smdebug_log) == []  # the exception is the announcement; no log line repeats it
    trial = create_trial(out)
    assert trial.steps() == [0, 1, 2, 3, 4] and trial.loaded_all_steps
    # (the run says it was cut short: rules judging "the trained model" must not take step 4 for it)
    assert trial.stopped_on_request() == ("training was stopped on request by rule ExplodingTensor (its finding at "
                                          "step 4), at step 4")


def test_a_signal_written_after_training_ended_stopped_nothing(tmp_path):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for _ in range(3):
        _step(hook)
    hook.close()
    time.sleep(0.05)  # (file times: the signal is clearly newer than the end marker)
    write_stop_signal(out, "LossNotDecreasing", 2, "judged after the end")
    trial = create_trial(out)
    assert trial.loaded_all_steps and trial.stopped_on_request() is None


def test_a_damaged_or_hostile_signal_is_said_briefly(tmp_path, smdebug_log):
    out = tmp_path / "run"
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    _step(hook)
    (out / "stop_training.json").write_text(json.dumps({"rule": "R\x1b[2J" + "x" * 10000, "step": True}))
    hook.on_stop = "flag"
    _step(hook)
    hook.close()
    # (the hook's own line clips the name too)
    warned = [m for m in smdebug_log.warnings if "asked to stop training" in m]
    assert len(warned) == 1 and len(warned[0]) < 400 and "\x1b" not in warned[0], warned
    said = create_trial(str(out)).stopped_on_request()
    assert said.startswith("training was stopped on request by rule R\\u001b[2Jxxx") and len(said) < 200, said
    assert "finding at" not in said  # (True is no step)
    (out / "stop_training.json").write_text("[" * 100000)
    os.utime(out / "stop_training.json", (1, 1))  # (as if written while training ran)
    assert "unreadable" in create_trial(str(out)).stopped_on_request()


def test_flag_mode_logs_the_stop_once(tmp_path, smdebug_log):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.on_stop = "flag"
    steps = 0
    while not hook.stop_requested and steps < 100:
        _step(hook)
        steps += 1
        if steps == 3:
            write_stop_signal(out, "Manual", 2, "enough")
    for _ in range(3):  # a loop that goes on regardless: still said once
        _step(hook)
    hook.close()
    assert steps == 4
    logs = _stop_logs(smdebug_log)
    assert len(logs) == 1 and "Manual asked to stop training (condition met at step 2): enough" in logs[0], logs


def test_a_stale_signal_is_ignored_once_and_not_read_at_every_step(tmp_path, smdebug_log, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    (out / "stop_training.json").write_text(json.dumps({"rule": "Old", "time": 1.0}))
    reads = []
    real_read = stop_signal.read_stop_signal
    monkeypatch.setattr(stop_signal, "read_stop_signal", lambda d: reads.append(d) or real_read(d))
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for _ in range(10):
        _step(hook)
    assert len(reads) == 1 and len([m for m in smdebug_log.warnings if "earlier run" in m]) == 1
    write_stop_signal(str(out), "New", 10, "now")  # a fresh signal over the stale one is seen
    with pytest.raises(TrainingStopRequested, match="New asked to stop"):
        for _ in range(3):
            time.sleep(STEP_S)
            _step(hook)


def test_the_look_costs_a_clock_read_between_looks(tmp_path):
    """Between looks (less than a millisecond apart) a step pays no system call."""
    watcher = StopSignalWatcher(str(tmp_path))
    assert watcher.interval == 0.001 and watcher._path.endswith("stop_training.json")
    n = 20000
    start = time.perf_counter()
    for _ in range(n):
        watcher.poll()
    per_call = (time.perf_counter() - start) / n
    assert per_call < 50e-6, f"{per_call * 1e6:.1f} us per look"  # generous: shared CI machines are slow
