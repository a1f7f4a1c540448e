"""Resource faults while training: the disk fills up (RLIMIT_FSIZE), out_dir becomes read-only, out_dir
is removed. Training always finishes; the hook reports once and disables itself; every step that became
visible before the fault is intact."""

from __future__ import annotations

import os
import sys

import pytest

from _fault_check import check_files_on_disk, check_trial, start_child

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits and permissions")


def _run(out, *args):
    proc = start_child(out, *args)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    return stdout, stderr


def _reported_once(stdout, stderr):
    text = stdout + stderr
    n = text.count("smdebug hook disabled") + text.count("cannot save to")
    assert n == 1, text[-3000:]


def test_disk_full(tmp_path):
    out = str(tmp_path / "run")
    stdout, stderr = _run(out, "--steps", 40, "--fsize", 9000)  # files over 9000 bytes cannot be written
    assert "TRAINING DONE 40 True" in stdout, stdout + stderr
    _reported_once(stdout, stderr)
    steps = check_files_on_disk(out)
    assert 1 <= len(steps) < 40
    check_trial(out, steps)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_out_dir_becomes_read_only(tmp_path):
    out = str(tmp_path / "run")
    try:
        stdout, stderr = _run(out, "--steps", 30, "--chmod-out-dir-at", 10)
    finally:
        for root, dirs, _ in os.walk(out):
            os.chmod(root, 0o755)
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
    assert "TRAINING DONE 30 True" in stdout, stdout + stderr
    _reported_once(stdout, stderr)
    steps = check_files_on_disk(out)
    assert steps[:5] == list(range(5))


def test_permission_denied_as_root_too(tmp_path, monkeypatch):
    """The same fault without relying on file modes (root ignores them): every open for writing fails
    with PermissionError from step 10 on, in the writer thread."""
    import builtins

    from _support import NumpyHook
    from _fault_child import expected_tensors
    from smdebug import SaveConfig

    out = str(tmp_path / "run")
    real_open = builtins.open
    state = {"deny": False}

    def guarded_open(file, mode="r", *a, **k):
        if state["deny"] and str(file).startswith(out) and any(c in mode for c in "wax+"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded_open)
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights", "biases", "losses"])
    for step in range(25):
        if step == 10:
            hook.flush()  # steps 0-9 are on disk before the fault
            state["deny"] = True
        hook.begin_step()
        for name, value in expected_tensors(step).items():
            hook.record(name, value)
        hook.end_step()
    hook.close()
    monkeypatch.setattr(builtins, "open", real_open)
    assert hook.disabled
    steps = check_files_on_disk(out)
    assert steps[:10] == list(range(10)) and len(steps) < 25
    check_trial(out, steps)


def test_out_dir_removed_mid_run(tmp_path):
    out = str(tmp_path / "run")
    stdout, stderr = _run(out, "--steps", 30, "--remove-out-dir-at", 10)
    assert "TRAINING DONE 30" in stdout, stdout + stderr
    # Whatever the hook did (re-created the folders or gave up once), training finished, and anything
    # under final names is complete and readable.
    if os.path.isdir(out):
        steps = check_files_on_disk(out)
        assert all(s >= 10 for s in steps)
