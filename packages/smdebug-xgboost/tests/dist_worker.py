"""One worker of a real distributed XGBoost job (its collective on loopback), started by test_distributed.py."""

import json
import os
import sys

import numpy as np
import xgboost as xgb

import smdebug.xgboost as smd

tracker_args, out_dir, include_workers = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
stop_at = int(sys.argv[4]) if len(sys.argv) > 4 else -1  # worker 0 plays a rule asking to stop then


class RuleFires(xgb.callback.TrainingCallback):
    def before_iteration(self, model, epoch, evals_log):
        if epoch == stop_at and xgb.collective.get_rank() == 0:
            from smdebug.core.stop_signal import write_stop_signal

            write_stop_signal(out_dir, rule="TestRule", step=epoch, reason="test")
        return False

with xgb.collective.CommunicatorContext(**tracker_args):
    rank, world = xgb.collective.get_rank(), xgb.collective.get_world_size()
    if stop_at >= 0:  # worker 1 looks for the stop signal only every 30 s: it learns of it from worker 0
        os.environ["SMDEBUG_STOP_CHECK_INTERVAL"] = "0" if rank == 0 else "30"
    rng = np.random.default_rng(rank)  # each worker trains on its own shard
    X = rng.normal(size=(100, 4)).astype(np.float32)
    y = (2 * X[:, 0] - X[:, 1] + rank).astype(np.float32)
    d = xgb.DMatrix(X, label=y)
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1), validation_data=d, train_data=d,
                    include_collections=["metrics", "trees", "feature_importance", "labels", "average_shap"],
                    include_workers=include_workers)
    rounds = 3 if stop_at < 0 else 50
    booster = xgb.train({"tree_method": "hist", "max_depth": 2, "nthread": 1}, d, num_boost_round=rounds,
                        evals=[(d, "train")], verbose_eval=False, callbacks=[RuleFires(), hook])
    print(json.dumps({"rank": rank, "world": world, "worker": hook.worker, "num_workers": hook.num_workers,
                      "gain": float(booster.trees_to_dataframe().Gain.sum()), "rounds": booster.num_boosted_rounds(),
                      "stop_requested": hook.stop_requested}))
