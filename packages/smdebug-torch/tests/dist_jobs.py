"""Real multi-process torch.distributed jobs for the tests (test_distributed.py, test_sharded.py): launching the
ranks, and joining the job from a rank's script.

The ranks meet at a file store in a folder of the job's own (``file://``), not at a MASTER_PORT chosen by the
test: a port found free by binding and releasing it is free only until someone else binds it, and under
pytest-xdist another test's job could take it in the seconds before rank 0 bound it (rank 0 failed with
EADDRINUSE, or two jobs' ranks met at one store and waited for each other). Gloo's own connections between
the ranks are on ports the system assigns as each rank binds. RANK and WORLD_SIZE are set as a launcher
(torchrun) sets them: the hook names its worker from them.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STORE_ENV = "SMDEBUG_TEST_DIST_STORE"
# what a launcher around the tests may have set, which would make a rank join another job
LAUNCHER_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                 "GROUP_RANK", "NODE_RANK", "TORCHELASTIC_USE_AGENT_STORE")


def launch(script, args, world=2, timeout=300):
    """Run ``script`` (in this folder) as ranks 0..world-1 of one job; returns each rank's output after
    asserting that every rank exited 0."""
    store_dir = tempfile.mkdtemp(prefix="smdebug-dist-")
    try:
        procs = []
        for rank in range(world):
            env = {**{k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS},
                   STORE_ENV: os.path.join(store_dir, "store"), "RANK": str(rank), "WORLD_SIZE": str(world),
                   "PYTHONPATH": HERE, "OMP_NUM_THREADS": "1"}
            procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, script), *map(str, args)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        try:
            outs = [p.communicate(timeout=timeout)[0] for p in procs]
        finally:
            for p in procs:  # (a rank left waiting for one that failed)
                if p.poll() is None:
                    p.kill()
                    p.wait()
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    assert [p.returncode for p in procs] == [0] * world, "\n".join(outs)
    return outs


def join_job():
    """In a rank's script: join the job it was launched into (gloo)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{os.environ[STORE_ENV]}",
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
