"""``smdebug run`` reads the hook configuration before it starts the script (red team 9).

The hook is made inside the script's process, where a configuration it refuses must not stop training: it
logs one error and the script trains on, saving nothing. ``smdebug run --out-dir D --save-interval 0 --
python train.py`` (or an include regex that is no regex, or a --config whose schedule cannot be kept)
therefore ran the whole training for nothing, the one line lost in its log. The command now refuses such a
configuration in one line, exit status 2, and the script is not started. The script here is a real
process that leaves a mark when it runs.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from _hostile import run_smdebug


def _script(mark):
    return [sys.executable, "-c", f"open({str(mark)!r}, 'w').close()"]


@pytest.mark.parametrize("options, said", [
    (["--save-interval", "0"], "save_interval must be >= 1, got 0"),
    (["--save-interval", "-5"], "save_interval must be >= 1, got -5"),
    (["--include-regex", "(unclosed"], "is not a valid regex"),
])
def test_options_the_hook_would_refuse_stop_the_command_before_the_script(tmp_path, options, said):
    mark = tmp_path / "ran"
    proc = run_smdebug("run", "--out-dir", tmp_path / "run", *options, "--", *_script(mark))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("smdebug run: ") and said in line and "Traceback" not in proc.stderr, proc.stderr
    assert "smdebug-hook-" not in line  # (the options are named, not the temporary file made from them)
    assert not mark.exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith("smdebug-hook-")]


def test_a_configuration_file_the_hook_would_refuse_stops_the_command(tmp_path):
    mark = tmp_path / "ran"
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run"),
                                  "HookParameters": {"start_step": "10", "end_step": "5"}}))
    proc = run_smdebug("run", "--config", config, "--", *_script(mark))
    assert proc.returncode == 2 and proc.stderr.startswith("smdebug run: "), proc.stderr
    assert not mark.exists()


def test_a_good_configuration_still_runs_the_script(tmp_path):
    mark = tmp_path / "ran"
    proc = run_smdebug("run", "--out-dir", tmp_path / "run", "--save-interval", "3", "--", *_script(mark))
    assert proc.returncode == 0, proc.stderr
    assert mark.exists()
