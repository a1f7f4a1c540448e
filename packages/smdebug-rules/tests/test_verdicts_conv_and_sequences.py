"""Verdicts that depend on what a tensor's axes are: DeadRelu counts a convolution's units per channel (a filter
shared by every position dies as a whole; positions that are off for every sample are no dead units), and
CheckInputImages judges images only, not the sequences of a recurrent model.

Real tiny PyTorch runs written with ``Hook.recommended``, read by ``run_rules``."""

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES, NOT_APPLICABLE
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")
nn = torch.nn
smd = pytest.importorskip("smdebug.pytorch")


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _train(out_dir, model, x, y, steps=20, lr=0.05, loss_fn=None):
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        start = (step * 32) % len(x)
        opt.zero_grad()
        loss_fn(model(x[start:start + 32]), y[start:start + 32]).backward()
        opt.step()
    hook.close()
    return str(out_dir)


def _rule(path, rule, params=None):
    return run_rules(path, [(rule, dict(params or {}))]).rules[0]


def _centred_images(n=256, size=12, inner=4, seed=0):
    """(n, 1, size, size) images that are 0 outside a centred inner x inner patch (a zero-padded border, as
    digits centred in a larger frame), with labels from the patch."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, 1, size, size)
    lo = (size - inner) // 2
    x[:, :, lo:lo + inner, lo:lo + inner] = torch.randn(n, 1, inner, inner, generator=g)
    y = (x[:, 0, lo:lo + inner // 2].sum(dim=(1, 2)) > 0).long()
    return x, y


class _BorderCNN(nn.Module):
    """A convolution without bias on zero-bordered images: at the positions whose 3x3 window is all border its
    output is exactly 0 for every image, so the ReLU is off there, while every channel fires in the middle."""

    def __init__(self, dead_channels=()):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(1, 8, 3, padding=1, bias=bool(dead_channels))
        self.act = nn.ReLU()
        self.head = nn.Linear(8 * 12 * 12, 2)
        if dead_channels:
            with torch.no_grad():
                self.conv.bias.zero_()
                for c in dead_channels:
                    self.conv.bias[c] = -50.0  # below 0 at every position of every image: a dead filter

    def forward(self, x):
        return self.head(self.act(self.conv(x)).flatten(1))


def test_positions_off_for_every_sample_are_no_dead_units(tmp_path):
    x, y = _centred_images()
    path = _train(tmp_path, _BorderCNN(), x, y)
    # the ReLU output at the last saved step: most (channel, position) units are never active ...
    trial = create_trial(path)
    value = trial.tensor("act_output_0").value(trial.tensor("act_output_0").steps()[-1])
    assert value.shape == (32, 8, 12, 12)
    by_position = ((value > 0).reshape(32, -1).mean(axis=0) * 100 < 1.0).mean()
    assert by_position > 0.5  # what the rule used to count: more than half "dead"
    # ... but every channel is active somewhere in (almost) every sample
    by_channel = (value > 0).any(axis=(2, 3)).mean(axis=0)
    assert by_channel.min() > 0.5
    r = _rule(path, "DeadRelu")
    assert r.status == NO_ISSUES, (r.detail, r.findings)


def test_a_dead_conv_channel_is_named(tmp_path):
    x, y = _centred_images()
    path = _train(tmp_path, _BorderCNN(dead_channels=(3, 5)), x, y)
    # 2 of 8 channels is no layer-wide death at the default threshold_layer (50%) ...
    assert _rule(path, "DeadRelu").status == NO_ISSUES
    # ... and at 10% it is, counted per channel (the border positions of the live channels are not)
    r = _rule(path, "DeadRelu", {"threshold_layer": "10"})
    assert r.status == ISSUES, (r.detail, r.findings)
    reason = r.findings[0].reason
    assert reason.startswith("act_output_0: 2 of 8 units (channels, axis 1; dead: 3, 5) (25%)"), reason


def test_most_conv_channels_dead_fires_at_the_default(tmp_path):
    x, y = _centred_images()
    path = _train(tmp_path, _BorderCNN(dead_channels=(0, 1, 2, 4, 6, 7)), x, y, steps=10)
    r = _rule(path, "DeadRelu")
    assert r.status == ISSUES and "6 of 8 units (channels" in r.findings[0].reason, (r.detail, r.findings)


class _SequenceNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lstm = nn.LSTM(3, 8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def test_a_recurrent_models_input_is_no_image(tmp_path):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 10, 3, generator=g) * 20 + 100  # (N, L, F) readings in their units
    y = (x[:, :, 0].mean(dim=1) > 100).long()
    path = _train(tmp_path, _SequenceNet(), x, y, lr=0.01)
    r = _rule(path, "CheckInputImages", {"threshold_samples": "100"})
    assert r.status == NOT_APPLICABLE, (r.status, r.findings)
    assert "no image" in r.detail and "recurrent layer" in r.detail and "(32, 10, 3)" in r.detail, r.detail
    # the sequence is UnnormalizedInput's to judge
    assert _rule(path, "UnnormalizedInput").status == ISSUES


def test_image_inputs_are_still_judged(tmp_path):
    g = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 17, (256, 1, 8, 8), generator=g).float()  # 0-16, never scaled
    y = (pixels[:, 0, :4].mean(dim=(1, 2)) > 8).long()
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 64, 2))
    r = _rule(_train(tmp_path / "cnn", cnn, pixels, y, lr=1e-3), "CheckInputImages", {"threshold_samples": "100"})
    assert r.status == ISSUES and "mean of channel 0 is" in r.findings[0].reason, (r.status, r.detail)

    # grayscale (N, H, W) that the model flattens: an image, one channel
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 2))
    r = _rule(_train(tmp_path / "mlp", mlp, pixels[:, 0], y, lr=1e-3), "CheckInputImages",
              {"threshold_samples": "100"})
    assert r.status == ISSUES and "mean of channel 0 is" in r.findings[0].reason, (r.status, r.detail)

    # (N, L, F) read position by position (no flattening, no convolution): nothing says it is an image
    torch.manual_seed(0)
    per_step = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16, 2))
    r = _rule(_train(tmp_path / "per-step", per_step, pixels[:, 0], y, lr=1e-3), "CheckInputImages",
              {"threshold_samples": "100"})
    assert r.status == NOT_APPLICABLE and "does not say it is one" in r.detail, (r.status, r.detail)
