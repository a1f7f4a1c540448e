"""The Lightning callback given a hook that already follows the model (``hook.register_module(model)`` in the
script): a call of the model before ``fit`` (a shape check) began a step the trainer's steps collided with, and
Lightning's sanity check was saved into it; ``validate()``/``test()`` after fit, the documented path, warned that
the model "is already registered with this hook" each time."""

import logging

import pytest

L = pytest.importorskip("lightning")

import torch  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.testing import capture_smdebug_log  # noqa: E402
from smdebug.pytorch.lightning import SmdebugCallback  # noqa: E402
from test_lightning import Net, loader  # noqa: E402

TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL


def _trainer(hook):
    return L.Trainer(accelerator="cpu", max_epochs=1, limit_train_batches=3, limit_val_batches=2,
                     limit_test_batches=2, num_sanity_val_steps=2, callbacks=[SmdebugCallback(hook=hook)], logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)


def test_a_step_begun_before_fit_is_dropped_and_validate_after_fit_says_nothing(out_dir):
    torch.manual_seed(0)
    model = Net()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses", "inputs"])
    hook.register_module(model)
    model(torch.randn(2, 10))  # a shape check: begins a step, as every forward call of the registered model
    trainer = _trainer(hook)
    with capture_smdebug_log() as log:
        trainer.fit(model, loader(0), loader(1))
        trainer.validate(model, loader(1), verbose=False)
        trainer.test(model, loader(2), verbose=False)
    hook.close()
    warnings = [r.getMessage() for r in log.records if r.levelno >= logging.WARNING]
    assert warnings == []  # (neither "already registered" nor "numbering continues")
    trial = smd.create_trial(out_dir)
    assert trainer.global_step == 3
    assert trial.steps(mode=TRAIN) == [0, 1, 2]
    assert trial.tensor("gradient/Net_fc1.weight").steps(mode=TRAIN) == [0, 1, 2]
    assert [trial.tensor("Net_input_0").value(step, mode=TRAIN).shape for step in range(3)] == [(8, 10)] * 3
    assert trial.tensor("val_loss").steps(mode=TRAIN) == []
    assert trial.steps(mode=EVAL) == list(range(6))  # fit's validation, validate(), test(): 2 batches each
