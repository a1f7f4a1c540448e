"""Real data-parallel jobs for the rules' tests: one process per rank of a script in tests/scripts, meeting over a
file:// rendezvous (no port to pick), each writing its worker's files of one run."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def run_ranks(script: str, tmp_path, world: int, *args: str, timeout: float = 240) -> str:
    """Run ``scripts/<script> OUT INIT RANK WORLD *args`` for every rank at once; return the run folder OUT once
    every rank exited 0 (else fail with their output)."""
    out, init = str(tmp_path / "run"), str(tmp_path / "init")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    command = [sys.executable, os.path.join(SCRIPTS, script), out, init]
    procs = [subprocess.Popen([*command, str(rank), str(world), *args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rank in range(world)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=timeout)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    assert [p.returncode for p in procs] == [0] * world, "\n".join(outs)
    return out
