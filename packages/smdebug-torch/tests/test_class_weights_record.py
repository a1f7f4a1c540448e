"""register_loss records the class weights a loss compensates imbalance with (``_meta.class_weights``)."""

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.class_weights import recorded_class_weights
from smdebug.trials import create_trial


def _meta_after(tmp_path, *losses):
    hook = smd.Hook(out_dir=str(tmp_path), include_collections=["losses"])
    model = nn.Linear(3, 2)
    hook.register_module(model)
    for loss in losses:
        hook.register_loss(loss)
    out = model(torch.randn(4, 3))
    losses[0](out, torch.tensor([0, 1, 0, 1]))
    hook.close()
    return create_trial(str(tmp_path))


def test_cross_entropy_and_bce_weights_are_recorded(tmp_path):
    trial = _meta_after(tmp_path, nn.CrossEntropyLoss(weight=torch.tensor([1.0, 9.0])),
                        nn.BCEWithLogitsLoss(pos_weight=torch.tensor([4.0])))
    entries = recorded_class_weights(trial)
    assert [(e.source, e.weights, e.targets) for e in entries] == [
        ("CrossEntropyLoss(weight=...)", {0: 1.0, 1: 9.0}, "^CrossEntropyLoss_input_1$"),
        ("BCEWithLogitsLoss(pos_weight=...)", {1: 4.0}, "^BCEWithLogitsLoss_input_1$"),
    ]


def test_unweighted_losses_record_nothing(tmp_path):
    trial = _meta_after(tmp_path, nn.CrossEntropyLoss(), nn.NLLLoss(weight=torch.ones(3)), nn.MSELoss(),
                        nn.BCEWithLogitsLoss(pos_weight=torch.tensor([4.0, 2.0])))  # (per output: no class ids)
    assert recorded_class_weights(trial) == []
    assert "class_weights" not in trial.collection_manager.meta


def test_a_loss_registered_again_replaces_its_weights(tmp_path):
    # (the same instance: one name, one record; its weights as they are at the last registration)
    hook = smd.Hook(out_dir=str(tmp_path), include_collections=["losses"])
    model = nn.Linear(3, 2)
    hook.register_module(model)
    loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 9.0]))
    hook.register_loss(loss)
    loss.weight = None
    hook.register_loss(loss)
    loss(model(torch.randn(4, 3)), torch.tensor([0, 1, 0, 1]))
    hook.close()
    assert recorded_class_weights(create_trial(str(tmp_path))) == []


def test_a_second_loss_of_the_same_class_keeps_the_first_ones_weights(tmp_path):
    # two instances are two losses (CrossEntropyLoss, CrossEntropyLoss_1), each with its own targets
    trial = _meta_after(tmp_path, nn.CrossEntropyLoss(weight=torch.tensor([1.0, 9.0])), nn.CrossEntropyLoss())
    entries = recorded_class_weights(trial)
    assert [(e.weights, e.targets) for e in entries] == [({0: 1.0, 1: 9.0}, "^CrossEntropyLoss_input_1$")]
