"""Command-line manners shared by the commands: results on stdout and nothing else there, and a reader that
goes away early (``smdebug ... | head``) ends the command quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from _support import NumpyHook
from smdebug.cli._common import EXIT_CLOSED_PIPE
from smdebug.core.save_config import SaveConfig


def _big_run(out) -> None:
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for step in range(2):
        hook.begin_step()
        hook.record("weights/big", np.arange(200_000, dtype=np.float64) + step)
        hook.end_step()
    hook.close()


#: the command with stdout on a pipe whose reader has already gone (``smdebug ... | head`` once head has
#: exited): every write to it fails with EPIPE, whatever the kernel buffers
CLOSED_PIPE_RUNNER = """
import os, sys
read_end, write_end = os.pipe()
os.close(read_end)
os.dup2(write_end, sys.stdout.fileno())
from smdebug.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _with_closed_stdout(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLOSED_PIPE_RUNNER, *args], capture_output=True, text=True,
                          timeout=300)


def test_a_closed_pipe_ends_every_command_quietly(tmp_path):
    _big_run(tmp_path / "run")
    run = str(tmp_path / "run")
    for args in (["show", run, "weights/big", "--step", "0", "--full"], ["ls", run], ["ls", run, "--json"],
                 ["plugins"], ["export", "tensorboard", run, str(tmp_path / "tb")]):
        out = _with_closed_stdout(*args)
        assert out.returncode == EXIT_CLOSED_PIPE, (args, out)
        assert out.stderr == "", (args, out.stderr)  # no traceback, no "Exception ignored" at exit


def test_json_output_is_alone_on_stdout(tmp_path, smdebug_cli):
    """Logs and notes of the commands go to stderr: --json output parses, whatever was logged."""
    _big_run(tmp_path / "run")
    for args in (["ls", str(tmp_path / "run"), "--json"], ["show", str(tmp_path / "run"), "weights/big", "--json"],
                 ["export", "tensorboard", str(tmp_path / "run"), str(tmp_path / "tb"), "--json"]):
        out = smdebug_cli(*args)
        assert out.returncode == 0, out.stderr
        json.loads(out.stdout)


def test_every_command_help_says_what_it_does(smdebug_cli):
    for command in ("ls", "show", "plot", "report", "export", "plugins", "run"):
        out = smdebug_cli(command, "--help")
        assert out.returncode == 0 and out.stdout.startswith("usage: smdebug " + command), command
        assert out.stderr == "", command
    out = smdebug_cli("export", "tensorboard", "--help")
    assert "Exit status" in out.stdout and "smdebug export tensorboard /tmp/run /tmp/tb" in out.stdout


def test_an_output_that_cannot_be_written_is_named_in_one_line(tmp_path, smdebug_cli):
    """No traceback, and the message names the output asked for (not a temporary file beside it)."""
    _big_run(tmp_path / "run")
    run = str(tmp_path / "run")
    (tmp_path / "a_file").write_text("x")
    for command, output, why in [
        (["report", run, "-o"], str(tmp_path / ("n" * 260 + ".html")), "File name too long"),
        (["report", run, "-o"], str(tmp_path / "a_file" / "r.html"), f"{tmp_path / 'a_file'} is not a folder"),
        (["report", run, "-o"], str(tmp_path / "a_file") + "/", "Not a directory"),
        (["plot", run, "weights/big", "-o"], str(tmp_path / "a_file" / "p.png"), f"{tmp_path / 'a_file'} is not a folder"),
    ]:
        out = smdebug_cli(*command, output)
        assert out.returncode == 2, (command, output, out.stderr)
        assert f"cannot write {output}: {why}" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and ".tmp" not in out.stderr


def test_export_refuses_the_runs_own_folders(tmp_path, smdebug_cli):
    _big_run(tmp_path / "run")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "run").rglob("*"))
    for inside in ("index", "index/000000000", "collections", "events", "workers_ended"):
        out = smdebug_cli("export", "tensorboard", str(tmp_path / "run"), str(tmp_path / "run" / inside))
        assert out.returncode == 2 and "refusing to export into" in out.stderr, (inside, out.stderr)
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "run").rglob("*")) == before
    out = smdebug_cli("export", "tensorboard", str(tmp_path / "run"), str(tmp_path / "run" / "tensorboard"))
    assert out.returncode == 0, out.stderr  # beside the run's folders: fine


def test_report_and_plot_never_write_over_what_they_read(tmp_path, smdebug_cli):
    """The page would replace the verdicts it shows; a picture, the hook's TensorBoard data."""
    _big_run(tmp_path / "run")
    run = tmp_path / "run"
    verdicts = '{"trial": "x", "rules": []}'
    (run / "rule_results.json").write_text(verdicts)
    (tmp_path / "mine.json").write_text(verdicts)
    (run / "tensorboard").mkdir()
    board = run / "tensorboard" / "events.out.tfevents.1.host"
    board.write_bytes(b"board")
    for command, output, why in [
        (["report", str(run), "-o"], str(run / "rule_results.json"), "it is the rule verdicts of the run"),
        (["report", str(run), "--rules", str(tmp_path / "mine.json"), "-o"], str(tmp_path / "mine.json"),
         "it is the --rules file"),
        (["report", str(run), "-o"], str(board), "it is a TensorBoard event file"),
        (["plot", str(run), "weights/big", "-o"], str(board), "it is a TensorBoard event file"),
    ]:
        out = smdebug_cli(*command, output)
        assert out.returncode == 2, (command, out.stderr)
        assert f"refusing to write {output}: {why}" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert (run / "rule_results.json").read_text() == verdicts and (tmp_path / "mine.json").read_text() == verdicts
    assert board.read_bytes() == b"board"


def test_report_of_values_near_the_float_maximum(tmp_path, smdebug_cli):
    """A diverged float64 weight holds finite values whose span overflows: the histogram is drawn, and
    numpy's overflow warnings do not reach the terminal."""
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "losses"])
    for step in range(4):
        hook.begin_step()
        hook.record("weights/w", np.array([1.7e308, -1.7e308, 0.5, 1.0 + step]))
        hook.record("losses/loss", np.float64(1.0 / (step + 1)))
        hook.end_step()
    hook.close()
    out = smdebug_cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "report.html"))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "Warning" not in out.stderr, out.stderr
    assert "weights/w: histogram over steps" in (tmp_path / "report.html").read_text()


def test_report_and_rules_on_tensors_that_are_no_numbers(tmp_path, smdebug_cli):
    """String tensors (valid records) are not drawn, and a rule that cannot use them says so in its verdict,
    without a traceback on the terminal."""
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "losses"])
    for step in range(3):
        hook.begin_step()
        hook.record("weights/names", np.array(["a", "b", "c"]))
        hook.record("losses/loss", np.float32(1.0 / (step + 1)))
        hook.record("losses/note", np.array(["x"]))  # (a one-element string: drawn as a value, were it a number)
        hook.end_step()
    hook.close()
    out = smdebug_cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "report.html"))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert (tmp_path / "report.html").exists()
    out = smdebug_cli("show", str(tmp_path / "run"), "weights/names", "--reduction", "l2")
    assert "Cannot compute reduction l2 of a string tensor" in out.stderr and "Traceback" not in out.stderr


def test_dash_writes_the_image_or_the_page_to_stdout(tmp_path, smdebug_argv):
    """``-o -`` is stdout, as in most tools: the bytes alone there, the summary on stderr, no file named '-'."""
    _big_run(tmp_path / "run")
    run = str(tmp_path / "run")
    for args, starts in ((["plot", run, "weights/big", "-o", "-"], b"\x89PNG\r\n\x1a\n"),
                         (["report", run, "-o", "-"], b"<!DOCTYPE html>")):
        out = subprocess.run(smdebug_argv + args, capture_output=True, cwd=tmp_path, timeout=300)
        assert out.returncode == 0, (args, out.stderr)
        assert out.stdout.startswith(starts), (args, out.stdout[:40])
        assert b"to stdout" in out.stderr, out.stderr
    assert not (tmp_path / "-").exists()


def test_dash_refuses_a_terminal_and_a_second_writer_to_stdout(tmp_path, smdebug_argv):
    import os
    import pty

    _big_run(tmp_path / "run")
    run = str(tmp_path / "run")
    for args, why in ((["plot", run, "weights/big", "-o", "-"], "stdout, which is a terminal: redirect it"),
                      (["report", run, "-o", "-"], "stdout, which is a terminal: redirect it"),
                      (["plot", run, "weights/big", "-o", "-", "--json"], "--json would print there too"),
                      (["report", run, "-o", "-", "--follow"], "--follow (rewriting the page) would print")):
        leader, follower = pty.openpty()
        try:
            out = subprocess.run(smdebug_argv + args, stdout=follower, stderr=subprocess.PIPE, cwd=tmp_path,
                                 timeout=300)
        finally:
            os.close(follower)
            os.close(leader)
        assert out.returncode == 2, (args, out.stderr)
        assert why.encode() in out.stderr and b"Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "-").exists()


def test_an_empty_run_path_is_refused_not_read_as_the_current_directory(tmp_path, smdebug_argv):
    """(run from inside a run folder: an empty path read as "." would show that run)"""
    import pytest

    from smdebug.exceptions import SMDebugValueError
    from smdebug.trials import create_trial

    _big_run(tmp_path / "run")
    for args in (["ls", ""], ["show", " ", "weights/big"], ["report", "", "-o", str(tmp_path / "r.html")]):
        out = subprocess.run(smdebug_argv + args, capture_output=True, text=True, cwd=tmp_path / "run",
                             timeout=300)
        assert out.returncode == 2, (args, out)
        assert "the run's path is empty (give . for the current directory)" in out.stderr, out.stderr
    with pytest.raises(SMDebugValueError, match="the run's path is empty"):
        create_trial("")


def test_an_empty_output_path_is_refused_not_taken_for_the_current_directory(tmp_path, smdebug_argv):
    """An output given as "" (``-o "$OUT"`` with OUT unset; eighth pass): ``export tensorboard RUN ""``
    wrote its event files into the current directory, and ``report``/``plot -o ""`` blamed the current
    directory for being a folder."""
    import pytest

    from smdebug.analysis.tensorboard_export import export_tensorboard
    from smdebug.exceptions import SMDebugValueError
    from smdebug.trials import create_trial

    _big_run(tmp_path / "run")
    (tmp_path / "cwd").mkdir()
    run = str(tmp_path / "run")
    for args in (["export", "tensorboard", run, ""], ["export", "tensorboard", run, " "],
                 ["report", run, "-o", ""], ["plot", run, "weights/big", "-o", ""]):
        out = subprocess.run(smdebug_argv + args, capture_output=True, text=True, cwd=tmp_path / "cwd",
                             timeout=300)
        if args[0] == "plot" and "needs matplotlib" in out.stderr:
            continue  # (an environment without the cli extra; smdebug-rules tests `rules run --output ""`)
        assert out.returncode == 2, (args, out)
        assert "the output path is empty" in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
        assert os.listdir(tmp_path / "cwd") == [], args
    with pytest.raises(SMDebugValueError, match="the output path is empty"):
        export_tensorboard(create_trial(run), "")


def _unfinished_run(root) -> str:
    """A run still training: the real step writer, no end marker."""
    from _support import write_run

    write_run(str(root), range(3), end=False,
              tensors=lambda step, w: {"loss": np.array([1.0 / (step + 1)], np.float32)})
    return str(root)


def test_times_no_one_can_wait_are_refused_in_one_line(tmp_path, smdebug_cli):
    """`report --follow --interval 1e400` (or 1e300) died in time.sleep with a traceback, `--timeout nan`
    followed for ever, `--timeout -4` was taken; `ls --wait nan` blamed `wait_for_collections`."""
    run = _unfinished_run(tmp_path / "run")
    out = str(tmp_path / "r.html")
    for args, option in ((("report", run, "-o", out, "--follow", "--interval", "1e400"), "--interval"),
                         (("report", run, "-o", out, "--follow", "--interval", "1e300"), "--interval"),
                         (("report", run, "-o", out, "--follow", "--timeout", "nan"), "--timeout"),
                         (("report", run, "-o", out, "--follow", "--timeout", "-4"), "--timeout"),
                         (("ls", run, "--wait", "nan"), "--wait"),
                         (("ls", run, "--wait", "-1"), "--wait")):
        proc = smdebug_cli(*args, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert option in proc.stderr and "wait_for_collections" not in proc.stderr, (args, proc.stderr)


def test_a_followed_report_ends_at_its_timeout_not_an_interval_later(tmp_path, smdebug_cli):
    """--interval 30 --timeout 1 took 43 s: the last pause ran its whole interval past the deadline."""
    import time

    run = _unfinished_run(tmp_path / "run")
    started = time.monotonic()
    proc = smdebug_cli("report", run, "-o", str(tmp_path / "r.html"), "--follow", "--interval", "30",
                       "--timeout", "1", timeout=120)
    assert proc.returncode == 0 and "training has not ended" in proc.stdout, proc.stderr
    assert time.monotonic() - started < 25
