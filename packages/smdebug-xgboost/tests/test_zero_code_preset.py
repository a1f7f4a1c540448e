"""`smdebug run --out-dir RUN -- python train.py` alone saves the recommended preset on an unmodified XGBoost
script (as `smd.Hook.recommended`): every round of a short run, its metrics and trees, so `smdebug rules run`
has rounds to compare. The original's default saved round 0 only (probe 11a N4, for every framework)."""

import os
import subprocess
import sys
from pathlib import Path

from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"  # 6 boosting rounds


def test_out_dir_alone_saves_the_recommended_preset(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--",
                           sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "trees 6" in proc.stdout
    trial = create_trial(str(out))
    assert trial.steps() == list(range(6))
    assert trial.tensor("train-logloss").steps() == list(range(6))
    assert trial.tensor("trees/Depth").steps() == list(range(6))  # (trees: read by TreeDepth, in the preset)
    assert "ERROR" not in proc.stdout + proc.stderr  # (no collection that XGBoost cannot fill is asked for)
    assert "saved 6 steps (0-5)" in proc.stderr
