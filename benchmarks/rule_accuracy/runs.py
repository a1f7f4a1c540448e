"""Training the scenarios, each once: runs are cached by scenario definition and code version.

A run is written into ``<cache>/<scenario id>-<definition hash>-<code hash>/`` (the trial in ``run/``, what
the label checks need in ``meta.json``), first under a temporary name and then renamed, so an interrupted
training leaves nothing that looks finished. The code hash covers the modules that decide what is trained
and saved (data, models and loops, hook configuration, the hook itself: smdebug.core and the framework's
plugin) and the versions of smdebug and the frameworks; the
evaluation and report modules are not in it, so re-evaluating rules never retrains.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from .scenarios import Scenario

HERE = os.path.dirname(os.path.abspath(__file__))
#: the modules whose code decides what a run contains (with the framework's training module, TRAINERS, and
#: its hook function in hooks.py)
TRAINING_CODE = ("data.py",)
TRAINERS = {"torch": "torch_runs", "keras": "keras_runs", "xgboost": "xgboost_runs"}
_HOOKS = {"torch": "torch_hook", "keras": "keras_hook", "xgboost": "xgboost_hook"}
#: the held-out runs' trainers (a scenario's ``train["trainer"]``): their own modules, data and hooks, written
#: apart from the ones the rules were designed against -> (the code they use besides data.py, their hook function)
HELDOUT_TRAINERS = {
    "heldout_torch": (("heldout_data.py",), "heldout_torch_hook"),
    "heldout_keras": (("heldout_data.py", "keras_runs.py"), "heldout_keras_hook"),
    "heldout_xgboost": (("heldout_data.py",), "heldout_xgboost_hook"),
    # the second held-out batch (h2_/b2_)
    "heldout2_torch": (("heldout_data.py", "heldout2_data.py", "heldout2_torch_models.py"), "heldout2_torch_hook"),
    "heldout2_keras": (("heldout_data.py", "heldout2_data.py", "keras_runs.py"), "heldout2_keras_hook"),
    "heldout2_xgboost": (("heldout_data.py", "heldout2_data.py", "heldout_xgboost.py"), "heldout2_xgboost_hook"),
}


def trainer_of(scenario: Scenario) -> str:
    return scenario.train.get("trainer") or TRAINERS[scenario.framework]
_DISTRIBUTIONS = ("smdebug-core", "smdebug-torch", "smdebug-tf", "smdebug-xgboost", "torch", "tensorflow-cpu",
                  "keras", "xgboost-cpu", "xgboost", "numpy", "scikit-learn")


#: the packages whose code writes a framework's runs: the core's hook machinery and format, the plugin
_HOOK_PACKAGES = {"torch": "smdebug.pytorch", "keras": "smdebug.tensorflow", "xgboost": "smdebug.xgboost"}


def _hook_sources(framework: str):
    """The bytes of every module of ``smdebug.core`` (hook, writer, format) and of the framework's plugin, in
    a fixed order: the versions of the smdebug distributions stay the same while their code is edited, and a
    run cached from an older hook would be judged as if the current one had written it."""
    for package in ("smdebug.core", _HOOK_PACKAGES[framework]):
        root = os.path.dirname(importlib.import_module(package).__file__)
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith(".py")):
                with open(os.path.join(folder, name), "rb") as f:
                    yield os.path.relpath(os.path.join(folder, name), root).encode() + b"\0" + f.read()


def cache_root() -> str:
    return os.environ.get("SMDEBUG_RULE_ACCURACY_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "smdebug-rule-accuracy")


@lru_cache(maxsize=None)
def code_version(framework: str, trainer: Optional[str] = None) -> str:
    """Hash of what decides a framework's runs: the data module, the framework's training module and hook
    function, what the hook records (hooks.recording_key), the versions of smdebug and the frameworks.
    ``trainer``: a held-out trainer (HELDOUT_TRAINERS), hashed with its own code and hook function."""
    import inspect
    from importlib import metadata

    from . import hooks

    extra, hook_function = HELDOUT_TRAINERS.get(trainer, ((), _HOOKS[framework]))
    digest = hashlib.sha256(hooks.recording_key(framework).encode())
    digest.update(inspect.getsource(getattr(hooks, hook_function)).encode())
    for name in (*TRAINING_CODE, *extra, (trainer or TRAINERS[framework]) + ".py"):
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    for source in _hook_sources(framework):  # (edits to the hook change what a run holds: retrain)
        digest.update(source)
    for dist in _DISTRIBUTIONS:
        try:
            digest.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{dist}=none".encode())
    return digest.hexdigest()[:12]


@dataclass
class TrainedRun:
    scenario: Scenario
    path: str  # the trial directory
    facts: dict  # what the training function reported (names of layers, what the loss expects, ...)
    train_seconds: float
    cached: bool


def _load(scenario: Scenario, entry: str) -> Optional[TrainedRun]:
    meta_path = os.path.join(entry, "meta.json")
    if not os.path.exists(meta_path):
        return None
    with open(meta_path) as f:
        meta = json.load(f)
    return TrainedRun(scenario, os.path.join(entry, "run"), meta["facts"], meta["train_seconds"], True)


def ensure_run(scenario: Scenario, cache: Optional[str] = None) -> TrainedRun:
    """The scenario's run, trained now unless the cache has it. Processes sharing a cache (pytest-xdist
    workers) train each run once: the first takes a lock on the entry, the others wait and load it."""
    root = cache or cache_root()
    trainer = scenario.train.get("trainer")
    entry = os.path.join(root, f"{scenario.id}-{scenario.key()}-{code_version(scenario.framework, trainer)}")
    found = _load(scenario, entry)
    if found is not None:
        return found
    os.makedirs(root, exist_ok=True)
    with open(entry + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _load(scenario, entry)
        return found if found is not None else _train(scenario, root, entry)


def _train(scenario: Scenario, root: str, entry: str) -> TrainedRun:
    work = tempfile.mkdtemp(dir=root, prefix=f".{scenario.id}-")
    try:
        trainer = importlib.import_module(f"{__package__}.{trainer_of(scenario)}")
        started = time.perf_counter()
        facts = trainer.train(scenario.train, os.path.join(work, "run"))
        seconds = time.perf_counter() - started
        with open(os.path.join(work, "meta.json"), "w") as f:
            json.dump({"scenario": scenario.id, "definition": scenario.train, "facts": facts,
                       "train_seconds": seconds}, f, indent=1)
        os.replace(work, entry)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return TrainedRun(scenario, os.path.join(entry, "run"), facts, seconds, False)
