"""`smdebug run` told to attach a hook it cannot attach says so (seventh red-team pass).

Before: ``smdebug run --config MISSING`` and ``SMDEBUG_DISABLE_PLUGINS='*'`` (or an ``SMDEBUG_LOAD_PLUGINS``
naming no installed plugin) ran the script without a hook and without a warning (the first logged "no hook
configuration" at INFO): a job that was meant to be debugged saved nothing, and nothing said why.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "unmodified_train.py"


def smdebug_run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", *args, "--", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def test_a_config_that_is_not_there_is_refused_before_the_script_runs(tmp_path):
    for config, why in ((tmp_path / "missing.json", "no such file"), (tmp_path, "not a regular file")):
        proc = smdebug_run("--config", str(config))
        assert proc.returncode == 2, proc.stderr
        assert f"--config {config}: {why}" in proc.stderr
        assert "final loss" not in proc.stdout  # (not run at all: the user asked for a hook)


@pytest.mark.parametrize("env", [{"SMDEBUG_DISABLE_PLUGINS": "*"}, {"SMDEBUG_LOAD_PLUGINS": "no-such-plugin"}],
                         ids=["disabled", "load-list-without-it"])
def test_plugins_switched_off_are_said_not_silently_unhooked(tmp_path, env):
    out = tmp_path / "run"
    proc = smdebug_run("--out-dir", str(out), "--collections", "losses", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "final loss" in proc.stdout  # training goes on, untouched
    said = proc.stdout + proc.stderr  # (smdebug logs to stdout unless SMDEBUG_LOG_ALL_TO_STDOUT=false)
    assert "no framework plugin can attach a hook" in said, said
    assert next(iter(env)) in said  # the variable that switched it off is named
    assert not out.exists()
