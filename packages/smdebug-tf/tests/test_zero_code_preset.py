"""`smdebug run --out-dir RUN -- python train.py` alone saves the recommended preset on an unmodified Keras
script (as `KerasHook.recommended`): weights, gradients and the loss at every training step of a short run,
so `smdebug rules run` has steps to compare. The original's default saved step 0 only (probe 11a N4, for
every framework)."""

import os
import subprocess
import sys
from pathlib import Path

import smdebug.tensorflow as smd
from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_keras_train.py"
TRAIN = smd.modes.TRAIN


def test_out_dir_alone_saves_the_recommended_preset(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--",
                           sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr
    assert "epochs 2" in proc.stdout
    trial = create_trial(str(out))
    train_steps = trial.steps(mode=TRAIN)
    assert len(train_steps) > 1 and train_steps == list(range(len(train_steps)))
    for name in ("net/hidden/kernel", "gradients/net/hidden/kernel", "loss"):
        assert trial.tensor(name).steps(mode=TRAIN) == train_steps, name
    assert {"inputs", "relu_activations", "predictions"} <= set(trial.collections())
    assert "judge them with: smdebug rules run" in proc.stderr
