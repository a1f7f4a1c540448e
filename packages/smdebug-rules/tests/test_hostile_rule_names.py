"""Hostile input for the rule runner: a rule is only ever code that an installed rule pack registered
under that name (entry points ``smdebug.rules``). A name that looks like a module, a file, a path or a
``module:attr`` target is just an unknown name: nothing is imported or run, from the API or the command."""

import os
import subprocess
import sys

import numpy as np
import pytest

from _hooks import NumpyHook
from smdebug import SaveConfig
from smdebug.exceptions import SMDebugValueError
from smdebug.rules import find_rule

NAMES = ["evil_rule_module", "evil_rule_module:Evil", "{dir}/evil_rule_module.py", "../evil_rule_module",
         "evil_rule_module.Evil", "os:system"]


@pytest.fixture
def evil_module(tmp_path, monkeypatch):
    """A module on sys.path (and PYTHONPATH) that leaves a marker file if it is ever imported."""
    marker = tmp_path / "imported"
    (tmp_path / "evil_rule_module.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass Evil:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return marker


@pytest.mark.parametrize("name", NAMES)
def test_a_rule_name_never_imports_code(tmp_path, evil_module, name):
    with pytest.raises(SMDebugValueError, match="unknown rule"):
        find_rule(name.format(dir=tmp_path))
    assert not evil_module.exists() and "evil_rule_module" not in sys.modules


def test_the_command_refuses_them_too(tmp_path, evil_module):
    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(3):
        hook.begin_step()
        hook.record("loss", np.float32(1.0 / (step + 1)))
        hook.end_step()
    hook.close()
    for name in NAMES:
        proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", str(run), "--rule",
                               name.format(dir=tmp_path)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "unknown rule" in proc.stderr, (name, proc.stderr[-2000:])
    assert not evil_module.exists()
