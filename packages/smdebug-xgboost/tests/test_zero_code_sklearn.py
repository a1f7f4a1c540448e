"""`smdebug run`: an unmodified script training through XGBoost's scikit-learn API is recorded too."""

import os
import subprocess
import sys
import textwrap

from smdebug.trials import create_trial

SCRIPT = textwrap.dedent("""
    import xgboost as xgb
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    clf = xgb.XGBClassifier(n_estimators=6, max_depth=2, eval_metric="logloss")
    clf.fit(X[:400], y[:400], eval_set=[(X[400:], y[400:])], verbose=False)
    print("fitted", clf.get_booster().num_boosted_rounds())
""")


def test_unmodified_sklearn_api_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--out-dir", str(out), "--",
                           sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "fitted 6" in proc.stdout
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1, 2, 3, 4, 5] and trial.loaded_all_steps
    assert "validation_0-logloss" in trial.tensor_names()
