"""A training job that died of an exception nobody caught, or of SIGTERM, is closed at exit: its run gets the end
marker (nothing more will come) and was judged "training ended ... NoIssuesFound", exit 0, so a gate on the
verdict passed a job that crashed at round 126 of 300. The hook now says in the run how the process ended, and
``smdebug rules run`` reports such a run as TrainingFailed (exit 5) when no rule found an issue: the rules judged
the steps saved before it died, not the training that was meant to happen.

Real jobs: the PyTorch classifier of ``scripts/train_and_die.py`` dying by an exception or SIGTERM, and an
XGBoost booster whose callback raises mid-training; a job trained to its end is the control."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import EXIT_CODES, NO_ISSUES, TRAINING_FAILED  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "train_and_die.py")
RULES = ["LossNotDecreasing", "ExplodingTensor"]


def rules_run(run, rules=RULES):
    done = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", run, "--no-progress",
                           *[a for r in rules for a in ("--rule", r)]], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def torch_job(tmp_path, die_by, die_at):
    out = str(tmp_path / "run")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DIE_BY": die_by}
    done = subprocess.run([sys.executable, SCRIPT, out, str(die_at)], env=env, capture_output=True, text=True,
                          timeout=240)
    return out, done


def test_a_job_that_raised_is_judged_training_failed(tmp_path):
    out, done = torch_job(tmp_path, "raise", 60)
    assert done.returncode == 1 and "the data loader lost its connection" in done.stderr, done.stderr
    code, table, err = rules_run(out)
    assert code == EXIT_CODES[TRAINING_FAILED] == 5, table + err
    assert "training did not end normally" in table.splitlines()[0], table
    # (it died before step 60 began: its last step is 59)
    assert ("warning: worker_0: training did not end normally: at step 59 the process raised an unhandled "
            "RuntimeError: the data loader lost its connection") in table, table
    assert "result: TrainingFailed (exit status 5)" in table, table
    result = run_rules(out, RULES)
    # The rules judged what was saved: their own verdicts are unchanged, the run's says training failed.
    assert {r.name: r.status for r in result.rules} == {r: NO_ISSUES for r in RULES}, result.to_json()
    assert result.status == TRAINING_FAILED and result.training_ended
    assert len(result.abnormal_ends) == 1 and json.loads(result.to_json())["status"] == TRAINING_FAILED


def test_a_job_stopped_by_sigterm_is_judged_training_failed(tmp_path):
    out, done = torch_job(tmp_path, "sigterm", 60)
    assert done.returncode == -signal.SIGTERM, done.stderr
    code, table, err = rules_run(out)
    assert code == 5 and "the process was stopped by SIGTERM" in table, table + err


def test_a_job_that_ended_normally_is_not(tmp_path):
    out, done = torch_job(tmp_path, "raise", -1)
    assert done.returncode == 0, done.stderr
    code, table, err = rules_run(out)
    assert code == 0 and "; training ended)" in table.splitlines()[0] and "warning" not in table, table + err


def test_an_xgboost_job_that_crashed_mid_training(tmp_path):
    pytest.importorskip("xgboost")
    out = str(tmp_path / "run")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np, xgboost as xgb
        import smdebug.xgboost as smd

        rng = np.random.default_rng(0)
        x = rng.normal(size=(300, 5)); y = (x[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
        dtrain, dvalid = xgb.DMatrix(x[:200], label=y[:200]), xgb.DMatrix(x[200:], label=y[200:])

        class Crash(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                if epoch == 40:
                    raise ValueError("the feature store returned an empty batch")
                return False

        hook = smd.Hook.recommended({out!r})
        xgb.train({{"objective": "binary:logistic", "nthread": 1, "max_depth": 2}}, dtrain, num_boost_round=300,
                  evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook, Crash()], verbose_eval=False)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1 and "empty batch" in done.stderr, done.stderr
    code, table, err = rules_run(out, ["ExplodingTensor", "TreeDepth"])
    assert code == 5, table + err
    assert "the process raised an unhandled ValueError: the feature store returned an empty batch" in table, table
