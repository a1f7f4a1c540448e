"""The XGBoost hook's records for the rules, probe 5: multi-output trees dumped without statistics (no ERROR),
predictions and labels from the evaluation set when no validation_data was given (the scikit-learn path),
saved again after the last round, and the class weights the booster trains with."""

import logging

import numpy as np
import xgboost as xgb

import smdebug.xgboost as smd
from smdebug.trials import create_trial


def _binary(n=400, seed=0, positives=0.1):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < positives).astype(int)
    return rng.normal(size=(n, 4)) + y[:, None], y


def test_multi_output_trees_are_saved_without_an_error(tmp_path, smd_log):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5))
    y = np.stack([x[:, 0] + x[:, 1], x[:, 2] ** 2, x[:, 3]], 1)
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1), include_collections=["trees"])
    xgb.train({"tree_method": "hist", "multi_strategy": "multi_output_tree", "max_depth": 3, "nthread": 1},
              xgb.DMatrix(x, y), 4, callbacks=[hook])
    hook.close()
    # (the smdebug logger does not propagate to pytest's caplog: its own capture)
    assert not [r for r in smd_log.records if r.levelno >= logging.WARNING or r.exc_info]
    trial = create_trial(str(tmp_path))
    depth = trial.tensor("trees/Depth").value(3)
    assert depth.max() == 3 and depth.min() == 0
    assert {"trees/Node", "trees/Yes", "trees/No", "trees/Feature"} <= set(trial.tensor_names())
    assert "trees/Gain" not in trial.tensor_names()  # (what XGBoost cannot dump for these trees)


def test_scikit_learn_eval_set_gives_labels_and_predictions(tmp_path):
    from xgboost import XGBClassifier

    x, y = _binary(positives=0.4)
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["labels", "predictions"])
    XGBClassifier(n_estimators=5, n_jobs=1, callbacks=[hook]).fit(
        x[:300], y[:300], eval_set=[(x[:300], y[:300]), (x[300:], y[300:])], verbose=False)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.collection_manager.meta["xgboost_labels_from"] == "validation_1"  # not the training set
    np.testing.assert_array_equal(trial.tensor("labels").value(4), y[300:])
    assert trial.tensor("predictions").value(4).shape == (100,)


def test_predictions_and_labels_are_saved_after_the_last_round(tmp_path):
    x, y = _binary()
    dtrain = xgb.DMatrix(x, label=y)
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_steps=[0, 5]),
                    include_collections=["labels", "predictions", "metrics"], validation_data=dtrain)
    xgb.train({"nthread": 1}, dtrain, 12, evals=[(dtrain, "train")], callbacks=[hook], verbose_eval=False)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.tensor("predictions").steps() == [0, 5, 11]
    assert trial.tensor("labels").steps() == [0, 5, 11]
    metric = next(n for n in trial.tensor_names() if n.startswith("train-"))
    assert trial.tensor(metric).steps() == [0, 5]  # (only the trained model's predictions and labels)
    assert trial.loaded_all_steps


def test_class_weights_are_recorded(tmp_path):
    x, y = _binary()
    dtrain = xgb.DMatrix(x, label=y, weight=np.where(y == 1, 2.0, 1.0))
    hook = smd.Hook(out_dir=str(tmp_path), include_collections=["metrics"])
    xgb.train({"nthread": 1, "objective": "binary:logistic", "scale_pos_weight": 4}, dtrain, 2, callbacks=[hook])
    hook.close()
    entries = create_trial(str(tmp_path)).collection_manager.meta["class_weights"]
    assert entries == [{"source": "scale_pos_weight=4 and the training DMatrix's weights",
                        "weights": {"0": 1.0, "1": 8.0}, "targets": None}]
    # a regression records none
    hook = smd.Hook(out_dir=str(tmp_path / "reg"), include_collections=["metrics"])
    xgb.train({"nthread": 1, "scale_pos_weight": 4}, xgb.DMatrix(x, label=x[:, 0]), 2, callbacks=[hook])
    hook.close()
    assert "class_weights" not in create_trial(str(tmp_path / "reg")).collection_manager.meta
