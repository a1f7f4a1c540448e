"""Shared fixtures of the smdebug-core tests.

Plugin tests go through the real discovery code: :func:`fake_dist` writes installed-looking
distributions (``*.dist-info`` with METADATA and entry_points.txt, plus their modules) into temporary
directories put on ``sys.path``, exactly what ``importlib.metadata`` finds for a pip-installed package.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterable, Optional

import pytest


# --------------------------------------------------------------------------------------------------
# Slow tests (many SIGKILLs, 100,000-input fuzzing): marked ``slow`` and skipped unless asked for with
# ``--run-slow`` (or SMDEBUG_RUN_SLOW=1). ``pytest --run-slow -m slow`` runs only them.
# --------------------------------------------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run tests marked slow (crash loops, long fuzzing); see RELIABILITY.md")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long reliability tests, skipped unless --run-slow is given")


#: lines of a passed slow test's stdout shown at the end (its figures: kills survived, inputs fuzzed...)
FIGURE_LINES_PER_TEST = 5


# what a test's stdout holds besides its figures: smdebug's log records ("[2026-01-01 12:00:00.000 host:pid
# LEVEL file:line] ...") and the tracebacks they carry
_LOG_RECORD = re.compile(r"^\[\d{4}-\d\d-\d\d \d")
_TRACEBACK_END = re.compile(r"^[\w.]+(Error|Exception|Warning|Interrupt)\b")


def _is_figure(line: str) -> bool:
    return bool(line.strip()) and not (line[0].isspace() or line.startswith("Traceback")
                                       or _LOG_RECORD.match(line) or _TRACEBACK_END.match(line))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One short section with what the passed slow tests printed on stdout (the figures RELIABILITY.md
    quotes), instead of ``-rP``, which also replays every passed test's captured logs and warnings
    (13,000 lines). Failed tests show everything they captured, as usual."""
    lines = []
    for report in terminalreporter.stats.get("passed", []):
        if getattr(report, "when", None) != "call" or "slow" not in getattr(report, "keywords", {}):
            continue
        printed = [line.strip() for line in (report.capstdout or "").splitlines() if _is_figure(line)]
        lines += [f"{report.nodeid}: {line}" for line in printed[-FIGURE_LINES_PER_TEST:]]
    if lines:
        terminalreporter.write_sep("=", "figures of the slow tests")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow", default=False) or os.environ.get("SMDEBUG_RUN_SLOW", "") not in ("", "0"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (RELIABILITY.md; nox -s slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fresh_plugins(monkeypatch):
    """The plugin manager module, reset before and after the test; plugin env variables cleared."""
    from smdebug.core.plugins import manager

    monkeypatch.delenv("SMDEBUG_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("SMDEBUG_LOAD_PLUGINS", raising=False)
    manager.reset_for_tests()
    yield manager
    manager.reset_for_tests()


class _ListHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


class PluginLog:
    """Log records of the plugin system, by level."""

    def __init__(self, handler: _ListHandler):
        self._handler = handler

    def messages(self, level: Optional[int] = None):
        return [r.getMessage() for r in self._handler.records if level is None or r.levelno == level]

    @property
    def warnings(self):
        return self.messages(logging.WARNING)

    @property
    def debug(self):
        return self.messages(logging.DEBUG)

    def clear(self):
        self._handler.records.clear()


@pytest.fixture
def plugin_log():
    """Capture what the plugin system logs (the smdebug logger does not propagate to pytest's caplog)."""
    logger = logging.getLogger("smdebug.plugins")
    handler = _ListHandler()
    saved = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield PluginLog(handler)
    logger.removeHandler(handler)
    logger.setLevel(saved[0])
    logger.propagate = saved[1]


class FakeSite:
    """Directories of fake installed distributions, put on ``sys.path``."""

    def __init__(self, root: Path, monkeypatch):
        self.root = root
        self._monkeypatch = monkeypatch
        self.dirs: Dict[str, Path] = {}

    def site(self, name: str = "site") -> Path:
        """A site directory; each new one goes to the *front* of sys.path (searched first)."""
        if name not in self.dirs:
            path = self.root / name
            path.mkdir(parents=True)
            self._monkeypatch.syspath_prepend(str(path))
            self.dirs[name] = path
        return self.dirs[name]

    def make(
        self,
        dist: str,
        entry_points: Dict[str, Dict[str, str]],
        modules: Optional[Dict[str, str]] = None,
        version: str = "1.0",
        requires: Iterable[str] = (),
        site: str = "site",
    ) -> Path:
        """Install ``dist`` with ``entry_points`` ({group: {name: target}}) and ``modules`` ({path: source})."""
        where = self.site(site)
        info = where / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        metadata = ["Metadata-Version: 2.1", f"Name: {dist}", f"Version: {version}"]
        metadata += [f"Requires-Dist: {r}" for r in requires]
        (info / "METADATA").write_text("\n".join(metadata) + "\n")
        lines = []
        for group, eps in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{name} = {target}" for name, target in eps.items()]
            lines.append("")
        (info / "entry_points.txt").write_text("\n".join(lines))
        for rel, source in (modules or {}).items():
            path = where / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        return info

    def pythonpath(self) -> str:
        """For child processes: the site directories, in the order sys.path has them."""
        ordered = sorted(self.dirs.values(), key=lambda p: sys.path.index(str(p)))
        return os.pathsep.join([str(p) for p in ordered] + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)

    def forget_modules(self) -> None:
        roots = [str(p) for p in self.dirs.values()]
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None) or ""
            if any(file.startswith(root) for root in roots):
                del sys.modules[name]


@pytest.fixture
def fake_dist(tmp_path, monkeypatch):
    """Factory for fake installed distributions: ``fake_dist.make(dist, entry_points, modules, ...)``."""
    site = FakeSite(tmp_path / "fake-sites", monkeypatch)
    yield site
    site.forget_modules()
    importlib.invalidate_caches()


def smdebug_command() -> list:
    """The ``smdebug`` console script of this environment, or ``python -m smdebug.cli`` without one."""
    exe = Path(sys.executable).parent / ("smdebug.exe" if os.name == "nt" else "smdebug")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("smdebug")
    return [found] if found else [sys.executable, "-m", "smdebug.cli"]


def run_smdebug(*args: str, env: Optional[Dict[str, str]] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(smdebug_command() + list(args), capture_output=True, text=True, env=full_env, timeout=timeout)


@pytest.fixture
def smdebug_argv():
    """The command line of ``smdebug`` (:func:`smdebug_command`), for tests that run it with their own
    streams (raw bytes, a terminal)."""
    return smdebug_command()


@pytest.fixture
def smdebug_cli():
    """Run the ``smdebug`` command: ``smdebug_cli("plugins", "--json", env={...})``."""
    return run_smdebug


# --------------------------------------------------------------------------------------------------
# S3: a moto server over HTTP, and run locations that are either a local directory or an S3 prefix
# --------------------------------------------------------------------------------------------------
# Quick retries against the local endpoint (the defaults are tuned for AWS).
S3_TEST_ENV = {
    "SMDEBUG_S3_RETRY_ATTEMPTS": "2",
    "SMDEBUG_S3_RETRY_BASE_DELAY": "0.05",
    "SMDEBUG_S3_RETRY_MAX_DELAY": "0.3",
    "SMDEBUG_S3_CONNECT_TIMEOUT": "2",
    "SMDEBUG_STOP_CHECK_INTERVAL": "0.1",
}


@pytest.fixture(scope="session")
def moto_server():
    """One moto server per test process (pytest-xdist worker), its endpoint in the environment.

    Skips where boto3 or moto[server] is not installed (the compat sessions)."""
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    from smdebug_test_support.s3 import MotoServer, apply_env, restore_env

    server = MotoServer(interruptible=True).start()
    previous = apply_env({**server.env, **S3_TEST_ENV})
    yield server
    server.stop()
    restore_env(previous)


_bucket_count = [0]


def new_bucket(prefix: str = "smd") -> str:
    """A fresh bucket on the moto server (unique within the test process)."""
    import boto3

    _bucket_count[0] += 1
    name = f"{prefix}-{os.getpid()}-{_bucket_count[0]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


class RunLocation:
    """Where a test run lives: a local directory or an S3 prefix, with helpers to poke at its files."""

    def __init__(self, kind: str, path: str):
        from smdebug.core.storage import get_storage

        self.kind = kind
        self.path = path
        self.storage = get_storage(path)

    @property
    def is_s3(self) -> bool:
        return self.kind == "s3"

    def __str__(self) -> str:
        return self.path

    def __fspath__(self) -> str:
        return self.path

    def write(self, key: str, data) -> None:
        self.storage.write_atomic(key, data.encode() if isinstance(data, str) else data)

    def read(self, key: str) -> bytes:
        return self.storage.read(key)

    def remove(self, key: str) -> None:
        self.storage.remove(key)

    def exists(self, key: str) -> bool:
        return self.storage.exists(key)

    def keys(self, prefix: str = "") -> list:
        return self.storage.list(prefix)

    def sub(self, name: str) -> "RunLocation":
        return RunLocation(self.kind, self.path.rstrip("/") + "/" + name)


@pytest.fixture
def s3_run(moto_server):
    """A run location under a fresh S3 bucket."""
    return RunLocation("s3", f"s3://{new_bucket()}/run")


@pytest.fixture(params=["local", "s3"])
def run_loc(request, tmp_path):
    """The same test on a local directory and on S3 (moto over HTTP)."""
    if request.param == "local":
        return RunLocation("local", str(tmp_path / "run"))
    request.getfixturevalue("moto_server")
    return RunLocation("s3", f"s3://{new_bucket()}/run")


@pytest.fixture
def smdebug_log():
    """Records of the ``smdebug`` logger (it does not propagate to pytest's caplog)."""
    logger = logging.getLogger("smdebug")
    handler = _ListHandler()
    logger.addHandler(handler)
    yield PluginLog(handler)
    logger.removeHandler(handler)
