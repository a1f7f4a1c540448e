"""Locate or build a virtual environment holding the original smdebug 1.0.34, for side-by-side runs.

The original needs numpy<2.3 and protobuf 3.20.x, which cannot live beside our packages, so it gets
its own venv (built once with uv, cached outside the repository). Used by the benchmarks; the interop
tests build the same environment.

``original_python(with_torch=True)`` gives a second venv, ``...-torch``, with the same requirements plus
PyTorch pinned to the local CPU wheel (``torch==2.13.0+cpu`` from /opt/wheels, or the folder named by
``SMDEBUG_TORCH_FIND_LINKS``), for the PyTorch hook benchmark.

Every uv call names its target (``--python <venv>/bin/python``): under nox, ``UV_PYTHON`` points at the
session's own venv, and a ``uv pip install`` guided only by ``VIRTUAL_ENV`` installed the original into
it, where it then shadowed ours. A venv counts as built only when its ``import smdebug`` is the original
1.0.34 from that venv (``sides.check_original``).
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys

ORIGINAL_VERSION = "1.0.34"
REQUIREMENTS = [f"smdebug=={ORIGINAL_VERSION}", "numpy<2.3", "protobuf==3.20.3", "requests", "pandas", "psutil"]
TORCH_VERSION = "2.13.0"
DEFAULT_FIND_LINKS = "/opt/wheels"
HERE = os.path.dirname(os.path.abspath(__file__))
# sides.check_original: smdebug is the original 1.0.34 of that venv (and smdebug-core is not there)
PROBE = (f"import sys; sys.path.insert(0, {HERE!r}); import sides; sides.check_original(); "
         "import smdebug.trials, smdebug.core.writer")
TORCH_PROBE = PROBE + ", torch, smdebug.pytorch"


def venv_dir(with_torch: bool = False) -> str:
    if with_torch:
        return os.environ.get("SMDEBUG_ORIGINAL_TORCH_VENV") or os.path.expanduser(
            f"~/.cache/smdebug-tests/original-smdebug-{ORIGINAL_VERSION}-torch"
        )
    return os.environ.get("SMDEBUG_ORIGINAL_VENV") or os.path.expanduser(
        f"~/.cache/smdebug-tests/original-smdebug-{ORIGINAL_VERSION}"
    )


def _torch_wheels(folder: str) -> list:
    return sorted(glob.glob(os.path.join(folder, f"torch-{TORCH_VERSION}+*.whl")))


def torch_find_links() -> str:
    """The first folder holding a local torch 2.13.0 build: ``SMDEBUG_TORCH_FIND_LINKS``, uv's
    ``UV_FIND_LINKS`` (set by the noxfile), then /opt/wheels."""
    candidates = [os.environ.get("SMDEBUG_TORCH_FIND_LINKS", ""), *os.environ.get("UV_FIND_LINKS", "").split(),
                  DEFAULT_FIND_LINKS]
    folders = [c.removeprefix("file://") for c in candidates if c]
    return next((f for f in folders if _torch_wheels(f)), DEFAULT_FIND_LINKS)


def torch_requirement() -> str:
    """``torch==2.13.0+cpu`` when the find-links folder holds that local build, else ``torch==2.13.0``."""
    for wheel in _torch_wheels(torch_find_links()):
        return "torch==" + os.path.basename(wheel).split("-")[1]
    return f"torch=={TORCH_VERSION}"


def _python(path: str) -> str:
    return os.path.join(path, "bin", "python")


def _clean_env() -> dict:
    """The environment for the original's processes and for uv: nothing pointing at our venv."""
    return {k: v for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "UV_PYTHON", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")}


def _works(python: str, probe: str = PROBE) -> bool:
    if not os.path.exists(python):
        return False
    return subprocess.run([python, "-c", probe], capture_output=True, env=_clean_env()).returncode == 0


def original_python(with_torch: bool = False) -> str:
    """Path of a python that imports the original smdebug (and, with ``with_torch``, PyTorch and the
    original's ``smdebug.pytorch``); builds the venv if needed."""
    path = venv_dir(with_torch)
    python = _python(path)
    probe = TORCH_PROBE if with_torch else PROBE
    if _works(python, probe):
        return python
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _works(python, probe):
            return python
        uv = shutil.which("uv")
        if uv is None:
            raise RuntimeError("uv is needed to build the original smdebug environment: pip install uv")
        shutil.rmtree(path, ignore_errors=True)
        env = _clean_env()
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, path], check=True, env=env)
        requirements = list(REQUIREMENTS)
        extra: list = []
        if with_torch:
            requirements.append(torch_requirement())
            extra = ["--find-links", torch_find_links()]
        # --python: the target is this venv, whatever UV_PYTHON / VIRTUAL_ENV say
        subprocess.run([uv, "pip", "install", "-q", "--python", python, *extra, *requirements], check=True, env=env)
        if not _works(python, probe):
            failure = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=_clean_env())
            raise RuntimeError(
                f"The original smdebug environment at {path} does not import: {failure.stderr[-1500:]}"
            )
    return python
