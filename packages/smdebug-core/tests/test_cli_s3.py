"""``smdebug ls/show/plot/report`` on an ``s3://`` run (a real run uploaded to a moto server over HTTP)
give the same answers as on the local copy."""

from __future__ import annotations

import contextlib
import json
import os

import pytest

from _cli_runs import mlp_run, upload_dir  # noqa: F401 - mlp_run is a fixture

pytest.importorskip("boto3", reason="S3 needs boto3 (smdebug-core[s3])")
pytest.importorskip("moto.server", reason="the S3 tests need moto[server]")
pytest.importorskip("smdebug.core.storage.s3", reason="this smdebug-core has no S3 storage")


@pytest.fixture(scope="module")
def s3_env():
    from smdebug_test_support.s3 import MotoServer

    with MotoServer() as server:
        # quick retries against the local endpoint
        yield {**server.env, "SMDEBUG_S3_RETRY_ATTEMPTS": "2", "SMDEBUG_S3_RETRY_BASE_DELAY": "0.05"}


@contextlib.contextmanager
def s3_environment(env):
    """The moto server's endpoint and credentials in os.environ (for boto3 in this process), then restored."""
    from smdebug_test_support.s3 import apply_env, restore_env

    previous = apply_env(env)
    try:
        yield
    finally:
        restore_env(previous)


@pytest.fixture(scope="module")
def s3_run(mlp_run, s3_env):
    import boto3

    path, losses = mlp_run
    with s3_environment(s3_env):
        boto3.client("s3").create_bucket(Bucket="cli-runs")
        upload_dir(path, "cli-runs", "runs/mlp")
        boto3.client("s3").put_object(Bucket="cli-runs", Key="runs/mlp/rule_results.json", Body=json.dumps({
            "trial": "mlp", "status": "NoIssuesFound", "rules": [
                {"name": "LossNotDecreasing", "status": "NoIssuesFound", "findings": [], "findings_total": 0}]}))
    return "s3://cli-runs/runs/mlp", path, losses


def test_ls_on_s3_matches_local(s3_run, s3_env, smdebug_cli):
    url, local, _ = s3_run
    remote = smdebug_cli("ls", url, "--json", env=s3_env)
    assert remote.returncode == 0, remote.stderr
    here = json.loads(smdebug_cli("ls", str(local), "--json").stdout)
    doc = json.loads(remote.stdout)
    assert doc["path"].startswith("s3://cli-runs/runs/mlp") and doc["finished"] is True
    for key in ("modes", "tensors", "collections", "workers", "global_steps"):
        assert doc[key] == here[key], key


def test_show_and_plot_on_s3(s3_run, s3_env, smdebug_cli, tmp_path):
    url, _, losses = s3_run
    out = smdebug_cli("show", url, "loss", "--mode", "eval", "--json", env=s3_env)
    assert out.returncode == 0, out.stderr
    assert [r["value"] for r in json.loads(out.stdout)["rows"]] == pytest.approx([float(v) for v in losses["EVAL"]])
    pytest.importorskip("matplotlib")
    out = smdebug_cli("plot", url, "loss", "-o", str(tmp_path / "loss.png"), "--json", env=s3_env)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"


def test_report_on_s3_reads_rule_results_from_the_bucket(s3_run, s3_env, smdebug_cli, tmp_path):
    pytest.importorskip("bokeh")
    url, _, _ = s3_run
    out = smdebug_cli("report", url, "-o", str(tmp_path / "r.html"), env=s3_env)
    assert out.returncode == 0, out.stderr
    assert "rule verdicts from s3://cli-runs/runs/mlp/rule_results.json" in out.stdout
    page = (tmp_path / "r.html").read_text()
    assert "s3://cli-runs/runs/mlp" in page and "LossNotDecreasing" in page
    assert '<section id="curves">' in page and '<section id="gradients">' in page


def test_report_rules_option_reads_s3(s3_run, s3_env, smdebug_cli, tmp_path):
    """--rules s3://...: the result document is read from the bucket (here: for a local run)."""
    import boto3

    pytest.importorskip("bokeh")
    _, local, _ = s3_run
    with s3_environment(s3_env):
        boto3.client("s3").put_object(Bucket="cli-runs", Key="results/elsewhere.json", Body=json.dumps({
            "status": "IssuesFound", "rules": [{"name": "ExplodingTensor", "status": "IssuesFound",
                                                "findings": [{"step": 3, "reason": "too big"}]}]}))
    out = smdebug_cli("report", str(local), "-o", str(tmp_path / "r.html"), "--rules",
                      "s3://cli-runs/results/elsewhere.json", env=s3_env)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "r.html").read_text()
    assert "ExplodingTensor" in page and "step 3: too big" in page
    out = smdebug_cli("report", str(local), "-o", str(tmp_path / "r2.html"), "--rules",
                      "s3://cli-runs/results/missing.json", env=s3_env)
    assert out.returncode == 2 and "cannot read rule results s3://cli-runs/results/missing.json" in out.stderr
    assert "Traceback" not in out.stderr
