"""Coverage-guided fuzzing (atheris, i.e. libFuzzer) of the four readers of untrusted bytes, 100,000
inputs each, in a subprocess per target (``fuzz/harness.py``). Marked ``slow``: ``nox -s slow`` runs
them. An exception other than the documented one, a hang (> 10 s on one input) or more than 2 GiB of
memory makes libFuzzer stop with a non-zero status, and the test fails showing the input.

``SMDEBUG_FUZZ_SEED`` fixes libFuzzer's seed (default: a new one each run, printed, so that every CI
run explores new inputs and a failure can be replayed).
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "fuzz", "harness.py")
RUNS = 100_000
# Bounds: libFuzzer stops by itself after MAX_TOTAL_S (the test then fails: fewer runs than asked),
# the subprocess is killed after KILL_S. 100,000 inputs take 5-30 s per target on one core.
MAX_TOTAL_S = 600
KILL_S = MAX_TOTAL_S + 120

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                       reason="atheris is not installed (pip install atheris: wheels for CPython 3.11 on Linux; "
                              "`nox -s slow` installs it)"),
]


def run_harness(target: str, workdir: str, runs: int = RUNS, seed: int = 0) -> subprocess.CompletedProcess:
    subprocess.run([sys.executable, HARNESS, target, "--write-seeds", workdir], check=True, capture_output=True)
    args = [sys.executable, HARNESS, target, os.path.join(workdir, "corpus"), f"-runs={runs}", f"-seed={seed}",
            "-timeout=10", "-rss_limit_mb=2048", "-max_len=4096", f"-max_total_time={MAX_TOTAL_S}",
            f"-artifact_prefix={workdir}{os.sep}"]
    tokens = os.path.join(workdir, "tokens.dict")
    if os.path.exists(tokens):
        args.append(f"-dict={tokens}")
    return subprocess.run(args, capture_output=True, text=True, timeout=KILL_S, cwd=workdir)


def _finding(proc: subprocess.CompletedProcess) -> str:
    """The part of libFuzzer's report that says what went wrong, without the instrumentation notes."""
    # atheris prints the Python traceback on stdout, libFuzzer its report on stderr
    output = proc.stdout + "\n" + proc.stderr
    lines = [line for line in output.splitlines() if not line.startswith("INFO: Instrumenting")]
    start = next((i for i, line in enumerate(lines) if "Uncaught Python exception" in line or "ERROR:" in line), 0)
    return "\n".join(lines[start:start + 60])


@pytest.mark.parametrize("target", ["records", "index", "collections", "config"])
def test_atheris_100k(target, tmp_path):
    seed = int(os.environ.get("SMDEBUG_FUZZ_SEED") or random.randrange(1, 2**31))
    proc = run_harness(target, str(tmp_path), seed=seed)
    assert proc.returncode == 0, (
        f"atheris found an input the {target} reader does not handle (seed {seed}; replay with "
        f"SMDEBUG_FUZZ_SEED={seed}):\n{_finding(proc)}")
    done = re.search(r"^Done (\d+) runs in (\d+) second", proc.stderr, re.MULTILINE)
    assert done is not None, proc.stderr[-3000:]
    runs, seconds = int(done.group(1)), int(done.group(2))
    assert runs >= RUNS, f"only {runs} inputs within {MAX_TOTAL_S} s"
    cov = re.findall(r"cov: (\d+)", proc.stderr)
    print(f"atheris {target}: {runs} inputs in {seconds} s, seed {seed}, coverage {cov[-1] if cov else '?'} edges, "
          "no finding")
