"""ClassImbalance and Confusion on dense prediction (semantic segmentation), on real tiny runs (probe 8, F2/M1):

* per-pixel labels are not counted as samples: background dwarfs small objects in every segmentation set, and
  a healthy segmenter was called imbalanced (PyTorch ``(N, C, H, W)`` scores, Keras ``(N, H, W, C)``, and
  logits flattened to ``(N * H * W, C)`` before the loss, told by the model's input ``(N, 1, H, W)``);
* the trained model's mispredictions are still judged per pixel, over the class axis the shapes imply (axis 1
  for PyTorch): a loss that ignores the background (``ignore_index=0``) and logits flattened without moving
  the classes last are found, and named; positions a loss ignores (``ignore_index=255``) are no class;
* Confusion pairs PyTorch's ``(N, C, H, W)`` scores with their labels; when the shapes leave the class axis
  open and the run does not tell its framework, it says so instead of guessing.
"""

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import smdebug.pytorch as smd
from smdebug.rules.runner import run_rules

from _tensorflow import tensorflow_one_thread
from test_data_rules import run

torch.set_num_threads(1)

#: brightness of each object class 1..4 in the synthetic images (class 0, the background, is 0): learnable
#: from a 3x3 neighbourhood through the noise
LEVELS = (2.0, 1.0, -1.0, -2.0)
CLASSES = len(LEVELS) + 1


def _squares(n, seed, size=16):
    """``n`` noisy grey images ``(n, 1, size, size)`` with one small square of each object class (3x3 or 5x5
    pixels) and their per-pixel labels ``(n, size, size)``: the background is ~13x the rarest class."""
    g = np.random.default_rng(seed)
    x = np.zeros((n, 1, size, size), np.float32)
    y = np.zeros((n, size, size), np.int64)
    for i in range(n):
        for c, level in enumerate(LEVELS, start=1):
            r = int(g.integers(1, 3))
            cy, cx = g.integers(r, size - r, 2)
            y[i, cy - r:cy + r + 1, cx - r:cx + r + 1] = c
            x[i, 0, cy - r:cy + r + 1, cx - r:cx + r + 1] = level
    x += 0.3 * g.standard_normal(x.shape).astype(np.float32)
    return x, y


class _TinyUNet(nn.Module):
    """One level of a U-Net: a full-resolution branch and a pooled one brought back up, joined."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU())
        self.e2 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.out = nn.Conv2d(32, CLASSES, 1)

    def forward(self, x):
        a = self.e1(x)
        return self.out(torch.cat([a, self.up(self.e2(F.max_pool2d(a, 2)))], 1))


def _segment(out_dir, loss_of, ignore_index=-100, steps=60, batch=32):
    """Train the tiny U-Net under ``Hook.recommended`` for ``steps`` steps, then one validation pass (EVAL:
    the trained model's labels and predictions, the last saved); ``loss_of(ce, logits, labels)`` applies the
    loss as the run under test does. Returns the trained model's per-class error on fresh images."""
    torch.manual_seed(0)
    x, y = (torch.tensor(a) for a in _squares(batch * steps, 0))
    model, ce = _TinyUNet(), nn.CrossEntropyLoss(ignore_index=ignore_index)
    hook = smd.Hook.recommended(str(out_dir))
    hook.register_module(model)
    hook.register_loss(ce)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for s in range(steps):
        opt.zero_grad()
        loss_of(ce, model(x[s * batch:(s + 1) * batch]), y[s * batch:(s + 1) * batch]).backward()
        opt.step()
    hook.set_mode(smd.modes.EVAL)
    xv, yv = (torch.tensor(a) for a in _squares(4 * batch, 1))
    with torch.no_grad():
        for b in range(4):
            loss_of(ce, model(xv[b * batch:(b + 1) * batch]), yv[b * batch:(b + 1) * batch])
        predicted = model(xv).argmax(1)
    hook.close()
    return [float((predicted[yv == c] != c).float().mean()) for c in range(CLASSES)]


def _as_is(ce, logits, labels):
    return ce(logits, labels)  # (N, C, H, W) logits, (N, H, W) labels: what CrossEntropyLoss takes


def _flattened(ce, logits, labels):
    # classes moved last, then one row per pixel: correct, but the loss sees (N * H * W, C) and (N * H * W,)
    return ce(logits.permute(0, 2, 3, 1).reshape(-1, CLASSES), labels.reshape(-1))


def _flattened_without_permute(ce, logits, labels):
    # the bug: each "pixel row" holds C neighbouring values of one class's map
    return ce(logits.reshape(-1, CLASSES), labels.reshape(-1))


def _borders_unlabelled(ce, logits, labels):
    """Every background pixel next to an object is labelled 255 and ignored by the loss (the unlabelled
    object outlines of VOC-style masks)."""
    padded = F.pad(labels[:, None].float(), (1, 1, 1, 1), mode="replicate")[:, 0]
    border = torch.zeros_like(labels, dtype=torch.bool)
    for dy, dx in ((0, 1), (2, 1), (1, 0), (1, 2)):
        border |= padded[:, dy:dy + labels.shape[1], dx:dx + labels.shape[2]].long() != labels
    return ce(logits, labels.masked_fill(border & (labels == 0), 255))


def _verdicts(path):
    return {r.name: r for r in run_rules(str(path), ["ClassImbalance", "Confusion"]).rules}


def _said(r):
    return f"{r.status}: {r.findings[0].reason if r.findings else r.detail}"


@pytest.mark.parametrize("loss_of", [_as_is, _flattened], ids=["scores_NCHW", "flattened_logits"])
def test_a_healthy_segmenter_is_no_class_imbalance(tmp_path, loss_of):
    errors = _segment(tmp_path / "run", loss_of)
    assert max(errors) < 0.3, errors  # (it learnt every class)
    verdicts = _verdicts(tmp_path / "run")
    imbalance, confusion = verdicts["ClassImbalance"], verdicts["Confusion"]
    # judged (the trained model's mispredictions), not counted: background is ~13x the rarest class by area
    assert imbalance.status == "NoIssuesFound" and imbalance.steps_evaluated >= 1, _said(imbalance)
    assert confusion.status == "NoIssuesFound", _said(confusion)


def test_positions_the_loss_ignores_are_no_class(tmp_path):
    """CrossEntropyLoss(ignore_index=255) with the objects' borders labelled 255: 255 is no class the model
    scores (its output has 5 channels), not "a class the model mispredicts everywhere" (probe 15b, F1)."""
    errors = _segment(tmp_path / "run", _borders_unlabelled, ignore_index=255)
    assert max(errors) < 0.3, errors
    verdicts = _verdicts(tmp_path / "run")
    imbalance, confusion = verdicts["ClassImbalance"], verdicts["Confusion"]
    assert imbalance.status == "NoIssuesFound" and imbalance.steps_evaluated >= 1, _said(imbalance)
    assert "255" not in (imbalance.detail or ""), imbalance.detail
    assert confusion.status == "NoIssuesFound", _said(confusion)


def test_a_segmenter_that_never_learnt_the_background_is_found(tmp_path):
    """CrossEntropyLoss(ignore_index=0): the background is never supervised, and painted over."""
    errors = _segment(tmp_path / "run", _as_is, ignore_index=0)
    assert errors[0] > 0.9, errors
    verdicts = _verdicts(tmp_path / "run")
    imbalance, confusion = verdicts["ClassImbalance"], verdicts["Confusion"]
    assert imbalance.status == "IssuesFound", _said(imbalance)
    reasons = [f.reason for f in imbalance.findings]
    assert len(reasons) == 1 and reasons[0].startswith("the trained model mispredicts class 0 in "), reasons
    assert "labelled positions" in reasons[0] and "per-pixel targets" in reasons[0], reasons[0]
    assert confusion.status == "IssuesFound", _said(confusion)
    assert confusion.findings[0].reason.startswith("class 0: 0 of "), confusion.findings[0].reason


def test_logits_flattened_without_moving_the_classes_last_are_found(tmp_path):
    """(N, C, H, W).reshape(-1, C): the model cannot learn the scrambled rows and its classes are mispredicted;
    the labels are per pixel by the model's input (N, 1, H, W), 256 of them per image."""
    _segment(tmp_path / "run", _flattened_without_permute)
    imbalance = _verdicts(tmp_path / "run")["ClassImbalance"]
    assert imbalance.status == "IssuesFound", _said(imbalance)
    reasons = [f.reason for f in imbalance.findings]
    assert len(reasons) == 1 and "the trained model mispredicts class" in reasons[0], reasons
    assert "256 class ids per row of the model's input" in reasons[0], reasons[0]


def test_keras_channels_last_segmenter_is_no_class_imbalance(tmp_path):
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf

    keras.utils.set_random_seed(0)
    x, y = _squares(1024, 0)
    xv, yv = _squares(128, 1)
    x, xv = x.transpose(0, 2, 3, 1), xv.transpose(0, 2, 3, 1)  # (N, H, W, 1): Keras's order
    inputs = keras.Input((16, 16, 1))
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(h)
    model = keras.Model(inputs, keras.layers.Conv2D(CLASSES, 1)(h))
    model.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd_tf.KerasHook.recommended(str(tmp_path / "run"))
    # (3 epochs: Hook.recommended saves the validation labels of the third, the last 10% of the run)
    model.fit(x, y, epochs=3, batch_size=32, verbose=0, callbacks=[hook], validation_data=(xv, yv))
    hook.close()
    predicted = model.predict(xv, verbose=0).argmax(-1)
    assert max(float((predicted[yv == c] != c).mean()) for c in range(CLASSES)) < 0.3
    verdicts = _verdicts(tmp_path / "run")
    imbalance, confusion = verdicts["ClassImbalance"], verdicts["Confusion"]
    assert imbalance.status == "NoIssuesFound" and imbalance.steps_evaluated >= 1, _said(imbalance)
    assert confusion.status == "NoIssuesFound", _said(confusion)


def test_scores_whose_class_axis_the_shapes_leave_open_are_not_guessed(tmp_path):
    """Labels (N, 4) scored by (N, 4, 4), saved by a run that does not tell its framework: classes second
    (PyTorch) or last (Keras) fit alike, and the two argmaxes disagree; Confusion says why it judged nothing."""
    rng = np.random.default_rng(0)
    steps = [{"labels": rng.integers(0, 4, (64, 4)), "predictions": rng.normal(size=(64, 4, 4)).astype(np.float32)}
             for _ in range(6)]
    run(tmp_path, steps)
    confusion = _verdicts(tmp_path)["Confusion"]
    assert confusion.status == "NotEvaluated", _said(confusion)
    assert "the last labels (step 5) were not judged" in confusion.detail, confusion.detail
    assert "may be on axis 1 (PyTorch's order) or last (Keras's)" in confusion.detail, confusion.detail
