"""`smdebug run`: an unmodified PyTorch script trains with a hook attached from the configuration."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"


def smdebug_run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", *args, "--", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def test_unmodified_script_saves_weights_gradients_and_losses(tmp_path):
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out), "--collections", "weights,gradients,losses", "--save-interval", "2")
    assert proc.returncode == 0, proc.stderr
    assert "final loss" in proc.stdout  # the script's own output, untouched
    trial = create_trial(str(out))
    assert trial.steps() == [0, 2, 4, 6] and trial.loaded_all_steps
    names = trial.tensor_names()
    assert "CrossEntropyLoss_output_0" in names
    assert {"gradient/Sequential_0.weight", "Sequential_0.weight", "Sequential_2.weight"} <= set(names)
    grad = trial.tensor("gradient/Sequential_0.weight").value(0)
    assert grad.shape == (16, 10) and np.abs(grad).sum() > 0


def test_config_file_and_use_smdebug_0(tmp_path):
    out = tmp_path / "run"
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(out), "HookParameters": {"save_steps": "1,5"},
                                  "CollectionConfigurations": [{"CollectionName": "losses"}]}))
    proc = smdebug_run("--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert create_trial(str(out)).steps() == [0, 1, 5]  # save_steps join the default interval (step 0)
    off = tmp_path / "off"
    proc = smdebug_run("--out-dir", str(off), env={"USE_SMDEBUG": "0"})
    assert proc.returncode == 0 and "final loss" in proc.stdout
    assert not off.exists()


def test_the_scripts_exit_status_is_kept(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(tmp_path / "r"), "--",
                           sys.executable, "-c", "import sys; sys.exit(7)"], capture_output=True, timeout=120)
    assert proc.returncode == 7
