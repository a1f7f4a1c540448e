"""DeadRelu reports a layer whose units stay dead, not one whose units are off only while training begins.

A healthy autoencoder's decoder (digits 64-32-8-32-64) sits behind a bottleneck whose output starts near 0, so
its units of negative bias are off for every sample at the first steps (about half of them) and switch on as the
encoder learns: DeadRelu fired at steps 1-6 of such runs (probe 13a F1), and live it would have stopped one."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
sklearn_datasets = pytest.importorskip("sklearn.datasets")

import smdebug.pytorch as smd  # noqa: E402
from smdebug.core.locations import END_OF_JOB_FILE  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


def digits():
    data = sklearn_datasets.load_digits()
    return torch.tensor(data.data / 16.0, dtype=torch.float32)


def train_autoencoder(out_dir, decoder_bias=None, epochs=40):
    """Digits through an 8-unit bottleneck, Adam 3e-3, batches of 64, Hook.recommended; ``decoder_bias``: the
    decoder's hidden biases set to it (-5: every unit dead from the start, for good)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    encoder = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    decoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 64), nn.Sigmoid())
    if decoder_bias is not None:
        with torch.no_grad():
            decoder[0].bias.fill_(decoder_bias)
    model = nn.Sequential(encoder, decoder)
    loss_fn = nn.MSELoss()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    x = digits()
    order = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        for batch in torch.randperm(len(x), generator=order).split(64):
            opt.zero_grad()
            loss = loss_fn(model(x[batch]), x[batch])
            loss.backward()
            opt.step()
    hook.close()
    return str(out_dir), loss.item()


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return train_autoencoder(tmp_path_factory.mktemp("ae") / "run")


def decoder_relu(trial):
    return next(n for n in trial.tensor_names(collection="relu_activations") if n == "1.1_output_0")


def off_share(trial, name, steps):
    """The share of the layer's units off for every sample of the batches saved at ``steps``."""
    batch = np.concatenate([trial.tensor(name).value(s) for s in steps])
    return float(np.mean((batch > 0).mean(axis=0) < 0.01))


def dead_relu(run):
    return run_rules(run, ["DeadRelu"]).rules[0]


def test_units_off_only_while_training_begins_are_no_dead_layer(healthy):
    run, loss = healthy
    assert loss < 0.03  # (it learned: pixel variance is about 0.14)
    trial = create_trial(run)
    name = decoder_relu(trial)
    last = trial.tensor(name).steps()[-3:]
    assert off_share(trial, name, [0, 1]) > 0.5 > off_share(trial, name, last) + 0.3  # (the case: off, then on)
    verdict = dead_relu(run)
    assert verdict.status == "NoIssuesFound", verdict


def test_judged_while_it_trains_a_layer_off_for_its_first_saves_only_is_not_reported(healthy, tmp_path):
    run, _ = healthy
    live = str(tmp_path / "live")
    shutil.copytree(run, live)
    os.remove(os.path.join(live, END_OF_JOB_FILE))  # the same saves, read as a run still training
    result = run_rules(live, ["DeadRelu"])
    assert not result.training_ended
    assert result.rules[0].findings_total == 0, result.rules[0]


def test_a_layer_dead_from_the_start_to_the_end_is_reported_finished_and_live(tmp_path):
    run, _ = train_autoencoder(tmp_path / "run", decoder_bias=-5.0, epochs=5)
    verdict = dead_relu(run)
    assert verdict.status == "IssuesFound", verdict
    assert "32 of 32 units" in verdict.findings[0].reason and "still so at its last saves" in verdict.findings[0].reason
    live = str(tmp_path / "live")
    shutil.copytree(run, live)
    os.remove(os.path.join(live, END_OF_JOB_FILE))
    result = run_rules(live, ["DeadRelu"])
    assert result.rules[0].findings_total > 0, result.rules[0]
    assert result.rules[0].findings[0].step < 10  # (dead at every save since half-way, in two pools by then)
