"""Names from a run that would make the terminal show something other than what the command said (red team 9).

A tensor name holding a carriage return sends the cursor back to the start of the line: what follows in the
name overwrites the line. On stderr, where every command's error message goes, a run could make
"smdebug show: <name> was not saved at step 7" read "smdebug show: OK nothing wrong". The direction marks
(U+200E, U+200F, U+061C) reorder what is shown around them, and the line separator U+2028 breaks the line
on some terminals and viewers; the HTML report already showed them as [U+XXXX], the terminal let them
through. Runs are written by the real writer; the commands run as the user runs them (subprocesses).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from _hostile import write_simple_run

SPOOF = "w\rsmdebug show: OK nothing wrong"
INVISIBLE = "loss\u200f\u061c\u200e\u2028\u2029x"


def run_smdebug(*args):
    """The command's exit status, stdout and stderr as text decoded without newline translation (text mode
    would turn the very carriage returns looked for into newlines)."""
    exe = os.path.join(os.path.dirname(sys.executable), "smdebug")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "smdebug.cli"]
    proc = subprocess.run(cmd + [str(a) for a in args], capture_output=True, timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8"),
                                       proc.stderr.decode("utf-8"))


def test_a_carriage_return_in_a_name_never_reaches_stderr(tmp_path):
    out = write_simple_run(tmp_path / "run", names=[SPOOF])
    proc = run_smdebug("show", out, SPOOF, "--step", "7")
    assert proc.returncode == 1, proc.stderr
    assert "\r" not in proc.stderr, repr(proc.stderr)
    assert "w\\u000dsmdebug show: OK nothing wrong was not saved at step 7" in proc.stderr


def test_direction_marks_and_line_separators_are_escaped_on_the_terminal(tmp_path):
    out = write_simple_run(tmp_path / "run", names=[INVISIBLE])
    proc = run_smdebug("ls", out)
    assert proc.returncode == 0, proc.stderr
    for char in "\u200f\u061c\u200e\u2028\u2029":
        assert char not in proc.stdout, (hex(ord(char)), proc.stdout)
    assert "loss\\u200f\\u061c\\u200e\\u2028\\u2029x" in proc.stdout
    proc = run_smdebug("show", out, INVISIBLE, "--step", "9")
    assert proc.returncode == 1 and "\u2028" not in proc.stderr and "\u200f" not in proc.stderr, proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="progress bars need tqdm")
def test_a_progress_bar_still_redraws_its_line_with_the_name_escaped(tmp_path):
    out = write_simple_run(tmp_path / "run", names=[SPOOF])
    proc = run_smdebug("show", out, SPOOF, "--progress")
    assert proc.returncode == 0, proc.stderr
    assert "reading w\\u000dsmdebug show: OK nothing wrong" in proc.stderr  # the label, escaped
    assert "w\rsmdebug" not in proc.stderr
    assert "\r" in proc.stderr and "3/3" in proc.stderr  # the bar's own carriage returns still redraw it


def test_names_that_differ_by_invisible_characters_print_differently(tmp_path):
    """``w`` and ``w`` + zero-width space (or soft hyphen, word joiner, U+FEFF) printed the same: two tensors
    (or workers) the reader could not tell apart. The joiners scripts need (U+200C, U+200D) pass."""
    names = ["w", "w\u200b", "w\u00ad", "w\u2060", "w\ufeff", "\u0645\u200c\u06cc"]
    out = write_simple_run(tmp_path / "run", names=names)
    proc = run_smdebug("ls", out)
    assert proc.returncode == 0, proc.stderr
    for char in "\u200b\u00ad\u2060\ufeff":
        assert char not in proc.stdout, hex(ord(char))
    for shown in ("w\\u200b", "w\\u00ad", "w\\u2060", "w\\ufeff", "\u0645\u200c\u06cc"):
        assert shown in proc.stdout, (shown, proc.stdout)
