"""The PyTorch hook writing into hostile out_dirs and saving hostile names (RELIABILITY.md, "attack
catalogue"): real training in every case; it must finish with the same result as without a hook, the hook
says once what it could not do, and what it could save reads back."""

import os
import sys

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from models import MLP, train

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-system objects")


def _train(out_dir, model=None, steps=6, **kw):
    torch.manual_seed(0)
    model = model or MLP()
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=kw.pop("include_collections", ["weights", "gradients", "losses"]), **kw)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    losses = train(model, steps, loss_fn=loss_fn)
    hook.close()
    return hook, losses


def _reference_losses(steps=6):
    torch.manual_seed(0)
    return train(MLP(), steps, loss_fn=nn.CrossEntropyLoss())


class Named(nn.Module):
    """An MLP whose first layer's name holds a lone surrogate (what a name decoded with surrogateescape
    holds, e.g. one built from a file name that is not UTF-8)."""

    BAD = "fc\udcff1"

    def __init__(self):
        super().__init__()
        self.add_module(self.BAD, nn.Linear(10, 16))
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(getattr(self, self.BAD)(x)))


def test_a_module_named_with_bytes_that_are_not_text_costs_its_own_tensors_only(out_dir):
    """Its tensors cannot be written. Before, the writer thread failed on the first one and the hook
    disabled itself, so the run held nothing; now those names are refused once each, the rest is saved."""
    from smdebug.core.testing import capture_smdebug_log

    torch.manual_seed(0)
    reference = train(Named(), 6, loss_fn=nn.CrossEntropyLoss())
    torch.manual_seed(0)
    with capture_smdebug_log() as log:
        hook, losses = _train(out_dir, model=Named())
    assert losses == pytest.approx(reference, rel=1e-6)
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    assert "Named_fc2.weight" in trial.tensor_names() and trial.steps() == list(range(6))
    assert not any("\udcff" in n for n in trial.tensor_names())
    assert "not saving the tensor named 'Named_fc\\udcff1.weight'" in log.text, log.text[-2000:]


def test_a_tensor_with_no_values_costs_itself_only_and_a_quantized_one_is_saved(out_dir):
    """A meta-device tensor has a shape but no data: refused once, the rest of the run saved (it disabled the
    hook, and every later tensor was lost). A quantized tensor is saved as the values it stands for."""
    from smdebug.core.testing import capture_smdebug_log

    torch.manual_seed(0)
    model, loss_fn = MLP(), nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    quantized = torch.quantize_per_tensor(torch.tensor([0.5, -1.0, 2.0]), 0.5, 0, torch.qint8)
    with capture_smdebug_log() as log:
        for _ in range(4):
            train(model, 1, loss_fn=loss_fn)
            hook.save_tensor("empty", torch.empty(3, 3, device="meta"), ["weights"])
            hook.save_tensor("quantized", quantized, ["weights"])
        hook.close()
    assert not hook.disabled
    trial = smd.create_trial(out_dir)
    assert trial.steps() == list(range(4)) and "empty" not in trial.tensor_names()
    assert trial.tensor("quantized").value(3).tolist() == [0.5, -1.0, 2.0]
    assert trial.tensor("CrossEntropyLoss_output_0").steps() == list(range(4))
    assert log.text.count("not saving the tensor 'empty': a tensor on the 'meta' device") == 1, log.text[-2000:]


@pytest.mark.parametrize("place", ["index", "events", "collections"])
@pytest.mark.parametrize("kind", ["fifo", "link-outside", "file"])
def test_hostile_objects_planted_in_out_dir_before_training(tmp_path, place, kind):
    """index/, events/ or collections/ replaced, before training starts, by a FIFO, a link to a folder
    outside the run or a plain file: training is unchanged, nothing is written outside the run, the hook
    says what it could not save."""
    out = tmp_path / "run"
    out.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = out / place
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-outside":
        os.symlink(outside, target)
    else:
        target.write_text("not a folder")
    hook, losses = _train(str(out))
    assert losses == pytest.approx(_reference_losses(), rel=1e-6)
    assert list(outside.iterdir()) == []  # nothing written through the link
    if place == "collections":  # (the steps themselves were saved)
        trial = smd.create_trial(str(out))
        assert trial.steps() == list(range(6))
        assert trial.tensor("MLP_fc1.weight").value(0).shape == (16, 10)
