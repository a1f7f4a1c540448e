"""What a run records about itself (framework, activation layers), the tapered schedule, and the recommended
hook configuration asked from the rule packs."""

import json
import os

import pytest

from smdebug.core.activations import (
    ACTIVATION_COLLECTIONS,
    KIND_COLLECTIONS,
    ActivationLayer,
    activation_layers,
    add_to_collections,
    io_regex,
)
from smdebug.core.collection import Collection, CollectionKeys
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.modes import ModeKeys
from smdebug.core.run_info import framework_of, infer_framework
from smdebug.core.save_config import SaveConfig
from smdebug.core.testing import TAPERED_SAVED_STEPS
from smdebug.exceptions import InvalidConfigurationError, SMDebugValueError
from smdebug.trials import create_trial

from _support import NumpyHook


def test_every_activation_kind_has_a_collection_key():
    keys = {v for k, v in vars(CollectionKeys).items() if k.endswith("_ACTIVATIONS")}
    assert keys == set(ACTIVATION_COLLECTIONS) == set(KIND_COLLECTIONS.values())
    assert all(name.endswith("_activations") for name in ACTIVATION_COLLECTIONS)


@pytest.mark.parametrize("steps, saved", [(1, [0]), (200, [*range(10), 10, 20, 40, 80, 160]),
                                          *sorted(TAPERED_SAVED_STEPS.items())])
def test_tapered_schedule(steps, saved):
    config = SaveConfig.tapered()
    for mode in ModeKeys:
        assert [s for s in range(steps) if config.should_save_step(mode, s)] == saved
    scm = config.get_save_config(ModeKeys.TRAIN)
    # the hook's quiet-step skipping relies on next_save_step agreeing with should_save_step
    for s in range(0, 1200):
        nxt = scm.next_save_step(s)
        assert scm.should_save_step(nxt) and not any(scm.should_save_step(k) for k in range(s, nxt))
    assert [s for s in range(100) if SaveConfig.tapered(dense_steps=3, interval=50).should_save_step(ModeKeys.TRAIN, s)] \
        == [0, 1, 2, 3, 6, 12, 24, 48, 50]
    with pytest.raises(SMDebugValueError, match="interval must be >= 1"):
        SaveConfig.tapered(interval=0)


def test_the_hook_records_its_framework_and_readers_infer_it_for_older_runs(tmp_path):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.begin_step()
    hook.record("w", [1.0, 2.0])
    hook.end_step()
    hook.close()
    trial = create_trial(out)
    assert framework_of(trial) == "numpy-test"
    files = os.listdir(os.path.join(out, "collections", "000000000"))
    doc = json.load(open(os.path.join(out, "collections", "000000000", files[0])))
    assert doc["_meta"] == {"num_workers": 1, "framework": "numpy-test"}
    # runs of the original record nothing: its hooks' default collections tell the framework
    for collections, expected in [
        ({"losses": Collection("losses", include_regex=[r"[Ll]oss_(?!input).*output"])}, "pytorch"),
        ({"losses": Collection("losses", include_regex=[r".*loss._(?!input).*output"])}, "mxnet"),
        ({"sm_metrics": Collection("sm_metrics"), "losses": Collection("losses")}, "tensorflow"),
        ({"trees": Collection("trees", include_regex=["^trees/.*"])}, "xgboost"),
        ({"weights": Collection("weights")}, None),
    ]:
        assert infer_framework(collections) == expected
        cm = CollectionManager(collections)
        assert framework_of(cm) == expected


def test_meta_entries_survive_a_round_trip_and_damaged_records_are_ignored(caplog):
    cm = CollectionManager()
    layer = ActivationLayer("block.0.act", "ReLU", io_regex("block.0.act", "input"), io_regex("block.0.act", "output"))
    cm.meta.update({"framework": "pytorch", "future_key": {"x": [1, 2]}})
    from smdebug.core.activations import record

    record(cm, {"relu": [layer]})
    again = CollectionManager.loads(cm.dumps())
    assert again.meta == cm.meta and again.get_num_workers() == 1
    found = activation_layers(again)
    assert found["relu_activations"] == [layer] and found["tanh_activations"] == []
    assert layer.output_names(["block.0.act_output_0", "block.0.act_output_1", "block.0.actx_output_0",
                               "block.0.act_input_0"]) == ["block.0.act_output_0", "block.0.act_output_1"]
    with pytest.raises(ValueError, match="unknown activation kinds"):
        record(cm, {"swishy": []})
    # no record: unknown (None); a damaged record: said once in the log, read as no record
    assert activation_layers(CollectionManager()) is None
    for damaged in ({"relu_activations": "ReLU"}, ["relu"], {"relu_activations": [{"name": 3, "type": "ReLU"}]},
                    {"relu_activations": [{"name": "a", "type": "ReLU", "inputs": "(", "outputs": None}]}):
        doc = json.loads(cm.dumps())
        doc["_meta"]["activation_layers"] = damaged
        assert activation_layers(CollectionManager.loads(json.dumps(doc))) is None
    assert "activation_layers" in caplog.text
    # a kind of a newer writer is skipped, and a kind an older writer did not know stays unknown
    doc = json.loads(cm.dumps())
    doc["_meta"]["activation_layers"] = {"mish_activations": [], "relu_activations": []}
    assert activation_layers(CollectionManager.loads(json.dumps(doc))) == {"relu_activations": []}
    # a framework that is no string is no framework
    assert framework_of(CollectionManager.loads('{"collections": {}, "_meta": {"num_workers": 1, "framework": 7}}')) \
        is None


def test_add_to_collections_makes_the_layers_tensors_members(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["relu_activations", "tanh_activations"])
    layer = ActivationLayer("act", "ReLU", io_regex("act", "input"), io_regex("act", "output"))
    add_to_collections(hook, {"relu": [layer], "tanh": []})
    hook.begin_step()
    for name in ("act_input_0", "act_output_0", "other_output_0"):
        hook.record(name, [1.0, -1.0])
    hook.end_step()
    hook.close()
    assert not hook.disabled  # the empty tanh collection is no configuration error
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor_names() == ["act_input_0", "act_output_0"]
    assert activation_layers(trial)["relu_activations"] == [layer]


def test_the_losses_a_run_was_trained_with_are_recorded_with_their_inputs(tmp_path, caplog):
    from smdebug.core.loss_inputs import LOGITS, REGRESSION, LossInputs, add_loss, recorded_losses

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["loss_inputs"])
    assert recorded_losses(hook.collection_manager) is None  # nothing recorded: unknown, not "no loss"
    ce = LossInputs("CrossEntropyLoss", "CrossEntropyLoss", LOGITS, io_regex("CrossEntropyLoss", "input", 0),
                    io_regex("CrossEntropyLoss", "input", 1))
    add_loss(hook, ce)
    add_loss(hook, LossInputs("mse", "MSELoss", REGRESSION, io_regex("mse", "input", 0)))
    add_loss(hook, ce)  # registered again: one entry
    hook.begin_step()
    for name in ("CrossEntropyLoss_input_0", "CrossEntropyLoss_input_1", "CrossEntropyLoss_output_0",
                 "mse_input_0", "mse_input_1"):
        hook.record(name, [1.0, -1.0])
    hook.end_step()
    hook.close()
    assert not hook.disabled
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor_names(collection="loss_inputs") == ["CrossEntropyLoss_input_0", "CrossEntropyLoss_input_1",
                                                            "mse_input_0"]
    losses = recorded_losses(trial)
    assert [(loss.name, loss.expects) for loss in losses] == [("mse", REGRESSION), ("CrossEntropyLoss", LOGITS)]
    assert losses[1].prediction_names(trial.tensor_names()) == ["CrossEntropyLoss_input_0"]
    assert losses[0].target_names(trial.tensor_names()) == []
    # a damaged record is said once in the log and read as no record
    doc = json.loads(trial.collection_manager.dumps())
    for damaged in ("mse", [{"name": "a", "type": "A", "expects": "vibes", "predictions": "x"}],
                    [{"name": "a", "type": "A", "expects": "logits", "predictions": "("}]):
        doc["_meta"]["losses"] = damaged
        assert recorded_losses(CollectionManager.loads(json.dumps(doc))) is None
    assert "_meta.losses" in caplog.text


def test_recommended_hook_asks_the_rule_packs(tmp_path, fresh_plugins, monkeypatch):
    """Hook.recommended saves what the installed rule packs name for the hook's framework, on the tapered
    schedule; with no rule pack there is nothing to recommend, which is said clearly."""
    from smdebug.core.plugins import hookimpl

    class Pack:
        @hookimpl
        def smdebug_recommended_collections(framework):
            return ["weights", "relu_activations"] if framework == "numpy-test" else None

    class Other:
        @hookimpl
        def smdebug_recommended_collections(framework):
            return ["weights", "gradients"]

    monkeypatch.setenv("SMDEBUG_DISABLE_PLUGINS", "*")  # the installed packs (smdebug-rules) out of the way
    pm = fresh_plugins.get_plugin_manager()
    with pytest.raises(InvalidConfigurationError, match="no installed rule pack recommends rules for 'numpy-test'"):
        NumpyHook.recommended(str(tmp_path / "none"))
    pm.register(Pack, name="pack")
    pm.register(Other, name="other")
    hook = NumpyHook.recommended(str(tmp_path / "run"), include_collections=["losses"])
    assert hook.include_collections[:4] == ["weights", "relu_activations", "gradients", "losses"]
    assert hook.save_config == SaveConfig.tapered()
    hook.close()
    hook = NumpyHook.recommended(str(tmp_path / "run2"), save_config=SaveConfig(save_interval=7))
    assert hook.save_config == SaveConfig(save_interval=7)
    hook.close()

    class Broken:
        @hookimpl
        def smdebug_recommended_collections(framework):
            return "weights"

    pm.register(Broken, name="broken")
    with pytest.raises(InvalidConfigurationError, match="expected a list of collection names"):
        NumpyHook.recommended(str(tmp_path / "run3"))
