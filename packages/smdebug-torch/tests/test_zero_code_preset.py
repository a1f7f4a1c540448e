"""`smdebug run --out-dir RUN -- python train.py` (no --collections, --save-interval, --config) saves the
recommended preset, as `smd.Hook.recommended` does, so that `smdebug rules run RUN` judges the run. With the
original's default (a few collections every 500 steps) a short run saved step 0 only and every recommended rule
said NotEvaluated (probe 11a, N4). Real training in real `smdebug run` processes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdebug.trials import create_trial

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"  # 8 SGD steps of a 2-layer MLP


def smdebug(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "smdebug.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


def smdebug_run(*options, env=None):
    return smdebug("run", *options, "--", sys.executable, str(SCRIPT), env=env)


def verdicts(out):
    proc = smdebug("rules", "run", str(out), "--json", "-q", "--no-progress")
    return proc.returncode, {r["name"]: r["status"] for r in json.loads(proc.stdout)["rules"]}


def test_out_dir_alone_saves_what_the_recommended_rules_read(tmp_path):
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "final loss" in proc.stdout
    trial = create_trial(str(out))
    assert trial.steps() == list(range(8))  # the preset's dense start: every step of a short run
    for name in ("Sequential_0.weight", "gradient/Sequential_0.weight", "CrossEntropyLoss_output_0"):
        assert trial.tensor(name).steps() == list(range(8)), name
    assert {"inputs", "relu_activations", "labels", "predictions"} <= set(trial.collections())
    assert "the recommended preset" in proc.stderr
    assert f"saved 8 steps (0-7) in {out}; judge them with: smdebug rules run {out}" in proc.stderr
    code, status = verdicts(out)
    # rules that compare saves of weights and gradients have them; the run is judged, not NotEvaluated
    for rule in ("VanishingGradient", "WeightUpdateRatio", "ExplodingTensor", "DeadRelu", "ImproperOutput"):
        assert status[rule] in ("NoIssuesFound", "IssuesFound"), (rule, status)
    assert code in (0, 1), status


def test_options_that_say_what_to_save_keep_the_original_default_and_the_end_says_so(tmp_path):
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out), "--collections", "weights,losses")
    assert proc.returncode == 0, proc.stderr
    assert create_trial(str(out)).steps() == [0]  # every 500 steps: an 8-step run saves step 0
    assert "saving the recommended preset" not in proc.stderr
    assert f"{out} holds 1 step (0) only" in proc.stderr and "shorter than the save interval" in proc.stderr


def test_the_recommended_preset_named_takes_more_collections_and_a_schedule(tmp_path):
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out), "--preset", "recommended", "--save-interval", "3",
                       "--collections", "biases")
    assert proc.returncode == 0, proc.stderr
    trial = create_trial(str(out))
    assert trial.steps() == [0, 3, 6]  # --save-interval replaces the preset's schedule
    assert trial.tensor("gradient/Sequential_2.weight").steps() == [0, 3, 6]
    assert trial.tensor("Sequential_0.bias").steps() == [0, 3, 6]  # (biases: not in the preset)
    assert "saved 3 steps (0, 3, 6)" in proc.stderr


def test_the_recommended_preset_goes_with_out_dir_not_a_configuration_file(tmp_path):
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run")}))
    proc = smdebug_run("--config", str(config), "--preset", "recommended")
    assert proc.returncode == 2 and "--preset recommended goes with --out-dir" in proc.stderr
    assert "final loss" not in proc.stdout


def test_without_a_rule_pack_the_default_is_kept_and_said(tmp_path):
    """Nothing names the preset's collections: the hook saves the configuration's defaults, says why once,
    and the end says the run holds step 0 only."""
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out), env={"SMDEBUG_DISABLE_PLUGINS": "smdebug-rules"})
    assert proc.returncode == 0, proc.stderr
    assert "cannot use the recommended preset: no installed rule pack" in proc.stdout + proc.stderr
    assert create_trial(str(out)).steps() == [0]
    assert "holds 1 step (0) only" in proc.stderr


@pytest.mark.parametrize("value", ["0", "false"])
def test_use_smdebug_0_still_runs_untouched(tmp_path, value):
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out), env={"USE_SMDEBUG": value})
    assert proc.returncode == 0 and "final loss" in proc.stdout
    assert not out.exists() and "smdebug run:" not in proc.stderr
