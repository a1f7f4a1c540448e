"""Command outputs on S3 (seventh red-team pass): never written over a run's own objects, and never
written to a local folder named ``s3:`` by a command that writes local files only.

Before: ``smdebug rules run RUN -o s3://b/run/index/000000000/000000000000_worker_0.json`` replaced step
0's index object with the rule results (every later read of the run: "Index file has no meta"), and
``smdebug export tensorboard s3://b/run s3://b/run/index`` wrote into the run's index folder: the checks
that refuse these outputs looked at local paths only. ``smdebug report -o s3://...`` and ``plot -o
s3://...`` wrote ``./s3:/b/...`` on local disk and printed "wrote s3://...".
"""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import NumpyHook, train_logistic_regression

pytest.importorskip("boto3", reason="S3 needs boto3 (smdebug-core[s3])")
pytest.importorskip("moto.server", reason="the S3 tests need moto[server]")


def _trained_s3_run(s3_run):
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=s3_run.path, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "losses"])
    train_logistic_regression(hook, steps=4)
    hook.close()
    return s3_run


def _objects(run):
    return {k: run.read(k) for k in run.keys()}


def _cli(argv, *args, cwd):
    return subprocess.run(argv + list(args), capture_output=True, text=True, cwd=cwd, env=dict(os.environ),
                          timeout=180)


def test_rule_results_are_never_written_over_an_s3_runs_own_objects(s3_run, smdebug_argv, tmp_path):
    pytest.importorskip("smdebug.rules", reason="needs the rule pack")
    run = _trained_s3_run(s3_run)
    before = _objects(run)
    index_key = next(k for k in before if k.startswith("index/"))
    for target in (index_key, "collections/000000000/worker_0_collections.json", "training_job_end.ts",
                   "events/000000000001/x.json", "workers_ended/w.json"):
        res = _cli(smdebug_argv, "rules", "run", run.path, "--rule", "loss_not_decreasing",
                   "-o", f"{run.path}/{target}", cwd=tmp_path)
        assert res.returncode == 2, (target, res.stdout, res.stderr)
        assert "refusing to write" in res.stderr and "of the run" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    assert _objects(run) == before  # nothing replaced, nothing added
    # beside the run's own objects is fine
    res = _cli(smdebug_argv, "rules", "run", run.path, "--rule", "loss_not_decreasing",
               "-o", f"{run.path}/rule_results.json", cwd=tmp_path)
    assert res.returncode in (0, 1, 3), res.stderr
    assert run.exists("rule_results.json")


def test_export_refuses_an_s3_runs_own_folders(s3_run, smdebug_argv, tmp_path):
    run = _trained_s3_run(s3_run)
    before = _objects(run)
    for folder in ("index", "events/000000000000", "collections"):
        res = _cli(smdebug_argv, "export", "tensorboard", run.path, f"{run.path}/{folder}", cwd=tmp_path)
        assert res.returncode == 2, (folder, res.stdout, res.stderr)
        assert "refusing to export" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert _objects(run) == before
    res = _cli(smdebug_argv, "export", "tensorboard", run.path, f"{run.path}/tb", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert any(k.startswith("tb/") and k.endswith(".tfevents") for k in run.keys())


@pytest.mark.parametrize("command", [["report"], ["plot", "loss"]])
def test_commands_writing_local_files_refuse_an_s3_output(s3_run, smdebug_argv, tmp_path, command):
    run = _trained_s3_run(s3_run)
    res = _cli(smdebug_argv, command[0], run.path, *command[1:], "-o", f"{run.path}/out.html", cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "writes a local file only" in res.stderr and "-o -" in res.stderr, res.stderr
    assert not (tmp_path / "s3:").exists()  # (it wrote ./s3:/bucket/run/out.html and said it wrote to S3)
    assert not run.exists("out.html")


def test_rule_results_saved_from_python_are_never_written_over_an_s3_runs_own_objects(s3_run):
    pytest.importorskip("smdebug.rules", reason="needs the rule pack")
    from smdebug.exceptions import SMDebugValueError
    from smdebug.rules.runner import run_rules

    run = _trained_s3_run(s3_run)
    result = run_rules(run.path, ["loss_not_decreasing"])
    before = _objects(run)
    index_key = next(k for k in before if k.startswith("index/"))
    with pytest.raises(SMDebugValueError, match="refusing to write"):
        result.save(f"{run.path}/{index_key}")
    assert _objects(run) == before
    result.save(f"{run.path}/rule_results.json")
    assert run.exists("rule_results.json")
