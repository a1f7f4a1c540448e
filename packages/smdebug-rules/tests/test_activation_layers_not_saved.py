"""A rule that reads an activation collection, on a run whose hook found such layers but saved none of their
tensors (the collection was left out, or the layers ran inside a hybridized Gluon block or a compiled graph):
NotEvaluated said only "looked for collection 'relu_activations' (outputs of its layers) -> none", which reads
as if the model had no ReLU. The detail now names the layers found and why their tensors can be missing."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import smdebug.pytorch as smd  # noqa: E402
from smdebug.rules import run_rules  # noqa: E402
from smdebug.rules.results import NOT_EVALUATED  # noqa: E402


def test_relu_layers_whose_outputs_were_not_saved_are_named(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["losses", "gradients"])  # (relu_activations left out)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(16, 4)
        opt.zero_grad()
        loss_fn(model(x), (x[:, 0] > 0).long()).backward()
        opt.step()
    hook.close()
    (result,) = run_rules(str(tmp_path / "run"), ["DeadRelu"]).rules
    assert result.status == NOT_EVALUATED, (result.status, result.detail)
    assert "the hook found 1 (1) but the run holds none of their outputs" in result.detail, result.detail
    # in the run's framework's terms: how to include the collection, and PyTorch's graphs (no Gluon block)
    assert "the collection was not saved (include 'relu_activations'" in result.detail, result.detail
    assert "torch.compile" in result.detail and "Gluon" not in result.detail, result.detail


def test_a_pytorch_verdict_does_not_name_mxnets_default_input(tmp_path):
    """CheckInputImages' default regex is the original's, an MXNet Gluon name: a PyTorch run's verdict named it
    ("tensors matching '.*hybridsequential0_input_0' -> none"), which a PyTorch user cannot act on."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["losses"])  # (inputs left out)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for _ in range(3):
        x = torch.randn(16, 4)
        loss_fn(model(x), (x[:, 0] > 0).long()).backward()
    hook.close()
    (result,) = run_rules(str(tmp_path / "run"), ["CheckInputImages"]).rules
    assert result.status == NOT_EVALUATED, (result.status, result.detail)
    assert "collection 'inputs' -> none" in result.detail and "hybridsequential" not in result.detail, result.detail
