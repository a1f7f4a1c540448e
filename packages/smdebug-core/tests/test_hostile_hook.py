"""The hook against hostile or careless input (RELIABILITY.md, "attack catalogue"): tensor names a run
cannot hold, out_dir values no file call accepts, a configuration of tens of thousands of collections, a
SageMaker TensorBoard configuration that is a FIFO, a real full disk. Training always goes on; the hook
says what it refused once, and keeps saving everything else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.core.testing import capture_smdebug_log
from smdebug.exceptions import InvalidConfigurationError
from smdebug.trials import create_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-system objects")


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


@pytest.mark.parametrize("bad", ["lone\udcffsurrogate", 5, ("a", "b"), "smdebug/reductions/l2/w"],
                         ids=["surrogate", "int", "tuple", "reduction-name"])
def test_a_name_the_run_cannot_hold_is_refused_and_the_rest_is_saved(tmp_path, bad):
    """Before: a lone surrogate failed the writer thread and an int failed the pattern match; either
    disabled the hook at step 0, so the run held nothing at all."""
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_regex=[".*"],
                     include_collections=["default", "losses"])
    with capture_smdebug_log() as log:
        for step in range(3):
            hook.begin_step()
            assert hook.record(bad, np.ones(2, np.float32)) is False
            assert hook.record("loss", np.full(1, step, np.float32)) is True
            hook.end_step()
        hook.close()
    assert not hook.disabled
    assert log.text.count("not saving the tensor named") == 1, log.text
    trial = create_trial(out)
    assert trial.tensor_names() == ["loss"] and trial.steps() == [0, 1, 2]


@pytest.mark.parametrize("out_dir, message", [("run\x00x", "NUL"), ("dangling", "symbolic link to nothing")])
def test_out_dirs_no_file_call_accepts_are_configuration_errors(tmp_path, out_dir, message):
    """Before: a NUL raised ValueError ('embedded null byte') from deep inside, and a dangling link said
    'Cannot create out_dir ...: File exists'."""
    os.symlink(tmp_path / "nowhere" / "at" / "all", tmp_path / "dangling")
    with pytest.raises(InvalidConfigurationError, match=message):
        NumpyHook(out_dir=str(tmp_path / out_dir))
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / out_dir)}))
    with pytest.raises(InvalidConfigurationError, match=message):
        NumpyHook.create_from_json_file(str(config))


@pytest.mark.timeout(600)
def test_a_configuration_of_twenty_thousand_collections_costs_seconds(tmp_path):
    """Before: 50,000 empty collections in the JSON configuration logged 50,000 lines, each scanning every
    collection for a hint: 516 s for 4 training steps."""
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "HookParameters": {"save_interval": "1"},
                                  "CollectionConfigurations": [
        {"CollectionName": f"c{i}"} for i in range(20_000)] + [{"CollectionName": "losses"}]}))
    started = time.monotonic()
    with capture_smdebug_log() as log:
        hook = NumpyHook.create_from_json_file(str(config))
        train_logistic_regression(hook, steps=4)
        hook.close()
    took = time.monotonic() - started
    assert took < 120, took
    lines = [line for line in log.text.splitlines() if "can match no tensor" in line or "can never match" in line]
    assert 1 < len(lines) <= hook.MAX_EMPTY_COLLECTION_REPORTS + 1, len(lines)
    assert create_trial(str(tmp_path / "run")).tensor("loss").steps() == [0, 1, 2, 3]
    print(f"\n20,000 empty collections: configured and trained 4 steps in {took:.1f} s, {len(lines)} error lines")


@pytest.mark.timeout(120)
def test_a_sagemaker_tensorboard_configuration_that_is_a_fifo_does_not_block(tmp_path, monkeypatch):
    """On SageMaker (TRAINING_JOB_NAME set) the TensorBoard configuration was opened with a plain open():
    a FIFO there blocked the training script before its first step."""
    fifo = tmp_path / "tensorboard.json"
    os.mkfifo(fifo)
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run")}))
    monkeypatch.setenv("TRAINING_JOB_NAME", "job")
    monkeypatch.setenv("TENSORBOARD_CONFIG_FILE_PATH", str(fifo))
    result = {}

    def build():
        try:
            NumpyHook.create_from_json_file(str(config))
        except Exception as e:  # noqa: BLE001 - what the test looks at
            result["error"] = e

    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():  # unblock it before failing: open the FIFO's other end
        with open(fifo, "w"):
            pass
        pytest.fail("building the hook blocked on the FIFO")
    assert isinstance(result.get("error"), InvalidConfigurationError) and "FIFO" in str(result["error"])


_FULL_DISK_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from _support import NumpyHook
from smdebug import SaveConfig
hook = NumpyHook(out_dir=sys.argv[1], save_config=SaveConfig(save_interval=1), include_regex=[".*"],
                 include_collections=["default", "losses"])
total = 0.0
for step in range(80):
    hook.begin_step()
    w = np.random.rand(4000).astype("f4")
    hook.record("w", w)
    hook.record("loss", np.full(1, step, np.float32))
    total += float(w.sum())
    hook.end_step()
hook.close()
print("TRAINING DONE", hook.disabled)
"""


@pytest.mark.timeout(300)
def test_a_really_full_disk(tmp_path):
    """A tmpfs of 600 KiB filling up under the hook (ENOSPC, not the RLIMIT_FSIZE of the resource-fault
    tests): training finishes, one clear line without a traceback, every step on disk reads back, no .tmp."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        out = str(mnt / "run")
        here = os.path.dirname(os.path.abspath(__file__))
        proc = subprocess.run([sys.executable, "-c", _FULL_DISK_CHILD, out, here], capture_output=True, text=True,
                              timeout=240)
        text = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "TRAINING DONE True" in proc.stdout, text[-3000:]
        assert text.count("cannot save to") == 1 and "No space left on device" in text, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        assert not [n for _r, _d, fs in os.walk(out) for n in fs if n.endswith(".tmp")]
        trial = create_trial(out, skip_damaged=False)
        steps = trial.steps()
        assert steps == list(range(len(steps))) and len(steps) >= 5
        for step in steps:
            assert trial.tensor("loss").value(step).tolist() == [float(step)]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["garbage", "nested", "sparse-3GiB", "fifo", "dev-zero", "folder"])
def test_stop_signals_planted_before_the_run_neither_stop_nor_block_it(tmp_path, kind):
    """A stop_training.json left in out_dir before the job started is an earlier run's (as a valid one
    already was): before, a damaged one (garbage, or 3 GiB of zeros read as 64 KiB) stopped training at
    its first step. A FIFO, a device or a folder there is never read."""
    out = tmp_path / "run"
    out.mkdir()
    signal = out / "stop_training.json"
    if kind == "garbage":
        signal.write_text("not json at all")
    elif kind == "nested":
        signal.write_text('{"reason": ' + "[" * 100_000)
    elif kind == "sparse-3GiB":
        signal.write_bytes(b"")
        os.truncate(signal, 3 << 30)
    elif kind == "fifo":
        os.mkfifo(signal)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", signal)
    else:
        signal.mkdir()
    if not signal.is_symlink():
        an_hour_ago = time.time() - 3600
        os.utime(signal, (an_hour_ago, an_hour_ago))
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    train_logistic_regression(hook, steps=5)
    hook.close()
    assert not hook.stop_requested and not hook.disabled
    assert create_trial(str(out)).tensor("loss").steps() == [0, 1, 2, 3, 4]


def test_hard_links_planted_at_the_names_a_hook_writes_are_replaced_not_written(tmp_path):
    """A hard link is the file itself, under another name: writing into it would change the victim. Every
    file is created under a free name of its writer's own and renamed into place, so a planted hard link at
    a final name is replaced by the new file, one at a plain .tmp name is left alone, and the victim keeps
    its content."""
    from smdebug.core.locations import collections_file_name, event_file_name, index_file_name

    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    out = tmp_path / "run"
    names = [collections_file_name("worker_0")]
    for step in range(4):
        names += [index_file_name(step, "worker_0"), event_file_name(step, "worker_0")]
    for planted in [n for name in names for n in (name, name + ".tmp")] + ["training_job_end.ts.tmp"]:
        path = out / planted
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(victim, path)
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    train_logistic_regression(hook, steps=4)
    hook.close()
    assert victim.read_bytes() == b"precious\n"
    tmp_names = [name + ".tmp" for name in names] + ["training_job_end.ts.tmp"]
    # every link at a final name was replaced; those at .tmp names were never opened
    assert os.stat(victim).st_nlink == 1 + len(tmp_names)
    trial = create_trial(str(out))
    assert trial.tensor("loss").steps() == [0, 1, 2, 3]
