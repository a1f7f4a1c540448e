"""`smdebug run`: an unmodified Gluon script trains with the hook attached from the configuration."""

import os
import subprocess
import sys
from pathlib import Path

from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"


def test_unmodified_gluon_script(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--collections",
                           "weights,gradients,losses", "--save-interval", "2", "--", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "final loss" in proc.stdout
    trial = create_trial(str(out))
    assert trial.steps() == [0, 2, 4] and trial.loaded_all_steps
    names = trial.tensor_names()
    assert any(n.startswith("softmaxcrossentropyloss") and n.endswith("_output_0") for n in names), names
    assert any(n.startswith("gradient/") and n.endswith("_weight") for n in names), names
    assert any(not n.startswith("gradient/") and n.endswith("_weight") for n in names), names
