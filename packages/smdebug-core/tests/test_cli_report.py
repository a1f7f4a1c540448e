"""``smdebug report`` on real runs: the sections, the embedded plots, the rule verdicts, and that the
page is self-contained. Rendering in a real browser is tested in browser/test_cli_report_browser.py."""

from __future__ import annotations

import base64
import html
import json
import re
import time

import numpy as np
import pytest

from _cli_runs import mlp_run  # noqa: F401 - fixture
from _support import NumpyHook, write_run
from smdebug.core.modes import ModeKeys

pytest.importorskip("matplotlib", reason="smdebug report needs matplotlib (smdebug-core[cli])")

SECTIONS = ("run", "rules", "losses", "metrics", "weights", "gradients")


def _report(smdebug_cli, trial, out, *args):
    result = smdebug_cli("report", str(trial), "-o", str(out), *map(str, args))
    assert result.returncode == 0, result.stderr
    return out.read_text(encoding="utf-8"), result


def _images(page):
    return re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)" width="(\d+)" height="(\d+)"', page)


def _section(page, sid):
    match = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert match, f"no section {sid}"
    return match.group(1)


def assert_self_contained(page):
    assert "<script" not in page.lower()
    for attr in re.findall(r'(?:src|href)="([^"]*)"', page):
        assert attr.startswith(("data:", "#")), f"external resource {attr[:80]}"
    assert not re.search(r"url\(\s*['\"]?(?!data:)", page), "CSS refers to an external resource"
    assert "@import" not in page


def test_report_of_a_trained_run(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    page, result = _report(smdebug_cli, path, tmp_path / "report.html")
    assert result.stdout.startswith(f"wrote {tmp_path / 'report.html'}: 4 chart(s), 10 tensor(s)")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<section") == len(SECTIONS)
    for sid in SECTIONS:
        _section(page, sid)
    assert_self_contained(page)

    run = html.unescape(_section(page, "run"))
    assert f"<th>path</th><td>{path}</td>" in run and "<td>finished</td>" in run
    assert "<th>global steps</th><td>50 (0-49)</td>" in run
    assert "<th>workers</th><td>1: worker_0</td>" in run and "<th>tensors</th><td>10</td>" in run
    assert re.search(r"<th>report written</th><td>\d{4}-\d\d-\d\dT", run)
    assert re.search(r"<th>training ended</th><td>\d{4}-", run)
    assert '<td>TRAIN</td><td class="num">40</td><td class="num">0</td><td class="num">39</td><td>0-39</td>' in run
    assert '<td>EVAL</td><td class="num">10</td>' in run
    assert '<td>gradients</td><td class="num">4</td>' in run

    images = _images(page)
    assert [alt for _, alt, _, _ in images] == [
        "loss over steps", "scalar/accuracy over steps", "weights l2 norms over steps", "gradients l2 norms over steps"]
    for data, alt, width, height in images:
        png = base64.b64decode(data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n", alt
        assert int.from_bytes(png[16:20], "big") == int(width) and int.from_bytes(png[20:24], "big") == int(height)
    assert "loss over steps" in _section(page, "losses")
    assert "scalar/accuracy" in _section(page, "metrics")
    weights = _section(page, "weights")
    assert "<td>weights/fc1</td>" in weights and "<td>biases/fc2</td>" in weights
    gradients = _section(page, "gradients")
    assert all(f"<td>gradient/{n}</td>" in gradients for n in ("weights/fc1", "weights/fc2", "biases/fc1", "biases/fc2"))
    assert "No rule results" in _section(page, "rules") and "rule_results.json" in _section(page, "rules")


def _rule_doc(status="IssuesFound"):
    now = time.time()
    return {
        "trial": "mlp", "follow": False, "started": now - 3, "finished": now, "training_ended": True,
        "interrupted": False, "last_step": 49, "steps_evaluated": 50, "status": status,
        "rules": [
            {"name": "LossNotDecreasing", "requested_as": "loss_not_decreasing", "pack": "builtin", "params": {},
             "status": "NoIssuesFound", "findings": [], "findings_total": 0, "steps_evaluated": 50, "error": None},
            {"name": "VanishingGradient", "requested_as": "vanishing_gradient", "pack": "builtin",
             "params": {"threshold": "1"}, "status": "IssuesFound", "steps_evaluated": 40, "error": None,
             "findings": [{"step": s, "reason": f"<gradient> mean below 1 at {s}", "mode": "TRAIN", "mode_step": s,
                           "time": now} for s in range(7)],
             "findings_total": 12},
        ],
    }


def test_report_with_rule_results(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_rule_doc()))
    page, result = _report(smdebug_cli, path, tmp_path / "r.html", "--rules", results)
    assert f"rule verdicts from {results}" in result.stdout
    rules = _section(page, "rules")
    assert '<span class="badge bad">IssuesFound</span>' in rules  # overall
    assert "<td>LossNotDecreasing</td><td><span class=\"badge ok\">NoIssuesFound</span></td>" in rules
    assert "<td>VanishingGradient</td><td><span class=\"badge bad\">IssuesFound</span></td>" in rules
    assert "step 0 (TRAIN 0): &lt;gradient&gt; mean below 1 at 0" in rules  # escaped
    assert "step 5 (TRAIN 5)" not in rules and "… 7 more" in rules  # 5 shown of 12
    assert "<td>threshold=1</td>" in rules
    assert_self_contained(page)


def test_report_picks_up_rule_results_in_the_run(tmp_path, smdebug_cli):
    from _cli_runs import write_mlp_run

    write_mlp_run(tmp_path / "run", epochs=1, steps_per_epoch=10, eval_steps=2)
    (tmp_path / "run" / "rule_results.json").write_text(json.dumps(_rule_doc("NoIssuesFound")))
    page, result = _report(smdebug_cli, tmp_path / "run", tmp_path / "r.html")
    assert f"rule verdicts from {tmp_path / 'run' / 'rule_results.json'}" in result.stdout
    assert '<span class="badge ok">NoIssuesFound</span>' in _section(page, "rules")


def test_report_with_the_real_rule_runner(mlp_run, smdebug_cli, tmp_path):
    pytest.importorskip("smdebug.rules", reason="needs smdebug-rules")
    path, _ = mlp_run
    results = tmp_path / "rules.json"
    out = smdebug_cli("rules", "run", str(path), "--rule", "loss_not_decreasing", "--rule", "vanishing_gradient",
                      "--param", "threshold=1.0", "-o", str(results), "-q")
    assert out.returncode in (0, 1), out.stderr
    doc = json.loads(results.read_text())
    page, _ = _report(smdebug_cli, path, tmp_path / "r.html", "--rules", results)
    rules = _section(page, "rules")
    assert f'<span class="badge {"bad" if doc["status"] == "IssuesFound" else "ok"}">{doc["status"]}</span>' in rules
    for r in doc["rules"]:
        assert f"<td>{html.escape(r['name'])}</td>" in rules and r["status"] in rules


def test_report_bad_rule_results(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    (tmp_path / "bad.json").write_text("{not json")
    out = smdebug_cli("report", str(path), "-o", str(tmp_path / "r.html"), "--rules", str(tmp_path / "bad.json"))
    assert out.returncode == 2 and "is not JSON" in out.stderr
    (tmp_path / "other.json").write_text("[1, 2]")
    out = smdebug_cli("report", str(path), "-o", str(tmp_path / "r.html"), "--rules", str(tmp_path / "other.json"))
    assert out.returncode == 2 and "does not look like a rule runner result" in out.stderr
    assert not (tmp_path / "r.html").exists()


def test_report_of_runs_without_some_collections(tmp_path, smdebug_cli):
    """A multi-worker run of plain tensors and a run saved as reductions only: sections say what is missing."""
    write_run(tmp_path / "dist", range(4), workers=("worker_0", "worker_1"),
              tensors=lambda step, w: {"w": np.full(3, step, np.float32)})
    page, _ = _report(smdebug_cli, tmp_path / "dist", tmp_path / "d.html")
    assert "No tensors in the collection(s) losses" in _section(page, "losses")
    assert "2: worker_0, worker_1" in _section(page, "run")
    assert "first worker that saved each step" in _section(page, "weights")  # write_run's "weights" is ^w

    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path / "red"), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "losses"])
    hook.get_collection("weights").reduction_config = ReductionConfig(norms=["l2"])
    hook.set_mode(ModeKeys.TRAIN)
    for step in range(5):
        hook.begin_step()
        hook.record("weights/w", np.full(4, step, np.float32))
        hook.record("loss", np.array([1.0 / (step + 1)], np.float32))
        hook.end_step()
    hook.close()
    page, _ = _report(smdebug_cli, tmp_path / "red", tmp_path / "red.html")
    weights = _section(page, "weights")
    assert "<td>weights/w</td>" in weights and len(_images(weights)) == 1
    # l2 of [s, s, s, s] is 2s: stored norms are used when the raw tensor was not saved
    assert '<td class="num">5</td><td class="num">0</td><td class="num">8</td>' in weights


def test_report_of_a_long_run_is_quick(tmp_path, smdebug_cli):
    def mode_of(step):
        return (ModeKeys.EVAL, step // 10) if step % 10 == 9 else (ModeKeys.TRAIN, step - step // 10)

    write_run(tmp_path / "long", range(5000), mode_of=mode_of,
              tensors=lambda step, w: {"w": np.full(64, step, np.float32), "loss": np.array([1.0 / (step + 1)], np.float32)})
    from smdebug.core.collection import Collection
    from smdebug.core.collection_manager import CollectionManager

    cm = CollectionManager()
    cm.add(Collection("weights", include_regex=["^w$"]))
    cm.add(Collection("losses", include_regex=["^loss$"]))
    (tmp_path / "long" / "collections" / "000000000" / "worker_0_collections.json").write_text(cm.dumps())
    start = time.monotonic()
    page, result = _report(smdebug_cli, tmp_path / "long", tmp_path / "long.html", "--max-points", "200", "--progress")
    elapsed = time.monotonic() - start
    assert "reading steps" in result.stderr  # the progress bar
    assert "<th>global steps</th><td>5000 (0-4999)</td>" in html.unescape(_section(page, "run"))
    assert len(_images(page)) == 2
    assert '<td>w</td><td class="num">200</td>' in _section(page, "weights")  # --max-points
    assert elapsed < 60, f"report took {elapsed:.1f}s"


def test_report_errors(tmp_path, smdebug_cli):
    out = smdebug_cli("report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 2 and "no smdebug run at" in out.stderr
