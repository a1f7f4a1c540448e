"""Hostile spot-training state: the checkpoint configuration (CHECKPOINT_CONFIG_FILE_PATH) and
``<LocalPath>/metadata.json`` are read before the first step, from files synced in from outside the
training script. Whatever they hold, a real hook is built, training goes on, one warning names the file
and what is wrong, and the run is saved from step 0: no exception out of the hook's constructor, no hang,
no resume at a step that saves nothing or that no reader accepts. The checkpoint folder is walked within
bounds, and not at every step when walking it is costly."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig, modes
from smdebug.core import state_store
from smdebug.core.locations import MAX_STEP
from smdebug.core.testing import capture_smdebug_log
from smdebug.trials import create_trial

HERE = os.path.dirname(__file__)


def _setup(tmp_path, monkeypatch, metadata=None, config=None):
    """A checkpoint folder with ``metadata`` (text) as its metadata.json, and a configuration naming it
    (or holding ``config``, text)."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    if metadata is not None:
        (ckpt / "metadata.json").write_text(metadata)
    cfg = tmp_path / "checkpointconfig.json"
    cfg.write_text(json.dumps({"LocalPath": str(ckpt)}) if config is None else config)
    monkeypatch.setenv("CHECKPOINT_CONFIG_FILE_PATH", str(cfg))
    return ckpt, cfg


def _train_and_check(tmp_path, expected_in_warning, steps=3):
    """Build a real hook, train, close: the run holds steps 0.. and exactly one warning was logged,
    naming ``expected_in_warning``; returns the hook."""
    out = str(tmp_path / "run")
    with capture_smdebug_log() as log:
        hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=steps, mode=modes.TRAIN)
        hook.close()
    warnings = [r.getMessage() for r in log.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    for text in expected_in_warning:
        assert text in warnings[0], warnings[0]
    assert "Traceback" not in log.text
    assert not hook.disabled
    assert hook.training_run == 0
    assert create_trial(out).steps() == list(range(steps))  # saved from step 0, nothing lost
    return hook


BAD_METADATA = {
    "string step": ('[{"training-run": 0, "latest-global-step-seen": "abc"}]', "'abc'"),
    "string and int steps": ('[{"latest-global-step-seen": "abc"}, {"latest-global-step-seen": 3}]', "'abc'"),
    "NaN step": ('[{"training-run": 0, "latest-global-step-seen": NaN}]', "nan"),
    "Infinity step": ('[{"training-run": 0, "latest-global-step-seen": Infinity}]', "inf"),
    "float step": ('[{"training-run": 0, "latest-global-step-seen": 1e23}]', "1e+23"),
    "huge float step": ('[{"training-run": 0, "latest-global-step-seen": 1e300}]', "1e+300"),
    "step beyond int64": ('[{"training-run": 0, "latest-global-step-seen": 99999999999999999999999}]',
                          "99999999999999999999999"),
    "step at the int64 limit": (f'[{{"training-run": 0, "latest-global-step-seen": {MAX_STEP}}}]', str(MAX_STEP)),
    "negative step": ('[{"training-run": 0, "latest-global-step-seen": -1000}]', "-1000"),
    "boolean step": ('[{"training-run": 0, "latest-global-step-seen": true}]', "True"),
    "null step": ('[{"training-run": 0, "latest-global-step-seen": null}]', "None"),
    "mode steps as a list": ('[{"training-run": 0, "latest-global-step-seen": 3, "latest-mode-step": [1, 2]}]',
                             "latest-mode-step"),
    "string mode step": ('[{"training-run": 0, "latest-global-step-seen": 3, "latest-mode-step": {"TRAIN": "x"}}]',
                         "TRAIN"),
    "negative mode step": ('[{"training-run": 0, "latest-global-step-seen": 3, "latest-mode-step": {"EVAL": -9}}]',
                           "EVAL"),
    "string training run": ('[{"training-run": "zz", "latest-global-step-seen": 3}]', "training-run"),
    "negative training run": ('[{"training-run": -5, "latest-global-step-seen": 3}]', "training-run"),
    "entry not an object": ('[5]', "entry 0"),
    "not a list": ('{"latest-global-step-seen": 3}', "not a list"),
    "not JSON": ("{{{", "not valid JSON"),
    "not UTF-8": ("\udcff", "not valid JSON"),
    "100,000 deep": ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_METADATA))
def test_bad_training_state_is_ignored_with_one_warning(tmp_path, monkeypatch, case):
    text, detail = BAD_METADATA[case]
    ckpt, _ = _setup(tmp_path, monkeypatch)
    (ckpt / "metadata.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    hook = _train_and_check(tmp_path, [str(ckpt / "metadata.json"), detail, "start at 0"])
    assert hook.mode_steps[modes.TRAIN] == 2


BAD_CONFIG = {
    "LocalPath a number": ('{"LocalPath": 5}', "LocalPath"),
    "LocalPath a list": ('{"LocalPath": ["a"]}', "LocalPath"),
    "not an object": ('["LocalPath"]', "not an object"),
    "100,000 deep": ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    "not JSON": ("LocalPath=/tmp", "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIG))
def test_bad_checkpoint_configuration_is_ignored_with_one_warning(tmp_path, monkeypatch, case):
    text, detail = BAD_CONFIG[case]
    _, cfg = _setup(tmp_path, monkeypatch, config=text)
    hook = _train_and_check(tmp_path, [str(cfg), detail])
    assert not hook._state_store.active


def test_local_path_that_is_a_file_is_ignored_with_one_warning(tmp_path, monkeypatch):
    target = tmp_path / "afile"
    target.write_text("x")
    _setup(tmp_path, monkeypatch, config=json.dumps({"LocalPath": str(target)}))
    _train_and_check(tmp_path, [str(target), "not a folder"])


def test_state_file_too_large_is_refused_without_reading_it(tmp_path, monkeypatch):
    ckpt, _ = _setup(tmp_path, monkeypatch)
    with open(ckpt / "metadata.json", "wb") as f:  # sparse: costs no disk
        f.truncate(state_store.MAX_STATE_FILE_BYTES + 1)
    _train_and_check(tmp_path, [str(ckpt / "metadata.json"), "bytes"])


def test_state_file_that_is_a_folder_is_ignored_and_its_save_reported_once(tmp_path, monkeypatch):
    ckpt, _ = _setup(tmp_path, monkeypatch)
    (ckpt / "metadata.json").mkdir()
    out = str(tmp_path / "run")

    def checkpoint(step):
        (ckpt / f"model{step}.pt").write_bytes(b"x")

    with capture_smdebug_log() as log:
        hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=4, on_step=checkpoint)
        hook.close()
    warnings = [r.getMessage() for r in log.records if r.levelname == "WARNING"]
    assert len(warnings) == 2, warnings  # it cannot be read; it cannot be written (once, not per checkpoint)
    assert "is a directory" in warnings[0] and "cannot save the training state" in warnings[1]
    assert not hook.disabled
    assert create_trial(out).steps() == [0, 1, 2, 3]


def test_after_a_bad_state_the_next_checkpoint_writes_a_good_one(tmp_path, monkeypatch):
    """The damaged state is not carried on: the run's own checkpoints write a state a restart resumes from."""
    ckpt, _ = _setup(tmp_path, monkeypatch, metadata='[{"latest-global-step-seen": "abc"}]')
    out = str(tmp_path / "run")

    def checkpoint(step):
        if step == 3:
            (ckpt / "model.pt").write_bytes(b"x")

    with capture_smdebug_log():
        hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=6, mode=modes.TRAIN, on_step=checkpoint)
    hook._closed = True  # a crash: no close
    hook._writer.close()
    assert json.loads((ckpt / "metadata.json").read_text())[-1]["latest-global-step-seen"] == 3
    hook2 = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
    assert hook2.training_run == 1 and hook2.step == 3
    train_logistic_regression(hook2, steps=2, mode=modes.TRAIN)
    hook2.close()
    assert create_trial(out).steps() == list(range(6))


def test_a_good_state_with_unknown_modes_and_null_saved_step_still_resumes(tmp_path, monkeypatch):
    """What smdebug 1.0.x wrote (and what it tolerated) is still read."""
    state = [{"training-run": 2, "latest-global-step-saved": None, "latest-global-step-seen": 4,
              "latest-mode-step": {"TRAIN": 4, "GLOBAL": 4, "SOMEDAY": "x"}}]
    _setup(tmp_path, monkeypatch, metadata=json.dumps(state))
    with capture_smdebug_log() as log:
        hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    assert hook.training_run == 3 and hook.step == 4 and hook.mode_steps[modes.TRAIN] == 4
    assert not [r for r in log.records if r.levelname == "WARNING"]
    hook.close()


_FIFO_SCRIPT = """
import sys
from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.trials import create_trial
hook = NumpyHook(out_dir=sys.argv[1], save_config=SaveConfig(save_interval=1))
train_logistic_regression(hook, steps=3)
hook.close()
print("STEPS", create_trial(sys.argv[1]).steps())
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("which", ["metadata.json", "configuration"])
def test_a_fifo_for_either_file_does_not_hang_training(tmp_path, which):
    """In a subprocess with a timeout: a FIFO opened for a blocking read would hang for ever."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    cfg = tmp_path / "checkpointconfig.json"
    if which == "metadata.json":
        cfg.write_text(json.dumps({"LocalPath": str(ckpt)}))
        os.mkfifo(ckpt / "metadata.json")
        fifo = ckpt / "metadata.json"
    else:
        os.mkfifo(cfg)
        fifo = cfg
    env = dict(os.environ, CHECKPOINT_CONFIG_FILE_PATH=str(cfg),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_FIFO_SCRIPT), str(tmp_path / "run")],
                          env=env, capture_output=True, text=True, timeout=180)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "STEPS [0, 1, 2]" in proc.stdout
    assert output.count("is a FIFO, not a regular file") == 1 and str(fifo) in output
    assert "Traceback" not in output


def test_a_checkpoint_folder_nested_1500_deep_is_walked_within_bounds(tmp_path, monkeypatch):
    ckpt, _ = _setup(tmp_path, monkeypatch)
    try:
        _nest(ckpt, 1500)  # (not os.makedirs: it recurses, one call per folder)
        _check_deep_walk(tmp_path, ckpt)
    finally:
        _unnest(ckpt, 1500)  # (nor shutil.rmtree, which pytest cleans up with)


def _nest(root, depth):
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
    finally:
        os.close(fd)


def _unnest(root, depth):
    for level in range(depth, 0, -1):
        try:
            os.rmdir(os.path.join(root, *["d"] * level))
        except OSError:
            pass


def _check_deep_walk(tmp_path, ckpt):
    out = str(tmp_path / "run")

    def checkpoint(step):
        if step == 1:
            (ckpt / "d" / "model.pt").write_bytes(b"x")  # within the walked depth: still noticed

    with capture_smdebug_log() as log:
        hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=3, on_step=checkpoint)
        hook.close()
    warnings = [r.getMessage() for r in log.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "nested more than" in warnings[0], warnings
    assert not hook.disabled and create_trial(out).steps() == [0, 1, 2]
    assert json.loads((ckpt / "metadata.json").read_text())[-1]["latest-global-step-seen"] == 1


def test_a_checkpoint_folder_with_too_many_entries_is_walked_within_bounds(tmp_path, monkeypatch):
    ckpt, _ = _setup(tmp_path, monkeypatch)
    monkeypatch.setattr(state_store, "MAX_WALK_ENTRIES", 50)
    for i in range(120):
        (ckpt / f"f{i}").write_bytes(b"")
    with capture_smdebug_log() as log:
        hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=3)
        hook.close()
    warnings = [r.getMessage() for r in log.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "more than 50 entries" in warnings[0], warnings
    assert not hook.disabled and create_trial(str(tmp_path / "run")).steps() == [0, 1, 2]


def test_a_costly_checkpoint_folder_is_not_walked_at_every_step(tmp_path, monkeypatch):
    """A walk of a large folder (50,000 files: about a second) is repeated after 20 times as long as it
    took, not at every step: at most about 5% of the training time goes to it. (Here "large" is 10
    entries, and each walk is made to take 50 ms.)"""
    ckpt, _ = _setup(tmp_path, monkeypatch)
    for i in range(20):
        (ckpt / f"f{i}").write_bytes(b"")
    monkeypatch.setattr(state_store, "_WALK_FREE_ENTRIES", 10)
    walks = []
    real = state_store.StateStore._checkpoint_files

    def slow_walk(self):
        walks.append(time.monotonic())
        time.sleep(0.05)
        return real(self)

    monkeypatch.setattr(state_store.StateStore, "_checkpoint_files", slow_walk)
    steps = 40
    start = time.monotonic()
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=steps)
    hook.close()
    elapsed = time.monotonic() - start
    assert len(walks) < steps / 2
    assert len(walks) <= 2 + elapsed / (state_store._WALK_SHARE * 0.05)
    assert create_trial(str(tmp_path / "run")).steps() == list(range(steps))


def test_a_small_checkpoint_folder_is_walked_at_every_step(tmp_path, monkeypatch):
    """As in smdebug 1.0.x: a checkpoint is noticed at the next step, whatever the time between steps."""
    ckpt, _ = _setup(tmp_path, monkeypatch)
    store = state_store.StateStore()
    for i in range(5):
        (ckpt / f"model{i}.pt").write_bytes(b"x")
        assert store.checkpoint_updated()
        store.record(0, i, None, {})
        assert not store.checkpoint_updated()


def test_an_unforeseen_error_reading_the_state_does_not_stop_training(tmp_path, monkeypatch):
    """The hook's last line of defence: whatever escapes the store, one warning and step 0."""
    _setup(tmp_path, monkeypatch, metadata='[{"training-run": 0, "latest-global-step-seen": 5}]')

    def broken(self):
        raise RuntimeError("unforeseen")

    monkeypatch.setattr(state_store.StateStore, "_checkpoint_files", broken)
    hook = _train_and_check(tmp_path, ["unforeseen", "start at 0"])
    assert not hook._state_store.active
