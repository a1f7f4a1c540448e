"""The Lightning callback (smdebug.pytorch.lightning) with the real Lightning on CPU: modes, the
trainer's global step under gradient accumulation, losses, self.log metrics, gradients."""

import numpy as np
import pytest

L = pytest.importorskip("lightning")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from models import mlp_data  # noqa: E402

TRAIN_BATCHES, ACCUMULATE, VAL_BATCHES = 6, 2, 2


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss)
        self.log("train_acc", (logits.argmax(1) == y).float().mean())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("val_loss", loss)
        return loss

    test_step = validation_step

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).softmax(1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(seed):
    x, y = mlp_data(n=64, seed=seed)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


def trainer(callback, **kw):
    return L.Trainer(accelerator="cpu", max_epochs=1, limit_train_batches=TRAIN_BATCHES,
                     limit_val_batches=VAL_BATCHES, limit_test_batches=2, limit_predict_batches=2,
                     accumulate_grad_batches=ACCUMULATE, num_sanity_val_steps=2, callbacks=[callback], logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, **kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from smdebug.pytorch.lightning import SmdebugCallback

    out = str(tmp_path_factory.mktemp("lightning") / "run")
    torch.manual_seed(0)
    model = Net()
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["weights", "biases", "gradients", "losses", "metrics"])
    t = trainer(cb)
    t.fit(model, loader(0), loader(1))
    t.validate(model, loader(1), verbose=False)
    t.test(model, loader(1), verbose=False)
    t.predict(model, loader(2))
    cb.hook.close()
    assert not cb.hook.disabled
    return smd.create_trial(out), t, model


def test_modes_and_the_trainers_global_step(run):
    trial, t, _ = run
    # 6 batches, 2 per optimizer step: 3 TRAIN steps numbered as trainer.global_step counted them
    assert t.global_step == 3 and trial.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    # the validation of fit, validate() and test(): 2 batches each (the sanity check is not saved)
    assert trial.steps(mode=smd.modes.EVAL) == list(range(6))
    assert trial.steps(mode=smd.modes.PREDICT) == [0, 1]


def test_losses_and_logged_metrics(run):
    trial, _, _ = run
    TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL
    # the loss of both batches of each accumulated step, as training_step computed it (Lightning hands
    # callbacks the loss divided by accumulate_grad_batches)
    for name in ("loss_output_0", "loss_output_1"):
        assert trial.tensor(name).steps(mode=TRAIN) == [0, 1, 2]
    assert trial.tensor("loss_output_0").steps(mode=EVAL) == list(range(6))
    assert {"train_loss", "val_loss", "loss_output_0"} <= set(trial.tensor_names(collection="losses"))
    assert trial.tensor_names(collection="metrics") == ["train_acc"]
    # self.log(...) values of the step, the last batch's under gradient accumulation
    assert trial.tensor("train_loss").steps(mode=TRAIN) == trial.tensor("train_acc").steps(mode=TRAIN) == [0, 1, 2]
    for step in (0, 1, 2):
        assert trial.tensor("train_loss").value(step, mode=TRAIN) == pytest.approx(
            trial.tensor("loss_output_1").value(step, mode=TRAIN), rel=1e-6)
        assert 0 <= trial.tensor("train_acc").value(step, mode=TRAIN) <= 1
    # each evaluation batch logs its val_loss; a training value never shows up in an EVAL step
    assert trial.tensor("val_loss").steps(mode=EVAL) == list(range(6))
    assert trial.tensor("val_loss").steps(mode=TRAIN) == []
    assert trial.tensor("train_loss").steps(mode=EVAL) == []
    for step in range(6):
        assert trial.tensor("val_loss").value(step, mode=EVAL) == pytest.approx(
            trial.tensor("loss_output_0").value(step, mode=EVAL), rel=1e-6)
    # validate() and test() ran the same batches with the same (final) weights
    np.testing.assert_allclose(trial.tensor("val_loss").value(2, mode=EVAL), trial.tensor("val_loss").value(4, mode=EVAL))


def test_weights_and_gradients_per_optimizer_step(run):
    trial, _, model = run
    w, g = trial.tensor("Net_fc1.weight"), trial.tensor("gradient/Net_fc1.weight")
    assert g.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    for step in (0, 1):
        # SGD: the next step's weights are this step's minus lr times the (accumulated) gradient saved
        np.testing.assert_allclose(w.value(step + 1, mode=smd.modes.TRAIN),
                                   w.value(step, mode=smd.modes.TRAIN) - 0.1 * g.value(step, mode=smd.modes.TRAIN),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.fc1.weight.detach().numpy(),
                               w.value(2, mode=smd.modes.TRAIN) - 0.1 * g.value(2, mode=smd.modes.TRAIN),
                               rtol=1e-5, atol=1e-6)


def test_a_second_smdebug_callback_stands_down(tmp_path):
    """Two smdebug callbacks in one Trainer (a script's own and zero-code's): the first follows the
    model, the second does nothing, and both leave the module as they found it."""
    from smdebug.pytorch.lightning import SmdebugCallback

    torch.manual_seed(0)
    model = Net()
    first = SmdebugCallback(out_dir=str(tmp_path / "first"), include_collections=["losses"],
                            save_config=smd.SaveConfig(save_interval=1))
    second = SmdebugCallback(out_dir=str(tmp_path / "second"), include_collections=["losses"])
    t = L.Trainer(accelerator="cpu", max_epochs=1, limit_train_batches=2, limit_val_batches=0, callbacks=[first, second],
                  logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    t.fit(model, loader(0))
    first.hook.close()
    assert "log" not in model.__dict__  # the module's own log() again
    assert smd.create_trial(str(tmp_path / "first")).steps(mode=smd.modes.TRAIN) == [0, 1]
    assert not (tmp_path / "second").exists()


class ManualNet(Net):
    """Manual optimization stepping every STEP_EVERY batches of an epoch: with 6 batches an epoch, the last two
    batches' gradients carry into the next epoch's first optimizer step (never zeroed in between), so that
    optimizer step begins before the epoch's validation and ends after it."""

    STEP_EVERY = 4

    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.manual_backward(loss)
        if batch_idx % self.STEP_EVERY == self.STEP_EVERY - 1:
            opt = self.optimizers()
            opt.step()
            opt.zero_grad()
        self.log("train_loss", loss)
        return loss


def test_an_optimizer_step_that_a_validation_interrupts_keeps_the_trainers_numbering(tmp_path):
    from smdebug.core.testing import capture_smdebug_log
    from smdebug.pytorch.lightning import SmdebugCallback

    out = str(tmp_path / "run")
    torch.manual_seed(0)
    seen = []

    class Watch(L.Callback):
        def on_train_batch_start(self, trainer, *args):
            seen.append(trainer.global_step)

    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["weights", "losses"])
    t = L.Trainer(accelerator="cpu", max_epochs=2, limit_train_batches=TRAIN_BATCHES, limit_val_batches=VAL_BATCHES,
                  num_sanity_val_steps=0, callbacks=[cb, Watch()], logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False)
    with capture_smdebug_log() as log:  # (the smdebug logger does not propagate to the one caplog hears)
        t.fit(ManualNet(), loader(0), loader(1))
    cb.hook.close()
    assert not cb.hook.disabled
    assert seen == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2]  # (global step 1 spans the first validation)
    trial = smd.create_trial(out)
    # every TRAIN step is numbered as the trainer's global step, before and after the interruption; the
    # hook was asked for no step twice (it warned "numbering continues at ..." and ran one ahead from there)
    assert trial.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    assert trial.steps(mode=smd.modes.EVAL) == [0, 1, 2, 3]
    assert "numbering continues" not in log.text


class PartsNet(Net):
    """training_step and validation_step call the module's parts, never ``self(x)`` (the usual Lightning idiom
    ``self.encoder(x)``): the model's own forward never runs."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), y)


@pytest.mark.parametrize("model_class", [PartsNet, Net])
def test_the_batch_is_the_models_input_when_the_step_calls_its_parts(tmp_path, model_class):
    from smdebug.pytorch.lightning import SmdebugCallback

    out = str(tmp_path / "run")
    torch.manual_seed(0)
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=["inputs"])
    t = trainer(cb)
    t.fit(model_class(), loader(0), loader(1))
    cb.hook.close()
    assert not cb.hook.disabled
    trial = smd.create_trial(out)
    name = f"{model_class.__name__}_input_0"
    # x of each of the step's two batches (the model called twice), never the targets
    assert trial.tensor_names(collection="inputs") == [name, f"{model_class.__name__}_input_1"]
    train_x = mlp_data(n=64, seed=0)[0].numpy()
    tensor = trial.tensor(name)
    assert tensor.steps(mode=smd.modes.TRAIN) == [0, 1, 2] and tensor.steps(mode=smd.modes.EVAL) == [0, 1]
    # a TRAIN step of two accumulated batches holds both, in order, as a model called twice would
    assert np.array_equal(tensor.value(0, mode=smd.modes.TRAIN), train_x[:8])
    assert np.array_equal(trial.tensor(f"{model_class.__name__}_input_1").value(0, mode=smd.modes.TRAIN),
                          train_x[8:16])


class NoStepNet(Net):
    """Manual optimization that never calls ``optimizer.step()`` (the user's bug): backward runs at every batch,
    ``trainer.global_step`` stays 0 for the whole run and the weights never move."""

    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        opt = self.optimizers()
        opt.zero_grad()
        self.manual_backward(loss)  # (no opt.step())
        return loss


def test_batches_that_never_step_the_optimizer_are_a_series_of_train_steps(tmp_path):
    """A step gathers the batches of one optimizer step; when no optimizer step comes in more batches than one
    step can gather (manual optimization: an epoch's), each batch is a TRAIN step, so the rules see a curve and
    weights that do not move, not one step holding the whole run with no gradients."""
    from smdebug.pytorch.lightning import SmdebugCallback

    out = str(tmp_path / "run")
    torch.manual_seed(0)
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                         include_collections=["weights", "gradients", "losses"])
    t = L.Trainer(accelerator="cpu", max_epochs=3, limit_train_batches=TRAIN_BATCHES, limit_val_batches=VAL_BATCHES,
                  num_sanity_val_steps=0, callbacks=[cb], logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False)
    model = NoStepNet()
    from smdebug.core.testing import capture_smdebug_log

    with capture_smdebug_log() as log:  # (the smdebug logger does not propagate to the one caplog hears)
        t.fit(model, loader(0), loader(1))
    cb.hook.close()
    assert not cb.hook.disabled and t.global_step == 0
    trial = smd.create_trial(out)
    # the first epoch's 6 batches were one step (they could have been one optimizer step's); then one per batch
    expected = list(range(1 + 2 * TRAIN_BATCHES))
    assert trial.steps(mode=smd.modes.TRAIN) == expected
    assert trial.steps(mode=smd.modes.EVAL) == list(range(3 * VAL_BATCHES))
    assert trial.tensor("loss_output_0").steps(mode=smd.modes.TRAIN) == expected
    assert trial.tensor("loss_output_5").steps(mode=smd.modes.TRAIN) == [0]  # (the first step's 6 batches)
    grads, weights = trial.tensor("gradient/NoStepNet_fc1.weight"), trial.tensor("NoStepNet_fc1.weight")
    assert grads.steps(mode=smd.modes.TRAIN) == expected
    assert all(np.abs(grads.value(s, mode=smd.modes.TRAIN)).sum() > 0 for s in expected)
    first = weights.value(0, mode=smd.modes.TRAIN)
    assert all(np.array_equal(weights.value(s, mode=smd.modes.TRAIN), first) for s in expected)  # never moved
    said = [r.getMessage() for r in log.records if "no optimizer step" in r.getMessage()]
    assert len(said) == 1 and "optimizer.step()" in said[0]


class SkippingStepNet(Net):
    """Manual optimization stepping every other batch, but only from the second epoch on: the first epoch's
    batches never step (a warm-up that forgot the optimizer), then the optimizer steps as it should."""

    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.manual_backward(loss)
        if self.current_epoch >= 2 and batch_idx % 2 == 1:
            opt = self.optimizers()
            opt.step()
            opt.zero_grad()
        return loss


def test_steps_follow_the_global_step_again_once_the_optimizer_steps(tmp_path):
    from smdebug.pytorch.lightning import SmdebugCallback

    out = str(tmp_path / "run")
    torch.manual_seed(0)
    cb = SmdebugCallback(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    t = L.Trainer(accelerator="cpu", max_epochs=3, limit_train_batches=TRAIN_BATCHES, limit_val_batches=0,
                  num_sanity_val_steps=0, callbacks=[cb], logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False)
    t.fit(SkippingStepNet(), loader(0))
    cb.hook.close()
    assert t.global_step == 3
    trial = smd.create_trial(out)
    # epoch 0: one step (0); epoch 1: a step per batch (1-6); epoch 2: its first batch still a step of its own
    # (7), the second steps the optimizer (8), then one step per optimizer step, two batches each, numbered on
    # from there (9, 10: the global steps 1, 2 plus the 8 batches that did not step)
    assert trial.steps(mode=smd.modes.TRAIN) == list(range(11))
    assert trial.tensor("loss_output_1").steps(mode=smd.modes.TRAIN) == [0, 9, 10]
