"""``smdebug report`` of a real XGBoost run: the boosting sections (metrics per round, feature importance
over rounds, SHAP summary, tree depth) are there with the values the booster gives, and the sections a
boosted-tree run has no data for (weights, gradients) are not."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xgboost as xgb
from conftest import ALL_COLLECTIONS, regression_data

import smdebug.xgboost as smd

pytest.importorskip("bokeh", reason="smdebug report needs bokeh (smdebug-core[cli])")


@pytest.fixture
def boosted_run(out_dir):
    X, y = regression_data(rows=200, features=6)
    d = xgb.DMatrix(X, label=y)
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), train_data=d, validation_data=d,
                    include_collections=ALL_COLLECTIONS)
    booster = xgb.train({"nthread": 1, "max_depth": 3}, d, num_boost_round=8, evals=[(d, "train")],
                        verbose_eval=False, callbacks=[hook])
    return out_dir, booster, d


def test_xgboost_run_gets_the_boosting_sections(boosted_run, tmp_path):
    from smdebug.cli.report import content
    from smdebug.cli.report.lines import LineReader
    from smdebug.trials import create_trial

    out_dir, booster, d = boosted_run
    trial = create_trial(out_dir)
    run = content.RunInfo("run", trial, LineReader(trial))
    sections = {s.sid: s for s in content.build([run])}
    assert set(sections) == {"curves", "xgboost"}  # no empty weights/gradients sections
    charts = {c.title: c for c in sections["xgboost"].charts}

    gain = charts["feature importance (gain) over rounds"]
    scores = booster.get_score(importance_type="gain")
    total = sum(scores.values())
    last = {ln.tensor: ln.values[-1] for ln in gain.lines}
    for feature, score in scores.items():
        assert last[f"feature_importance/gain/{feature}"] == pytest.approx(score / total, rel=1e-6)
    assert all(set(ln.steps) <= set(range(8)) and ln.steps[-1] == 7 for ln in gain.lines)  # from a feature's first split on

    shap = charts["SHAP summary at round 7"]
    contribs = booster.predict(d, pred_contribs=True)
    mean_abs = np.abs(contribs[:, :-1]).mean(axis=0)
    expected = sorted(((f"f{i}", v) for i, v in enumerate(mean_abs)), key=lambda fv: -fv[1])
    assert shap.data["features"] == [f for f, _ in expected]
    assert shap.data["mean_abs"] == pytest.approx([v for _, v in expected], rel=1e-5)

    depth = charts["tree depth per round"]
    max_depth = next(ln for ln in depth.lines if ln.quantity == "max depth")
    assert max_depth.values.max() <= 3 and len(max_depth.values) == 8
    table = booster[7:8].trees_to_dataframe()
    assert max_depth.values[-1] == pytest.approx(float(trial.tensor("trees/Depth").value(7).max()))
    assert len(table) == trial.tensor("trees/Depth").value(7).size

    rmse = next(c for c in sections["curves"].charts if c.key == "train-rmse")
    assert rmse.x_label == "step (boosting round)" and len(rmse.lines[0].values) == 8

    out = subprocess.run([sys.executable, "-m", "smdebug.cli", "report", out_dir, "-o", str(tmp_path / "r.html")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "r.html").read_text()
    assert '<section id="xgboost">' in page and '<section id="weights">' not in page
    import re

    absent = re.search(r"<th>not in this run</th><td>([^<]*)</td>", page).group(1)
    assert {"weights", "gradients", "activations"} <= set(absent.split(", "))


def test_shap_summary_names_the_columns_of_named_features(out_dir):
    """Named features: the saved matrix's columns are matched to their names through average_shap."""
    from smdebug.cli.report import content
    from smdebug.cli.report.lines import LineReader
    from smdebug.trials import create_trial

    X, y = regression_data(rows=120, features=4)
    names = ["zeta", "alpha", "mid", "beta"]  # not in sorted order on purpose
    d = xgb.DMatrix(X, label=y, feature_names=names)
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), train_data=d,
                    include_collections=["full_shap", "average_shap"])
    booster = xgb.train({"nthread": 1, "max_depth": 3}, d, num_boost_round=4, callbacks=[hook])
    hook.close()
    trial = create_trial(out_dir)
    run = content.RunInfo("run", trial, LineReader(trial))
    xgb_section = next(s for s in content.build([run]) if s.sid == "xgboost")
    shap = next(c for c in xgb_section.charts if c.title.startswith("SHAP summary"))
    mean_abs = np.abs(booster.predict(d, pred_contribs=True)[:, :-1]).mean(axis=0)
    by_name = dict(zip(shap.data["features"], shap.data["mean_abs"]))
    assert set(by_name) == set(names)
    for name, value in zip(names, mean_abs):
        assert by_name[name] == pytest.approx(float(value), rel=1e-5)
