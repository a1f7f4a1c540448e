"""The benchmarks' builder of the original smdebug's venv installs into that venv and nowhere else, even
under nox (``UV_PYTHON`` and ``VIRTUAL_ENV`` pointing at the session's venv), and each benchmark side
refuses to measure the other smdebug (benchmarks/sides.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
CORE = os.path.join(ROOT, "packages", "smdebug-core")

pytestmark = pytest.mark.interop

UV = shutil.which("uv")


def _venv(path) -> str:
    subprocess.run([UV, "venv", "-q", "-p", sys.executable, str(path)], check=True,
                   env={k: v for k, v in os.environ.items() if k not in ("UV_PYTHON", "VIRTUAL_ENV")})
    return os.path.join(str(path), "bin", "python")


def _dists(python: str) -> set:
    out = subprocess.run([python, "-c", "from importlib import metadata as m; "
                                        "print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def _side(python: str, check: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-c", f"import sys; sys.path.insert(0, {BENCHMARKS!r}); import sides; "
                                         f"print(sides.{check}())"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})


@pytest.mark.skipif(UV is None, reason="the builder needs uv (the nox sessions have it)")
def test_the_original_goes_into_its_own_venv_under_nox(tmp_path, monkeypatch):
    session = _venv(tmp_path / "session")  # what nox's UV_PYTHON / VIRTUAL_ENV point at
    monkeypatch.setenv("UV_PYTHON", session)
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "session"))
    monkeypatch.setenv("SMDEBUG_ORIGINAL_VENV", str(tmp_path / "original"))
    monkeypatch.syspath_prepend(BENCHMARKS)
    import original_env

    python = original_env.original_python()
    assert python == os.path.join(str(tmp_path / "original"), "bin", "python")
    assert "smdebug" in _dists(python)
    assert not {d for d in _dists(session) if "smdebug" in d}, "the build installed into the session's venv"
    result = _side(python, "check_original")
    assert result.returncode == 0 and result.stdout.startswith("smdebug 1.0.34"), result.stderr


@pytest.mark.skipif(UV is None, reason="needs uv")
def test_a_side_with_the_other_smdebug_refuses_to_measure(tmp_path):
    """Ours beside the original in one venv (what the bug made): our side stops and says why; the
    original's side stops in a venv holding smdebug-core."""
    both = _venv(tmp_path / "both")
    subprocess.run([UV, "pip", "install", "-q", "--python", both, "-e", CORE], check=True)
    # (its requirements clash with ours; its package alone is what shadowed ours)
    subprocess.run([UV, "pip", "install", "-q", "--python", both, "--no-deps", "smdebug==1.0.34"], check=True)
    ours = _side(both, "check_ours")
    assert ours.returncode != 0 and "the original smdebug 1.0.34 is installed in this environment" in ours.stderr
    original = _side(both, "check_original")
    assert original.returncode != 0 and "smdebug-core is installed in the original's environment" in original.stderr
    result = _side(sys.executable, "check_ours")  # this test's own environment: ours alone
    assert result.returncode == 0 and result.stdout.startswith("smdebug-core "), result.stderr


def test_a_benchmark_without_its_comparison_fails_and_records_nothing(tmp_path, monkeypatch, capsys):
    """The original's venv cannot be built (no uv on PATH, an empty venv path): the run fails, RESULTS.md
    gets nothing, where it used to record the table with 'unavailable'."""
    monkeypatch.syspath_prepend(BENCHMARKS)
    import run as bench_run

    monkeypatch.setattr(bench_run, "RESULTS", str(tmp_path / "RESULTS.md"))
    monkeypatch.setenv("SMDEBUG_ORIGINAL_VENV", str(tmp_path / "no-venv"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert bench_run.main(["--only", "trial_read", "--quick"]) == 1
    assert "benchmark trial_read FAILED, nothing recorded" in capsys.readouterr().err
    assert not (tmp_path / "RESULTS.md").exists()
    torch_like = {"rows": [{"ours": {"step_ms": 1.0}, "original": {"error": "torch_original.py exited 1"}}]}
    memory_like = {"models": {"small": {"rows": [{"original": True, "results": {100: {"error": "killed"}}},
                                                 {"original": False, "results": {100: {"peak_mib": 5}}}]}}}
    assert bench_run.comparison_failures(torch_like) == ["torch_original.py exited 1"]
    assert bench_run.comparison_failures(memory_like) == ["killed"]
    assert bench_run.comparison_failures({"cases": [{"original_error": "x"}, {"ours": 1}]}) == ["x"]
    assert bench_run.comparison_failures({"rows": [{"ours": {}, "original": {"step_ms": 2.0}}]}) == []
