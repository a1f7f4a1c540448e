"""Test sessions of the smdebug monorepo.

    nox                  # every test session (core + one per plugin package)
    nox -s core          # smdebug-core, the plugin/CLI tests and the cross-package integration tests
    nox -s slow          # the slow reliability tests: 60 SIGKILLs, 100,000 fuzz inputs per target (RELIABILITY.md)
    nox -s torch         # one plugin package: torch, tf, mxnet, xgboost, rules
    nox -s torch_trainers  # smdebug-torch's Lightning and Hugging Face Trainer callbacks
    nox -s horovod       # a real horovodrun job (builds Horovod for PyTorch 2.x once, cached)
    nox -s horovod_tf    # the same with horovod.tensorflow and Keras 3 (builds Horovod for TF 2.21 once)
    nox -s install       # the README's install commands in a fresh venv; each package from its wheel alone
    nox -s demo          # python examples/demo.py
    nox -s conformance   # the original smdebug 1.0.34's own tests against this checkout (../shared/conformance)
    nox -s bench         # python benchmarks/run.py (bench_tf: the Keras hook overhead)
    nox -s bench_rules   # the rule-accuracy benchmark (torch + Keras + XGBoost runs; benchmarks/rule_accuracy)
    nox -s docs          # regenerate the README's report screenshot (needs chromium)
    nox -s core -- -k plugins -x     # extra pytest arguments go after --

Every session builds its virtualenv with uv and installs the monorepo's packages *editable*, all in
one resolver call, so a plugin's ``smdebug-core>=0.1,<1`` is satisfied by the checkout, never by PyPI;
a guard fails the session if a non-editable smdebug-* distribution slipped in anyway. uv is pointed at
pip's find-links folder (``pip config get global.find-links``, else /opt/wheels) so that torch resolves
to the local CPU wheel instead of a multi-gigabyte CUDA download.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
PYTHON = "3.11"

CORE = "packages/smdebug-core"
PLUGINS = {
    "torch": "packages/smdebug-torch",
    "tf": "packages/smdebug-tf",
    "mxnet": "packages/smdebug-mxnet",
    "xgboost": "packages/smdebug-xgboost",
    "rules": "packages/smdebug-rules",
}
NUMPY_PLUGIN_FIXTURE = "tests/fixtures/smdebug-numpy-plugin"
RULE_PACK_FIXTURE = "packages/smdebug-rules/tests/fixtures/smdebug-example-rules"
# the tests' and benchmarks' shared helpers (moto server, horovodrun launcher): pure Python, no dependencies
TEST_SUPPORT = "tests/support"

TEST_TOOLS = ["pytest", "pytest-xdist", "pytest-timeout"]
# A test that hangs fails after this many seconds instead of eating CI's budget (override: -- --timeout=N).
TEST_TIMEOUT = "--timeout=900"
# grimp: the import-cycle check (tests/test_import_cycles.py); bokeh: smdebug report; playwright: drives the system chromium in the report's browser tests (its
# Python package only: the tests launch Debian's chromium, no browser is downloaded); ml-dtypes: the
# frameworks' narrow dtypes (bfloat16, float8, int4) that test_narrow_dtypes.py saves
CORE_TEST_DEPS = TEST_TOOLS + ["hypothesis", "pandas", "tensorboard", "boto3", "moto[server]", "matplotlib", "bokeh", "grimp",
                               "playwright", "ml-dtypes"]
# boto3/moto: rule results written to s3:// and SNS actions; bokeh: `smdebug report` shows rule verdicts
RULES_TEST_DEPS = ["boto3", "moto[server]", "bokeh", "pytest-rerunfailures"]
# The rules session's tests that run real multi-process jobs (DDP ranks, SIGKILLed and Ctrl-C'd commands) failed
# intermittently in full CI sequences only (a DDP run read as InProgress once, not understood: 40 loops of that job
# under load wrote its end marker every time; a followed dead run not answering SIGINT within 120 s once, since
# fixed: Python had dropped the KeyboardInterrupt inside a __del__): a failed test is run once more and reported
# as rerun in the log ("R"); a test that fails twice fails the session (as conformance does).
RULES_RERUNS = ["--reruns", "1"]
# Extra requirements of the demo and the benchmarks (both also get torch, pinned by _torch_requirement()).
DEMO_DEPS: List[str] = []
# boto3/moto: the S3 read benchmark talks to a moto server; matplotlib: the scaling chart;
# tensorboard: torch.utils.tensorboard.SummaryWriter, the comparison column of the torch benchmark.
# bokeh, pandas: the report benchmark (smdebug report, trial.to_dataframe).
BENCH_DEPS: List[str] = ["boto3", "moto[server]", "matplotlib", "tensorboard", "bokeh", "pandas"]
TORCH_VERSION = "2.13.0"
FALLBACK_FIND_LINKS = "/opt/wheels"

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"  # installs still run every time; uv's cache makes them quick
nox.options.error_on_external_run = True
nox.options.sessions = ["core", "slow", "compat", *PLUGINS, "torch_trainers", "horovod", "horovod_tf", "conformance", "install"]  # `nox` alone: every test session, not demo/bench


# --------------------------------------------------------------------------------------------------
# uv configuration
# --------------------------------------------------------------------------------------------------
def _pip_find_links() -> List[str]:
    """pip's configured find-links locations (several may be configured)."""
    commands = (
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
        [sys.executable, "-m", "pip", "config", "list"],
    )
    for command in commands:
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode != 0 or not out.stdout.strip():
            continue
        if command[-1] == "list":
            values = [line.split("=", 1)[1] for line in out.stdout.splitlines() if "find-links=" in line]
        else:
            values = [out.stdout]
        links = [link for value in values for link in shlex.split(value.strip().strip("'\""))]
        if links:
            return links
    return [FALLBACK_FIND_LINKS] if os.path.isdir(FALLBACK_FIND_LINKS) else []


def _configure_uv() -> List[str]:
    if "UV_FIND_LINKS" in os.environ:
        return os.environ["UV_FIND_LINKS"].split()
    links = _pip_find_links()
    if links:
        os.environ["UV_FIND_LINKS"] = " ".join(links)  # inherited by every uv call of every session
    return links


FIND_LINKS = _configure_uv()


def _torch_requirement() -> str:
    """``torch==2.13.0``, pinned to the local build (e.g. ``+cpu``) when the find-links folder has one."""
    for link in FIND_LINKS:
        folder = Path(link.removeprefix("file://"))
        if not folder.is_dir():
            continue
        for wheel in sorted(folder.glob(f"torch-{TORCH_VERSION}+*.whl")):
            local = wheel.name.split("-")[1]  # 2.13.0+cpu
            return f"torch=={local}"
    return f"torch=={TORCH_VERSION}"


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def _editable(*paths: str) -> List[str]:
    args: List[str] = []
    for path in paths:
        args += ["-e", path]
    return args


def _install(session: nox.Session, editable: Sequence[str], requirements: Sequence[str] = ()) -> None:
    """One resolver call for everything (with the tests' shared helpers), then the guard against PyPI copies
    of our own packages."""
    session.install(*_editable(*editable, TEST_SUPPORT), *requirements)
    _guard_no_pypi_smdebug(session)


def _guard_no_pypi_smdebug(session: nox.Session) -> None:
    """Fail if any smdebug-* distribution is installed non-editable (a PyPI copy of a sibling), or the
    original smdebug (distribution ``smdebug``, whose ``smdebug`` package would shadow ours)."""
    python = os.path.join(session.virtualenv.bin, "python")
    listing = session.run(
        "uv", "pip", "list", "--quiet", "--exclude-editable", "--format", "json", "--python", python,
        silent=True, external=True,
    ) or ""
    # silent output may carry uv's stderr notes too: the JSON document is the line starting with "["
    document = next((line for line in listing.splitlines() if line.startswith("[")), "[]")
    installed = {item["name"].lower() for item in json.loads(document)}
    strays = sorted(name for name in installed if name.replace("_", "-").startswith("smdebug-") or name == "smdebug")
    if strays:
        session.error(
            f"non-editable smdebug packages were installed (a sibling came from an index instead of "
            f"this checkout, or the original smdebug): {', '.join(strays)}; remove {session.virtualenv.location} "
            "and run the session again"
        )


def _pytest(session: nox.Session, *paths: str, extra: Sequence[str] = ()) -> None:
    """``pytest -n auto <extra> <paths> <posargs>``; posargs that name tests replace the default paths."""
    posargs = list(session.posargs)
    names_tests = any((ROOT / arg.split("::")[0]).exists() for arg in posargs if not arg.startswith("-"))
    session.run("pytest", "-n", "auto", TEST_TIMEOUT, *extra, *([] if names_tests else paths), *posargs)


# --------------------------------------------------------------------------------------------------
# test sessions
# --------------------------------------------------------------------------------------------------
@nox.session(python=PYTHON, tags=["test"])
def core(session: nox.Session) -> None:
    """smdebug-core's tests, plus cross-package tests with every plugin (and a third-party one) installed."""
    _install(session, [CORE, NUMPY_PLUGIN_FIXTURE, *PLUGINS.values()], CORE_TEST_DEPS)
    _pytest(session, f"{CORE}/tests", "tests")


# atheris: coverage-guided fuzzing of the readers (tests/fuzz/harness.py); wheels for CPython 3.11 on Linux.
SLOW_TEST_DEPS = ["atheris"]


@nox.session(python=PYTHON, tags=["test"])
def slow(session: nox.Session) -> None:
    """The slow reliability tests (marked ``slow``, skipped by the other sessions): 60 SIGKILLs, 40 resource
    faults, 100,000 inputs per fuzz target with hypothesis and with atheris. About 9 minutes on 2 cores."""
    _install(session, [CORE, NUMPY_PLUGIN_FIXTURE, *PLUGINS.values()], [*CORE_TEST_DEPS, *SLOW_TEST_DEPS])
    # No -rP (it replayed every passed test's captured logs: 13,000 lines): the figures RELIABILITY.md
    # quotes (kills survived, inputs fuzzed, faults injected) come in one short section at the end
    # (packages/smdebug-core/tests/conftest.py).
    session.run("pytest", "-n", "auto", "--run-slow", "-m", "slow", f"{CORE}/tests", *session.posargs)


# The oldest and newest runtimes smdebug-core supports: generated protobuf code must load on 4.x..7.x
# and the core must work from numpy 1.23 (MXNet's ceiling) to 2.x.
COMPAT_MATRIX = [
    nox.param("4.21.12", "1.23.5", id="protobuf4-numpy1.23"),
    nox.param("5.29.5", "1.26.4", id="protobuf5-numpy1.26"),
    nox.param("6.33.6", "2.2.6", id="protobuf6-numpy2.2"),
    nox.param("7.36.2", "2.4.6", id="protobuf7-numpy2.4"),
]


@nox.session(python=PYTHON, tags=["test"])
@nox.parametrize("protobuf,numpy", COMPAT_MATRIX)
def compat(session: nox.Session, protobuf: str, numpy: str) -> None:
    """The format, hook and trial tests of smdebug-core on old and new protobuf/numpy releases."""
    _install(session, [CORE], [*TEST_TOOLS, "pandas", f"protobuf=={protobuf}", f"numpy=={numpy}"])
    tests = [f"{CORE}/tests/{name}" for name in ("test_format.py", "test_config.py", "test_hook.py", "test_trial.py",
                                                  "test_trial_dataframe.py")]
    session.run("pytest", "-n", "auto", TEST_TIMEOUT, "-W", "error::DeprecationWarning:google.protobuf", *tests,
                *session.posargs)


@nox.session(python=PYTHON, tags=["test", "plugin"])
def torch(session: nox.Session) -> None:
    """smdebug-torch with PyTorch (CPU wheel from the find-links folder)."""
    _install(session, [CORE, PLUGINS["torch"], PLUGINS["rules"]], [*TEST_TOOLS, _torch_requirement()])
    _pytest(session, f"{PLUGINS['torch']}/tests")


# The trainers smdebug-torch has callbacks for (its extras "lightning" and "transformers"), pinned, in the same
# resolver call as the local torch build so that they never bring another torch. accelerate: the HF Trainer's
# required companion. Tests build tiny models from configs: nothing is downloaded.
TORCH_TRAINER_DEPS = ["lightning==2.6.6", "transformers==5.24.0", "accelerate==1.15.0"]
TORCH_TRAINER_TESTS = ["test_lightning.py", "test_lightning_untrained_parameters.py",
                       "test_transformers.py", "test_transformers_trainer_loss.py",
                       "test_trainers_zero_code.py", "test_trainers_zero_code_call_before_fit.py",
                       "test_lightning_callback_steps_before_fit.py",
                       "test_trainers_judged.py", "test_trainers_zero_code_preset.py",
                       "test_transformers_padding_judged.py", "test_transformers_labels_shifted_twice.py",
                       # (with the trainers installed: importing smdebug.pytorch still loads none of them)
                       "test_torch_plugin.py::test_importing_smdebug_pytorch_imports_no_trainer"]


@nox.session(python=PYTHON, tags=["test", "plugin"])
def torch_trainers(session: nox.Session) -> None:
    """smdebug-torch's Lightning and Hugging Face Trainer callbacks, with the real libraries (CPU)."""
    # (smdebug-rules: `smdebug run --out-dir` alone saves the preset the rule pack names, as users who install
    # 'smdebug-core[torch,rules]' get)
    _install(session, [CORE, PLUGINS["torch"], PLUGINS["rules"]],
             [*TEST_TOOLS, _torch_requirement(), *TORCH_TRAINER_DEPS])
    _pytest(session, *(f"{PLUGINS['torch']}/tests/{name}" for name in TORCH_TRAINER_TESTS))


# cmake<4: CMake 4 refuses the cmake_minimum_required(<3.5) of the Gloo copy that Horovod 0.28.1 bundles.
HOROVOD_BUILD_DEPS = ["pip", "setuptools", "wheel", "cmake>=3.20,<4", "packaging", "psutil", "pyyaml", "cloudpickle", "cffi"]


@nox.session(python=PYTHON, tags=["test", "plugin"])
def horovod(session: nox.Session) -> None:
    """smdebug-torch under Horovod: a real `horovodrun -np 2` job. Horovod 0.28.1 is built for PyTorch 2.x
    once per machine (tools/build_horovod.py, about 4 minutes on 2 cores) and the wheel is cached."""
    _install(session, [CORE, PLUGINS["torch"]], [*TEST_TOOLS, *HOROVOD_BUILD_DEPS, _torch_requirement()])
    wheel = session.run("python", "tools/build_horovod.py", silent=True).strip().splitlines()[-1]
    session.install(wheel)
    session.run("pytest", TEST_TIMEOUT, f"{PLUGINS['torch']}/tests/test_horovod.py", *session.posargs)


TF_TEST_DEPS = [
    # The CPU build: the same module and API as "tensorflow", without the CUDA libraries. TF 2.21
    # brings Keras 3 as tf.keras.
    "tensorflow-cpu==2.21.0",
    "keras==3.15.1",
    "tensorboard",  # TF 2.21 no longer pulls it in; the tests read our output with its readers
]


@nox.session(python=PYTHON, tags=["test", "plugin"])
def tf(session: nox.Session) -> None:
    """smdebug-tf with TensorFlow 2.21 (CPU build) and Keras 3."""
    _install(session, [CORE, PLUGINS["tf"], PLUGINS["rules"]], [*TEST_TOOLS, *TF_TEST_DEPS])
    # TF's start-up chatter (oneDNN notes, CPU feature banners) drowns pytest's output.
    session.env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _pytest(session, f"{PLUGINS['tf']}/tests")


@nox.session(python=PYTHON, tags=["test", "plugin"])
def horovod_tf(session: nox.Session) -> None:
    """smdebug-tf under Horovod: a real `horovodrun -np 2 --gloo` job with horovod.tensorflow and Keras 3.
    Horovod 0.28.1 is built for TensorFlow 2.21 once per machine (tools/build_horovod.py --framework tf,
    5-13 minutes on 2 cores) and the wheel is cached."""
    _install(session, [CORE, PLUGINS["tf"]], [*TEST_TOOLS, *HOROVOD_BUILD_DEPS, *TF_TEST_DEPS])
    # TF's start-up chatter would otherwise come before the wheel's path in the build tool's output and
    # fill the workers' logs.
    session.env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    wheel = session.run("python", "tools/build_horovod.py", "--framework", "tf", silent=True).strip().splitlines()[-1]
    session.install(wheel)
    session.run("pytest", TEST_TIMEOUT, f"{PLUGINS['tf']}/tests/test_horovod.py", *session.posargs)


# MXNet 1.9.1 is the last release. Its wheel bundles OpenBLAS and libgfortran, and links against the
# system's libgomp1 and libquadmath0 (present wherever gcc is). It imports only with numpy<1.24
# (numpy 1.24 removed the np.bool alias it uses): smdebug-mxnet's framework extra carries the same pin.
MXNET_TEST_DEPS = ["mxnet==1.9.1", "numpy<1.24"]


@nox.session(python=PYTHON, tags=["test", "plugin"])
def mxnet(session: nox.Session) -> None:
    """smdebug-mxnet with MXNet 1.9.1 (CPU) and numpy 1.23."""
    _install(session, [CORE, PLUGINS["mxnet"], PLUGINS["rules"]], [*TEST_TOOLS, *MXNET_TEST_DEPS])
    _pytest(session, f"{PLUGINS['mxnet']}/tests")


XGBOOST_TEST_DEPS = [
    # xgboost-cpu: the same module and API as "xgboost", without the ~350 MB NCCL/CUDA libraries.
    "xgboost-cpu>=3.0,<4",
    "scikit-learn",  # the sklearn estimators' callbacks=
    "bokeh",  # the report of an XGBoost run (tests/test_report.py)
    # pandas (trees_to_dataframe, categorical data) comes from smdebug-xgboost's own dependencies: not
    # installed here by hand, so a missing declaration fails these tests
]


@nox.session(python=PYTHON, tags=["test", "plugin"])
def xgboost(session: nox.Session) -> None:
    """smdebug-xgboost with XGBoost 3.x (CPU build), scikit-learn and pandas."""
    _install(session, [CORE, PLUGINS["xgboost"], PLUGINS["rules"]], [*TEST_TOOLS, *XGBOOST_TEST_DEPS])
    _pytest(session, f"{PLUGINS['xgboost']}/tests")


@nox.session(python=PYTHON, tags=["test", "plugin"])
def rules(session: nox.Session) -> None:
    """smdebug-rules: the rule framework, the built-in rules on hand-made and real PyTorch, Keras and XGBoost
    runs, the runner. (TensorFlow is installed here too: without it the rules' Keras tests were skipped in
    every session.)"""
    _install(session, [CORE, PLUGINS["rules"], PLUGINS["torch"], PLUGINS["tf"], PLUGINS["xgboost"], RULE_PACK_FIXTURE],
             [*TEST_TOOLS, *RULES_TEST_DEPS, *XGBOOST_TEST_DEPS, *TF_TEST_DEPS, _torch_requirement()])
    session.env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _pytest(session, f"{PLUGINS['rules']}/tests", extra=RULES_RERUNS)


# The original project's own test suite (a selection of awslabs/sagemaker-debugger 1.0.34's tests, run
# unchanged by its runner, run.sh). It lives beside the repository, not in it: $SMDEBUG_CONFORMANCE_DIR,
# else ../shared/conformance.
CONFORMANCE_DIR_ENV = "SMDEBUG_CONFORMANCE_DIR"


def _conformance_dir() -> Optional[Path]:
    configured = os.environ.get(CONFORMANCE_DIR_ENV)
    folder = Path(configured) if configured else ROOT.parent / "shared" / "conformance"
    return folder if (folder / "run.sh").is_file() else None


#: upstream tests that check a behaviour of 1.0.x this project changed on purpose (each one is listed, with
#: the reason, in docs/compatibility.md under "Original tests not passed on purpose"); kept to a handful
CONFORMANCE_DEVIATIONS = {
    "tests/analysis/rules/test_loss_not_decreasing.py::test_default":
        "LossNotDecreasing compares window medians with warm-up and patience, not two single losses (issue 18)",
    "tests/analysis/rules/test_loss_not_decreasing.py::test_min_diff":
        "the same LossNotDecreasing change (diff_percent now applies to window medians)",
    "tests/analysis/rules/test_confusion.py::test_confusion":
        "Confusion judges the trained model (labels saved at the end of a finished run), not any step (issue 18)",
}


#: at most this many failed conformance tests are run again (more is not flakiness)
CONFORMANCE_MAX_RERUNS = 3
#: how many more times they are run before the session fails
CONFORMANCE_MORE_TRIES = 2


def _conformance_failures(log: Path) -> List[str]:
    """The node ids pytest's short summary (``-rfE``) lists as FAILED or ERROR in run.sh's pytest.log."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    failed = []
    for line in lines:
        for prefix in ("FAILED ", "ERROR "):
            if line.startswith(prefix) and "::" in line:
                failed.append(line[len(prefix):].split(" - ", 1)[0].strip())
    return list(dict.fromkeys(failed))


@nox.session(python=False, tags=["test"])
def conformance(session: nox.Session) -> None:
    """smdebug 1.0.34's own tests (analysis, rules, core, PyTorch, XGBoost) against this checkout, through
    the suite's run.sh: its own virtualenv (uv, python 3.11, the local torch wheel as here, the packages
    editable), a private /tmp, and a summary whose last line is `conformance: P passed, F failed, E errors
    of N`. Extra arguments go to pytest (`nox -s conformance -- -k trials -x`)."""
    suite = _conformance_dir()
    if suite is None:
        where = os.environ.get(CONFORMANCE_DIR_ENV) or str(ROOT.parent / "shared" / "conformance")
        session.warn("=" * 78)
        session.warn(f"CONFORMANCE SUITE NOT FOUND at {where} (no run.sh there).")
        session.warn(f"Set {CONFORMANCE_DIR_ENV} to the folder holding run.sh to run smdebug 1.0.34's tests.")
        session.warn("=" * 78)
        session.skip(f"the conformance suite is not available ({where})")
    cache = ROOT / ".nox" / "conformance"
    env = {
        "MAIN": str(ROOT),
        # run.sh builds this venv on first use and rebuilds it when it points at another checkout
        "CONFORMANCE_VENV": os.environ.get("CONFORMANCE_VENV", str(cache / "venv")),
        "CONFORMANCE_OUT": os.environ.get("CONFORMANCE_OUT", str(cache / "out")),
    }
    deselect = []
    for test, why in CONFORMANCE_DEVIATIONS.items():
        session.log(f"not run, changed on purpose: {test}: {why}")
        deselect += ["--deselect", test]
    try:
        session.run("bash", str(suite / "run.sh"), *deselect, *session.posargs, env=env, external=True)
        return
    except CommandFailed:
        rerun = _conformance_failures(Path(env["CONFORMANCE_OUT"]) / "pytest.log")
        if not rerun or len(rerun) > CONFORMANCE_MAX_RERUNS:
            raise
    # A handful of failures get up to two more tries, loudly. Why: the upstream distributed tests end their
    # worker processes without destroy_process_group(), and PyTorch's gloo backend can then abort at
    # interpreter exit ("terminate called without an active exception", pytorch/pytorch#190489) after the
    # test's own work has passed; on a loaded machine it happened twice in a row. A test that fails three
    # times fails the session.
    names = sorted({test.rsplit("::", 1)[-1].split("[", 1)[0] for test in rerun})
    for attempt in range(1, CONFORMANCE_MORE_TRIES + 1):
        session.warn(f"CONFORMANCE: {len(rerun)} test(s) failed; running them again ({attempt} of "
                     f"{CONFORMANCE_MORE_TRIES}): {', '.join(rerun)}")
        try:
            session.run("bash", str(suite / "run.sh"), *deselect, "-k", " or ".join(names), env=env, external=True)
            break
        except CommandFailed:
            if attempt == CONFORMANCE_MORE_TRIES:
                raise
    session.warn(f"CONFORMANCE FLAKY (failed, then passed when run again): {', '.join(rerun)}")


@nox.session(python=PYTHON, tags=["test"])
def install(session: nox.Session) -> None:
    """smdebug installed as users install it: the README's Installing block run as written in a fresh
    virtualenv from a copy of the checkout (then a PyTorch hook trains there), and each package from its
    wheel with only what it declares (tests/install/run_checks.py). Nothing is installed editable."""
    session.run("python", "tests/install/run_checks.py", "--torch", _torch_requirement(), *session.posargs)


# --------------------------------------------------------------------------------------------------
# demo and benchmarks (not run by plain `nox`)
# --------------------------------------------------------------------------------------------------
def _run_script(session: nox.Session, script: str) -> None:
    if not (ROOT / script).exists():
        session.error(f"{script} does not exist yet")
    session.run("python", script, *session.posargs)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """Run examples/demo.py (a PyTorch model) with every package installed."""
    _install(session, [CORE, *PLUGINS.values()], [*DEMO_DEPS, _torch_requirement()])
    _run_script(session, "examples/demo.py")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Run benchmarks/run.py (I/O, PyTorch hook overhead, rules, S3 reads, trial reads, memory, scaling) with
    every package and torch installed.

    The original smdebug's side runs in its own cached venvs (benchmarks/original_env.py); the torch
    one gets the same local torch wheel.
    """
    _install(session, [CORE, *PLUGINS.values()], [*BENCH_DEPS, _torch_requirement()])
    _run_script(session, "benchmarks/run.py")


# The rule-accuracy benchmark trains PyTorch, Keras and XGBoost runs side by side, so its venv has all three.
RULE_ACCURACY_DEPS: List[str] = [*TF_TEST_DEPS, *XGBOOST_TEST_DEPS]


@nox.session(python=PYTHON)
def bench_rules(session: nox.Session) -> None:
    """The rule-accuracy benchmark (benchmarks/rule_accuracy): real PyTorch, Keras and XGBoost runs with known
    bugs and healthy ones, every built-in rule at its defaults and the recommended set; recorded in RESULTS.md.
    Same as ``nox -s bench -- --only rule_accuracy`` but with TensorFlow and XGBoost installed."""
    _install(session, [CORE, *PLUGINS.values()], [*BENCH_DEPS, *RULE_ACCURACY_DEPS, _torch_requirement()])
    session.env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    session.run("python", "benchmarks/run.py", "--only", "rule_accuracy", *session.posargs)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Regenerate docs/images/report.png, the README's report screenshot (needs chromium: apt-get install -y chromium)."""
    _install(session, [CORE, PLUGINS["rules"]], ["matplotlib", "bokeh", "playwright"])
    _run_script(session, "docs/make_screenshots.py")


@nox.session(python=PYTHON)
def bench_tf(session: nox.Session) -> None:
    """Step-time overhead of the Keras hook under compiled fit() (packages/smdebug-tf/benchmarks)."""
    _install(session, [CORE, PLUGINS["tf"]], TF_TEST_DEPS)
    session.run("python", "packages/smdebug-tf/benchmarks/keras_overhead.py", *session.posargs)
