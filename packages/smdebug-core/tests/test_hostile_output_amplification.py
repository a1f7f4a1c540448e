"""What a command prints stays proportional to the run it reads (red team 9).

Tables padded every row to their longest cell: one tensor name of 200,000 characters among 300 made
``smdebug ls`` of a 1.3 MB run print 60 MB (every row padded to the long name). A string tensor's value was
printed whole wherever a value is shown, and padded the same way: one 50 MB string at one step made
``smdebug show RUN NAME`` print 1.3 GB (the value in five statistics columns, three rows). Names are still
printed whole (they must be copied exactly); values are clipped, saying how long they are; padding stops
at a column width that any real name fits. Runs are written by the real writer; the string record is made
with the real protobuf encoder and framing, as a run holding a string tensor has it.
"""

from __future__ import annotations

import json

from _hostile import put_record, run_smdebug, string_record, write_simple_run

LONG = "n" * 200_000


def test_one_long_name_does_not_pad_every_row_of_ls(tmp_path):
    names = [LONG] + [f"t{i}" for i in range(300)]
    out = write_simple_run(tmp_path / "run", names=names, steps=range(2))
    proc = run_smdebug("ls", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert LONG in proc.stdout  # (the name itself, whole)
    assert len(proc.stdout) < 3 * len(LONG), len(proc.stdout)
    assert "  t299  " in proc.stdout or "  t299 " in proc.stdout


def test_a_giant_string_value_is_clipped_wherever_show_prints_it(tmp_path):
    out = write_simple_run(tmp_path / "run", names=["s"], steps=range(3))
    giant = b"A" * (4 << 20)
    put_record(out, 1, "s", string_record([giant]))  # step 1 of s: one 4 MB string
    for args in (("show", out, "s"), ("show", out, "s", "--step", "1")):
        proc = run_smdebug(*args)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert len(proc.stdout) < 100_000, (args, len(proc.stdout))
        assert f"{len(giant):,} characters" in proc.stdout, proc.stdout[:2000]
    # --full and --json are asked for the whole value, and give it
    proc = run_smdebug("show", out, "s", "--step", "1", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["rows"][0]["value"] == [giant.decode()]
