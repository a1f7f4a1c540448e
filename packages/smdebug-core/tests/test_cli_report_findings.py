"""A finding whose rule names no ``tensor`` field is marked on the chart of the tensor its reason names:
LossNotDecreasing judging a validation loss that turned back up (XGBoost's validation-logloss) had its
markers drawn on the first loss chart, the training loss that kept falling."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from _support import NumpyHook
from smdebug.core.save_config import SaveConfig


def _two_losses_run(out) -> None:
    """A training loss that keeps falling and a validation loss that turns back up after step 25."""
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    rng = np.random.default_rng(0)
    for step in range(100):
        hook.begin_step()
        hook.record("train_loss", np.array(1.0 / (step + 1) + 0.01 * rng.random(), np.float32))
        hook.record("valid_loss", np.array(0.5 + abs(step - 25) * 0.01 + 0.01 * rng.random(), np.float32))
        hook.end_step()
    hook.close()


def test_a_finding_is_marked_on_the_loss_its_reason_names(tmp_path, smdebug_cli):
    pytest.importorskip("smdebug.rules", reason="needs smdebug-rules")
    from smdebug.cli.report import content
    from smdebug.cli.report import verdicts as vd
    from smdebug.cli.report.lines import LineReader
    from smdebug.trials import create_trial

    run_dir = tmp_path / "run"
    _two_losses_run(run_dir)
    results = tmp_path / "rules.json"
    out = smdebug_cli("rules", "run", str(run_dir), "--rule", "loss_not_decreasing", "-q", "-o", str(results))
    assert out.returncode == 1, out.stderr  # the real rule fires on the validation loss
    findings = [f for r in json.loads(results.read_text())["rules"] for f in r.get("findings", [])]
    assert findings and all(not f.get("tensor") and f["reason"].startswith("valid_loss") for f in findings)

    trial = create_trial(str(run_dir))
    run = content.RunInfo(os.path.basename(str(run_dir)), trial, LineReader(trial))
    run.rules = vd.parse(results.read_text(), str(results))
    sections = content.build([run])
    content.place_findings(sections, [run], False)
    charts = {c.key: c for s in sections for c in s.charts if c.kind == "lines"}
    by_tensor = {ln.tensor: c for c in charts.values() for ln in c.lines}
    assert by_tensor["valid_loss"] is not by_tensor["train_loss"]  # (one chart per loss)
    assert len(by_tensor["valid_loss"].markers) == len(findings)
    assert by_tensor["train_loss"].markers == []
    marker = by_tensor["valid_loss"].markers[0]
    valid = next(ln for ln in by_tensor["valid_loss"].lines if ln.tensor == "valid_loss")
    assert marker["y"] == pytest.approx(float(valid.value_at(marker["step"])[1]))
    assert marker["tensor"] == "valid_loss (named in the finding)"


def test_a_name_inside_a_longer_name_is_not_taken_for_it():
    from smdebug.cli.report.content import _tensor_named_in

    names = sorted(["fc1", "weights/fc1", "loss", "val_loss"], key=len, reverse=True)
    assert _tensor_named_in("weights/fc1 grew 10x", names) == "weights/fc1"
    assert _tensor_named_in("val_loss rose; loss fell", names) == "val_loss"
    assert _tensor_named_in("loss fell, val_loss rose", names) == "loss"
    assert _tensor_named_in("gradient/weights/fc1x vanished", names) is None
    assert _tensor_named_in("", names) is None and _tensor_named_in(None, names) is None
