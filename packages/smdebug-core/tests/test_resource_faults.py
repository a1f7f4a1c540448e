"""Resource faults while training: the disk fills up (RLIMIT_FSIZE), out_dir becomes read-only, out_dir
is removed. Training always finishes; the hook reports once and disables itself; every step that became
visible before the fault is intact."""

from __future__ import annotations

import os
import random
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from _fault_check import check_files_on_disk, check_trial, start_child

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits and permissions")


def _run(out, *args, wrap=None):
    proc = start_child(out, *args, wrap=wrap)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    return stdout, stderr


def _no_tmp_left(out):
    """A write the fault interrupted leaves no ``.tmp`` file behind."""
    left = [os.path.join(r, n) for r, _d, files in os.walk(out) for n in files if n.endswith(".tmp")]
    assert not left, left


def _reported_once(stdout, stderr):
    text = stdout + stderr
    n = text.count("smdebug hook disabled") + text.count("cannot save to")
    assert n == 1, text[-3000:]


def test_disk_full(tmp_path):
    out = str(tmp_path / "run")
    stdout, stderr = _run(out, "--steps", 40, "--fsize", 9000)  # files over 9000 bytes cannot be written
    assert "TRAINING DONE 40 True" in stdout, stdout + stderr
    _reported_once(stdout, stderr)
    _no_tmp_left(out)
    steps = check_files_on_disk(out)
    assert 1 <= len(steps) < 40
    check_trial(out, steps)
    # the run says it was cut short, and where, for whoever reads it later (not only the training log)
    from smdebug.trials import create_trial

    notes = create_trial(out).hook_failures()
    assert len(notes) == 1 and notes[0].startswith("worker_0: the hook stopped saving at step "), notes
    assert f"at step {max(steps) + 1} " in notes[0] and "File too large" in notes[0], notes


def test_out_dir_becomes_read_only(tmp_path):
    """Real permissions: as root (which ignores them) the training child runs as an unprivileged user."""
    from _hostile import public_tmp_dir, unprivileged

    if hasattr(os, "geteuid") and os.geteuid() == 0:
        base = public_tmp_dir()
        os.chmod(base, 0o777)
        out = os.path.join(base, "run")
    else:
        out = str(tmp_path / "run")
    try:
        stdout, stderr = _run(out, "--steps", 30, "--chmod-out-dir-at", 10, wrap=unprivileged)
    finally:
        for root, dirs, _ in os.walk(out):
            os.chmod(root, 0o755)
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
    assert "TRAINING DONE 30 True" in stdout, stdout + stderr
    _reported_once(stdout, stderr)
    assert "cannot save to" in stdout + stderr and "Traceback" not in stdout + stderr  # (one clear line)
    steps = check_files_on_disk(out)
    assert steps == list(range(10))
    check_trial(out, steps)
    if not out.startswith(str(tmp_path)):
        shutil.rmtree(os.path.dirname(out), ignore_errors=True)


def _train_with_writes_denied(out, deny_from, monkeypatch, steps=25):
    """Train in this process; from step ``deny_from`` every file creation under ``out`` fails with
    PermissionError (in the writer thread), whatever the file modes say (root ignores them)."""
    from _support import NumpyHook
    from _fault_child import expected_tensors
    from smdebug import SaveConfig

    real_open = os.open
    state = {"deny": False}

    def guarded_open(path, flags, *a, dir_fd=None, **k):
        # (the storage creates files relative to a folder descriptor: any creation in this process is the hook's)
        if state["deny"] and flags & os.O_CREAT and (dir_fd is not None or str(path).startswith(out)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a, dir_fd=dir_fd, **k)

    monkeypatch.setattr(os, "open", guarded_open)
    try:
        hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1),
                         include_collections=["weights", "biases", "losses"])
        for step in range(steps):
            if step == deny_from:
                hook.flush()  # the steps before the fault are on disk before it
                state["deny"] = True
            hook.begin_step()
            for name, value in expected_tensors(step).items():
                hook.record(name, value)
            hook.end_step()
        hook.close()
    finally:
        monkeypatch.setattr(os, "open", real_open)
    assert hook.disabled
    written = check_files_on_disk(out)
    assert written[:deny_from] == list(range(deny_from)) and len(written) < steps
    check_trial(out, written)
    return written


def test_permission_denied_as_root_too(tmp_path, monkeypatch):
    """The same fault without relying on file modes: every write fails from step 10 on."""
    _train_with_writes_denied(str(tmp_path / "run"), 10, monkeypatch)


def test_out_dir_removed_mid_run(tmp_path):
    out = str(tmp_path / "run")
    stdout, stderr = _run(out, "--steps", 30, "--remove-out-dir-at", 10)
    _check_removed_run(out, stdout, stderr)


def _check_removed_run(out, stdout, stderr):
    """RELIABILITY.md: training finishes, the hook says once that out_dir was removed and stops saving;
    it never makes a new out_dir holding a partial run (nor writes anywhere else)."""
    assert "TRAINING DONE 30 True" in stdout, stdout + stderr  # finished, hook disabled
    _reported_once(stdout, stderr)
    assert "was removed" in stdout + stderr, stdout + stderr
    assert not os.path.exists(out), sorted(os.listdir(out))


def _disk_full_run(out, fsize):
    stdout, stderr = _run(out, "--steps", 40, "--fsize", fsize)
    assert "TRAINING DONE 40 True" in stdout, (fsize, stdout + stderr)  # finished, hook disabled
    _reported_once(stdout, stderr)
    _no_tmp_left(out)
    steps = check_files_on_disk(out)
    check_trial(out, steps)
    return len(steps)


def _removed_run(out, at):
    stdout, stderr = _run(out, "--steps", 30, "--remove-out-dir-at", at)
    _check_removed_run(out, stdout, stderr)
    return 0


@pytest.mark.slow
def test_many_resource_faults(tmp_path, monkeypatch):
    """40 faults at random moments: the disk fills up at 20 different file-size limits, out_dir is
    removed at 10 different steps, writes are denied from 10 different steps. Training finishes every
    time and every step on disk reads back exactly."""
    rng = random.Random(os.environ.get("SMDEBUG_FAULT_SEED", "12"))
    sizes = [rng.randrange(600, 12_000) for _ in range(20)]  # each below the largest event file of 40 steps
    removals = [rng.randrange(1, 28) for _ in range(10)]
    with ThreadPoolExecutor(4) as pool:
        full = list(pool.map(lambda i: _disk_full_run(str(tmp_path / f"full{i}"), sizes[i]), range(len(sizes))))
        removed = list(pool.map(lambda i: _removed_run(str(tmp_path / f"rm{i}"), removals[i]), range(len(removals))))
    denied = [_train_with_writes_denied(str(tmp_path / f"deny{i}"), rng.randrange(1, 20), monkeypatch)
              for i in range(10)]
    faults = len(full) + len(removed) + len(denied)
    steps = sum(full) + sum(removed) + sum(len(d) for d in denied)
    print(f"\n{faults} resource faults injected ({len(full)} disk full, {len(removed)} out_dir removed, "
          f"{len(denied)} permission denied): training finished every time; {steps} steps on disk, all readable")
