"""Red team 12: damaged claims in a run directory (``claim.smd``, ``claims/<worker>.json``). A claim that
names no possible process is stale, as the claim's docs say of damaged ones, and the hook takes it over. A
pid of 10**30 or 2**31 made ``os.kill`` raise OverflowError, which disabled the hook at its first step
(nothing saved); ``true`` or ``1.5`` named pid 1 (init, alive for ever), so the run could never be written
until someone removed the claim."""

from __future__ import annotations

import os

import pytest

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.core.locations import CLAIM_FILE
from smdebug.core.out_dir import worker_claim_key
from smdebug.core.testing import capture_smdebug_log
from smdebug.trials import create_trial


@pytest.mark.parametrize("pid", ["1" + "0" * 30, str(2 ** 31), str(2 ** 63), "-1e400", "Infinity", "true",
                                 "1.5", '"99999999999999999999"', "[1]", '{"pid": 1}'])
@pytest.mark.parametrize("multi_worker", [False, True])
def test_a_claim_naming_no_possible_process_is_taken_over(tmp_path, monkeypatch, pid, multi_worker):
    out = tmp_path / "run"
    if multi_worker:  # (each worker claims its name: claims/<worker>.json)
        for rank, size in (("SMDEBUG_TEST_RANK", "SMDEBUG_TEST_WORLD_SIZE"), ("RANK", "WORLD_SIZE")):
            monkeypatch.setenv(rank, "0")  # (the hook's worker, and the launcher's environment it claims by)
            monkeypatch.setenv(size, "2")
    key = worker_claim_key("worker_0") if multi_worker else CLAIM_FILE
    os.makedirs(os.path.dirname(out / key), exist_ok=True)
    (out / key).write_text('{"pid": %s, "host": null}' % pid)
    with capture_smdebug_log() as log:
        hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1),
                         include_workers="all" if multi_worker else "one")
        train_logistic_regression(hook, steps=3)
        hook.close()
    assert "disabled" not in log.text and "OverflowError" not in log.text, log.text[-2000:]
    assert "is held by" not in log.text and "already" not in log.text, log.text[-2000:]
    if multi_worker:  # (one of two workers: the trial waits for the other's steps; its files are there)
        assert len(os.listdir(out / "index" / "000000000")) == 3
        assert not (out / key).exists()  # (taken over, then released at close)
    else:
        assert create_trial(str(out)).steps() == [0, 1, 2]
