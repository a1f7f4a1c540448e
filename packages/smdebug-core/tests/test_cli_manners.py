"""Command-line manners shared by the commands: results on stdout and nothing else there, and a reader that
goes away early (``smdebug ... | head``) ends the command quietly."""

from __future__ import annotations

import json
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
