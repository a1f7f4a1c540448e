"""ClassImbalance on a binary classifier whose sigmoid output is given to ``BCEWithLogitsLoss``: the recorded loss
says its input is logits (class 1 above 0), but every value is in [0, 1], so every row read as class 1 and a model
93.6% accurate "predicts class 1 for 320 of the 320 samples" (probe 19a W2, 17a F3). Probabilities are read at 0.5;
ImproperOutput says what is wrong with the loss. Real logits keep their threshold of 0."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules.generic.prediction_scale import MARGINS, scores_to_ids
from smdebug.rules.results import ISSUES

from _judging import judged

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_scores_recorded_as_logits_but_all_in_0_1_are_read_as_probabilities():
    told = (MARGINS, "the loss BCEWithLogitsLoss takes raw margins (logits)")
    probabilities = np.linspace(0.02, 0.98, 40)
    ids, how = scores_to_ids(probabilities, told)
    assert ids.tolist() == (probabilities > 0.5).astype(int).tolist() and "above 0.5" in how, how
    logits = np.linspace(-3, 3, 40)
    ids, how = scores_to_ids(logits, told)
    assert ids.tolist() == (logits > 0).astype(int).tolist() and "above 0" in how, how


def test_a_sigmoid_given_to_bce_with_logits_is_not_read_as_one_class(tmp_path):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(640, 8, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).float()
    model, loss_fn = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid()), nn.BCEWithLogitsLoss()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for epoch in range(5):
        for i in range(0, 640, 32):
            opt.zero_grad()
            loss_fn(model(x[i:i + 32]).squeeze(-1), y[i:i + 32]).backward()
            opt.step()
    hook.close()
    with torch.no_grad():
        assert ((model(x).squeeze(-1) > 0.5).float() == y).float().mean() > 0.85  # (a good classifier at 0.5)
    r = judged(str(tmp_path / "run"), "ClassImbalance")
    assert not any("never predicted" in f.reason or "predicts class 1 for" in f.reason for f in r.findings), \
        [f.reason for f in r.findings[:2]]
    assert judged(str(tmp_path / "run"), "ImproperOutput").status == ISSUES
