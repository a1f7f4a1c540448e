"""ImproperOutput on a per-token loss that counts its targets' padding (probe 15b F4: a language model's
CrossEntropyLoss left at ignore_index=-100 while its targets were padded with id 0, 70% of them; the loss read
0.49 and no rule fired).

Real trainings of small token models under ``Hook.recommended``: a GRU language model with the targets flattened
(``logits.view(-1, V)``, the usual way) or kept as rows with the classes second, padded at the end or at the start;
the same models with the padding left out (``ignore_index=0``, or -100 at padded positions) are let be, and so are
a sequence classifier whose class 0 shares the padding's id and a tagger whose real tag recurs at the ends.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules
from smdebug.rules.generic.counted_padding import padding_id
from smdebug.rules.results import ISSUES, NO_ISSUES

VOCABULARY, PAD, LENGTH = 20, 0, 24


def sentences(n: int, seed: int, side: str = "end") -> torch.Tensor:
    """``n`` token sequences of 5-15 ids from a random Markov chain over 1..V-1, padded with PAD to LENGTH."""
    rng = np.random.default_rng(seed)
    chain = np.random.default_rng(99).dirichlet(np.full(VOCABULARY - 1, 0.2), size=VOCABULARY - 1)
    rows = np.full((n, LENGTH), PAD, dtype=np.int64)
    for i in range(n):
        length = int(rng.integers(5, 16))
        tokens = [int(rng.integers(1, VOCABULARY))]
        for _ in range(length - 1):
            tokens.append(1 + int(rng.choice(VOCABULARY - 1, p=chain[tokens[-1] - 1])))
        if side == "end":
            rows[i, :length] = tokens
        else:
            rows[i, LENGTH - length:] = tokens
    return torch.tensor(rows)


class TokenModel(nn.Module):
    """Embedding, GRU, one score per vocabulary id at each position: ``(N, T, V)``."""

    def __init__(self, classes: int = VOCABULARY):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(VOCABULARY, 16)
        self.rnn = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, classes)

    def forward(self, tokens):
        return self.head(self.rnn(self.embed(tokens))[0])


def train_language_model(out_dir, loss_fn, *, layout: str = "flat", side: str = "end", mask_targets=False,
                         steps: int = 30):
    """Next-token prediction; ``layout``: ``"flat"`` (scores (N*T, V), targets (N*T,)) or ``"rows"`` (scores
    (N, V, T), targets (N, T)); ``mask_targets``: padded targets set to -100 (what a data collator does)."""
    data = sentences(256, seed=1, side=side)
    model = TokenModel()
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(steps):
        batch = data[(step * 32) % len(data):][:32]
        inputs, targets = batch[:, :-1], batch[:, 1:].clone()
        if mask_targets:
            targets[targets == PAD] = -100
        optimizer.zero_grad()
        scores = model(inputs)
        if layout == "flat":
            loss = loss_fn(scores.reshape(-1, VOCABULARY), targets.reshape(-1))
        else:
            loss = loss_fn(scores.transpose(1, 2), targets)
        loss.backward()
        optimizer.step()
    hook.close()


def improper_output(run):
    return run_rules(str(run), rules=["ImproperOutput"], ended=True).rules[0]


@pytest.mark.parametrize("layout,side", [("flat", "end"), ("rows", "end"), ("flat", "start")])
def test_a_language_model_whose_loss_counts_the_padding(tmp_path, layout, side):
    train_language_model(tmp_path / "run", nn.CrossEntropyLoss(), layout=layout, side=side)
    result = improper_output(tmp_path / "run")
    assert result.status == ISSUES, result
    reason = result.findings[0].reason
    assert "counts the padding of its targets" in reason, reason
    assert f"{side} in runs of id 0" in reason and "ignore_index=0" in reason, reason


@pytest.mark.parametrize("how", ["ignore_index", "masked_targets"])
def test_a_language_model_that_leaves_the_padding_out(tmp_path, how):
    if how == "ignore_index":
        train_language_model(tmp_path / "run", nn.CrossEntropyLoss(ignore_index=PAD))
    else:
        train_language_model(tmp_path / "run", nn.CrossEntropyLoss(), mask_targets=True)
    assert improper_output(tmp_path / "run").status == NO_ISSUES


def test_log_probabilities_under_nll_loss_are_judged_alike(tmp_path):
    class LogSoftmaxModel(TokenModel):
        def forward(self, tokens):
            return torch.log_softmax(super().forward(tokens), dim=-1)

    data = sentences(128, seed=2)
    model, loss_fn = LogSoftmaxModel(), nn.NLLLoss()
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(12):
        batch = data[(step * 32) % len(data):][:32]
        optimizer.zero_grad()
        loss = loss_fn(model(batch[:, :-1]).reshape(-1, VOCABULARY), batch[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
    hook.close()
    result = improper_output(tmp_path / "run")
    assert result.status == ISSUES and "NLLLoss counts the padding" in result.findings[0].reason, result


def test_a_sequence_classifier_whose_class_zero_is_the_padding_id_is_let_be(tmp_path):
    # (one class per sequence: targets (N,), no rows to hold padding, although class 0 is frequent)
    data = sentences(256, seed=3)
    classes = (data[:, 0] % 3 == 0).long()  # about a third class 1, the rest class 0

    class Classifier(TokenModel):
        def forward(self, tokens):
            return super().forward(tokens)[:, -1, :2]

    model, loss_fn = Classifier(), nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(20):
        at = (step * 32) % len(data)
        optimizer.zero_grad()
        loss = loss_fn(model(data[at:at + 32]), classes[at:at + 32])
        loss.backward()
        optimizer.step()
    hook.close()
    assert improper_output(tmp_path / "run").status == NO_ISSUES


def test_padding_is_told_from_a_tag_that_recurs_at_the_ends():
    rng = np.random.default_rng(0)
    # a tagger's tags: "O" (0) most of the time, everywhere in a sequence, so also at its end
    tags = np.where(rng.random((64, 20)) < 0.7, 0, rng.integers(1, 5, size=(64, 20)))
    assert padding_id(tags) is None
    padded = tags.copy()
    lengths = rng.integers(8, 18, size=64)
    for row, length in zip(padded, lengths):
        row[row == 0] = 5  # ("O" renumbered: 0 is now the padding only)
        row[length:] = 0
    found = padding_id(padded)
    assert found is not None and found.id == 0 and found.side == "end" and found.padded_rows == 64
    # every sequence padded to the same length is no evidence of padding (a fixed-length field)
    fixed = padded.copy()
    fixed[:, 15:] = 0
    fixed[:, :15][fixed[:, :15] == 0] = 5
    assert padding_id(fixed) is None
