"""Red team 12: ``smdebug run --out-dir D`` (or a --config whose LocalPath is D) where D cannot be a run
directory: a file, a FIFO, a link to a device, a path under a file, a folder holding a finished run. The hook,
made inside the script's process, refuses D with one logged error and training goes on saving nothing; the
command started the script anyway, so the whole training ran for nothing (red team 9 closed this for the
save options, not for the directory). It now says why in one line, exit status 2, before the script starts,
and creates nothing."""

from __future__ import annotations

import json
import os
import sys

import pytest

from _hostile import run_smdebug


def _script(mark):
    return [sys.executable, "-c", f"open({str(mark)!r}, 'w').close()"]


def _plant(tmp_path, kind) -> str:
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("x")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "link_dev_null":
        os.symlink("/dev/null", target)
    elif kind == "dangling_link":
        os.symlink(tmp_path / "nowhere", target)
    elif kind == "under_a_file":
        target.write_text("x")
        target = target / "run"
    elif kind == "link_to_root":
        os.symlink("/", target)
    elif kind == "finished_run":
        target.mkdir()
        (target / "training_job_end.ts").write_text("")
    return str(target)


KINDS = ["file", "fifo", "link_dev_null", "dangling_link", "under_a_file", "link_to_root", "finished_run"]
SAID = {"file": "is not a directory", "fifo": "is not a directory", "link_dev_null": "is not a directory",
        "dangling_link": "symbolic link to nothing", "under_a_file": "cannot be created",
        "link_to_root": "is the filesystem root", "finished_run": "already holds a finished run"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("given_as", ["--out-dir", "--config"])
def test_an_out_dir_the_hook_would_refuse_stops_the_command_before_the_script(tmp_path, kind, given_as):
    out_dir = _plant(tmp_path, kind)
    before = sorted(os.listdir(tmp_path))
    mark = tmp_path / "ran"
    if given_as == "--config":
        config = tmp_path.parent / f"{tmp_path.name}-hook.json"
        config.write_text(json.dumps({"LocalPath": out_dir}))
        proc = run_smdebug("run", "--config", config, "--", *_script(mark), timeout=60)
    else:
        proc = run_smdebug("run", "--out-dir", out_dir, "--", *_script(mark), timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("smdebug run: ") and SAID[kind] in line and "Traceback" not in proc.stderr, proc.stderr
    assert not mark.exists()
    assert sorted(os.listdir(tmp_path)) == before  # (nothing created)


def test_a_new_nested_out_dir_is_left_to_the_hook_to_create(tmp_path):
    mark = tmp_path / "ran"
    proc = run_smdebug("run", "--out-dir", tmp_path / "a" / "b", "--", *_script(mark), timeout=60)
    assert proc.returncode == 0 and mark.exists(), proc.stderr
