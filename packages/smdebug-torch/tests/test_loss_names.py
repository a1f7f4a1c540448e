"""Loss modules of one class, a model's loss submodules and its keyword inputs, in real torch loops: a GAN-like
loop with two BCEWithLogitsLoss modules and two optimizers saves two loss series, not one that alternates."""

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core import loss_inputs

TRAIN = smd.modes.TRAIN


def _hook(out, collections=("losses", "loss_inputs", "inputs")):
    return smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=list(collections))


def test_two_losses_of_one_class_are_two_series(tmp_path):
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    D = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    d_loss_fn, g_loss_fn = nn.BCEWithLogitsLoss(), nn.BCEWithLogitsLoss()
    hook = _hook(str(tmp_path / "run"))
    hook.register_module(D)
    hook.register_loss(d_loss_fn)
    hook.register_loss(g_loss_fn)
    hook.register_loss(d_loss_fn)  # the same instance again: keeps its name
    od, og = torch.optim.Adam(D.parameters(), 1e-3), torch.optim.Adam(G.parameters(), 1e-3)
    hook.set_mode(TRAIN)
    d_seen, g_seen = [], []
    for _ in range(4):
        x, z = torch.randn(8, 2), torch.randn(8, 4)
        fake = G(z)
        od.zero_grad()
        dl = d_loss_fn(D(torch.cat([x, fake.detach()])), torch.cat([torch.ones(8, 1), torch.zeros(8, 1)]))
        dl.backward()
        od.step()
        og.zero_grad()
        gl = g_loss_fn(D(fake), torch.ones(8, 1))
        gl.backward()
        og.step()
        d_seen.append(dl.item())
        g_seen.append(gl.item())
    hook.close()
    trial = smd.create_trial(str(tmp_path / "run"))
    assert sorted(trial.tensor_names(collection="losses")) == ["BCEWithLogitsLoss_1_output_0",
                                                               "BCEWithLogitsLoss_output_0"]
    # each forward of D is a step: the D loss at even steps, the G loss at odd ones, each in its own series
    d = trial.tensor("BCEWithLogitsLoss_output_0")
    g = trial.tensor("BCEWithLogitsLoss_1_output_0")
    assert [float(d.value(s)) for s in d.steps()] == [torch.tensor(v).item() for v in d_seen]
    assert [float(g.value(s)) for s in g.steps()] == [torch.tensor(v).item() for v in g_seen]
    assert set(d.steps()).isdisjoint(g.steps())
    names = sorted(r.name for r in loss_inputs.recorded_losses(trial))
    assert names == ["BCEWithLogitsLoss", "BCEWithLogitsLoss_1"]
    assert "BCEWithLogitsLoss_1_input_0" in trial.tensor_names(collection="loss_inputs")


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, features=None):
        return self.fc(features)


def test_a_models_loss_submodule_is_registered_and_keyword_inputs_are_inputs(tmp_path):
    torch.manual_seed(0)
    model = Classifier()
    hook = _hook(str(tmp_path / "run"))
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), 0.1)
    hook.set_mode(TRAIN)
    for _ in range(3):
        x, y = torch.randn(8, 10), torch.randint(0, 3, (8,))
        loss = model.criterion(model(features=x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
    trial = smd.create_trial(str(tmp_path / "run"))
    assert trial.tensor_names(collection="losses") == ["CrossEntropyLoss_output_0"]
    assert [r.name for r in loss_inputs.recorded_losses(trial)] == ["CrossEntropyLoss"]
    assert "CrossEntropyLoss_input_0" in trial.tensor_names(collection="loss_inputs")
    assert trial.tensor_names(collection="inputs") == ["Classifier_input_features"]
    assert trial.tensor("Classifier_input_features").value(0).shape == (8, 10)
