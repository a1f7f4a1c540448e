"""`smdebug run --out-dir RUN -- python train.py` alone saves the recommended preset on an unmodified Gluon
script (as `smd.Hook.recommended`): weights, gradients and losses at every step of a short run, so
`smdebug rules run` has steps to compare. The original's default saved step 0 only (probe 11a N4, for every
framework)."""

import os
import subprocess
import sys
from pathlib import Path

from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"  # 6 steps


def test_out_dir_alone_saves_the_recommended_preset(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--",
                           sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "final loss" in proc.stdout
    trial = create_trial(str(out))
    assert trial.steps() == list(range(6))
    for collection in ("weights", "gradients", "losses", "inputs", "relu_activations"):
        names = trial.tensor_names(collection=collection)
        assert names and trial.tensor(names[0]).steps() == list(range(6)), collection
    assert "saved 6 steps (0-5)" in proc.stderr
