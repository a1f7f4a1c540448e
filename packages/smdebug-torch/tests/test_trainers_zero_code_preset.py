"""`smdebug run --out-dir RUN -- python train.py` on unmodified Lightning and Hugging Face Trainer scripts saves
the recommended preset (as `smd.Hook.recommended`), so that `smdebug rules run RUN` judges the run: with the
original's default (every 500 steps) a short trainer run saved step 0 only and every recommended rule said
NotEvaluated (probe 11a, N4). Real trainers on CPU, tiny models from configs, real `smdebug run` processes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import smdebug.pytorch as smd

pytest.importorskip("smdebug.rules", reason="the recommended preset is named by the rule pack (smdebug-rules)")

SCRIPTS = Path(__file__).parent / "scripts"
TRAIN = smd.modes.TRAIN
JUDGED = ("NoIssuesFound", "IssuesFound")


def smdebug(*args, cwd=None):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "smdebug.cli.main", *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)


def run_with_out_dir_alone(tmp_path, script, *script_args):
    out = tmp_path / "run"
    proc = smdebug("run", "--out-dir", str(out), "--", sys.executable, str(SCRIPTS / script), *script_args,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    judged = smdebug("rules", "run", str(out), "--json", "-q", "--no-progress")
    status = {r["name"]: r["status"] for r in json.loads(judged.stdout)["rules"]}
    return smd.create_trial(str(out)), proc, status


def test_lightning_script_under_out_dir_alone_is_judged(tmp_path):
    pytest.importorskip("lightning")
    trial, proc, status = run_with_out_dir_alone(tmp_path, "lightning_train.py", "1")
    assert "global_step 4" in proc.stdout
    assert trial.steps(mode=TRAIN) == [0, 1, 2, 3]  # every step of a short run, not step 0 alone
    for name in ("Net_fc1.weight", "gradient/Net_fc1.weight", "train_loss"):
        assert trial.tensor(name).steps(mode=TRAIN) == [0, 1, 2, 3], name
    assert {"inputs", "relu_activations"} <= set(trial.collections())
    assert "saved" in proc.stderr and "judge them with: smdebug rules run" in proc.stderr
    for rule in ("VanishingGradient", "WeightUpdateRatio", "ExplodingTensor", "UnnormalizedInput"):
        assert status[rule] in JUDGED, (rule, status)


def test_transformers_script_under_out_dir_alone_is_judged(tmp_path):
    pytest.importorskip("transformers")
    trial, proc, status = run_with_out_dir_alone(tmp_path, "transformers_train.py", str(tmp_path / "hf_out"))
    assert "done: global_step=3" in proc.stdout
    assert trial.steps(mode=TRAIN) == [0, 1, 2]
    weights = [n for n in trial.tensor_names(collection="weights") if n.endswith("c_attn.weight")]
    assert weights and trial.tensor(weights[0]).steps(mode=TRAIN) == [0, 1, 2]
    assert trial.tensor_names(collection="gradients")
    for rule in ("VanishingGradient", "WeightUpdateRatio", "ExplodingTensor", "ImproperOutput"):
        assert status[rule] in JUDGED, (rule, status)
