"""``smdebug report`` on real runs: which sections a run gets, that the charts carry the run's own values
(downsampled with the extremes kept), rule verdicts read defensively, runs side by side, and that the
page is self-contained. The page in a real browser: browser/test_cli_report_browser.py."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from _cli_runs import mlp_run, write_mlp_run, write_named_losses_run  # noqa: F401 - mlp_run is a fixture
from _support import NumpyHook, write_run
from smdebug.core.modes import ModeKeys

pytest.importorskip("bokeh", reason="smdebug report needs bokeh (smdebug-core[cli])")

HERE = os.path.dirname(os.path.abspath(__file__))


def _report(smdebug_cli, runs, out, *args):
    runs = runs if isinstance(runs, (list, tuple)) else [runs]
    result = smdebug_cli("report", *map(str, runs), "-o", str(out), *map(str, args))
    assert result.returncode == 0, result.stderr
    return out.read_text(encoding="utf-8"), result


def _section(page, sid):
    match = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert match, f"no section {sid}"
    return match.group(1)


def _sections(page):
    return re.findall(r'<section id="([^"]+)">', page)


def _chart_titles(page):
    return [html.unescape(t) for t in re.findall(r'<div class="chart[^"]*" id="wrap-chart-\d+"[^>]*><h3>([^<]*)</h3>', page)]


def assert_self_contained(page):
    """No resource from elsewhere: no script/stylesheet/image by URL in the page's markup (the inline
    scripts' own text is checked in the browser, where no request may leave the page)."""
    markup = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    for attr in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', markup):
        assert attr.startswith(("data:", "#")), f"external resource {attr[:80]}"
    assert not re.search(r"<script[^>]+src=", page), "a script loaded from elsewhere"
    assert not re.search(r"<link[^>]+stylesheet", page)
    assert "@import" not in page


def _num(value) -> float:
    return float(np.asarray(value).reshape(-1)[0])


def _run_of(path):
    from smdebug.cli.report import content
    from smdebug.cli.report.lines import LineReader
    from smdebug.trials import create_trial

    trial = create_trial(str(path))
    return content.RunInfo(os.path.basename(str(path)), trial, LineReader(trial))


def test_report_of_a_trained_run(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    page, result = _report(smdebug_cli, path, tmp_path / "report.html")
    assert result.stdout.startswith(f"wrote {tmp_path / 'report.html'}: 10 chart(s) (curves, weights, gradients), 10 tensor(s)")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    # sections by what the run holds: no activations, boosting or worker sections for this run
    assert _sections(page) == ["run", "rules", "curves", "weights", "gradients"]
    assert_self_contained(page)
    assert "Bokeh" in page and len(_chart_titles(page)) == 10
    assert _chart_titles(page) == [
        "loss", "scalar/accuracy", "Weights: l2 norm per tensor", "biases/fc1: histogram over steps",
        "weights/fc1: histogram over steps", "weights/fc2: histogram over steps", "Gradients: l2 norm per tensor",
        "gradient/biases/fc1: histogram over steps", "gradient/weights/fc1: histogram over steps",
        "gradient/weights/fc2: histogram over steps"]  # (biases/fc2 holds one value: no histogram)
    run = html.unescape(_section(page, "run"))
    assert f"<th>path</th><td>{path}</td>" in run and "<td>finished</td>" in run
    assert "<th>global steps</th><td>50 (0-49)</td>" in run
    assert "<th>not in this run</th><td>activations</td>" in run
    assert '<td>TRAIN</td><td class="num">40</td><td class="num">0</td><td class="num">39</td><td>0-39</td>' in run
    assert "No rule results" in _section(page, "rules")


def test_charts_carry_the_runs_values(mlp_run):
    """The lines are the trial's own values: losses per mode, l2 norms (stored for gradients, computed for
    weights), TRAIN steps only for the norms."""
    from smdebug.cli.report import content

    path, losses = mlp_run
    run = _run_of(path)
    sections = {s.sid: s for s in content.build([run])}
    loss = next(c for c in sections["curves"].charts if c.key == "loss")
    by_mode = {ln.mode: ln for ln in loss.lines}
    assert by_mode["TRAIN"].values.tolist() == pytest.approx([float(v) for v in losses["TRAIN"]])
    assert by_mode["EVAL"].values.tolist() == pytest.approx([float(v) for v in losses["EVAL"]])
    assert by_mode["EVAL"].mode_steps.tolist() == list(range(10))
    trial = run.trial
    grads = sections["gradients"].charts[0]
    assert {ln.tensor for ln in grads.lines} == set(trial.tensor_names(collection="gradients"))
    for ln in grads.lines:
        assert ln.mode == "TRAIN" and len(ln.steps) == 40
        t = trial.tensor(ln.tensor)
        for i in (0, 17, 39):
            assert ln.values[i] == pytest.approx(_num(t.reduction_value(int(ln.steps[i]), "l2")))
    heat = next(c for c in sections["weights"].charts if c.kind == "heatmap" and c.key == "weights/fc1")
    share = np.asarray(heat.data["share"])
    assert share.shape == (40, 40) and np.allclose(share.sum(axis=0), 1.0)  # every value falls in a bin


def test_downsampling_keeps_extremes_breaks_and_non_finite():
    from smdebug.cli.report.lines import Line, keep_indices, non_finite_runs, plot_points

    rng = np.random.default_rng(0)
    values = rng.normal(size=10_000)
    values[1234] = 50.0  # a spike between any two evenly spread points
    values[8765] = -40.0
    values[5000:5010] = np.nan
    values[7000] = np.inf
    idx = keep_indices(values, 500)
    assert len(idx) <= 500 + 4 and {0, 9999, 1234, 8765, 5000, 5009, 7000} <= set(idx.tolist())
    steps = np.arange(10_000, dtype=np.int64)
    line = Line("t", "t", "TRAIN", "worker_0", steps, steps, values)
    runs = non_finite_runs(line)
    assert [(r["step"], r["last_step"], r["count"], r["kind"]) for r in runs] == [(5000, 5009, 10, "nan"), (7000, 7000, 1, "inf")]
    # a line breaks where the steps jump (TRAIN steps around an EVAL phase)
    gappy = Line("t", "t", "TRAIN", "w", np.array([0, 1, 2, 3, 50, 51, 52]), np.arange(7), np.arange(7.0))
    xs, _, ys = plot_points(gappy, None)
    assert xs.tolist()[:5] == [0, 1, 2, 3, 26] and np.isnan(ys[4]) and len(xs) == 8


def _rule_doc(status="IssuesFound", tensor=None):
    now = time.time()
    finding = {"reason": "<gradient> mean below 1", "mode": "TRAIN", "time": now}
    return {
        "trial": "mlp", "follow": False, "started": now - 3, "finished": now, "training_ended": True,
        "interrupted": False, "last_step": 49, "steps_evaluated": 50, "status": status,
        "rules": [
            {"name": "LossNotDecreasing", "requested_as": "loss_not_decreasing", "pack": "builtin", "params": {},
             "status": "NoIssuesFound", "findings": [], "findings_total": 0, "steps_evaluated": 50, "error": None},
            {"name": "VanishingGradient", "requested_as": "vanishing_gradient", "pack": "builtin",
             "params": {"threshold": "1"}, "status": "IssuesFound", "steps_evaluated": 40, "error": None,
             "findings": [dict(finding, step=s, mode_step=s, **({"tensor": tensor} if tensor else {}))
                          for s in range(7)], "findings_total": 12},
            {"name": "DeadRelu", "status": "NotEvaluated", "findings": [], "findings_total": 0, "steps_evaluated": 0,
             "detail": "looked for the collection relu_activations; the run has: weights, gradients"},
            {"name": "ExplodingTensor", "status": "Error", "findings": [], "error": "event file x is missing (step 3)"},
            {"name": "FutureRule", "status": "SomethingNew", "findings": []},
        ],
    }


def test_report_with_rule_results(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_rule_doc()))
    page, result = _report(smdebug_cli, path, tmp_path / "r.html", "--rules", results)
    assert f"rule verdicts from {results}" in result.stdout
    rules = _section(page, "rules")
    assert re.search(r'<span class="badge bad"[^>]*>IssuesFound</span>', rules)  # overall
    for name, cls, status in (("LossNotDecreasing", "ok", "NoIssuesFound"), ("VanishingGradient", "bad", "IssuesFound"),
                              ("DeadRelu", "skip", "NotEvaluated"), ("ExplodingTensor", "err", "Error"),
                              ("FutureRule", "unknown", "SomethingNew")):
        assert re.search(rf'<td>{name}</td><td><span class="badge {cls}"[^>]*>{status}</span></td>', rules), name
    assert "not a pass" in rules  # NotEvaluated / Error say so on hover
    assert "looked for the collection relu_activations" in rules and "error: event file x is missing (step 3)" in rules
    assert "step 0 (TRAIN 0): &lt;gradient&gt; mean below 1" in rules  # escaped
    assert "step 5 (TRAIN 5)" not in rules and "… 7 more" in rules  # 5 shown of 12
    assert "<td>threshold=1</td>" in rules
    assert "Findings over the run" in _chart_titles(page)
    assert_self_contained(page)


def test_findings_are_marked_on_the_tensor_they_are_about(mlp_run, tmp_path):
    from smdebug.cli.report import content
    from smdebug.cli.report import verdicts as vd

    path, _ = mlp_run
    run = _run_of(path)
    run.rules = vd.parse(json.dumps(_rule_doc(tensor="gradient/weights/fc2")), "doc")
    sections = content.build([run])
    timeline = content.place_findings(sections, [run], False)
    grads = next(c for c in sections[2].charts if c.key == "gradients")
    assert [m["step"] for m in grads.markers] == list(range(7))
    fc2 = next(ln for ln in grads.lines if ln.tensor == "gradient/weights/fc2")
    assert grads.markers[3]["y"] == pytest.approx(float(fc2.values[3]))
    assert len(timeline.data["findings"]) == 7
    # without a tensor in the finding: on the loss chart, at the loss of that step
    run.rules = vd.parse(json.dumps(_rule_doc()), "doc")
    sections = content.build([run])
    content.place_findings(sections, [run], False)
    loss = next(c for c in sections[0].charts if c.key == "loss")
    train = next(ln for ln in loss.lines if ln.mode == "TRAIN")
    assert [m["step"] for m in loss.markers] == list(range(7))
    assert loss.markers[2]["y"] == pytest.approx(float(train.values[2]))


def test_report_with_the_real_rule_runner(mlp_run, smdebug_cli, tmp_path):
    pytest.importorskip("smdebug.rules", reason="needs smdebug-rules")
    path, _ = mlp_run
    results = tmp_path / "rules.json"
    out = smdebug_cli("rules", "run", str(path), "--rule", "loss_not_decreasing", "--rule", "vanishing_gradient",
                      "--param", "threshold=1.0", "-o", str(results), "-q")
    assert out.returncode in (0, 1, 3), out.stderr
    doc = json.loads(results.read_text())
    page, _ = _report(smdebug_cli, path, tmp_path / "r.html", "--rules", results)
    rules = _section(page, "rules")
    for r in doc["rules"]:
        assert f"<td>{html.escape(r['name'])}</td>" in rules and r["status"] in rules


@pytest.mark.parametrize("doc, problem", [
    ({"rules": [{"name": "A", "status": "IssuesFound", "findings_total": "many"}]}, "'findings_total' is not a count"),
    ({"rules": [{"name": "A", "status": "IssuesFound", "findings": [1, "x", {"step": "3"}, {"step": 4}]}]},
     "3 of 4 findings are not objects with an integer 'step'"),
    ({"rules": [{"name": "A", "status": "NoIssuesFound", "params": ["a", "b"]}]}, "'params' is a list"),
    ({"rules": [{"name": "A", "status": "NoIssuesFound"}], "started": 1e300}, "'started' is not a time"),
    ({"rules": ["junk", {"name": "A", "status": 3}]}, "rule entry 1 is a str"),
    ({"rules": [{"name": "A", "status": "IssuesFound", "findings": {"step": 1}}]}, "'findings' is a dict"),
])
def test_report_survives_rule_results_of_the_wrong_types(mlp_run, smdebug_cli, tmp_path, doc, problem):
    path, _ = mlp_run
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    page, _ = _report(smdebug_cli, path, tmp_path / "r.html", "--rules", tmp_path / "bad.json")
    assert problem in html.unescape(_section(page, "rules"))


def test_report_refuses_unusable_rule_results(mlp_run, smdebug_cli, tmp_path):
    path, _ = mlp_run
    for text, message in (("{not json", "is not JSON"), ("[1, 2]", "does not look like a rule runner result")):
        (tmp_path / "bad.json").write_text(text)
        out = smdebug_cli("report", str(path), "-o", str(tmp_path / "r.html"), "--rules", str(tmp_path / "bad.json"))
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    out = smdebug_cli("report", str(path), "-o", str(tmp_path / "r.html"), "--rules", str(tmp_path / "missing.json"))
    assert out.returncode == 2 and "cannot read rule results" in out.stderr
    assert not (tmp_path / "r.html").exists()


def test_hostile_names_are_escaped_and_do_not_break_the_report(tmp_path, smdebug_cli):
    """Names from a run go into the page as text: no markup, no TeX parsing, no crash."""
    names = ['loss<img src=x onerror="alert(1)">', "lr$\\frac{a}{$ loss", "loss</script><script>alert(2)</script>"]
    write_named_losses_run(tmp_path / "run", names, steps=5)
    page, _ = _report(smdebug_cli, tmp_path / "run", tmp_path / "r.html")
    assert set(names) <= set(_chart_titles(page))
    assert "<img src=x" not in page and "<script>alert" not in page


def test_names_that_change_the_text_direction_are_shown_not_obeyed(tmp_path, smdebug_cli):
    """A right-to-left override in a name would display it reversed (one tensor posing as another) in every
    heading, table, chart title and tooltip: each such character is shown as [U+XXXX] instead."""
    names = ["loss\u202eT4gnp.exe\u2066", "loss\u200fmark\u2029"]
    write_named_losses_run(tmp_path / "run", names, steps=5)
    page, _ = _report(smdebug_cli, tmp_path / "run", tmp_path / "r.html")
    assert not re.search("[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]", page)
    titles = set(_chart_titles(page))
    assert {"loss[U+202E]T4gnp.exe[U+2066]", "loss[U+200F]mark[U+2029]"} <= titles, titles


def test_runs_side_by_side(tmp_path, smdebug_cli):
    """A healthy run and one with a learning rate far too high, overlaid: every curve has both."""
    write_mlp_run(tmp_path / "healthy", epochs=1, steps_per_epoch=20, eval_steps=5, lr=1.0)
    with np.errstate(over="ignore"):  # the broken run's sigmoid overflows: that is the point
        write_mlp_run(tmp_path / "broken", epochs=1, steps_per_epoch=20, eval_steps=5, lr=400.0)
    page, result = _report(smdebug_cli, [tmp_path / "healthy", tmp_path / "broken"], tmp_path / "c.html")
    assert "smdebug report: healthy vs broken" in page and "<h2>Runs</h2>" in page
    from smdebug.cli.report import content

    runs = [_run_of(tmp_path / "healthy"), _run_of(tmp_path / "broken")]
    sections = content.build(runs)
    loss = next(c for c in sections[0].charts if c.key == "loss")
    assert {(ln.run, ln.mode) for ln in loss.lines} == {("healthy", "TRAIN"), ("healthy", "EVAL"),
                                                        ("broken", "TRAIN"), ("broken", "EVAL")}
    grads = next(c for c in sections if c.sid == "gradients").charts[0]
    assert {ln.run for ln in grads.lines} == {"healthy", "broken"}
    out = smdebug_cli("report", str(tmp_path / "healthy"), str(tmp_path / "broken"), "-o", str(tmp_path / "x.html"),
                      "--rules", str(tmp_path / "r.json"))
    assert out.returncode == 2 and "give one per run" in out.stderr


def test_report_of_a_two_worker_job(tmp_path, smdebug_cli):
    """A real two-process job: the workers section compares the workers' gradient norms."""
    env = dict(os.environ, SMDEBUG_TEST_WORLD_SIZE="2")
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "_report_jobs.py"), "worker", str(tmp_path / "run")],
                              env=dict(env, SMDEBUG_TEST_RANK=str(r))) for r in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    page, _ = _report(smdebug_cli, tmp_path / "run", tmp_path / "r.html")
    assert "workers" in _sections(page)
    from smdebug.cli.report import content

    run = _run_of(tmp_path / "run")
    workers = next(s for s in content.build([run]) if s.sid == "workers")
    total = workers.charts[0]
    assert total.title == "total gradient l2 norm per worker" and {ln.worker for ln in total.lines} == {"worker_0", "worker_1"}
    trial = run.trial
    for ln in total.lines:
        step = int(ln.steps[5])
        expected = np.sqrt(sum(_num(trial.tensor(n).reduction_value(step, "l2", worker=ln.worker)) ** 2
                               for n in trial.tensor_names(collection="gradients")))
        assert ln.values[5] == pytest.approx(expected, rel=1e-5)


def test_activation_shares(tmp_path, smdebug_cli):
    """A network with a ReLU and a tanh layer, their outputs saved in activation collections: the
    activations section draws the share of dead ReLU outputs and of saturated tanh outputs per step."""
    from smdebug.core.collection import Collection
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["relu_activations", "tanh_activations", "losses"])
    hook.add_collection(Collection("relu_activations", include_regex=["^dense1_relu_(input|output)_0$"]))
    hook.add_collection(Collection("tanh_activations", include_regex=["^dense2_tanh_output_0$"]))
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(4, 32)).astype(np.float32), rng.normal(scale=2.0, size=(32, 8)).astype(np.float32)
    saved = {"relu": [], "tanh": []}
    for _ in range(12):
        x = rng.normal(size=(16, 4)).astype(np.float32)
        hook.begin_step()
        pre = x @ w1
        relu = np.maximum(pre, 0)
        tanh = np.tanh(relu @ w2)
        hook.record("dense1_relu_input_0", pre)
        hook.record("dense1_relu_output_0", relu)
        hook.record("dense2_tanh_output_0", tanh)
        hook.record("loss", np.array([float(np.mean(tanh ** 2))], np.float32))
        saved["relu"].append(float(np.mean(relu <= 0)))
        saved["tanh"].append(float(np.mean(np.abs(tanh) >= 0.97)))
        w1 -= 0.05 * rng.normal(size=w1.shape).astype(np.float32)
        hook.end_step()
    hook.close()
    page, _ = _report(smdebug_cli, tmp_path / "run", tmp_path / "r.html")
    assert "activations" in _sections(page)
    from smdebug.cli.report import content

    section = next(s for s in content.build([_run_of(tmp_path / "run")]) if s.sid == "activations")
    charts = {c.key: c for c in section.charts}
    relu = charts["relu_activations"]
    assert relu.title == "relu_activations: dead share (values <= 0)"
    assert [ln.tensor for ln in relu.lines] == ["dense1_relu_output_0"]  # outputs, where both were saved
    assert relu.lines[0].values.tolist() == pytest.approx(saved["relu"])
    tanh = charts["tanh_activations"]
    assert tanh.lines[0].values.tolist() == pytest.approx(saved["tanh"]) and max(saved["tanh"]) > 0


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
    assert "report" in result.stderr  # the progress bar
    assert "<th>global steps</th><td>5000 (0-4999)</td>" in html.unescape(_section(page, "run"))
    assert elapsed < 120, f"report took {elapsed:.1f}s"
    assert len(page) < 3_000_000


def test_report_errors(tmp_path, smdebug_cli):
    out = smdebug_cli("report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 2 and "no smdebug run at" in out.stderr


def test_a_verdict_that_is_not_final_says_why_in_the_page(smdebug_cli, tmp_path):
    """The rule runner's InProgress (exit 4) carries why it is not final; the page showed only "still
    evaluating (the run was training)" and left the reason out."""
    pytest.importorskip("smdebug.rules", reason="needs smdebug-rules")
    from _support import write_run

    run = tmp_path / "run"
    write_run(str(run), range(3), end=False, tensors=lambda step, w: {"gradient/w": np.full(4, 1e-3, np.float32)})
    results = run / "rule_results.json"
    out = smdebug_cli("rules", "run", str(run), "--rule", "vanishing_gradient", "-o", str(results), "-q")
    assert out.returncode == 4, out.stderr
    page, _ = _report(smdebug_cli, run, tmp_path / "r.html")
    rules = html.unescape(_section(page, "rules"))
    assert "not final" in rules and "the run has not ended (no training_job_end.ts yet" in rules, rules


def test_hard_activation_variants_are_measured_where_they_go_flat(tmp_path):
    """PyTorch's Hardswish is in relu_activations and Hardtanh in tanh_activations: a Hardswish output below 0
    (above an input of -3) still passes a gradient, and a Hardtanh saturates at its own bounds. The chart
    measured them as a ReLU's (negative = dead) and a tanh's (|y| >= 0.97); it now reads the recorded type."""
    from smdebug.cli.report import content
    from smdebug.core.activations import ActivationLayer, add_to_collections
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["relu_activations", "tanh_activations", "losses"])
    add_to_collections(hook, {
        "relu": [ActivationLayer("hs", "Hardswish", None, "^hs_output_0$")],
        "tanh": [ActivationLayer("ht", "Hardtanh(min_val=-0.5, max_val=0.5)", None, "^ht_output_0$")]})
    rng = np.random.default_rng(0)
    saved = {"hs": [], "ht": []}
    for _ in range(6):
        x = rng.normal(scale=3.0, size=(64, 8)).astype(np.float32)
        hs = x * np.clip(x + 3, 0, 6) / 6  # Hardswish
        ht = np.clip(x / 4, -0.5, 0.5)  # Hardtanh(-0.5, 0.5)
        hook.begin_step()
        hook.record("hs_output_0", hs)
        hook.record("ht_output_0", ht)
        hook.record("loss", np.array([1.0], np.float32))
        hook.end_step()
        saved["hs"].append(float(np.mean(hs == 0)))
        saved["ht"].append(float(np.mean(np.abs(ht) >= 0.5)))
        assert np.mean(hs <= 0) > 2 * np.mean(hs == 0)  # (the ReLU measure would have said far more)
    hook.close()
    section = next(s for s in content.build([_run_of(tmp_path / "run")]) if s.sid == "activations")
    charts = {c.key: c for c in section.charts}
    assert charts["relu_activations"].title == "relu_activations: dead share (values == 0)"
    assert charts["relu_activations"].lines[0].values.tolist() == pytest.approx(saved["hs"])
    assert charts["tanh_activations"].title == "tanh_activations: saturated share (x <= -0.5 or x >= 0.5)"
    assert charts["tanh_activations"].lines[0].values.tolist() == pytest.approx(saved["ht"])
