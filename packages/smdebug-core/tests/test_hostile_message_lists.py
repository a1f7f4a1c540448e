"""Error messages that name a run's workers or collections stay a line long (red team 11).

"no collection 'x' in the run (it has: ...)" and "no worker 'x' in the run (workers: ...)" listed every name:
a hostile collections file of 2,000 collections named with 2,000 characters each made one error line 4 MB
(smdebug show/export/plot, trial.tensor_names's tables, the report's run card). They now list the first ten,
each clipped, and count the rest. Runs are written by the real writer; the CLI runs in a real subprocess.
"""

from __future__ import annotations

import numpy as np

from _hostile import edit_collections, run_smdebug, write_simple_run
from _support import write_run


def test_a_missing_collection_names_a_few_of_the_runs(tmp_path):
    run = write_simple_run(tmp_path / "run")

    def many(doc):
        for i in range(2000):
            name = f"c{i:04d}" + "x" * 2000
            doc["collections"][name] = {"name": name, "include_regex": ["^w$"], "tensor_names": []}

    edit_collections(run, many)
    for argv in (("ls", run, "--collection", "nosuch"), ("export", "tensorboard", run, str(tmp_path / "tb"),
                                                           "--collection", "nosuch")):
        done = run_smdebug(*argv)
        assert done.returncode == 1, done.stderr[-2000:]
        assert "no collection 'nosuch'" in done.stderr and "more)" in done.stderr, done.stderr[-2000:]
        assert len(done.stderr) < 5000, len(done.stderr)


def test_a_missing_worker_names_a_few_of_the_runs(tmp_path):
    run = str(tmp_path / "run")
    workers = [f"worker_{i:03d}_" + "w" * 150 for i in range(200)]
    write_run(run, range(1), workers=workers, tensors=lambda s, w: {"w": np.zeros(2, np.float32)})
    for argv in (("show", run, "w", "--worker", "nosuch"), ("export", "tensorboard", run, str(tmp_path / "tb"),
                                                             "--worker", "nosuch")):
        done = run_smdebug(*argv)
        assert done.returncode == 1, done.stderr[-2000:]
        assert "no worker 'nosuch'" in done.stderr and "(190 more)" in done.stderr, done.stderr[-2000:]
        assert len(done.stderr) < 5000, len(done.stderr)
