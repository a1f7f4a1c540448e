"""The XGBoost rules (and the classification rules) on real boosters trained with the smdebug XGBoost hook."""

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from smdebug.rules import run_rules  # noqa: E402

from _xgboost_runs import train_xgboost as train, xgboost_data as data  # noqa: E402


def findings(path, rule, **params):
    result = run_rules(str(path), [(rule, {k: str(v) for k, v in params.items()})])
    assert result.rules[0].error is None, result.rules[0].error
    return [f.step for f in result.rules[0].findings]


def test_tree_depth(tmp_path):
    x, y = data()
    deep = train(tmp_path / "deep", {"objective": "binary:logistic", "max_depth": 8, "min_child_weight": 0}, x, y)
    shallow = train(tmp_path / "shallow", {"objective": "binary:logistic", "max_depth": 3}, x, y)
    assert findings(deep, "tree_depth", depth=4) == list(range(6))  # depth 8 > 4 from the first tree on
    assert findings(shallow, "tree_depth") == []
    assert findings(deep, "tree_depth", depth=8) == []


def test_feature_importance_overweight(tmp_path):
    x, y = data(informative=1)  # one feature decides the label: it takes nearly all the importance
    one = train(tmp_path / "one", {"objective": "binary:logistic", "max_depth": 2}, x, y, collections=("feature_importance",))
    assert findings(one, "feature_importance_overweight", nfeatures=1, threshold=0.5)
    x, y = data(features=12)  # all twelve matter: the top three carry well under 80 %
    spread = train(tmp_path / "spread", {"objective": "binary:logistic", "max_depth": 3}, x, y, rounds=20,
                   collections=("feature_importance",))
    assert findings(spread, "feature_importance_overweight") == []


def test_class_imbalance_and_confusion_on_booster_predictions(tmp_path):
    x, y = data(n=600)
    balanced = train(tmp_path / "balanced", {"objective": "multi:softprob", "num_class": 2, "max_depth": 3}, x, y)
    y_skewed = y.copy()
    y_skewed[np.flatnonzero(y == 1)[10:]] = 0  # 10 samples of class 1, the rest class 0
    skewed = train(tmp_path / "skewed", {"objective": "multi:softprob", "num_class": 2, "max_depth": 3}, x, y_skewed)
    # predictions are (n, 2) probabilities: argmax them
    assert findings(skewed, "class_imbalance", samples=500, argmax="true")[:1] == [0]
    assert findings(balanced, "class_imbalance", samples=500, argmax="true") == []
    # with class 1 so rare, the booster predicts 0 for most of its samples at first: recall of class 1 is low
    assert findings(skewed, "confusion", min_diag=0.9) == [5]  # the trained model: the last step
