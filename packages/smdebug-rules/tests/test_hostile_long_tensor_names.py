"""A damaged or hostile run whose index names a tensor with a megabyte-long name: ``smdebug rules run`` printed the
name whole three times (the rule's error line, its table cell, the "the run has ... tensors:" detail), 3 MB of
output with 1 MiB lines. Names are clipped in every message; the verdict is unchanged."""

import json
import os
import subprocess
import sys

from _hooks import write_run

LONG = "A" * (1 << 20)


def test_a_megabyte_name_is_clipped_in_the_verdicts(tmp_path):
    run = write_run(tmp_path / "run", [0.5] * 6) or str(tmp_path / "run")
    index = os.path.join(run, "index", "000000000", "000000000005_worker_0.json")
    doc = json.load(open(index))
    doc["tensor_payload"][0]["tensorname"] = LONG  # (its record is another tensor's: reading it is damage)
    json.dump(doc, open(index, "w"))
    done = subprocess.run([sys.executable, "-m", "smdebug.cli.main", "rules", "run", run, "--no-progress",
                           "--rule", "ExplodingTensor", "--rule", "DeadRelu"], capture_output=True, text=True,
                          timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[:3000]  # (the damaged record is an Error, as before)
    assert "AAAAAAAAAA" in out and "1,048,576 characters" in out, out[:3000]
    assert len(out) < 20_000 and max(map(len, out.splitlines())) < 2_000, (len(out), out[:3000])
