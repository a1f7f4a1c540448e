"""The report's "not in this run" line names only what the run does not hold: XGBoost's evaluation metrics
(train-logloss) are in both its losses and its metrics collections and are drawn once, as losses; the run
still has metrics."""

from __future__ import annotations

import html
import re

import numpy as np

from _support import NumpyHook
from smdebug.core.save_config import SaveConfig


def _run_card(page: str) -> str:
    found = re.search(r'<section id="run".*?</section>', page, re.S)
    assert found, page[:2000]
    return html.unescape(found.group(0))


def test_metrics_drawn_as_losses_are_not_called_absent(tmp_path, smdebug_cli):
    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfig(save_interval=1), include_collections=["losses", "metrics"])
    hook.get_collection("metrics").include("logloss")  # (as the XGBoost hook files its evaluation metrics)
    for step in range(5):
        hook.begin_step()
        hook.record("train-logloss", np.array(1.0 / (step + 1), np.float32))
        hook.end_step()
    hook.close()
    out = smdebug_cli("report", str(run), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    card = _run_card((tmp_path / "r.html").read_text())
    assert '<td>metrics</td><td class="num">1</td>' in card, card  # the run's collections say it has one
    absent = re.search(r"<th>not in this run</th><td>([^<]*)</td>", card)
    assert absent and "metrics" not in absent.group(1).split(", "), card
    assert "weights" in absent.group(1).split(", "), card  # (what it lacks is still said)


def test_empty_collections_are_named_in_one_line_not_tabled(tmp_path, smdebug_cli):
    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(3):
        hook.begin_step()
        hook.record("loss", np.array(1.0 / (step + 1), np.float32))
        hook.end_step()
    hook.close()
    out = smdebug_cli("report", str(run), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    card = _run_card((tmp_path / "r.html").read_text())
    assert '<td>losses</td><td class="num">1</td>' in card, card
    assert 'class="num">0</td>' not in card.split("<h3>Collections</h3>")[1], card
    note = re.search(r'<p class="note">holding no tensor: ([^<]*)</p>', card)
    assert note and {"weights", "gradients", "biases"} <= set(note.group(1).split(", ")), card
