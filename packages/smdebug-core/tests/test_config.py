"""SaveConfig, ReductionConfig, collections and the SageMaker JSON contract."""

import json

import pytest

from smdebug import CollectionKeys, ReductionConfig, SaveConfig, SaveConfigMode, modes
from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.json_config import parse_hook_config
from smdebug.exceptions import CollectionFileCorrupted, InvalidConfigurationError, SMDebugValueError


def saved(cfg, n=1000, mode=modes.TRAIN):
    return [s for s in range(n) if cfg.should_save_step(mode, s)]


def test_documented_schedules():
    assert saved(SaveConfig()) == [0, 500]
    assert saved(SaveConfig(save_interval=100, end_step=200)) == [0, 100]
    assert saved(SaveConfig(save_interval=100, end_step=201)) == [0, 100, 200]
    assert saved(SaveConfig(save_interval=100, start_step=150))[:3] == [200, 300, 400]
    assert saved(SaveConfig(save_steps=[3, 7])) == [0, 3, 7, 500]  # union with the interval
    assert saved(SaveConfig(save_interval=1, end_step=0)) == []
    assert saved(SaveConfig(save_interval="5", start_step="2", end_step="21")) == [5, 10, 15, 20]


def test_per_mode_configs():
    cfg = SaveConfig(mode_save_configs={modes.TRAIN: SaveConfigMode(save_interval=2), "EVAL": {"save_interval": 3}})
    assert saved(cfg, 7, modes.TRAIN) == [0, 2, 4, 6]
    assert saved(cfg, 7, modes.EVAL) == [0, 3, 6]
    assert cfg.get_save_config(modes.PREDICT) is None
    cfg.merge_default(SaveConfig(save_interval=5))
    assert saved(cfg, 11, modes.PREDICT) == [0, 5, 10]
    assert SaveConfig.from_dict(cfg.to_json_dict()) == cfg
    assert SaveConfig.parse(SaveConfigMode(save_interval=4)).get_save_config(modes.GLOBAL).save_interval == 4


def test_next_save_step_agrees_with_should_save_step():
    """Hooks skip the schedule until next_save_step: it must never step over a saved step."""
    schedules = [SaveConfigMode(save_interval=i, start_step=s, end_step=e, save_steps=steps)
                 for i in (1, 3, 7) for s in (0, 5, 12) for e in (None, 0, 11, 40) for steps in ([], [2, 19, 33], [60])]
    for scm in schedules:
        for n in range(70):
            expected = next((k for k in range(n, 500) if scm.should_save_step(k)), None)
            assert scm.next_save_step(n) == expected, (scm, n)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"save_interval": 0}, "save_interval must be >= 1"),
        ({"save_interval": -5}, "save_interval must be >= 1"),
        ({"save_interval": "ten"}, "save_interval must be an integer"),
        ({"start_step": -1}, "start_step must be >= 0"),
        ({"save_steps": [1, "x"]}, "save_steps entry must be an integer"),
        ({"save_interval": 2.5}, "must be an integer"),
        ({"save_interval": True}, "bool"),
    ],
)
def test_bad_schedules_fail_fast(kwargs, match):
    with pytest.raises(SMDebugValueError, match=match):
        SaveConfig(**kwargs)


def test_reduction_config():
    rc = ReductionConfig(reductions=["min", "max"], abs_reductions=["mean"], norms=["l1"], abs_norms=["l2"], save_shape=True)
    assert rc.reductions_csv() == "min,max,l1_norm,abs_mean,abs_l2_norm"
    assert rc.reduction_ops() == [("min", False), ("max", False), ("l1", False), ("mean", True), ("l2", True)]
    assert ReductionConfig.from_dict(rc.to_json_dict()) == rc
    with pytest.raises(SMDebugValueError, match="Unknown reduction 'avg'"):
        ReductionConfig(reductions=["avg"])
    with pytest.raises(SMDebugValueError, match="Unknown norm 'l3'"):
        ReductionConfig(norms=["l3"])
    with pytest.raises(SMDebugValueError):
        ReductionConfig(save_raw_tensor="yes")


def test_collection_membership_and_json():
    c = Collection("relu", include_regex=["relu_output"], tensor_names=["extra"])
    assert c.matches("net.relu_output_0") and c.matches("extra") and not c.matches("conv")
    c.reduction_config = ReductionConfig(reductions=["mean"])
    c.save_config = SaveConfig(save_interval=3)
    again = Collection.from_dict(json.loads(json.dumps(c.to_json_dict())))
    assert again == c
    assert Collection.from_dict({"name": "x"}).include_regex == []  # the original used False here
    with pytest.raises(Exception, match="Invalid regex"):
        Collection("bad", include_regex=["("])


def test_collection_manager_file_roundtrip_and_errors():
    cm = CollectionManager()
    cm.add(Collection("weights", include_regex=["weight"]))
    cm.set_num_workers(3)
    loaded = CollectionManager.loads(cm.dumps())
    assert loaded == cm and loaded.get_num_workers() == 3
    with pytest.raises(CollectionFileCorrupted, match="not valid JSON"):
        CollectionManager.loads("{", path="c.json")
    with pytest.raises(CollectionFileCorrupted, match="unknown top-level keys"):
        CollectionManager.loads('{"collections": {}, "extra": 1}')
    with pytest.raises(CollectionFileCorrupted, match="num_workers"):
        CollectionManager.loads('{"collections": {}, "_meta": {"num_workers": "many"}}')
    with pytest.raises(CollectionFileCorrupted, match="Invalid collection"):
        CollectionManager.loads('{"collections": {"w": {"name": "w", "save_config": {"TRAIN": {"save_interval": 0}}}}}')


def test_json_hook_config_resolution():
    cfg = {
        "LocalPath": "/tmp/out",
        "HookParameters": {
            "save_interval": "10", "train.save_interval": "5", "include_regex": "a.*, b",
            "reductions": "mean,abs_l2_norm", "save_raw_tensor": "true", "save_steps": [1, 2],
            "dry_run": "True", "include_collections": "weights",
        },
        "CollectionConfigurations": [
            {"CollectionName": "gradients", "CollectionParameters": {"eval.save_interval": "7", "save_histogram": "false"}},
            {"CollectionName": "custom", "CollectionParameters": {"include_regex": "relu", "save_interval": "3"}},
            {"CollectionName": "losses"},
        ],
    }
    kw = parse_hook_config(cfg)
    assert kw["out_dir"] == "/tmp/out" and kw["dry_run"] is True
    assert kw["include_regex"] == ["a.*", "b"]
    assert set(kw["include_collections"]) == {"weights", "gradients", "custom", "losses", "default"}
    assert kw["reduction_config"] == ReductionConfig(reductions=["mean"], abs_norms=["l2"], save_raw_tensor=True)
    hook_sc = kw["save_config"]
    assert hook_sc.get_save_config(modes.TRAIN).save_interval == 5
    assert hook_sc.get_save_config(modes.EVAL).save_interval == 10
    assert hook_sc.get_save_config(modes.EVAL).save_steps == [1, 2]
    grads = kw["collection_configs"]["gradients"]
    assert grads["save_histogram"] is False
    assert grads["save_config"].get_save_config(modes.EVAL).save_interval == 7
    assert grads["save_config"].get_save_config(modes.TRAIN).save_interval == 5  # hook's train.* wins over hook's plain
    custom = kw["collection_configs"]["custom"]["save_config"]
    assert custom.get_save_config(modes.TRAIN).save_interval == 3  # collection plain key beats hook train.*
    assert kw["collection_configs"]["custom"]["include_regex"] == ["relu"]


def test_json_default_interval_inherited_by_collections():
    kw = parse_hook_config({"CollectionConfigurations": [{"CollectionName": "metrics"}]}, default_save_interval=10)
    assert kw["collection_configs"]["metrics"]["save_config"].get_save_config(modes.GLOBAL).save_interval == 10


@pytest.mark.parametrize(
    "cfg, match",
    [
        ({"HookParameters": {"save_interval": "-1"}}, "save_interval must be >= 1"),
        ({"HookParameters": {"reductions": "mean,median2"}}, "Unknown reduction"),
        ({"HookParameters": {"include_workers": "some"}}, "include_workers"),
        ({"HookParameters": {"save_all": "maybe"}}, "save_all must be true or false"),
        ({"CollectionConfigurations": [{"CollectionParameters": {}}]}, "CollectionName"),
        ({"CollectionConfigurations": {"a": 1}}, "must be a list"),
        ([], "JSON object"),
    ],
)
def test_bad_json_configs(cfg, match):
    with pytest.raises(InvalidConfigurationError, match=match):
        parse_hook_config(cfg)


def test_collection_keys_names():
    assert CollectionKeys.WEIGHTS == "weights" and CollectionKeys.SM_METRICS == "sm_metrics"
