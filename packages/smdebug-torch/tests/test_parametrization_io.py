"""A parametrized weight (weight norm, spectral norm: ``torch.nn.utils.parametrizations``) is saved as its real
parameters only: the parametrization's modules are no layers of the model, and their inputs and outputs (copies
of those parameters, the weight computed from them) are not saved as module I/O -- they landed in ``weights``
and ``layers`` at every save, doubling the weights a rule judged (probe 14a x F8)."""

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.trials import create_trial
from smdebug_test_support.threads import one_torch_thread

parametrizations = pytest.importorskip("torch.nn.utils.parametrizations")


@pytest.fixture(autouse=True)
def _one_thread():
    with one_torch_thread():
        yield


def test_parametrizations_io_is_not_saved(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(parametrizations.weight_norm(nn.Linear(6, 8)), nn.ReLU(),
                          parametrizations.spectral_norm(nn.Linear(8, 3)))
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "layers", "gradients"])
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
    for _ in range(2):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    hook.close()

    trial = create_trial(str(tmp_path))
    names = trial.tensor_names()
    weights = trial.tensor_names(collection="weights")
    assert sorted(weights) == ["Sequential_0.parametrizations.weight.original0",
                               "Sequential_0.parametrizations.weight.original1",
                               "Sequential_2.parametrizations.weight.original"]
    assert not [n for n in names if "parametrizations" in n and ("_input_" in n or "_output_" in n)]
    # the layers themselves are still hooked
    assert "0_output_0" in names and "2_input_0" in names
