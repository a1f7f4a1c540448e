"""A real ``horovodrun`` job on this machine (the horovod sessions build Horovod once and cache it)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, Iterable, Optional


def run_horovod_job(worker_script: str, args: Iterable[str], num_proc: int = 2,
                    drop_env: Iterable[str] = ("RANK", "WORLD_SIZE"), extra_env: Optional[Dict[str, str]] = None,
                    timeout: float = 300) -> Dict[int, dict]:
    """Run ``horovodrun -np N -H localhost:N --gloo python worker_script args...`` and return, by rank, the
    JSON object each worker printed on a line of its own (a line starting with ``{``); asserts the job
    succeeded and that every rank reported.

    ``drop_env``: variables of an enclosing job (e.g. a torchrun's RANK) that the workers' launcher
    fallback would otherwise read instead of Horovod's own; ``extra_env``: variables added where unset.
    """
    import json
    import shutil

    runner = shutil.which("horovodrun", path=os.path.dirname(sys.executable)) or shutil.which("horovodrun")
    assert runner, "horovodrun is not installed next to this Python"
    dropped = set(drop_env)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    for key, value in (extra_env or {}).items():
        env.setdefault(key, value)
    proc = subprocess.run([runner, "-np", str(num_proc), "-H", f"localhost:{num_proc}", "--gloo", sys.executable,
                           str(worker_script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results: Dict[int, dict] = {}
    for line in proc.stdout.splitlines():
        # horovodrun prefixes each worker's lines with "[rank]<stdout>:"
        text = line.split("<stdout>:", 1)[1] if "<stdout>:" in line else ""
        if text.startswith("{"):
            doc = json.loads(text)
            results[doc["rank"]] = doc
    assert sorted(results) == list(range(num_proc)), proc.stdout[-3000:]
    return results
