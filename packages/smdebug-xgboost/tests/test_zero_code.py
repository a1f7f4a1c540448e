"""`smdebug run`: an unmodified XGBoost script trains with the hook attached from the configuration."""

import os
import subprocess
import sys
from pathlib import Path

from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"


def test_unmodified_xgboost_script(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--collections",
                           "metrics,feature_importance", "--save-interval", "2", "--", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "trees 6" in proc.stdout
    trial = create_trial(str(out))
    assert trial.steps() == [0, 2, 4] and trial.loaded_all_steps
    assert trial.tensor("train-logloss").steps() == [0, 2, 4]
    assert "feature_importance/weight/f0" in trial.tensor_names()
