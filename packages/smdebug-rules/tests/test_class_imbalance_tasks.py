"""ClassImbalance and Confusion judge the label tensors of different tasks apart (probe 11 F1).

A multi-task model trained on balanced classes (CrossEntropyLoss, forty classes) and on whether the class is even
(BCEWithLogitsLoss, two classes), both losses registered: the class counts pooled every "odd" of the yes/no
head into class 0, twenty times as many as any other class, and ClassImbalance called the balanced classes
imbalanced. Judged per task, a real imbalance
of one task is still found and named; the two losses of one class (a GAN's discriminator and generator) stay one
task, whose generator targets are all "real" by design.
"""

import numpy as np
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules.runner import run_rules

from test_data_rules import run


CLASSES, FEATURES = 40, 16


class _TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU())
        self.digit = nn.Linear(64, CLASSES)
        self.even = nn.Linear(64, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.digit(h), self.even(h).squeeze(1)


def _digits(n, seed, weights=None):
    """CLASSES classes, each a cluster in FEATURES dimensions (balanced unless ``weights`` skews them)."""
    g = np.random.default_rng(seed)
    centres = np.random.default_rng(100).normal(0, 3, (CLASSES, FEATURES))
    p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
    y = g.choice(CLASSES, n, p=p)
    x = centres[y] + g.normal(0, 1, (n, FEATURES))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def _train_two_heads(out_dir, weights=None, epochs=8):
    torch.manual_seed(0)
    x, y = _digits(512, 0, weights)
    model, ce, bce = _TwoHeads(), nn.CrossEntropyLoss(), nn.BCEWithLogitsLoss()
    hook = smd.Hook(out_dir=str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["labels", "predictions", "losses"])
    hook.register_module(model)
    hook.register_loss(ce)
    hook.register_loss(bce)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for i in range(0, len(x), 32):
            opt.zero_grad()
            digit, even = model(x[i:i + 32])
            loss = ce(digit, y[i:i + 32]) + 0.3 * bce(even, (y[i:i + 32] % 2 == 0).float())
            loss.backward()
            opt.step()
            losses.append(loss.item())
    hook.close()
    return losses


def _verdicts(path):
    return {r.name: r for r in run_rules(str(path), ["class_imbalance", "confusion"]).rules}


def test_a_multi_task_run_on_balanced_classes_is_no_imbalance(tmp_path):
    losses = _train_two_heads(tmp_path / "run")
    assert losses[-1] < 0.2 * losses[0]  # (healthy: both heads learn)
    verdicts = _verdicts(tmp_path / "run")
    for name in ("ClassImbalance", "Confusion"):
        assert verdicts[name].status == "NoIssuesFound", (name, [f.reason for f in verdicts[name].findings],
                                                          verdicts[name].detail)


def test_the_imbalanced_task_of_a_multi_task_run_is_found_and_named(tmp_path):
    # the first half of the classes fifty times as frequent as the second: an imbalance of that task, whatever
    # the yes/no task does
    _train_two_heads(tmp_path / "run", weights=[50] * (CLASSES // 2) + [1] * (CLASSES // 2))
    verdict = _verdicts(tmp_path / "run")["ClassImbalance"]
    assert verdict.status == "IssuesFound"
    assert verdict.findings[0].reason.startswith("CrossEntropyLoss_input_1: ")


def test_two_losses_of_one_class_are_one_task(tmp_path):
    """A GAN's discriminator targets (real 1 / fake 0) and generator targets (all 1 by design), two instances
    of BCEWithLogitsLoss: counted together, as one task, the generator's targets are no one-class data set."""
    rng = np.random.default_rng(0)
    steps = []
    for _ in range(20):
        steps.append({
            "BCEWithLogitsLoss_input_0": rng.normal(0, 1, 64).astype(np.float32),
            "BCEWithLogitsLoss_input_1": np.repeat([1.0, 0.0], 32).astype(np.float32),
            "BCEWithLogitsLoss_1_input_0": rng.normal(0, 1, 32).astype(np.float32),
            "BCEWithLogitsLoss_1_input_1": np.ones(32, np.float32),
        })
    collections = {"labels": ["^BCEWithLogitsLoss(_1)?_input_1$"], "predictions": ["^BCEWithLogitsLoss(_1)?_input_0$"]}
    run(tmp_path / "gan", steps, collections)
    verdict = _verdicts(tmp_path / "gan")["ClassImbalance"]
    assert verdict.status == "NoIssuesFound", [f.reason for f in verdict.findings]
