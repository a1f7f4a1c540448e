"""Shared pieces of the interoperability tests.

* building (once, cached, under a file lock) a virtual environment with the ORIGINAL smdebug 1.0.34;
* running the helper scripts of ``original_scripts/`` inside it and loading what they dump;
* a minimal framework-neutral hook of ours, and a recorder of what a test wrote, to compare with.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

import numpy as np

from smdebug.core.collection import Collection
from smdebug.core.hook import BaseHook

ORIGINAL_VERSION = "1.0.34"
#: what the original needs beside itself on a current Python (its own metadata leaves these open)
ORIGINAL_REQUIREMENTS = [
    f"smdebug=={ORIGINAL_VERSION}",
    "numpy<2.3",  # the original calls ndarray.tostring(), removed in numpy 2.3
    "protobuf==3.20.3",  # its generated *_pb2 modules predate protobuf 4
    "requests",
    "pandas",
    "psutil",
]
#: frameworks that must NOT end up in the original's environment (its import paths are framework-free)
FRAMEWORKS = ("torch", "tensorflow", "mxnet", "xgboost")
SCRIPTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "original_scripts")
DEFAULT_VENV = os.path.join("~", ".cache", "smdebug-tests", f"original-smdebug-{ORIGINAL_VERSION}")


class OriginalVenvError(RuntimeError):
    pass


def original_venv_dir() -> str:
    return os.path.abspath(os.path.expanduser(os.environ.get("SMDEBUG_ORIGINAL_VENV") or DEFAULT_VENV))


def _venv_python(venv: str) -> str:
    return os.path.join(venv, "Scripts", "python.exe") if os.name == "nt" else os.path.join(venv, "bin", "python")


def original_env() -> Dict[str, str]:
    """Environment for processes of the original: nothing of ours (PYTHONPATH, venv) leaks into it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "SMDEBUG_", "VIRTUAL_ENV", "CONDA"))
        and k not in ("TRAINING_JOB_NAME", "TENSORBOARD_CONFIG_FILE_PATH", "CHECKPOINT_CONFIG_FILE_PATH")
    }
    env.update(
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        SMDEBUG_TRAINING_END_DELAY_REFRESH="0",  # the original sleeps this long once it sees the end marker
        SMDEBUG_LOG_LEVEL="error",
    )
    return env


_CHECK_SCRIPT = f"""
import importlib.util, sys
import google.protobuf, numpy, pandas, psutil, requests
import smdebug
assert smdebug.__version__ == {ORIGINAL_VERSION!r}, smdebug.__version__
import smdebug.trials
from smdebug.trials import create_trial
from smdebug.core.writer import FileWriter
from smdebug.core.collection_manager import CollectionManager
assert google.protobuf.__version__ == "3.20.3", google.protobuf.__version__
bad = [m for m in {FRAMEWORKS!r} if importlib.util.find_spec(m) is not None]
assert not bad, "frameworks installed: %s" % bad
print(sys.version.split()[0], numpy.__version__, google.protobuf.__version__)
"""


def check_original_python(python: str):
    """(ok, output) of importing the original (smdebug.trials included) with ``python``."""
    if not os.path.exists(python):
        return False, f"{python} does not exist"
    try:
        p = subprocess.run(
            [python, "-I", "-c", _CHECK_SCRIPT], env=original_env(), capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def _run(cmd, log: List[str], timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    log.append(f"$ {' '.join(cmd)}\n[exit {p.returncode}]\n{p.stdout[-4000:]}{p.stderr[-4000:]}")
    return p.returncode == 0


def _build(venv: str) -> None:
    """Create the venv if it has no working python, then install the original's requirements into it.

    Only an existing *virtual environment* is ever replaced (a directory with ``pyvenv.cfg``); any
    other non-empty directory at that path is left alone and reported.
    """
    log: List[str] = []
    python = _venv_python(venv)
    if os.path.isdir(venv) and os.listdir(venv) and not os.path.exists(os.path.join(venv, "pyvenv.cfg")):
        raise OriginalVenvError(
            f"{venv} exists and is not a virtual environment; refusing to replace it "
            "(set SMDEBUG_ORIGINAL_VENV to another path)"
        )
    uv = shutil.which("uv")
    created = os.path.exists(python)
    if not created:
        if os.path.isdir(venv):
            shutil.rmtree(venv)  # a venv whose interpreter is gone
        if uv:
            created = _run([uv, "venv", "--python", "3.11", venv], log) or _run(
                [uv, "venv", "--clear", "--python", sys.executable, venv], log
            )
        else:
            created = _run([sys.executable, "-m", "venv", venv], log)
    if created and uv:
        ok = _run([uv, "pip", "install", "--python", python, *ORIGINAL_REQUIREMENTS], log)
    elif created:
        ok = _run([python, "-m", "pip", "install", "--disable-pip-version-check", *ORIGINAL_REQUIREMENTS], log)
    else:
        ok = False
    if not ok:
        raise OriginalVenvError(
            f"Could not build the environment of the original smdebug {ORIGINAL_VERSION} at {venv}:\n"
            + "\n".join(log)
        )


def ensure_original_python() -> str:
    """Python executable of a venv holding the original smdebug; built on first use, then reused.

    A lock file beside the venv serialises concurrent test processes (pytest-xdist workers): the
    first builds, the others wait and then find it working.
    """
    venv = original_venv_dir()
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    python = _venv_python(venv)
    with open(venv + ".lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            ok, out = check_original_python(python)
            if ok:
                return python
            _build(venv)
            ok, out = check_original_python(python)
            if not ok:
                raise OriginalVenvError(
                    f"The environment of the original smdebug at {venv} was built but does not work:\n{out}"
                )
            return python
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


# ----------------------------------------------------------------------------------------------
# running the original
# ----------------------------------------------------------------------------------------------
def run_original(python: str, script: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [python, "-I", os.path.join(SCRIPTS_DIR, script), *map(str, args)]
    p = subprocess.run(cmd, env=original_env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{script} failed in the original's environment (exit {p.returncode}):\n"
                             f"{p.stdout[-5000:]}\n{p.stderr[-10000:]}")
    return p


def resolve_arrays(obj, npz):
    """Replace every ``{"array": key, ...}`` of a dump by the array stored under ``key``."""
    if isinstance(obj, dict):
        if "array" in obj and isinstance(obj["array"], str) and obj["array"] in npz:
            return npz[obj["array"]]
        return {k: resolve_arrays(v, npz) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolve_arrays(v, npz) for v in obj]
    return obj


def read_with_original(python: str, paths, out_dir) -> List[dict]:
    """What the original's ``create_trial`` reads from each run (see original_scripts/read_trial.py)."""
    os.makedirs(out_dir, exist_ok=True)
    run_original(python, "read_trial.py", out_dir, *[os.fspath(p) for p in paths])
    dumps = []
    for i in range(len(paths)):
        with open(os.path.join(out_dir, f"{i}.json")) as f:
            d = json.load(f)
        with np.load(os.path.join(out_dir, f"{i}.npz"), allow_pickle=False) as npz:
            dumps.append(resolve_arrays(d, {k: npz[k] for k in npz.files}))
    return dumps


def is_error(obj) -> bool:
    return isinstance(obj, dict) and "error" in obj


def no_error(obj, what=""):
    """``obj`` unless it is an error record of the dump (then fail with the original's message)."""
    assert not is_error(obj), f"the original raised for {what}: {obj.get('error')}: {obj.get('message')}\n{obj.get('traceback', '')}"
    return obj


# ----------------------------------------------------------------------------------------------
# comparing
# ----------------------------------------------------------------------------------------------
def assert_same_array(actual, expected, what: str = "") -> None:
    """Same dtype (same kind for strings), same shape, same values (bitwise for numbers, NaN == NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "USO":
        assert actual.dtype.kind in "US", f"{what}: dtype {actual.dtype}, expected strings"
        assert [str(x) for x in actual.reshape(-1).tolist()] == [str(x) for x in expected.reshape(-1).tolist()], what
        return
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    np.testing.assert_array_equal(actual, expected, err_msg=what)


# ----------------------------------------------------------------------------------------------
# writing with ours
# ----------------------------------------------------------------------------------------------
class WorkerInfo:
    def __init__(self, rank: int, size: int):
        self.rank, self.size, self.name = rank, size, f"worker_{rank}"


class InteropHook(BaseHook):
    """A minimal hook of ours, as a plugin author would write one for a numpy training loop."""

    framework_name = "interop"
    default_include_collections = ("losses",)

    def __init__(self, *args, rank: int = 0, world_size: int = 1, **kwargs):
        self._rank_info = WorkerInfo(rank, world_size)
        super().__init__(*args, **kwargs)

    def default_collections(self):
        return [
            Collection("weights", include_regex=["^weights/"]),
            Collection("gradients", include_regex=["^gradient/"]),
            Collection("losses", include_regex=["loss"]),
        ]

    def _detect_worker(self):
        # Worker identity is what a distributed-runtime plugin would report.
        return self._rank_info


class Written:
    """What a test wrote to one run, in the shape the comparisons need.

    ``steps[global step] = (mode name, mode step)``; ``tensors[name][global step][worker]`` =
    ``{"value": array?, "shape": tuple?, "reductions": {(op, abs): array}}``.
    """

    def __init__(self, path, workers=("worker_0",)):
        self.path = os.fspath(path)
        self.workers = list(workers)
        self.steps: Dict[int, tuple] = {}
        self.tensors: Dict[str, Dict[int, Dict[str, dict]]] = {}

    def step(self, g: int, mode, mode_step: int) -> None:
        prev = self.steps.setdefault(g, (mode.name, mode_step))
        assert prev == (mode.name, mode_step)

    def _slot(self, name, g, worker):
        return self.tensors.setdefault(name, {}).setdefault(g, {}).setdefault(worker, {"reductions": {}})

    def value(self, name, g, worker, arr) -> None:
        self._slot(name, g, worker)["value"] = np.array(arr, copy=True)

    def shape(self, name, g, worker, shape) -> None:
        self._slot(name, g, worker)["shape"] = tuple(int(d) for d in shape)

    def reduction(self, name, g, worker, op, is_abs, value) -> None:
        self._slot(name, g, worker)["reductions"][(op, is_abs)] = np.asarray(value)

    def steps_of_mode(self, mode_name: str) -> List[int]:
        if mode_name == "GLOBAL":
            return sorted(self.steps)
        return sorted(ms for m, ms in self.steps.values() if m == mode_name)

    def worker_steps(self, worker) -> List[int]:
        return sorted({g for per in self.tensors.values() for g, ws in per.items() if worker in ws})


def red_key(op: str, is_abs: bool) -> str:
    """Key of a reduction in the original's dump."""
    return f"{op}|{int(bool(is_abs))}"


def tensor_dump(dump: dict, name: str) -> dict:
    assert name in dump["tensors"], f"the original does not list tensor {name}: {sorted(dump['tensors'])}"
    return no_error(dump["tensors"][name], f"tensor {name}")


def at_step(dump: dict, name: str, g: int) -> dict:
    return no_error(tensor_dump(dump, name)["at"][str(g)], f"tensor {name} at step {g}")


def by_worker(dump: dict, name: str, g: int, worker: str) -> dict:
    at = at_step(dump, name, g)
    assert worker in at["by_worker"], f"{name} at step {g}: the original has workers {at['workers']}, not {worker}"
    return at["by_worker"][worker]


def optional(d: Optional[dict], key: str):
    return None if d is None else d.get(key)


# ----------------------------------------------------------------------------------------------
# the same questions to both analysis APIs (original_scripts/probe_api.py)
# ----------------------------------------------------------------------------------------------
def _probe_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_smdebug_probe_api", os.path.join(SCRIPTS_DIR, "probe_api.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def probe_with_original(python: str, paths, out_json) -> List[dict]:
    run_original(python, "probe_api.py", out_json, *[os.fspath(p) for p in paths])
    with open(out_json) as f:
        return json.load(f)


def probe_with_ours(path) -> dict:
    return _probe_module().probe(os.fspath(path))


def _tensor_of_key(key: str, names) -> Optional[str]:
    """The tensor a probe answer is about (keys look like ``kind:<tensor name>:...``)."""
    kind, _, rest = key.partition(":")
    for name in sorted(names, key=len, reverse=True):
        if rest == name or rest.startswith(name + ":"):
            return name
    return None


def compare_answers(original: dict, ours: dict, exempt: Dict[str, str] = None) -> int:
    """Assert both implementations gave the same answers; returns how many were compared.

    ``exempt`` maps tensor names to the documented reason why their values/shapes differ (the
    original's faults); only ``values:``/``shape:`` answers of those tensors are skipped.
    """
    assert "ERROR" not in original, original.get("ERROR")
    assert "ERROR" not in ours, ours.get("ERROR")
    exempt = exempt or {}
    differences = []
    compared = 0
    for key in sorted(set(original) | set(ours)):
        if key.split(":", 1)[0] in ("values", "shape") and _tensor_of_key(key, exempt) is not None:
            continue
        compared += 1
        if original.get(key) != ours.get(key):
            differences.append(f"{key}\n    original: {str(original.get(key))[:300]}\n    ours:     {str(ours.get(key))[:300]}")
    assert not differences, f"{len(differences)} of {compared} answers differ:\n" + "\n".join(differences[:30])
    return compared
