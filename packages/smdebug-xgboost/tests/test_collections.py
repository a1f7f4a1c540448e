"""Every collection of the XGBoost hook on real boosters: names, shapes and values read back with a trial."""

import json
import math

import numpy as np
import pytest
import xgboost as xgb
from conftest import ALL_COLLECTIONS, binary_data, multiclass_data, regression_data

import smdebug.xgboost as smd

IMPORTANCE_TYPES = ["weight", "gain", "cover", "total_gain", "total_cover"]
TREE_COLUMNS = ["Category", "Cover", "Depth", "Feature", "Gain", "ID", "Missing", "No", "Node", "Split", "Tree", "Yes"]


def train_with_hook(out_dir, params, dtrain, rounds, evals=None, hook_kwargs=None, **train_kwargs):
    kwargs = dict(save_config=smd.SaveConfig(save_interval=1), include_collections=ALL_COLLECTIONS,
                  hyperparameters=params, train_data=dtrain, validation_data=dtrain)
    kwargs.update(hook_kwargs or {})
    hook = smd.Hook(out_dir, **kwargs)
    evals_result = {}
    booster = xgb.train({"nthread": 1, **params}, dtrain, num_boost_round=rounds, evals=evals or [(dtrain, "train")],
                        evals_result=evals_result, verbose_eval=False, callbacks=[hook], **train_kwargs)
    return hook, booster, evals_result, smd.create_trial(out_dir)


def normalised_scores(booster, itype):
    scores = booster.get_score(importance_type=itype)
    total = sum(scores.values())
    return {k: v / total for k, v in scores.items()}


def json_depths(booster, tree_index):
    """Node id -> depth, from XGBoost's own JSON dump of one tree."""
    depths = {}

    def walk(node, d):
        depths[node["nodeid"]] = d
        for child in node.get("children", []):
            walk(child, d + 1)

    walk(json.loads(booster.get_dump(dump_format="json")[tree_index]), 0)
    return depths


# --------------------------------------------------------------------------------------------------
# regression: every collection
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def regression_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("reg") / "run")
    X, y = regression_data()
    d = xgb.DMatrix(X, label=y)
    params = {"max_depth": 3, "eta": 0.3, "objective": "reg:squarederror", "eval_metric": ["rmse", "mae"]}
    hook, booster, evals_result, trial = train_with_hook(out, params, d, rounds=5)
    return dict(out=out, X=X, y=y, d=d, params=params, booster=booster, evals=evals_result, trial=trial)


def test_regression_tensor_names(regression_run):
    trial = regression_run["trial"]
    assert trial.steps() == [0, 1, 2, 3, 4]
    names = set(trial.tensor_names())
    features = [f"f{i}" for i in range(5)]
    used = sorted(regression_run["booster"].get_score(importance_type="weight"))
    expected = (
        {"hyperparameters/max_depth", "hyperparameters/eta", "hyperparameters/objective", "hyperparameters/eval_metric"}
        | {"train-rmse", "train-mae", "predictions", "labels", "shap_bias"}
        | {f"feature_importance/{t}/{f}" for t in IMPORTANCE_TYPES for f in used}
        | {f"average_shap/{f}" for f in features}
        | {f"full_shap/{f}" for f in features}
        | {f"trees/{c}" for c in TREE_COLUMNS}
    )
    assert names == expected
    assert trial.tensor_names(collection="metrics") == ["train-mae", "train-rmse"]
    assert trial.tensor_names(collection="losses") == ["train-mae", "train-rmse"]
    assert trial.tensor_names(collection="average_shap") == [f"average_shap/{f}" for f in features] + ["shap_bias"]
    assert trial.tensor_names(collection="full_shap") == [f"full_shap/{f}" for f in features]
    assert trial.tensor_names(collection="trees") == [f"trees/{c}" for c in TREE_COLUMNS]


def test_metrics_are_the_evals_log_values(regression_run):
    trial, evals = regression_run["trial"], regression_run["evals"]
    for metric in ("rmse", "mae"):
        t = trial.tensor(f"train-{metric}")
        assert t.steps() == [0, 1, 2, 3, 4]
        for step in range(5):
            value = t.value(step)
            assert value.shape == (1,)
            assert value[0] == pytest.approx(evals["train"][metric][step], rel=1e-12)


def test_hyperparameters_are_saved_once_at_the_first_step(regression_run):
    trial = regression_run["trial"]
    objective = trial.tensor("hyperparameters/objective")
    assert objective.steps() == [0]
    assert objective.value(0).tolist() == ["reg:squarederror"]
    assert trial.tensor("hyperparameters/max_depth").value(0).tolist() == [3]
    assert trial.tensor("hyperparameters/eta").value(0).tolist() == [0.3]
    assert trial.tensor("hyperparameters/eval_metric").value(0).tolist() == ["rmse", "mae"]


def test_predictions_and_labels(regression_run):
    trial, booster, d = regression_run["trial"], regression_run["booster"], regression_run["d"]
    np.testing.assert_array_equal(trial.tensor("labels").value(3), regression_run["y"])
    for step in (0, 4):
        expected = booster.predict(d, iteration_range=(0, step + 1))
        np.testing.assert_allclose(trial.tensor("predictions").value(step), expected, rtol=1e-6)
        assert trial.tensor("predictions").value(step).shape == (len(regression_run["y"]),)


def test_feature_importance_is_normalised_per_type(regression_run):
    trial, booster = regression_run["trial"], regression_run["booster"]
    for step in range(5):
        for itype in IMPORTANCE_TYPES:
            names = trial.tensor_names(regex=f"^feature_importance/{itype}/", step=step)
            values = [trial.tensor(n).value(step) for n in names]
            assert all(v.shape == (1,) for v in values)
            assert sum(v[0] for v in values) == pytest.approx(1.0)
    # at the last step the model is the final booster
    for itype in IMPORTANCE_TYPES:
        for feature, expected in normalised_scores(booster, itype).items():
            assert trial.tensor(f"feature_importance/{itype}/{feature}").value(4)[0] == pytest.approx(expected)


def test_full_shap_is_one_record_per_step_under_every_name(regression_run):
    import glob

    from smdebug.core.reader import FileReader

    trial = regression_run["trial"]
    event_file, = glob.glob(f"{trial.path}/events/000000000000/*.tfevents")
    tags = [record[0] for record in FileReader(event_file).read_tensors()]
    assert [t for t in tags if t.startswith("full_shap/")] == ["full_shap/f0"]  # written once...
    assert len(trial.tensor_names(collection="full_shap", step=0)) == 5  # ...indexed under each feature


def test_shap_values(regression_run):
    trial, booster, d = regression_run["trial"], regression_run["booster"], regression_run["d"]
    for step in (0, 4):
        contribs = booster.predict(d, pred_contribs=True, iteration_range=(0, step + 1))
        assert contribs.shape == (120, 6)
        for i in range(5):
            full = trial.tensor(f"full_shap/f{i}").value(step)
            np.testing.assert_array_equal(full, contribs)  # the whole matrix, bias last, as 1.0.x saved it
            avg = trial.tensor(f"average_shap/f{i}").value(step)
            assert avg.shape == (1,)
            assert avg[0] == pytest.approx(contribs[:, i].mean(), rel=1e-6, abs=1e-7)
        bias = trial.tensor("shap_bias").value(step)
        assert bias.shape == (1,) and bias[0] == pytest.approx(contribs[0, -1], rel=1e-6)
        # features' average contributions + bias = the mean margin
        averages = sum(trial.tensor(f"average_shap/f{i}").value(step)[0] for i in range(5))
        margin = booster.predict(d, output_margin=True, iteration_range=(0, step + 1)).mean()
        assert averages + bias[0] == pytest.approx(margin, rel=1e-4, abs=1e-4)


def test_trees_hold_the_iterations_tree_with_depths(regression_run):
    trial, booster = regression_run["trial"], regression_run["booster"]
    frame = booster.trees_to_dataframe()
    for step in range(5):
        rows = frame[frame.Tree == step]
        tree = trial.tensor("trees/Tree").value(step)
        assert tree.ndim == 1 and set(tree.tolist()) == {step}
        np.testing.assert_array_equal(trial.tensor("trees/Node").value(step), rows.Node.to_numpy())
        assert trial.tensor("trees/ID").value(step).tolist() == rows.ID.tolist()
        assert trial.tensor("trees/Feature").value(step).tolist() == rows.Feature.tolist()
        assert trial.tensor("trees/Yes").value(step).tolist() == rows.Yes.fillna("").tolist()
        np.testing.assert_array_equal(trial.tensor("trees/Gain").value(step), rows.Gain.to_numpy())
        np.testing.assert_array_equal(trial.tensor("trees/Cover").value(step), rows.Cover.to_numpy())
        np.testing.assert_array_equal(trial.tensor("trees/Split").value(step), rows.Split.to_numpy())
        depth = trial.tensor("trees/Depth").value(step)
        expected = json_depths(booster, step)
        assert depth.tolist() == [expected[n] for n in rows.Node.tolist()]
        assert depth.max() <= 3


def test_collections_file_lists_the_xgboost_collections(regression_run):
    trial = regression_run["trial"]
    colls = trial.collections()
    assert {"hyperparameters", "metrics", "losses", "predictions", "labels", "feature_importance", "average_shap",
            "full_shap", "trees"} <= set(colls)
    assert colls["metrics"].include_regex == [r"^[^-/]+-[^/]+$"]
    assert colls["hyperparameters"].save_config.to_json_dict()["GLOBAL"]["save_steps"] == [0]


# --------------------------------------------------------------------------------------------------
# binary classification and multi-class
# --------------------------------------------------------------------------------------------------
def test_binary_auc_is_a_metric_but_not_a_loss(out_dir):
    X, y = binary_data()
    d = xgb.DMatrix(X, label=y)
    params = {"max_depth": 2, "objective": "binary:logistic", "eval_metric": ["auc", "logloss", "aucpr", "error"]}
    _, booster, evals, trial = train_with_hook(out_dir, params, d, rounds=4, evals=[(d, "train"), (d, "validation")])
    metrics = trial.tensor_names(collection="metrics")
    assert metrics == sorted(f"{s}-{m}" for s in ("train", "validation") for m in ("auc", "logloss", "aucpr", "error"))
    assert trial.tensor_names(collection="losses") == ["train-error", "train-logloss", "validation-error",
                                                       "validation-logloss"]
    assert trial.tensor("validation-auc").value(3)[0] == pytest.approx(evals["validation"]["auc"][3])
    assert trial.tensor("hyperparameters/objective").value(0).tolist() == ["binary:logistic"]
    predictions = trial.tensor("predictions").value(3)
    assert predictions.shape == (150,) and ((predictions > 0) & (predictions < 1)).all()
    np.testing.assert_allclose(predictions, booster.predict(d), rtol=1e-6)
    contribs = booster.predict(d, pred_contribs=True)
    assert trial.tensor("full_shap/f0").value(3).shape == contribs.shape  # rows, features + bias
    assert trial.tensor("average_shap/f1").value(3)[0] == pytest.approx(contribs[:, 1].mean(), rel=1e-5, abs=1e-7)


def test_multiclass_softprob(out_dir):
    X, y = multiclass_data()
    d = xgb.DMatrix(X, label=y)
    params = {"max_depth": 2, "objective": "multi:softprob", "num_class": 3, "eval_metric": ["mlogloss", "merror"]}
    _, booster, evals, trial = train_with_hook(out_dir, params, d, rounds=3)
    assert trial.tensor_names(collection="losses") == ["train-merror", "train-mlogloss"]
    assert trial.tensor("predictions").value(2).shape == (150, 3)
    np.testing.assert_allclose(trial.tensor("predictions").value(2).sum(axis=1), 1.0, rtol=1e-5)
    contribs = booster.predict(d, pred_contribs=True)
    assert contribs.shape == (150, 3, 5)
    for i in range(4):
        np.testing.assert_array_equal(trial.tensor(f"full_shap/f{i}").value(2), contribs)
        np.testing.assert_allclose(trial.tensor(f"average_shap/f{i}").value(2), contribs[:, :, i].mean(axis=0),
                                   rtol=1e-6, atol=1e-7)
    assert trial.tensor("shap_bias").value(2).shape == (3,)
    # every iteration adds one tree per class, numbered as in the whole model
    for step in range(3):
        trees = trial.tensor("trees/Tree").value(step)
        assert sorted(set(trees.tolist())) == [3 * step, 3 * step + 1, 3 * step + 2]
        ids = trial.tensor("trees/ID").value(step)
        assert all(i.split("-")[0] == str(t) for i, t in zip(ids.tolist(), trees.tolist()))
    frame = booster.trees_to_dataframe()
    rows = frame[frame.Tree.isin([6, 7, 8])]
    assert trial.tensor("trees/ID").value(2).tolist() == rows.ID.tolist()
    for itype in IMPORTANCE_TYPES:
        total = sum(trial.tensor(n).value(2)[0] for n in trial.tensor_names(regex=f"^feature_importance/{itype}/"))
        assert total == pytest.approx(1.0)


def test_ranking_objective(out_dir):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = (X[:, 0] > 0.3).astype(np.float32)
    d = xgb.DMatrix(X, label=y, qid=np.repeat(np.arange(12), 10))
    params = {"objective": "rank:ndcg", "max_depth": 2, "eval_metric": ["ndcg@5", "map", "pre@3", "ndcg-", "map@2-"]}
    _, booster, evals, trial = train_with_hook(out_dir, params, d, rounds=3)
    assert trial.tensor_names(collection="metrics") == sorted(
        ["train-ndcg@5", "train-map", "train-pre@3", "train-ndcg-", "train-map@2-"])
    assert trial.tensor_names(collection="losses") == []  # all of them are higher-is-better
    assert trial.tensor("train-ndcg@5").value(2)[0] == pytest.approx(evals["train"]["ndcg@5"][2])
    np.testing.assert_allclose(trial.tensor("predictions").value(2), booster.predict(d), rtol=1e-6)
    assert trial.tensor("full_shap/f0").value(2).shape == (120, 5)


def test_categorical_features(out_dir):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"colour": pd.Categorical(rng.choice(["red", "green", "blue"], size=200)),
                          "size": rng.normal(size=200)})
    y = (frame.colour == "green").astype(float) + 0.1 * frame["size"]
    d = xgb.DMatrix(frame, label=y, enable_categorical=True)
    params = {"max_depth": 2, "tree_method": "hist", "max_cat_to_onehot": 1}
    _, booster, _, trial = train_with_hook(out_dir, params, d, rounds=2)
    names = trial.tensor_names()
    assert {"average_shap/colour", "average_shap/size", "full_shap/colour", "feature_importance/gain/colour"} <= set(names)
    categories = trial.tensor("trees/Category").value(0)
    features = trial.tensor("trees/Feature").value(0)
    rows = booster.trees_to_dataframe()
    rows = rows[rows.Tree == 0]
    for cat, feature, expected in zip(categories.tolist(), features.tolist(), rows.Category.tolist()):
        if feature == "colour":
            assert cat == ",".join(str(c) for c in expected) and cat != ""
        else:
            assert cat == ""
    contribs = booster.predict(d, pred_contribs=True)
    assert trial.tensor("average_shap/colour").value(1)[0] == pytest.approx(contribs[:, 0].mean(), rel=1e-5, abs=1e-7)


# --------------------------------------------------------------------------------------------------
# names the original got wrong
# --------------------------------------------------------------------------------------------------
def test_feature_names_ending_in_b_i_a_s_and_a_feature_called_bias(out_dir):
    X, y = regression_data(features=4)
    names = ["bias", "alpha", "xi", "mass"]  # the original's [^/bias]$ dropped all four
    d = xgb.DMatrix(X, label=y, feature_names=names)
    params = {"max_depth": 2}
    _, booster, _, trial = train_with_hook(out_dir, params, d, rounds=2)
    assert trial.tensor_names(collection="average_shap") == sorted(f"average_shap/{n}" for n in names) + ["shap_bias"]
    assert trial.tensor_names(collection="full_shap") == sorted(f"full_shap/{n}" for n in names)
    contribs = booster.predict(d, pred_contribs=True)
    # "average_shap/bias" is the feature called bias; the model's bias column is "shap_bias"
    assert trial.tensor("average_shap/bias").value(1)[0] == pytest.approx(contribs[:, 0].mean(), rel=1e-5, abs=1e-7)
    assert trial.tensor("shap_bias").value(1)[0] == pytest.approx(contribs[0, -1], rel=1e-6)


def test_metric_names_from_the_sklearn_api_and_with_digits(out_dir):
    from smdebug.xgboost.collection import LOSSES_REGEX, METRICS_REGEX
    import re

    for name in ("validation_0-rmse", "eval2-error@0.7", "train-tweedie-nloglik@1.5", "train-poisson-nloglik"):
        assert re.search(METRICS_REGEX, name) and re.search(LOSSES_REGEX, name), name
    for name in ("train-auc", "validation_1-aucpr", "t-ndcg@10-", "t-map", "t-pre@2", "t-interval-regression-accuracy"):
        assert re.search(METRICS_REGEX, name) and not re.search(LOSSES_REGEX, name), name
    for name in ("trees/Node", "feature_importance/gain/f0", "predictions", "labels", "shap_bias",
                 "hyperparameters/eval-metric"):
        assert not re.search(METRICS_REGEX, name), name


def test_hyperparameter_values_of_every_type(out_dir):
    X, y = regression_data()
    d = xgb.DMatrix(X, label=y)
    hyperparameters = {"max_depth": 2, "eta": 0.5, "objective": "reg:squarederror", "verbose": True,
                       "eval_metric": ["rmse"], "monotone_constraints": (1, 0, 0, 0, 0), "interaction": [[0, 1], [2]],
                       "extra": {"b": 2, "a": 1}, "unused": None, "seed": np.int64(7)}
    hook = smd.Hook(out_dir, include_collections=["hyperparameters"], hyperparameters=hyperparameters)
    xgb.train({"max_depth": 2, "nthread": 1}, d, num_boost_round=1, callbacks=[hook])
    trial = smd.create_trial(out_dir)
    value = lambda n: trial.tensor("hyperparameters/" + n).value(0).tolist()  # noqa: E731
    assert value("max_depth") == [2] and value("eta") == [0.5] and value("verbose") == [True]
    assert value("objective") == ["reg:squarederror"] and value("eval_metric") == ["rmse"]
    assert value("monotone_constraints") == [1, 0, 0, 0, 0]
    assert value("interaction") == ["[0, 1]", "[2]"]
    assert value("extra") == ['{"a": 1, "b": 2}'] and value("seed") == [7]
    assert "hyperparameters/unused" not in trial.tensor_names()


def test_a_collection_only_other_frameworks_fill_is_named_as_such(tmp_path):
    """`include_collections=["weights", ...]` (what a PyTorch user types) is skipped with words that say the
    XGBoost hook has no such collection and name the ones it has; the others are saved."""
    from smdebug.core.testing import capture_smdebug_log

    X, y = binary_data()
    dtrain = xgb.DMatrix(X, label=y)
    with capture_smdebug_log() as log:
        hook = smd.Hook(str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights", "metrics"])
        hook.get_collection("weights")  # (as a JSON configuration naming it creates it)
        xgb.train({"nthread": 1, "objective": "binary:logistic"}, dtrain, num_boost_round=3,
                  evals=[(dtrain, "train")], verbose_eval=False, callbacks=[hook])
    said = [line for line in log.text.splitlines() if "'weights'" in line]
    assert len(said) == 1 and "the xgboost hook fills no collection of that name" in said[0], log.text
    assert "trees" in said[0] and "metrics" in said[0], said
    assert smd.create_trial(str(tmp_path / "run")).tensor_names(collection="metrics") == ["train-logloss"]
