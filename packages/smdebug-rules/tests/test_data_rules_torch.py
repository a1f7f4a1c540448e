"""The activation, input and classification rules on real (tiny) PyTorch runs: a run that has the problem,
and a healthy one where the rule must stay quiet."""

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.rules import run_rules

from _torch_runs import classification_data, mlp, train_torch


def findings(path, rule, **params):
    result = run_rules(str(path), [(rule, {k: str(v) for k, v in params.items()})])
    rule_result = result.rules[0]
    assert rule_result.error is None, rule_result.error
    return [f.step for f in rule_result.findings]


# --------------------------------------------------------------------------------------------------------
# activations
# --------------------------------------------------------------------------------------------------------
def test_dead_relu_after_a_very_negative_bias(tmp_path):
    dead = mlp(depth=1)
    with torch.no_grad():
        dead.fc0.bias.fill_(-10.0)  # w.x stays within a few units: every ReLU unit is off for every sample
    path = train_torch(tmp_path / "dead", dead, classification_data(), steps=5, include_regex=["relu_output"])
    assert findings(path, "dead_relu") == list(range(5))  # layer0_relu_output_0 matches the default regex
    healthy = train_torch(tmp_path / "healthy", mlp(depth=1), classification_data(), steps=5,
                          include_regex=["relu_output"])
    assert findings(healthy, "dead_relu") == []


def test_saturated_tanh_after_scaling_the_weights_up(tmp_path):
    data = classification_data()
    saturated = mlp(depth=1, activation=nn.Tanh)
    with torch.no_grad():
        saturated.fc0.weight.mul_(10_000.0)  # tanh inputs in the thousands: flat, no gradient
    path = train_torch(tmp_path / "saturated", saturated, data, steps=5, include_regex=["tanh_input"])
    assert findings(path, "saturated_activation") == list(range(5))
    normal = train_torch(tmp_path / "normal", mlp(depth=1, activation=nn.Tanh), data, steps=5,
                         include_regex=["tanh_input"])
    assert findings(normal, "saturated_activation") == []


# --------------------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------------------
class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv0 = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv0(x)).flatten(1))


def test_check_input_images_on_unnormalised_pixels(tmp_path):
    g = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (640, 3, 8, 8), generator=g).float()
    labels = torch.randint(0, 2, (640,), generator=g)
    mean = pixels.mean(dim=(0, 2, 3), keepdim=True)
    std = pixels.std(dim=(0, 2, 3), keepdim=True)
    params = {"regex": ".*conv0_input_0"}
    raw = train_torch(tmp_path / "raw", TinyCNN(), (pixels, labels), steps=10, batch_size=64, lr=1e-5,
                      include_regex=["conv0_input"])
    assert findings(raw, "check_input_images", **params) == [7, 8, 9]  # 512 images seen at step 7
    normalised = train_torch(tmp_path / "normalised", TinyCNN(), ((pixels - mean) / std, labels), steps=10,
                             batch_size=64, lr=1e-5, include_regex=["conv0_input"])
    assert findings(normalised, "check_input_images", **params) == []


class TextNet(nn.Module):
    def __init__(self, vocabulary=100):
        super().__init__()
        torch.manual_seed(0)
        self.embedding0 = nn.Embedding(vocabulary, 8, padding_idx=0)
        self.fc = nn.Linear(8, 3)

    def forward(self, tokens):
        return self.fc(self.embedding0(tokens).mean(dim=1))


def sequences(padding_fraction, n=64, length=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, 100, (n, length), generator=g)
    lengths = torch.full((n,), int(round(length * (1 - padding_fraction))))
    tokens[torch.arange(length)[None, :] >= lengths[:, None]] = 0  # padded at the end
    return tokens, torch.randint(0, 3, (n,), generator=g)


def test_nlp_sequence_ratio_on_mostly_padded_sequences(tmp_path):
    padded = train_torch(tmp_path / "padded", TextNet(), sequences(0.8), steps=4, include_regex=["embedding0_input"])
    assert findings(padded, "nlp_sequence_ratio") == list(range(4))
    dense = train_torch(tmp_path / "dense", TextNet(), sequences(0.1), steps=4, include_regex=["embedding0_input"])
    assert findings(dense, "nlp_sequence_ratio") == []
    assert findings(dense, "nlp_sequence_ratio", token_thresholds_percent="9.9") == list(range(4))


# --------------------------------------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------------------------------------
def train_classifier(out_dir, model, x, y, steps, lr=0.1):
    """Full-batch Adam steps saving the step's labels and logits (``labels``/``predictions`` collections)."""
    hook = smd.Hook(out_dir=str(out_dir), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["losses"])  # save_tensor adds labels and predictions
    hook.register_module(model)
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=lr) if lr else None
    for _ in range(steps):
        logits = model(x)
        hook.save_tensor("labels", y, "labels")
        hook.save_tensor("predictions", logits.detach(), "predictions")
        if opt is not None:
            opt.zero_grad()
            loss_fn(logits, y).backward()
            opt.step()
    hook.close()
    return str(out_dir)


def fit(model, x, y, steps=20, lr=0.1):
    """Train without a hook (a model that has already learned when the saved run begins)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def clusters(counts, seed=0, spread=0.5):
    """Separable classes: class k around a centre of its own, ``counts[k]`` samples."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[3.0, 0.0], [-3.0, 3.0], [-3.0, -3.0]])
    y = torch.cat([torch.full((c,), k) for k, c in enumerate(counts)])
    x = centres[y] + spread * torch.randn(len(y), 2, generator=g)
    return x, y


def linear(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 3))


def test_confusion_learnable_vs_unlearnable_labels(tmp_path):
    x, y = clusters([50, 50, 50])
    learned = train_classifier(tmp_path / "learned", linear(), x, y, steps=30)
    # judged on the trained model (the last step, once training has ended): learned, quiet
    assert findings(learned, "confusion") == []
    g = torch.Generator().manual_seed(1)
    shuffled = y[torch.randperm(len(y), generator=g)]  # labels unrelated to the inputs: nothing to learn
    unlearnable = train_classifier(tmp_path / "unlearnable", linear(), x, shuffled, steps=30)
    assert findings(unlearnable, "confusion") == [29]


def test_class_imbalance_on_imbalanced_labels_and_a_stuck_model(tmp_path):
    x, y = clusters([190, 10, 0])  # 19:1
    imbalanced = train_classifier(tmp_path / "imbalanced", linear(), x, y, steps=5)
    # 380:20 labels at step 1 is beyond doubt ((sqrt(380) - 1)^2 / (sqrt(20) + 1)^2 = 11.4 > 10): 500 not needed
    assert findings(imbalanced, "class_imbalance", argmax="True") == [1, 2, 3, 4]
    x, y = clusters([50, 50, 50])
    # counts and mispredictions accumulate over the run: a model that starts out random is judged on its
    # early mistakes too, so the healthy run starts from a model that has learned already
    balanced = train_classifier(tmp_path / "balanced", fit(linear(), x, y), x, y, steps=5)
    assert findings(balanced, "class_imbalance", argmax="True") == []
    assert findings(balanced, "confusion") == []
    stuck = linear()
    with torch.no_grad():
        stuck[0].bias.copy_(torch.tensor([100.0, 0.0, 0.0]))  # always predicts class 0 and never trains
    stuck_path = train_classifier(tmp_path / "stuck", stuck, x, y, steps=5, lr=0)
    # mispredictions are judged on the last step once training has ended (the trained model)
    assert findings(stuck_path, "class_imbalance", argmax="True") == [4]
