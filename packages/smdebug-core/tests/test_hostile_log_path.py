"""SMDEBUG_LOG_PATH naming something other than a regular file (a FIFO, a folder, a path into a missing
folder): importing smdebug, training with a hook and the ``smdebug`` command neither hang nor die; one
line on stderr names the setting and what is wrong, and logging goes on without the file. Each case runs
in a subprocess with a timeout: the logger is configured once per process, and a regression would hang."""

import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(__file__)

_TRAIN = """
import sys
import smdebug
from smdebug.core.logger import get_logger
from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.trials import create_trial
get_logger().warning("marker-line-from-the-test")
hook = NumpyHook(out_dir=sys.argv[1], save_config=SaveConfig(save_interval=1))
train_logistic_regression(hook, steps=2)
hook.close()
print("STEPS", create_trial(sys.argv[1]).steps())
"""


def _train(tmp_path, log_path, timeout=180):
    env = dict(os.environ, SMDEBUG_LOG_PATH=str(log_path),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(_TRAIN), str(tmp_path / "run")], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _assert_went_on_without_the_file(proc, log_path, why):
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "STEPS [0, 1]" in proc.stdout
    assert "Traceback" not in output
    lines = [line for line in proc.stderr.splitlines() if "SMDEBUG_LOG_PATH" in line]
    assert len(lines) == 1, proc.stderr
    assert str(log_path) in lines[0] and why in lines[0] and "logging without the file" in lines[0]
    assert "marker-line-from-the-test" in proc.stdout  # the log itself still goes to the console


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_does_not_hang_training(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    _assert_went_on_without_the_file(_train(tmp_path, fifo), fifo, "FIFO")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_pipe_someone_reads_and_dev_null_are_logged_to(tmp_path):
    """A pipe with a reader (``/dev/stdout`` piped on) opens at once and is written to; so is a device such
    as ``/dev/null``. Only a FIFO nobody reads would block, and it is refused without blocking."""
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        proc = _train(tmp_path, fifo)
        try:
            received = os.read(reader, 1 << 16)
        except BlockingIOError:
            received = b""
    finally:
        os.close(reader)
    assert proc.returncode == 0 and "SMDEBUG_LOG_PATH" not in proc.stderr, proc.stderr
    assert b"marker-line-from-the-test" in received
    proc = _train(tmp_path / "null", "/dev/null")
    assert proc.returncode == 0 and "SMDEBUG_LOG_PATH" not in proc.stderr, proc.stderr


def test_a_folder_does_not_stop_training(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _assert_went_on_without_the_file(_train(tmp_path, folder), folder, "directory")


def test_a_missing_parent_folder_does_not_stop_training(tmp_path):
    path = tmp_path / "missing" / "smdebug.log"
    _assert_went_on_without_the_file(_train(tmp_path, path), path, "No such file")
    assert not (tmp_path / "missing").exists()


def test_a_regular_file_is_created_and_appended_to(tmp_path):
    path = tmp_path / "smdebug.log"
    proc = _train(tmp_path, path)
    assert proc.returncode == 0 and "STEPS [0, 1]" in proc.stdout, proc.stdout + proc.stderr
    assert "SMDEBUG_LOG_PATH" not in proc.stderr
    first = path.read_text()
    assert first.count("marker-line-from-the-test") == 1
    proc = _train(tmp_path / "again", path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert path.read_text().startswith(first)  # appended, not replaced
    assert path.read_text().count("marker-line-from-the-test") == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_the_cli_does_not_hang_on_a_fifo(tmp_path, smdebug_cli):
    from _support import NumpyHook, train_logistic_regression
    from smdebug import SaveConfig

    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=2)
    hook.close()
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    proc = smdebug_cli("ls", out, env={"SMDEBUG_LOG_PATH": str(fifo)}, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("SMDEBUG_LOG_PATH") == 1 and "FIFO" in proc.stderr
