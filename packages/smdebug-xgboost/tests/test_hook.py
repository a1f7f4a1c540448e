"""The XGBoost hook as a training callback: schedules, the JSON contract, training variants, robustness."""

import copy
import json
import math
import os
import pickle
import warnings

import numpy as np
import pytest
import xgboost as xgb
from conftest import ALL_COLLECTIONS, binary_data, multiclass_data, regression_data

import smdebug.xgboost as smd
from smdebug.core.locations import END_OF_JOB_FILE
from smdebug.exceptions import InvalidConfigurationError

XGBOOST_MAJOR = int(xgb.__version__.split(".")[0])


@pytest.fixture(scope="module")
def dreg():
    X, y = regression_data()
    return xgb.DMatrix(X, label=y)


def fit(hook, d, rounds, params=None, evals=True, **kwargs):
    params = {"nthread": 1, **(params or {})}
    if params.get("booster") != "gblinear":
        params.setdefault("max_depth", 2)
    return xgb.train(params, d, num_boost_round=rounds, evals=[(d, "train")] if evals else (), verbose_eval=False,
                     callbacks=[hook], **kwargs)


def steps_of(trial, name):
    return trial.tensor(name).steps()


# --------------------------------------------------------------------------------------------------
# schedules
# --------------------------------------------------------------------------------------------------
def test_hook_is_a_training_callback_with_metrics_every_10_steps_by_default(out_dir, dreg):
    hook = smd.Hook(out_dir)
    assert isinstance(hook, xgb.callback.TrainingCallback)
    fit(hook, dreg, 25)
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 10, 20]
    assert trial.tensor_names() == ["train-rmse"]  # only the default collection, metrics
    assert trial.workers() == ["worker_0"]
    # everything is written when training ends, but the run stays open for values saved afterwards
    assert not os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE))
    hook.close()
    assert os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE))


def test_scalars_saved_before_and_after_training_land_in_the_run(out_dir, dreg):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=2))
    hook.save_scalar("rounds", 5, timestamp=100.0)
    hook.set_mode(smd.modes.TRAIN)
    fit(hook, dreg, 5)
    hook.save_scalar("final_score", 0.75)
    hook.close()
    trial = smd.create_trial(out_dir)
    assert trial.loaded_all_steps
    assert trial.tensor("scalar/rounds").steps() == [0]  # before training: the first step
    assert trial.tensor("scalar/final_score").steps() == [5]  # after training: a step of its own
    assert trial.tensor("scalar/final_score").value(5)[0] == 0.75
    assert trial.tensor("train-rmse").steps(mode=smd.modes.TRAIN) == [0, 2, 4]


@pytest.mark.parametrize(
    "save_config, expected",
    [
        (smd.SaveConfig(save_interval=4), [0, 4, 8]),
        (smd.SaveConfig(save_steps=[1, 7]), [0, 1, 7]),  # save_steps add to the interval schedule (500)
        (smd.SaveConfig(save_interval=3, start_step=2, end_step=9), [3, 6]),
        (smd.SaveConfigMode(save_interval=5), [0, 5]),
        ({smd.modes.GLOBAL: smd.SaveConfigMode(save_interval=2, start_step=6)}, [6, 8]),
    ],
)
def test_saved_steps_follow_the_save_config(out_dir, dreg, save_config, expected):
    hook = smd.Hook(out_dir, save_config=save_config, include_collections=["metrics", "trees"])
    fit(hook, dreg, 10)
    trial = smd.create_trial(out_dir)
    assert trial.steps() == expected
    assert steps_of(trial, "train-rmse") == expected
    assert steps_of(trial, "trees/Node") == expected
    for step in expected:
        assert set(trial.tensor("trees/Tree").value(step).tolist()) == {step}


def test_collections_without_their_own_config_follow_the_hook_interval(out_dir, dreg):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=3), train_data=dreg,
                    include_collections=["metrics", "feature_importance", "average_shap", "hyperparameters"],
                    hyperparameters={"max_depth": 2})
    hook.get_collection("feature_importance").save_config = smd.SaveConfig(save_interval=4)
    fit(hook, dreg, 9)
    trial = smd.create_trial(out_dir)
    assert steps_of(trial, "train-rmse") == [0, 3, 6]
    assert steps_of(trial, "average_shap/f0") == [0, 3, 6]
    assert steps_of(trial, "feature_importance/weight/f0") == [0, 4, 8]
    assert steps_of(trial, "hyperparameters/max_depth") == [0]
    assert trial.steps() == [0, 3, 4, 6, 8]


def test_hyperparameters_with_their_own_schedule(out_dir, dreg):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=["hyperparameters"],
                    hyperparameters={"eta": 0.1})
    hook.get_collection("hyperparameters").save_config = smd.SaveConfig(save_interval=2)
    fit(hook, dreg, 5)
    assert steps_of(smd.create_trial(out_dir), "hyperparameters/eta") == [0, 2, 4]


def test_include_regex_picks_single_tensors_of_other_kinds(out_dir, dreg):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), train_data=dreg,
                    include_regex=["^average_shap/f1$", "^feature_importance/gain/"])
    fit(hook, dreg, 2)
    trial = smd.create_trial(out_dir)
    names = trial.tensor_names()
    assert "average_shap/f1" in names and "average_shap/f0" not in names and "shap_bias" not in names
    assert any(n.startswith("feature_importance/gain/") for n in names)
    assert not any(n.startswith("feature_importance/weight/") for n in names)
    assert "train-rmse" in names


def test_reductions_apply_to_array_collections_but_not_to_scalars_or_trees(out_dir, dreg):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), validation_data=dreg,
                    include_collections=["metrics", "predictions", "trees"],
                    reduction_config=smd.ReductionConfig(reductions=["mean"], norms=["l2"]))
    booster = fit(hook, dreg, 2)
    trial = smd.create_trial(out_dir)
    predictions = trial.tensor("predictions")
    assert predictions.reduction_value(1, "mean") == pytest.approx(booster.predict(dreg).mean(), rel=1e-5)
    with pytest.raises(Exception):
        predictions.value(1)  # only the reductions were asked for
    assert trial.tensor("train-rmse").value(1).shape == (1,)  # metrics: always raw
    assert trial.tensor("trees/Feature").value(1).dtype.kind == "U"  # trees: always raw


def test_tensorboard_export(out_dir, dreg):
    hook = smd.Hook(out_dir, export_tensorboard=True, save_config=smd.SaveConfig(save_interval=1))
    fit(hook, dreg, 2)
    tb = os.path.join(out_dir, "tensorboard")
    assert os.path.isdir(tb) and any(files for _, _, files in os.walk(tb))


def test_dry_run_writes_nothing(tmp_path, dreg):
    out = str(tmp_path / "dry")
    hook = smd.Hook(out, dry_run=True, save_config=smd.SaveConfig(save_interval=1))
    fit(hook, dreg, 3)
    assert not os.path.exists(out)


# --------------------------------------------------------------------------------------------------
# the JSON contract
# --------------------------------------------------------------------------------------------------
def write_config(tmp_path, out_dir, collections, hook_params=None):
    config = {
        "LocalPath": out_dir,
        "HookParameters": hook_params or {},
        "CollectionConfigurations": [
            {"CollectionName": name, "CollectionParameters": params} for name, params in collections.items()
        ],
    }
    path = tmp_path / "debughookconfig.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_hook_from_json_file(tmp_path, out_dir, dreg, monkeypatch):
    path = write_config(tmp_path, out_dir, {
        "metrics": {"save_interval": "2"},
        "feature_importance": None,  # no interval of its own: the hook's (10 by default for XGBoost)
        "hyperparameters": {"save_steps": "0"},
        "trees": {"save_steps": "1,3", "end_step": "1"},
    })
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", path)
    hook = smd.Hook.create_from_json_file()
    assert isinstance(hook, smd.Hook) and hook.out_dir == out_dir
    hook.hyperparameters = {"objective": "reg:squarederror"}
    fit(hook, dreg, 12)
    trial = smd.create_trial(out_dir)
    assert steps_of(trial, "train-rmse") == [0, 2, 4, 6, 8, 10]
    assert steps_of(trial, "feature_importance/weight/f0") == [0, 10]
    assert steps_of(trial, "hyperparameters/objective") == [0, 10]  # save_steps are added to the interval
    assert steps_of(trial, "trees/Node") == [0, 1, 3]


def test_get_hook_builds_from_json_once(tmp_path, out_dir, dreg):
    path = write_config(tmp_path, out_dir, {"average_shap": {"save_interval": "1"}},
                        hook_params={"save_interval": "5"})
    assert smd.get_hook(json_config_path=str(tmp_path / "missing.json"), create_if_not_exists=True) is None
    assert smd.get_hook(json_config_path=path) is None  # create_if_not_exists=False
    hook = smd.get_hook(json_config_path=path, create_if_not_exists=True)
    assert isinstance(hook, smd.Hook)
    assert smd.get_hook() is hook
    hook.train_data = dreg
    fit(hook, dreg, 6)
    trial = smd.create_trial(out_dir)
    assert steps_of(trial, "train-rmse") == [0, 5]
    assert steps_of(trial, "average_shap/f0") == [0, 1, 2, 3, 4, 5]


def test_use_smdebug_false_disables_get_hook(tmp_path, out_dir, monkeypatch):
    path = write_config(tmp_path, out_dir, {"metrics": None})
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert smd.get_hook(json_config_path=path, create_if_not_exists=True) is None


# --------------------------------------------------------------------------------------------------
# train_data / validation_data
# --------------------------------------------------------------------------------------------------
def test_data_from_libsvm_and_csv_files(tmp_path, out_dir):
    X, y = regression_data(rows=40, features=3)
    X[X < -1] = 0.0  # some zeros for the sparse format
    csv = tmp_path / "train.csv"
    np.savetxt(csv, np.column_stack([y, X]), delimiter=",")
    svm = tmp_path / "valid.libsvm"
    with open(svm, "w") as f:
        for label, row in zip(y, X):
            f.write(" ".join([repr(float(label))] + [f"{j}:{v!r}" for j, v in enumerate(row.tolist()) if v != 0]) + "\n")
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), train_data=(str(csv), "text/csv"),
                    validation_data=(str(svm), None), include_collections=["labels", "predictions", "full_shap"])
    assert hook.train_data.num_row() == 40 and hook.train_data.num_col() == 3
    assert hook.validation_data.num_row() == 40 and hook.validation_data.num_col() == 3
    d = xgb.DMatrix(X, label=y)
    booster = fit(hook, d, 2)
    trial = smd.create_trial(out_dir)
    np.testing.assert_allclose(trial.tensor("labels").value(1), y, rtol=1e-6)
    # libsvm leaves zeros out, and XGBoost reads absent entries as missing: compare with its own reader
    with warnings.catch_warnings():  # XGBoost deprecated its text loader in 3.1
        warnings.simplefilter("ignore")
        theirs = xgb.DMatrix(f"{svm}?format=libsvm")
    np.testing.assert_allclose(trial.tensor("predictions").value(1), booster.predict(theirs), rtol=1e-5)
    np.testing.assert_allclose(trial.tensor("full_shap/f2").value(1)[:, 2], booster.predict(d, pred_contribs=True)[:, 2],
                               rtol=1e-4, atol=1e-6)


def test_libsvm_reader_agrees_with_xgboost(tmp_path):
    from smdebug.xgboost.data import load_file

    path = tmp_path / "rank.svm"
    path.write_text("# a comment line\n1:2.0 qid:1 0:0.5 2:1.5\n0:1 qid:1 1:3 # trailing comment\n2:0.5 qid:2 0:1 1:1 2:1\n")
    d = load_file(str(path), "text/x-libsvm")
    assert (d.num_row(), d.num_col()) == (3, 3)
    np.testing.assert_array_equal(d.get_label(), [1, 0, 2])
    np.testing.assert_array_equal(d.get_weight(), [2.0, 1.0, 0.5])
    np.testing.assert_array_equal(d.get_uint_info("group_ptr"), [0, 2, 3])
    with warnings.catch_warnings():  # XGBoost deprecated its text loader in 3.1
        warnings.simplefilter("ignore")
        theirs = xgb.DMatrix(f"{path}?format=libsvm")
    for field in ("label", "weight"):
        np.testing.assert_array_equal(d.get_float_info(field), theirs.get_float_info(field))
    np.testing.assert_array_equal(d.get_uint_info("group_ptr"), theirs.get_uint_info("group_ptr"))
    plain = tmp_path / "plain.svm"
    plain.write_text("1 0:0.5 2:1.5\n0 1:3\n")
    ours = load_file(str(plain), "libsvm")
    with warnings.catch_warnings():  # XGBoost deprecated its text loader in 3.1
        warnings.simplefilter("ignore")
        theirs = xgb.DMatrix(f"{plain}?format=libsvm")
    np.testing.assert_array_equal(ours.get_label(), theirs.get_label())
    assert (ours.num_row(), ours.num_col()) == (theirs.num_row(), theirs.num_col())
    b1 = xgb.train({"nthread": 1}, ours, 1)
    np.testing.assert_array_equal(b1.predict(ours), b1.predict(theirs))


@pytest.mark.parametrize(
    "data, message",
    [
        (np.zeros((3, 2)), "must be an xgboost.DMatrix or a (path, content_type) tuple"),
        (("/nonexistent/file.csv", "csv"), "does not exist"),
        (("{csv}", "application/x-parquet"), "unsupported content_type"),
        (("{csv}", 3), "content_type must be a string"),
        (("{header}", "csv"), "row 1 has no label"),
        (("{csv}", "libsvm"), "not a libsvm line"),
        ((1, 2, 3), "must be an xgboost.DMatrix"),
    ],
)
def test_bad_data_is_a_clear_error_at_construction(tmp_path, out_dir, data, message):
    csv = tmp_path / "d.csv"
    csv.write_text("1,2,3\n0,1,1\n")
    header = tmp_path / "h.csv"
    header.write_text("label,a,b\n1,2,3\n")
    if isinstance(data, tuple) and isinstance(data[0], str):
        data = (data[0].format(csv=csv, header=header), data[1])
    with pytest.raises(InvalidConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        smd.Hook(out_dir, train_data=data)
    with pytest.raises(InvalidConfigurationError):
        smd.Hook(out_dir, validation_data=data)
    assert not os.path.exists(out_dir)  # nothing claimed before the arguments were checked


def test_bad_hyperparameters(out_dir):
    with pytest.raises(InvalidConfigurationError, match="hyperparameters must be a dict"):
        smd.Hook(out_dir, hyperparameters=[("eta", 0.1)])


def test_collections_without_their_data_are_skipped_with_a_warning(out_dir, dreg, smd_log):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["predictions", "labels", "average_shap", "full_shap", "metrics"])
    fit(hook, dreg, 3)
    assert smd.create_trial(out_dir).tensor_names() == ["train-rmse"]
    text = smd_log.text
    assert text.count("needs the hook's validation_data") == 2 and text.count("need the hook's train_data") == 1


# --------------------------------------------------------------------------------------------------
# training variants
# --------------------------------------------------------------------------------------------------
def test_early_stopping(out_dir):
    X, y = binary_data(rows=200)
    rng = np.random.default_rng(9)
    dtrain = xgb.DMatrix(X[:100], label=y[:100])
    dvalid = xgb.DMatrix(X[100:], label=rng.integers(0, 2, size=100))  # noise: validation loss stops improving
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["metrics", "trees"])
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "eta": 0.5}, dtrain,
                        num_boost_round=50, evals=[(dtrain, "train"), (dvalid, "valid")], early_stopping_rounds=3,
                        verbose_eval=False, callbacks=[hook])
    rounds = booster.num_boosted_rounds()
    assert rounds < 50
    trial = smd.create_trial(out_dir)
    if XGBOOST_MAJOR >= 3:
        assert trial.steps() == list(range(rounds))
    else:  # XGBoost 2 calls callbacks in no fixed order, and none after the one that ends training
        assert trial.steps() in (list(range(rounds)), list(range(rounds - 1)))
    assert "valid-logloss" in trial.tensor_names(collection="losses")
    hook.close()
    assert os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE))


def test_continued_training_numbers_steps_from_the_models_rounds(tmp_path, dreg):
    first = xgb.train({"max_depth": 2, "nthread": 1}, dreg, num_boost_round=4)
    out = str(tmp_path / "continued")
    hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=2), include_collections=["metrics", "trees",
                                                                                            "hyperparameters"],
                    hyperparameters={"eta": 0.3})
    booster = fit(hook, dreg, 5, xgb_model=first)
    assert booster.num_boosted_rounds() == 9
    trial = smd.create_trial(out)
    assert trial.steps() == [0, 2, 4]  # XGBoost's iteration numbers count from 0 in every train() call
    assert steps_of(trial, "hyperparameters/eta") == [0]
    frame = booster.trees_to_dataframe()
    for step in (0, 2, 4):  # the trees built in that iteration: rounds 4, 6 and 8 of the model
        assert set(trial.tensor("trees/Tree").value(step).tolist()) == {4 + step}
        assert trial.tensor("trees/ID").value(step).tolist() == frame[frame.Tree == 4 + step].ID.tolist()


@pytest.mark.parametrize("params, trees_per_round", [
    ({"booster": "dart", "rate_drop": 0.2}, 1),
    ({"num_parallel_tree": 3, "subsample": 0.8, "colsample_bynode": 0.8}, 3),
    ({"objective": "multi:softmax", "num_class": 3}, 3),
])
def test_tree_boosters(out_dir, params, trees_per_round):
    X, y = multiclass_data()
    d = xgb.DMatrix(X, label=y)
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), train_data=d, validation_data=d,
                    include_collections=ALL_COLLECTIONS)
    booster = fit(hook, d, 3, params)
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]
    frame = booster.trees_to_dataframe()
    for step in range(3):
        trees = list(range(step * trees_per_round, (step + 1) * trees_per_round))
        assert sorted(set(trial.tensor("trees/Tree").value(step).tolist())) == trees
        assert trial.tensor("trees/ID").value(2).tolist() == frame[frame.Tree.isin(
            range(2 * trees_per_round, 3 * trees_per_round))].ID.tolist()
    total = sum(trial.tensor(n).value(2)[0] for n in trial.tensor_names(regex="^feature_importance/gain/"))
    assert total == pytest.approx(1.0)


def test_gblinear_saves_metrics_and_shap_but_no_trees_or_importance(out_dir, dreg, smd_log):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), train_data=dreg, validation_data=dreg,
                    include_collections=ALL_COLLECTIONS)
    booster = fit(hook, dreg, 3, {"booster": "gblinear"})
    trial = smd.create_trial(out_dir)
    names = trial.tensor_names()
    assert not any(n.startswith(("trees/", "feature_importance/")) for n in names)
    assert {"train-rmse", "predictions", "labels", "average_shap/f0", "full_shap/f4", "shap_bias"} <= set(names)
    contribs = booster.predict(dreg, pred_contribs=True)
    np.testing.assert_allclose(trial.tensor("full_shap/f0").value(2), contribs, rtol=1e-5, atol=1e-6)
    assert "gblinear builds no trees" in smd_log.text and "tree boosters only" in smd_log.text
    assert not hook.disabled


def test_cross_validation_saves_the_mean_metrics(out_dir, dreg):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["metrics", "trees"])
    result = xgb.cv({"max_depth": 2, "nthread": 1}, dreg, num_boost_round=3, nfold=2, callbacks=[hook], seed=0)
    trial = smd.create_trial(out_dir)
    assert trial.tensor_names() == ["test-rmse", "train-rmse"]
    assert trial.tensor("test-rmse").value(2)[0] == pytest.approx(result["test-rmse-mean"].iloc[2])
    assert not hook.disabled


def test_sklearn_estimators(out_dir):
    pytest.importorskip("sklearn")
    X, y = binary_data()
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["metrics", "losses",
                                                                                                 "feature_importance"])
    model = xgb.XGBClassifier(n_estimators=3, max_depth=2, n_jobs=1, eval_metric=["logloss", "auc"], callbacks=[hook])
    model.fit(X, y, eval_set=[(X, y), (X[:50], y[:50])], verbose=False)
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor_names(collection="metrics") == ["validation_0-auc", "validation_0-logloss",
                                                        "validation_1-auc", "validation_1-logloss"]
    assert trial.tensor_names(collection="losses") == ["validation_0-logloss", "validation_1-logloss"]
    assert trial.tensor("validation_1-auc").value(2)[0] == pytest.approx(model.evals_result()["validation_1"]["auc"][2])
    # a fitted estimator that holds the hook can be copied and pickled: the copy holds an inert hook
    assert copy.deepcopy(hook) is hook
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    inert = restored.get_params()["callbacks"][0]
    assert isinstance(inert, smd.Hook) and inert.disabled and "DISABLED" in repr(inert)
    restored.fit(X, y)  # records nothing, breaks nothing
    assert smd.create_trial(out_dir).steps() == [0, 1, 2]


def test_sklearn_regressor_and_ranker(tmp_path):
    pytest.importorskip("sklearn")
    X, y = regression_data()
    out = str(tmp_path / "reg")
    hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=2), include_collections=["metrics", "trees"])
    xgb.XGBRegressor(n_estimators=4, max_depth=2, n_jobs=1, callbacks=[hook]).fit(X, y, eval_set=[(X, y)],
                                                                                  verbose=False)
    assert smd.create_trial(out).steps() == [0, 2]
    out = str(tmp_path / "rank")
    hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["metrics"])
    qid = np.repeat(np.arange(12), 10)
    labels = (X[:, 0] > 0).astype(int)
    xgb.XGBRanker(n_estimators=2, max_depth=2, n_jobs=1, eval_metric="ndcg@3", callbacks=[hook]).fit(
        X, labels, qid=qid, eval_set=[(X, labels)], eval_qid=[qid], verbose=False)
    assert smd.create_trial(out).tensor_names() == ["validation_0-ndcg@3"]


# --------------------------------------------------------------------------------------------------
# tree depth for the TreeDepth rule
# --------------------------------------------------------------------------------------------------
def test_depth_column_where_node_ids_are_not_a_complete_binary_numbering(out_dir):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = np.where(X[:, 0] > 1.0, 10 * X[:, 1], 0.1 * X[:, 2]).astype(np.float32)  # detail on one side only
    d = xgb.DMatrix(X, label=y)
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["trees"])
    booster = fit(hook, d, 3, {"tree_method": "hist", "grow_policy": "lossguide", "max_leaves": 8, "max_depth": 0},
                  evals=False)
    trial = smd.create_trial(out_dir)
    dumps = [json.loads(t) for t in booster.get_dump(dump_format="json")]

    def true_depth(node):
        return 1 + max(true_depth(c) for c in node["children"]) if "children" in node else 0

    log2_underestimates = False
    for step in range(3):
        depth = trial.tensor("trees/Depth").value(step)
        node = trial.tensor("trees/Node").value(step)
        assert depth.max() == true_depth(dumps[step])
        log2_depth = math.floor(math.log2(node.max() + 1))
        assert log2_depth <= depth.max()  # ids are allocated in order: log2 is only a lower bound
        log2_underestimates |= log2_depth < depth.max()
    assert log2_underestimates


# --------------------------------------------------------------------------------------------------
# never break training; stop on a rule's signal
# --------------------------------------------------------------------------------------------------
def test_a_failing_xgboost_call_skips_that_kind_only(out_dir, dreg, smd_log):
    bad_validation = xgb.DMatrix(np.zeros((5, 7)), label=np.zeros(5))  # 7 features, the model has 5
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), validation_data=bad_validation,
                    include_collections=["metrics", "predictions", "labels"])
    booster = fit(hook, dreg, 4)
    assert booster.num_boosted_rounds() == 4
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2, 3]
    assert trial.tensor_names() == ["labels", "train-rmse"]
    assert smd_log.text.count("cannot save predictions") == 1  # logged once, then skipped
    assert not hook.disabled


def test_an_internal_error_disables_the_hook_and_training_goes_on(out_dir, dreg, monkeypatch, smd_log):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    calls = {"n": 0}
    original = hook._compute_due

    def broken():
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("boom")
        return original()

    monkeypatch.setattr(hook, "_compute_due", broken)
    booster = fit(hook, dreg, 6)
    assert booster.num_boosted_rounds() == 6
    assert hook.disabled and "boom" in smd_log.text
    assert smd.create_trial(out_dir).steps() == [0, 1]


def test_errors_in_the_callback_itself_are_contained(out_dir, dreg, monkeypatch):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    monkeypatch.setattr(hook, "_after_iteration", lambda *a: 1 / 0)
    booster = fit(hook, dreg, 3)
    assert booster.num_boosted_rounds() == 3 and hook.disabled
    assert hook.after_iteration(booster, 3, {}) is False
    assert hook.before_training(booster) is booster and hook.after_training(booster) is booster


def test_a_closed_hook_warns_and_records_nothing(out_dir, dreg, smd_log):
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    fit(hook, dreg, 2)
    booster = fit(hook, dreg, 3)
    assert booster.num_boosted_rounds() == 3
    assert "already recorded a training run" in smd_log.text
    assert smd.create_trial(out_dir).steps() == [0, 1]


def test_stop_signal_ends_training_after_the_iteration(out_dir, dreg, monkeypatch):
    from smdebug.core import stop_signal

    if not hasattr(stop_signal, "write_stop_signal"):
        pytest.skip("smdebug-core has no stop signal yet")
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")

    class RuleFires(xgb.callback.TrainingCallback):
        # before_iteration: XGBoost 2.x runs the callbacks of one kind in no fixed order
        def before_iteration(self, model, epoch, evals_log):
            if epoch == 2:
                stop_signal.write_stop_signal(out_dir, rule="LossNotDecreasing", step=epoch, reason="test")
            return False

    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1))
    booster = xgb.train({"max_depth": 2, "nthread": 1}, dreg, num_boost_round=20, evals=[(dreg, "train")],
                        verbose_eval=False, callbacks=[RuleFires(), hook])
    assert hook.stop_requested
    assert booster.num_boosted_rounds() == 3  # iteration 2 completed, then XGBoost stopped
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1, 2]  # the last iteration's data is saved
    hook.close()
    assert os.path.exists(os.path.join(out_dir, END_OF_JOB_FILE))
