"""SMDEBUG_* settings with values that are no number, not finite or out of range: one warning naming the
variable, and the default (or the nearest bound), never an exception at import or in a hook's constructor."""

import os
import subprocess
import sys
import textwrap

import pytest

from smdebug.core.env_settings import env_float, env_int

# every numeric setting read at import time, or when a hook or trial is built
SETTINGS = [
    "SMDEBUG_WRITER_MAX_PENDING_BYTES", "SMDEBUG_SNAPSHOT_POOL_BYTES", "SMDEBUG_MAX_INDEX_FILE_BYTES",
    "SMDEBUG_MAX_JSON_PARSE_BYTES", "SMDEBUG_MAX_COLLECTIONS_FILE_BYTES", "SMDEBUG_LOCAL_READ_AHEAD",
    "SMDEBUG_TRAINING_END_DELAY_REFRESH", "SMDEBUG_STOP_CHECK_INTERVAL", "SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW",
    "SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "SMDEBUG_TRIAL_SPAN_CACHE_BYTES", "SMDEBUG_RUN_REGEX_TIMEOUT",
    "SMDEBUG_RESTART_CHECK_INTERVAL",
]


@pytest.mark.parametrize("raw, expected", [("12", 12), ("1e3", 1000), (" 7 ", 7)])
def test_env_int_reads_whole_numbers(monkeypatch, raw, expected):
    monkeypatch.setenv("SMDEBUG_TEST_SETTING", raw)
    assert env_int("SMDEBUG_TEST_SETTING", 5) == expected


@pytest.mark.parametrize("i, raw", list(enumerate(["64MB", "abc", "", "nan", "1e999", "-inf", "2.5"])))
def test_env_int_falls_back_to_its_default(monkeypatch, i, raw):
    monkeypatch.setenv(f"SMDEBUG_TEST_JUNK_{i}", raw)
    assert env_int(f"SMDEBUG_TEST_JUNK_{i}", 5) == 5
    assert env_float(f"SMDEBUG_TEST_JUNK_{i}", 0.5) == (2.5 if raw == "2.5" else 0.5)


def test_env_settings_clamp_into_their_range(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TEST_RANGE", "-3")
    assert env_int("SMDEBUG_TEST_RANGE", 5, minimum=0) == 0
    assert env_float("SMDEBUG_TEST_RANGE", 1.5, minimum=0.25) == 0.25
    monkeypatch.setenv("SMDEBUG_TEST_RANGE", "1e9")
    assert env_float("SMDEBUG_TEST_RANGE", 1.0, maximum=3600.0) == 3600.0
    monkeypatch.delenv("SMDEBUG_TEST_RANGE")
    assert env_float("SMDEBUG_TEST_RANGE", 1.5) == 1.5


@pytest.mark.parametrize("junk", ["64MB", "1e999", "nan", ""])
def test_junk_settings_neither_stop_an_import_nor_a_run(tmp_path, junk):
    """Every setting junk at once: importing smdebug, writing a run and reading it back still work."""
    script = textwrap.dedent(f"""
        import numpy as np
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from _support import write_run
        from smdebug.trials import create_trial
        write_run({str(tmp_path / "run")!r}, range(3), tensors=lambda step, worker: {{"w": np.full(3, step)}})
        trial = create_trial({str(tmp_path / "run")!r})
        assert trial.steps() == [0, 1, 2], trial.steps()
        assert trial.tensor("w").value(2).tolist() == [2, 2, 2]
        print("read back")
    """)
    env = dict(os.environ, **{name: junk for name in SETTINGS})
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "read back" in proc.stdout and "Traceback" not in proc.stderr
    # one warning per variable, naming it, the value and what is used instead
    said = proc.stdout + proc.stderr
    assert f"ignoring SMDEBUG_MAX_INDEX_FILE_BYTES={junk!r}" in said and "using 268435456" in said
    assert said.count("ignoring SMDEBUG_MAX_INDEX_FILE_BYTES") == 1


@pytest.mark.parametrize("context", ["job 100%", "%(process)s", "50%s done", "%"])
def test_a_log_context_with_percent_signs_is_shown_as_given(context):
    """SMDEBUG_LOG_CONTEXT went into the log format: `job 100%` made every smdebug message a "--- Logging error
    ---" traceback on stderr (the message itself lost: a hook's "cannot save" among them), and `%(process)s`
    was expanded."""
    code = "from smdebug.core.logger import get_logger; get_logger().warning('the message')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SMDEBUG_LOG_CONTEXT": context})
    assert "Logging error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert f" {context} WARNING " in proc.stdout and "the message" in proc.stdout, proc.stdout


def test_a_log_level_that_is_no_level_is_said():
    code = "from smdebug.core.logger import get_logger; get_logger().info('informed')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SMDEBUG_LOG_LEVEL": "verbose"})
    out = proc.stdout + proc.stderr
    assert "SMDEBUG_LOG_LEVEL" in out and "'verbose'" in out and "informed" in proc.stdout, out
