"""Locate or build a virtual environment holding the original smdebug 1.0.34, for side-by-side runs.

The original needs numpy<2.3 and protobuf 3.20.x, which cannot live beside our packages, so it gets
its own venv (built once with uv, cached outside the repository). Used by the benchmarks; the interop
tests build the same environment.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys

ORIGINAL_VERSION = "1.0.34"
REQUIREMENTS = [f"smdebug=={ORIGINAL_VERSION}", "numpy<2.3", "protobuf==3.20.3", "requests", "pandas", "psutil"]


def venv_dir() -> str:
    return os.environ.get("SMDEBUG_ORIGINAL_VENV") or os.path.expanduser(
        f"~/.cache/smdebug-tests/original-smdebug-{ORIGINAL_VERSION}"
    )


def _python(path: str) -> str:
    return os.path.join(path, "bin", "python")


def _works(python: str) -> bool:
    if not os.path.exists(python):
        return False
    probe = subprocess.run([python, "-c", "import smdebug.trials, smdebug.core.writer"], capture_output=True)
    return probe.returncode == 0


def original_python() -> str:
    """Path of a python that imports the original smdebug; builds the venv if needed."""
    path = venv_dir()
    python = _python(path)
    if _works(python):
        return python
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _works(python):
            return python
        uv = shutil.which("uv")
        if uv is None:
            raise RuntimeError("uv is needed to build the original smdebug environment: pip install uv")
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, path], check=True)
        env = {**os.environ, "VIRTUAL_ENV": path}
        subprocess.run([uv, "pip", "install", "-q", *REQUIREMENTS], check=True, env=env)
        if not _works(python):
            raise RuntimeError(f"The original smdebug environment at {path} does not import smdebug")
    return python
