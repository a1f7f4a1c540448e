"""`smdebug export tensorboard` onto a disk that fills up (a real small tmpfs: ENOSPC, nothing mocked).

A failed export must take back what it made: an export that fails midway used to leave empty mode folders,
or worse the event file of a mode it had finished, and the rerun after freeing space was then refused
("already holds TensorBoard event files"). Needs root (to mount the tmpfs); skipped elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from _cli_runs import mlp_run  # noqa: F401 - fixture
from _hostile import run_smdebug


@pytest.fixture
def small_disk(tmp_path):
    """Mount a tmpfs of the given size (bytes) at a fresh folder; unmounted at the end."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = []

    def mount(size: int):
        mnt = tmp_path / f"disk{len(mounted)}"
        mnt.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                          capture_output=True).returncode:
            pytest.skip("cannot mount a tmpfs here")
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _files_under(folder):
    return sorted(os.path.relpath(os.path.join(r, n), folder) for r, ds, fs in os.walk(folder) for n in ds + fs)


def _event_file_sizes(run, where):
    """Export to a roomy folder: the size of each mode's event file."""
    out = run_smdebug("export", "tensorboard", run, where)
    assert out.returncode == 0, out.stderr
    return {mode: sum(os.path.getsize(os.path.join(where, mode, f)) for f in os.listdir(os.path.join(where, mode)))
            for mode in os.listdir(where)}


def _assert_one_clear_line(out, folder):
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == "", out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert "No space left on device" in lines[0] and str(folder) in lines[0], lines[0]


def test_an_export_that_fills_the_disk_at_once_leaves_nothing(mlp_run, small_disk):
    run, _losses = mlp_run
    disk = small_disk(16 << 10)  # far less than the first mode's events
    out_dir = disk / "tb" / "nested"
    out = run_smdebug("export", "tensorboard", run, out_dir)
    _assert_one_clear_line(out, out_dir)
    assert "nothing is left" in out.stderr, out.stderr
    assert _files_under(disk) == []  # the folders it made (tb, tb/nested, tb/nested/TRAIN) are gone too


def test_an_export_that_fills_the_disk_after_one_mode_takes_that_mode_back_and_can_be_rerun(
        mlp_run, small_disk, tmp_path):
    run, _losses = mlp_run
    sizes = _event_file_sizes(run, tmp_path / "roomy")
    assert sizes["EVAL"] > 64 << 10, sizes  # room for TRAIN and not for EVAL, whatever the rounding
    disk = small_disk((sizes["TRAIN"] // 4096 + 4) * 4096)
    out_dir = disk / "tb"
    out = run_smdebug("export", "tensorboard", run, out_dir)
    _assert_one_clear_line(out, out_dir)
    assert _files_under(disk) == []  # TRAIN's finished event file was removed with the rest
    # the user frees space and runs the same command again: it is not refused, and it writes the lot
    subprocess.run(["mount", "-o", f"remount,size={sum(sizes.values()) * 2}", str(disk)], check=True)
    again = run_smdebug("export", "tensorboard", run, out_dir)
    assert again.returncode == 0, again.stderr
    assert sorted(os.listdir(out_dir)) == ["EVAL", "TRAIN"]


def test_a_failed_export_into_an_existing_folder_keeps_what_was_there(mlp_run, small_disk):
    run, _losses = mlp_run
    disk = small_disk(16 << 10)
    out_dir = disk / "tb"
    (out_dir / "TRAIN").mkdir(parents=True)
    (out_dir / "notes.txt").write_text("mine")
    out = run_smdebug("export", "tensorboard", run, out_dir)
    _assert_one_clear_line(out, out_dir)
    # the folders the user made, and their file, stay; the export's own folder (EVAL) does not exist
    assert _files_under(disk) == ["tb", os.path.join("tb", "TRAIN"), os.path.join("tb", "notes.txt")]
