"""A model trained on after ``hook.close()`` (a second training phase, a model registered again): the run is
finished, so nothing more is saved, said once; the hook's earlier steps stay as they were and training is
unchanged. It used to reopen writing, find the run's end marker and blame "another process"."""

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from models import MLP, train
from smdebug.core.testing import capture_smdebug_log


def test_training_after_close_is_refused_once_and_the_run_stays_as_it_was(out_dir):
    torch.manual_seed(0)
    model = MLP()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    hook.register_module(model)
    train(model, 2)
    hook.close()
    torch.manual_seed(1)
    second = MLP()
    with capture_smdebug_log() as log:
        hook.register_module(second)  # (close() detached the first model)
        hook.save_scalar("after", 1.0)
        hook.record_tensor_value("late_loss", torch.ones(1))
        losses = train(second, 3)
        hook.close()
    torch.manual_seed(1)
    assert losses == pytest.approx(train(MLP(), 3), rel=1e-6)
    assert not hook.disabled
    said = [line for line in log.text.splitlines() if "after the hook was closed" in line]
    assert len(said) == 1, log.text
    assert "another process" not in log.text
    trial = smd.create_trial(out_dir)
    assert trial.steps() == [0, 1]
    assert all(not n.startswith("scalar/") and "late" not in n for n in trial.tensor_names())
