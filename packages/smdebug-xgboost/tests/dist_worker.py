"""One worker of a real distributed XGBoost job (its collective on loopback), started by test_distributed.py."""

import json
import sys

import numpy as np
import xgboost as xgb

import smdebug.xgboost as smd

tracker_args, out_dir, include_workers = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
with xgb.collective.CommunicatorContext(**tracker_args):
    rank, world = xgb.collective.get_rank(), xgb.collective.get_world_size()
    rng = np.random.default_rng(rank)  # each worker trains on its own shard
    X = rng.normal(size=(100, 4)).astype(np.float32)
    y = (2 * X[:, 0] - X[:, 1] + rank).astype(np.float32)
    d = xgb.DMatrix(X, label=y)
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), validation_data=d, train_data=d,
                    include_collections=["metrics", "trees", "feature_importance", "labels", "average_shap"],
                    include_workers=include_workers)
    booster = xgb.train({"tree_method": "hist", "max_depth": 2, "nthread": 1}, d, num_boost_round=3,
                        evals=[(d, "train")], verbose_eval=False, callbacks=[hook])
    print(json.dumps({"rank": rank, "world": world, "worker": hook.worker, "num_workers": hook.num_workers,
                      "gain": float(booster.trees_to_dataframe().Gain.sum())}))
