"""Running an unmodified training script (tests/scripts) under ``smdebug run --config`` in a real process, for the
zero-code trainer tests."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"


def smdebug_run(tmp_path, script, *script_args, hook_parameters=None, collections=("weights", "gradients", "losses")):
    """Run ``script`` under ``smdebug run --config`` (every step saved); returns the trial's folder."""
    out = tmp_path / "run"
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(out),
                                  "HookParameters": {"save_interval": "1", **(hook_parameters or {})},
                                  "CollectionConfigurations": [{"CollectionName": c} for c in collections]}))
    # No MASTER_PORT of the test's choosing: a port found free here and bound seconds later (after two Python
    # start-ups and the torch and Lightning imports) can be taken in between by another parallel test's process.
    # Lightning's launcher picks one itself just before rank 0 binds it, on 127.0.0.1, and hands it to rank 1.
    # Launcher variables this process might hold are dropped, so the script starts as a fresh job.
    launcher = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK"}
    env = {**{k: v for k, v in os.environ.items() if k not in launcher}, "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "run", "--config", str(config), "--",
                           sys.executable, str(SCRIPTS / script), *script_args],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return str(out), proc
