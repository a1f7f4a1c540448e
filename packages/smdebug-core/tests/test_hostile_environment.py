"""Values SageMaker's environment hands the library, made hostile (red team 9).

``SM_HPS`` nested deeper than Python's json parses raised RecursionError from
``check_smmodelparallel_training`` (it said False for every other document it cannot use). The rule stop
signal holding a time of 400 digits raised OverflowError from ``is_rule_signalled_gracetime_passed`` (any
other unreadable content means: stop); a grace of "nan" or "inf" seconds made the grace never pass, without
a word. Real files, real environment variables, in fresh processes where the value is read at import.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from _hostile import write_simple_run

ENV_SIGNAL = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE"


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **env))


def test_sm_hps_nested_too_deep_is_not_model_parallel():
    proc = _python("from smdebug.core.utils import check_smmodelparallel_training as c; print(c())",
                   SM_HPS="[" * 100_000)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr[-2000:]


@pytest.mark.parametrize("content, grace, stops", [
    ("9" * 400, None, True),  # a time no float holds: no time, so stop (as for any unreadable signal)
    ("0", "nan", True),  # signalled at the epoch, grace not a number: the default grace, long passed
    ("0", "inf", True),
    ("0", None, True),
    ("99999999999", None, False),  # signalled in the year 5138: its grace has not passed
])
def test_the_rule_stop_signal_is_read_without_raising(tmp_path, content, grace, stops):
    from smdebug.core.access_layer.utils import ENV_RULE_STOP_SIGNAL_FILENAME

    assert ENV_RULE_STOP_SIGNAL_FILENAME == ENV_SIGNAL
    run = write_simple_run(tmp_path / "run")
    (tmp_path / "run" / "rule_stop").write_text(content)
    env = {ENV_SIGNAL: "rule_stop"}
    if grace is not None:
        env["rule_stop_grace_time_secs"] = grace
    proc = _python("import sys; from smdebug.core.access_layer import is_rule_signalled_gracetime_passed as f;"
                   f"print(f({run!r}))", **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == str(stops)
    if grace is not None:
        assert "rule_stop_grace_time_secs" in proc.stdout + proc.stderr  # (said, in one warning)
