"""Red team 12: hook failure notes (``hook_failures/<worker>.json``) served by an S3 endpoint that lies about
them (a body far larger than listed, no announced length, the whole object for a range, a body dripped a byte at
a time), and a note giving a step no run holds (4,000 digits). ``smdebug ls`` and the trial read the notes
within their size bound and the request deadline, and a note that cannot be read is said to be one, in a
line; the run's tensors are listed as before."""

from __future__ import annotations

import json
import time

import pytest

from test_hostile_s3_endpoint import BUCKET, PREFIX, lying_s3  # noqa: F401 - the fixture

NOTE = "hook_failures/worker_0.json"


@pytest.mark.parametrize("lie", ["big", "chunked", "ignore-range", "wrong-range", "drip"])
def test_a_lying_endpoint_serving_failure_notes(lying_s3, smdebug_cli, lie):  # noqa: F811
    lying_s3.objects[NOTE] = json.dumps({"worker": "worker_0", "stopped_at_step": 1,
                                         "failure": "disk full " + "x" * 200}).encode()
    lying_s3.lie = (lie, "hook_failures/")
    started = time.monotonic()
    out = smdebug_cli("ls", f"s3://{BUCKET}/{PREFIX}", env={"SMDEBUG_S3_REQUEST_TIMEOUT": "1"}, timeout=120)
    took = time.monotonic() - started
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    assert out.returncode == 0, out.stderr[-2000:]
    said = out.stdout + out.stderr
    assert "hook_failures/worker_0.json" in said or "worker_0: the hook stopped" in said, said
    assert lying_s3.most_sent("hook_failures/") < 8 << 20  # (never read whole: 64 MiB offered)
    assert took < 60


@pytest.mark.parametrize("step", [10 ** 4000, -(10 ** 30), 2 ** 63])
def test_a_note_whose_step_no_run_holds_is_said_without_it(tmp_path, smdebug_cli, step):
    from _hostile import write_simple_run

    run = write_simple_run(tmp_path / "run")
    (tmp_path / "run" / "hook_failures").mkdir()
    (tmp_path / "run" / NOTE).write_text('{"worker": "worker_0", "failure": "disk full", "stopped_at_step": %d}' % step)
    out = smdebug_cli("ls", run)
    said = [ln for ln in out.stdout.splitlines() if "worker_0: the hook stopped saving" in ln]
    assert out.returncode == 0 and len(said) == 1 and len(said[0]) < 200, out.stdout[-2000:]
    assert "(disk full)" in said[0] and "at step" not in said[0]
