"""Verdicts on healthy runs that used to be judged as faults, each next to the faulty run the rule must still
catch: WeightUpdateRatio on a converged model, TreeDepth on an XGBoost random forest and on gblinear,
ClassImbalance on an XGBoost regression and its wording on a model that does not learn balanced classes."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules import run_rules
from smdebug.rules.generic import ClassImbalance, TreeDepth, WeightUpdateRatio
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE
from smdebug.rules.rule_invoker import invoke_rule

from test_data_rules import run


def write(path, steps):
    """A hand-made run: ``steps`` is one {name: value} per step, all saved (``w``: a weight, ``gradient/w``
    its gradient, as NumpyHook's collections say)."""
    return run(path, steps)


def verdict(path, rule, **params):
    result = run_rules(str(path), [(rule, {k: str(v) for k, v in params.items()})])
    r = result.rules[0]
    assert r.error is None, r.error
    return r


# --------------------------------------------------------------------------------------------------------
# WeightUpdateRatio: a converged weight (negligible gradient) is not "too small an update"
# --------------------------------------------------------------------------------------------------------
def gradient_descent_run(path, gradient_norms, moves):
    """``w`` (4 values) and its gradient: the gradient at step i has L2 norm ``gradient_norms[i]``, and ``w``
    moves by 0.01 of its size after step i when ``moves[i]`` (else it stays exactly the same)."""
    w = np.ones(4, np.float64)
    steps = []
    for norm, move in zip(gradient_norms, moves):
        steps.append({"w": w.astype(np.float32), "gradient/w": np.full(4, norm / 2.0, np.float64)})
        if move:
            w = w * 0.99
    return write(path, steps)


def test_weight_update_ratio_converged_weight_is_quiet(tmp_path):
    # the gradient falls from 1 to 1e-6 (1e-6 of its earliest size) and the optimizer stops: converged
    trial = gradient_descent_run(tmp_path, [1.0, 0.5, 0.1, 1e-6, 1e-6, 1e-6], [True, True, True, False, False, False])
    assert invoke_rule(WeightUpdateRatio(trial)) == []
    # the exemption is the relative test ||g|| <= converged_gradient_fraction * largest earlier ||g||
    assert invoke_rule(WeightUpdateRatio(trial, converged_gradient_fraction="0.000002")) == []
    assert invoke_rule(WeightUpdateRatio(trial, converged_gradient_fraction="0.0000005")) == [4, 5]
    assert invoke_rule(WeightUpdateRatio(trial, converged_gradient_fraction="0")) == [4, 5]  # off


def test_weight_update_ratio_full_size_gradient_and_no_update_still_fires(tmp_path):
    # an optimizer that never steps (or steps a copy of the model): the gradient stays full size
    trial = gradient_descent_run(tmp_path, [1.0] * 6, [False] * 6)
    rule = WeightUpdateRatio(trial)
    assert invoke_rule(rule) == [1, 2, 3, 4, 5]
    assert rule.last_reason == "w: update/weight ratio 0 < small_threshold 1e-08 between steps 4 and 5"
    # a gradient that fell, but not by four orders of magnitude (1e-3 of its size): still judged
    trial = gradient_descent_run(tmp_path / "slow", [1.0, 0.5, 1e-3, 1e-3], [True, True, False, False])
    assert invoke_rule(WeightUpdateRatio(trial)) == [3]
    # a gradient that is negligible only later (p's gradient is full size): the update p -> s is judged
    trial = gradient_descent_run(tmp_path / "late", [1.0, 1.0, 1.0, 1e-6], [True, False, False, False])
    assert invoke_rule(WeightUpdateRatio(trial)) == [2, 3]


def test_weight_update_ratio_needs_an_earlier_gradient_to_call_it_converged(tmp_path):
    # tiny from the first save: nothing tells a vanishing gradient from a converged one, so it is judged
    trial = gradient_descent_run(tmp_path, [1e-9] * 4, [False] * 4)
    assert invoke_rule(WeightUpdateRatio(trial)) == [1, 2, 3]


def _logistic_regression_run(path, optimizer: str, steps: int = 40):
    """Full-batch L2-regularised logistic regression on two Gaussian blobs, with a PyTorch hook."""
    torch = pytest.importorskip("torch")
    import smdebug.pytorch as smd

    torch.manual_seed(0)
    x = torch.cat([torch.randn(100, 5) + 1.0, torch.randn(100, 5) - 1.0])
    y = torch.cat([torch.zeros(100, dtype=torch.long), torch.ones(100, dtype=torch.long)])
    model, loss_fn = torch.nn.Linear(5, 2), torch.nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    if optimizer == "lbfgs":
        opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=10, history_size=10)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-12 if optimizer == "tiny_lr" else 0.1)

    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y) + 1e-2 * model.weight.pow(2).sum()
        loss.backward()
        return loss

    for _ in range(steps):
        if optimizer == "lbfgs":
            opt.step(closure)
        else:
            closure()
            if optimizer != "no_step":  # the forgotten optimizer.step()
                opt.step()
    hook.close()
    return str(path)


def test_weight_update_ratio_on_real_torch_runs(tmp_path):
    converged = _logistic_regression_run(tmp_path / "lbfgs", "lbfgs")
    r = verdict(converged, "WeightUpdateRatio")
    assert r.status == NO_ISSUES and r.steps_evaluated > 0, (r.status, [f.reason for f in r.findings])
    # (L-BFGS does stop moving once converged: without the exemption the rule fires)
    assert verdict(converged, "WeightUpdateRatio", converged_gradient_fraction=0).status == ISSUES
    for bug in ("no_step", "tiny_lr"):
        r = verdict(_logistic_regression_run(tmp_path / bug, bug, steps=10), "WeightUpdateRatio")
        assert r.status == ISSUES, (bug, r.status, r.detail)
        assert "< small_threshold" in r.findings[0].reason


# --------------------------------------------------------------------------------------------------------
# TreeDepth: random forests and gblinear
# --------------------------------------------------------------------------------------------------------
def _xgb_run(path, params, x, y, rounds=1, collections=("trees",), hook_kwargs=None, **train_kwargs):
    xgb = pytest.importorskip("xgboost")
    import smdebug.xgboost as smd

    dtrain = xgb.DMatrix(x, label=y)
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=list(collections), **(hook_kwargs or {}))
    xgb.train({"nthread": 1, **params}, dtrain, num_boost_round=rounds, callbacks=[hook],
              evals=[(dtrain, "train")], verbose_eval=False, **train_kwargs)
    hook.close()
    return str(path)


def _noisy_data(n=600, features=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features))
    y = ((x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(scale=1.0, size=n)) > 0).astype(int)  # noisy: deep trees
    return x, y


def test_tree_depth_random_forest_is_not_applicable(tmp_path):
    x, y = _noisy_data()
    deep = {"objective": "binary:logistic", "max_depth": 12, "min_child_weight": 0, "eta": 1.0}
    forest = _xgb_run(tmp_path / "forest", {**deep, "num_parallel_tree": 5, "subsample": 0.63,
                                            "colsample_bynode": 0.6}, x, y)
    r = verdict(forest, "TreeDepth")
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert "random forest (num_parallel_tree=5)" in r.detail
    # the same deep trees boosted one at a time: judged, and too deep
    boosted = _xgb_run(tmp_path / "boosted", deep, x, y, rounds=2)
    r = verdict(boosted, "TreeDepth")
    assert r.status == ISSUES and "> depth 8" in r.findings[0].reason


def test_tree_depth_gblinear_is_not_applicable(tmp_path):
    x, y = _noisy_data()
    # (the hook saves the metrics, and no trees: gblinear builds none)
    linear = _xgb_run(tmp_path, {"booster": "gblinear", "objective": "binary:logistic"}, x, y, rounds=3,
                      collections=("trees", "metrics"))
    r = verdict(linear, "TreeDepth")
    assert r.status == NOT_APPLICABLE and "the booster builds no trees: gblinear" in r.detail, (r.status, r.detail)


def complete_tree(depth):
    nodes = np.arange(2 ** (depth + 1) - 1)
    return {"trees/Node": nodes, "trees/Tree": np.zeros_like(nodes)}


def test_tree_depth_reads_the_hyperparameters_of_a_run_without_the_hooks_record(tmp_path):
    """Runs of the original smdebug have no record of the booster, only the hyperparameters given to the hook."""
    forest = write(tmp_path / "forest", [{**complete_tree(10), "hyperparameters/num_parallel_tree": np.array([20])}])
    assert invoke_rule(TreeDepth(forest)) == []
    linear = write(tmp_path / "linear", [{"hyperparameters/booster": np.array(["gblinear"]), "x": np.zeros(1)}])
    rule = TreeDepth(linear)
    assert invoke_rule(rule) == []
    boosted = write(tmp_path / "boosted", [{**complete_tree(10), "hyperparameters/num_parallel_tree": np.array([1]),
                                            "hyperparameters/booster": np.array(["gbtree"])}])
    assert invoke_rule(TreeDepth(boosted)) == [0]
    forest_verdict = verdict(tmp_path / "forest", "TreeDepth")
    assert forest_verdict.status == NOT_APPLICABLE and "num_parallel_tree=20" in forest_verdict.detail
    linear_verdict = verdict(tmp_path / "linear", "TreeDepth")
    assert linear_verdict.status == NOT_APPLICABLE and "gblinear" in linear_verdict.detail


# --------------------------------------------------------------------------------------------------------
# ClassImbalance: an XGBoost regression is NotApplicable; a classifier is still judged
# --------------------------------------------------------------------------------------------------------
def test_class_imbalance_xgboost_sklearn_regressor_is_not_applicable(tmp_path):
    xgb = pytest.importorskip("xgboost")
    import smdebug.xgboost as smd

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 5))
    y = x[:, 0] * 3 + rng.normal(size=300)
    hook = smd.Hook.recommended(str(tmp_path / "regressor"))  # no validation_data: no labels saved
    model = xgb.XGBRegressor(n_estimators=20, max_depth=3, n_jobs=1, callbacks=[hook])
    model.fit(x, y, eval_set=[(x, y)], verbose=False)
    hook.close()
    r = verdict(tmp_path / "regressor", "ClassImbalance")
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert "regression (XGBoost objective reg:squarederror)" in r.detail


def test_class_imbalance_xgboost_regression_with_integer_labels_is_not_applicable(tmp_path):
    # counts 0..5 as targets of a Poisson regression, labels saved: their counts are no class imbalance
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 4))
    y = np.minimum(rng.poisson(np.exp(0.5 * x[:, 0])), 5)
    run = _xgb_run(tmp_path, {"objective": "count:poisson", "max_depth": 3}, x, y, rounds=5,
                   collections=("labels", "predictions"),
                   hook_kwargs={"validation_data": pytest.importorskip("xgboost").DMatrix(x, label=y)})
    r = verdict(run, "ClassImbalance", samples=50)
    assert r.status == NOT_APPLICABLE and "count:poisson" in r.detail, (r.status, r.detail)


def test_class_imbalance_xgboost_classifiers_are_still_judged(tmp_path):
    xgb = pytest.importorskip("xgboost")
    x, y = _noisy_data(n=600)
    y[np.flatnonzero(y == 1)[10:]] = 0  # 10 samples of class 1: imbalanced
    dtrain = xgb.DMatrix(x, label=y)
    for name, params, kwargs in (
            ("binary", {"objective": "binary:logistic"}, {}),
            ("reg_logistic", {"objective": "reg:logistic"}, {}),  # logistic loss on 0/1 labels: a classifier
            # a callable objective: XGBoost's configuration still says reg:squarederror, the hook records it
            ("custom", {}, {"obj": lambda p, d: (1 / (1 + np.exp(-p)) - d.get_label(),
                                                 (1 / (1 + np.exp(-p))) * (1 - 1 / (1 + np.exp(-p))))})):
        run = _xgb_run(tmp_path / name, {"max_depth": 3, **params}, x, y, rounds=3, collections=("labels",),
                       hook_kwargs={"validation_data": dtrain}, **kwargs)
        r = verdict(run, "ClassImbalance")
        assert r.status == ISSUES, (name, r.status, r.detail)
        assert "ratio" in r.findings[0].reason


def test_class_imbalance_regression_hyperparameter_of_an_old_run(tmp_path):
    labels = np.array([0] * 990 + [1] * 10)
    write(tmp_path / "regression", [{"labels": labels, "hyperparameters/objective": np.array(["reg:squarederror"])}])
    r = verdict(tmp_path / "regression", "ClassImbalance")
    assert r.status == NOT_APPLICABLE and "reg:squarederror" in r.detail
    write(tmp_path / "classifier", [{"labels": labels, "hyperparameters/objective": np.array(["binary:logistic"])}])
    assert verdict(tmp_path / "classifier", "ClassImbalance").status == ISSUES


# --------------------------------------------------------------------------------------------------------
# ClassImbalance's misprediction finding says it is about the predictions, not the class counts
# --------------------------------------------------------------------------------------------------------
def test_class_imbalance_misprediction_on_balanced_classes_says_so(tmp_path):
    labels = np.repeat(np.arange(4), 40)  # 4 balanced classes
    untrained = np.zeros_like(labels)  # a model that does not learn: always class 0
    trial = write(tmp_path, [{"labels": labels, "predictions": untrained}] * 2)
    rule = ClassImbalance(trial)
    assert invoke_rule(rule) == [1]
    assert rule.last_reason == (
        "the trained model mispredicts class 1 in 40 of its 40 samples (1 > threshold_misprediction 0.7; step 1); it "
        "predicts class 0 for 160 of the 160 samples (100%); 3 of the 4 classes labelled never predicted (1, 2, 3): a "
        "fault of the predictions, not of the class counts (the class counts pass the imbalance test: the largest, "
        "class 0, has 40 labels and the smallest, class 1, 40: ratio 1 <= threshold_imbalance 10)")
    # a model that predicts well: quiet
    trial = write(tmp_path / "trained", [{"labels": labels, "predictions": labels}] * 2)
    assert invoke_rule(ClassImbalance(trial)) == []
