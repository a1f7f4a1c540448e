"""`smdebug run`: an unmodified Keras script trains with the KerasHook attached from the configuration."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import smdebug.tensorflow as smd
from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_keras_train.py"
VARS = ["net/hidden/kernel", "net/hidden/bias", "net/head/kernel", "net/head/bias"]


def _run(out, *, env=None, script=SCRIPT):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    return subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--collections",
                           "weights,biases,gradients,losses", "--save-interval", "2", "--", sys.executable,
                           str(script)], capture_output=True, text=True, timeout=300, env=env)


def test_unmodified_keras_script(tmp_path):
    out = tmp_path / "run"
    proc = _run(out)
    assert proc.returncode == 0, proc.stderr
    assert "epochs 2" in proc.stdout
    trial = create_trial(str(out))
    assert trial.loaded_all_steps
    assert trial.steps(mode=smd.modes.TRAIN) == [0, 2, 4, 6]  # 2 epochs of 4 batches
    assert trial.tensor_names(collection="weights") == ["net/head/kernel", "net/hidden/kernel"]
    assert trial.tensor_names(collection="gradients") == sorted("gradients/" + v for v in VARS)
    assert trial.tensor("loss").steps(mode=smd.modes.TRAIN) == [0, 2, 4, 6]
    for name in ["net/hidden/kernel", "gradients/net/hidden/kernel"]:
        assert trial.tensor(name).steps(mode=smd.modes.TRAIN) == [0, 2, 4, 6], name
    # model.evaluate ran with the same hook: its first step (global step 8) saved the weights in EVAL mode,
    # its last one (step 9) the evaluation's final loss, which is saved whatever the schedule
    assert trial.steps(mode=smd.modes.EVAL) == [0, 1]
    assert trial.tensor_names(step=1, mode=smd.modes.EVAL) == ["loss"]
    assert trial.tensor("net/hidden/kernel").steps() == [0, 2, 4, 6, 8]
    assert "gradients/net/hidden/kernel" not in trial.tensor_names(step=0, mode=smd.modes.EVAL)
    assert trial.tensor("net/hidden/kernel").value(0).shape == (4, 3)


def test_script_importing_tensorflow_first(tmp_path):
    script = tmp_path / "tf_first.py"
    script.write_text("import tensorflow as tf\n" + SCRIPT.read_text().replace("import keras\n", "keras = tf.keras\n"))
    out = tmp_path / "run"
    proc = _run(out, script=script)
    assert proc.returncode == 0, proc.stderr
    trial = create_trial(str(out))
    assert "gradients/net/head/kernel" in trial.tensor_names()


def test_hook_already_in_callbacks_is_not_doubled(tmp_path):
    script = tmp_path / "own_hook.py"
    own = tmp_path / "own"
    text = SCRIPT.read_text().replace(
        "verbose=0)\n",
        f"verbose=0, callbacks=[smd.KerasHook({str(own)!r}, include_collections=['losses'])])\n", 1)
    script.write_text("import smdebug.tensorflow as smd\n" + text)
    out = tmp_path / "run"
    proc = _run(out, script=script)
    assert proc.returncode == 0, proc.stderr
    own_trial = create_trial(str(own))
    assert own_trial.tensor_names() == ["loss"]  # the script's own hook trained
    assert own_trial.steps(mode=smd.modes.TRAIN) == [0]  # default schedule: every 500 steps
    # One hook per process: the script's hook is the process's hook, so the evaluate call without
    # callbacks was given that same hook, not a second one writing to the configured out_dir.
    assert own_trial.steps(mode=smd.modes.EVAL) == [0, 1]  # schedule's step 0, final loss at the last step
    assert not out.exists()


@pytest.mark.parametrize("value", ["0", "false"])
def test_use_smdebug_0_runs_untouched(tmp_path, value):
    out = tmp_path / "run"
    proc = _run(out, env={"USE_SMDEBUG": value})
    assert proc.returncode == 0, proc.stderr
    assert "epochs 2" in proc.stdout
    assert not out.exists()
