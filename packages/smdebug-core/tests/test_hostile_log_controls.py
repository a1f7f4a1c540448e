"""Names from a run that reach the library's log, read from Python (a notebook, a training script, a rule
run in code): a file or tensor name holding a terminal escape sequence, a carriage return or a direction
override is logged escaped, as the CLI prints it, not acted on by the terminal or log viewer showing it.
The run is written by the real writer; the stray file is then added, as someone with write access could."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from _hostile import index_path, write_simple_run

_READ = ("import sys\n"
         "from smdebug.trials import create_trial\n"
         "create_trial(sys.argv[1], skip_damaged=True).steps()\n")


@pytest.mark.parametrize("control, shown", [
    ("\x1b]0;owned\x07", "\\u001b]0;owned\\u0007"),  # retitles the terminal
    ("\r", "\\u000d"),  # returns to the line's start: what follows overwrites the warning
    ("\u202e", "\\u202e"),  # shows the rest of the line reversed
    ("\x9b2J", "\\u009b2J"),  # a one-byte CSI: clears the screen on terminals that take C1 controls
])
def test_a_skipped_files_name_is_logged_escaped(tmp_path, control, shown):
    run = write_simple_run(tmp_path / "run")
    stray = os.path.join(os.path.dirname(index_path(run, 0)), f"000000000005_worker{control}x.json")
    with open(stray, "w") as f:
        f.write("{}")
    env = {**os.environ, "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0", "SMDEBUG_LOG_ALL_TO_STDOUT": "true"}
    env.pop("SMDEBUG_LOG_PATH", None)
    done = subprocess.run([sys.executable, "-c", _READ, run], capture_output=True, text=True, timeout=120,
                          env=env, errors="surrogateescape")
    assert done.returncode == 0, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "Skipping" in line]
    assert len(lines) == 1, done.stdout + done.stderr
    assert control not in lines[0]
    assert f"worker{shown}x.json" in lines[0]


def test_plain_log_lines_pass_unchanged(tmp_path):
    from smdebug.core.logger import get_logger
    from smdebug.core.names import terminal_safe

    text = "saved step 3 of w\tin 0.2 s\nnext: 4 (\u0645\u0631\u062d\u0628\u0627, \u200d)"
    assert terminal_safe(text) == text
    assert terminal_safe(terminal_safe("a\x1bb")) == terminal_safe("a\x1bb")  # escaping twice changes nothing
    get_logger().info("%s", text)  # (no error on a record whose message needs nothing)
