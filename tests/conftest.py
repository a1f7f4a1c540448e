"""Fixtures of the cross-package integration tests (everything installed, as `nox -s core` does)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "needs_core: end-to-end through smdebug-core's hook and trials (smdebug.core.hook, smdebug.trials); "
        "fails, rather than skips, when those are missing",
    )


@pytest.fixture
def fresh_plugins(monkeypatch):
    """The plugin manager, reset: discovery runs again, over what is really installed."""
    from smdebug.core.plugins import manager

    monkeypatch.delenv("SMDEBUG_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("SMDEBUG_LOAD_PLUGINS", raising=False)
    manager.reset_for_tests()
    yield manager
    manager.reset_for_tests()


def _smdebug_command():
    exe = Path(sys.executable).parent / "smdebug"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("smdebug")
    return [found] if found else [sys.executable, "-m", "smdebug.cli"]


@pytest.fixture
def smdebug_cli():
    """Run the ``smdebug`` console script: ``smdebug_cli("plugins", "--json", env={...})``."""

    def run(*args, env=None, timeout=120):
        full_env = {**os.environ, **(env or {})}
        return subprocess.run(_smdebug_command() + list(args), capture_output=True, text=True, env=full_env,
                              timeout=timeout)

    return run
