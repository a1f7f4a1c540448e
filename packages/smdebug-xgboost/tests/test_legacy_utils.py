"""smdebug 1.0.x's ``smdebug.xgboost.utils`` and ``singleton_utils`` (legacy modules, docs/compatibility.md)."""

import numpy as np
import xgboost as xgb

import smdebug.xgboost as smd
from smdebug.xgboost.utils import is_xgb_1_5_and_later, parse_tree_model


def test_parse_tree_model_gives_one_iterations_trees():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = rng.integers(0, 3, size=60)
    booster = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1},
                        xgb.DMatrix(X, label=y), num_boost_round=3)
    frame = booster.trees_to_dataframe()
    assert is_xgb_1_5_and_later()
    for iteration in range(3):
        tree = parse_tree_model(booster, iteration)
        assert sorted(tree) == sorted(frame.columns)
        rows = frame[frame.Tree.isin(range(3 * iteration, 3 * iteration + 3))]  # one tree per class
        assert tree["ID"].tolist() == rows.ID.tolist()
        np.testing.assert_array_equal(tree["Gain"], rows.Gain.to_numpy())
        assert sorted(set(tree["Tree"].tolist())) == [3 * iteration, 3 * iteration + 1, 3 * iteration + 2]


def test_singleton_utils(tmp_path):
    from smdebug.xgboost.singleton_utils import del_hook, get_hook

    del_hook()
    assert get_hook() is None
    hook = smd.Hook(str(tmp_path / "run"))
    assert get_hook() is hook
    del_hook()
    assert get_hook() is None
