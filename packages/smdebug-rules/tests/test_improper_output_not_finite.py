"""ImproperOutput on a run whose model output is NaN at every save: graph attention over nodes that have no
neighbour (no self-loops) takes a softmax over an all-masked row, which is NaN, and the NaN reaches every weight
through the first backward pass. Every save of the loss's input is left out (NaN says the output broke, not what
kind of output it is), so the rule judges nothing; its NotEvaluated used to read "needs ... at least
min_values=256 values saved" though 256 values were saved at every step (probe 9, t_b_gat_isolated_nodes_no_self_
loops). It now says the values were not finite, from which step, and which rule judges that."""

import pytest

torch = pytest.importorskip("torch")
smd = pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from smdebug.rules.runner import run_rules  # noqa: E402


class MaskedAttention(nn.Module):
    """One graph-attention layer: each node attends over its neighbours (``adjacency``) only, then a classifier."""

    def __init__(self, features=8, width=16, classes=4):
        super().__init__()
        self.embed = nn.Linear(features, width)
        self.score = nn.Linear(2 * width, 1)
        self.head = nn.Linear(width, classes)

    def forward(self, x, adjacency):
        h = self.embed(x)
        n = h.shape[0]
        pairs = torch.cat([h[:, None].expand(n, n, -1), h[None].expand(n, n, -1)], dim=-1)
        scores = self.score(pairs).squeeze(-1).masked_fill(~adjacency, float("-inf"))
        return self.head(torch.softmax(scores, dim=1) @ h)  # an isolated node's row: softmax of all -inf = NaN


def train(out_dir, steps=6, nodes=64):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(nodes, 8, generator=g)
    y = torch.randint(0, 4, (nodes,), generator=g)
    adjacency = torch.rand(nodes, nodes, generator=g) < 0.1
    adjacency[:4] = False  # four isolated nodes, and no self-loops to give them a neighbour
    model, loss_fn = MaskedAttention(), nn.CrossEntropyLoss()
    hook = smd.Hook(str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["loss_inputs", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(x, adjacency), y).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def test_not_finite_outputs_are_said_so(tmp_path):
    torch.set_num_threads(1)
    result = run_rules(train(tmp_path / "run"), [("ImproperOutput", {})]).rules[0]
    assert result.error is None, result.error
    assert result.status == "NotEvaluated"
    # 64 nodes x 4 classes = 256 values at each of the 6 saves: there were values, they were not numbers
    assert "the input of CrossEntropyLoss is not finite (NaN or infinity) from step 0 on" in result.detail, \
        result.detail
    assert "6 saves holding 1536 values" in result.detail, result.detail
    assert "ExplodingTensor" in result.detail
