"""ImproperOutput on losses that take log-probabilities (NLLLoss, KLDivLoss): values <= 0 are not enough, the
exp() of each row must sum to 1 over the classes. A log-softmax taken over the batch axis (dim=0) gives values
<= 0 whose rows are no distribution: NLLLoss then raises the target's score at no cost to the other classes,
and the loss still falls (a held-out run fell 3.47 -> 1.68, and only SlowConvergence caught it, by accident:
its curve converged, to a high floor). Normalisations that are right stay quiet: over the classes of a
classifier or of every pixel of a segmentation, over the batch of a contrastive loss's (N, N) similarities
(the samples are the classes), over the pixels of a heatmap.

Real tiny PyTorch runs under ``Hook.recommended`` (what users run), read by ``run_rules``."""

import pytest

from smdebug.rules import run_rules
from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from _torch_runs import classification_data, train_recommended  # noqa: E402 (needs torch)

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _verdict(path):
    r = run_rules(str(path), [("ImproperOutput", {})]).rules[0]
    assert r.error is None, r.error
    return r


class _Classifier(nn.Module):
    """An MLP whose log-probabilities come from ``head`` (a function of the logits)."""

    def __init__(self, head, classes=4):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, classes))
        self.head = head

    def forward(self, x):
        return self.head(self.net(x))


def _classifier_run(path, head, classes=4):
    x, y = classification_data(n=256, classes=classes)
    train_recommended(path, _Classifier(head, classes), x, y, nn.NLLLoss(), steps=30, batch_size=32,
                      optimizer=None, lr=0.1)
    return path


@pytest.mark.parametrize("name, head", [
    ("batch_axis", lambda z: F.log_softmax(z, dim=0)),  # normalised over the 32 samples, not the 4 classes
    ("log_sigmoid", F.logsigmoid),  # <= 0, but each class scored on its own: no distribution over them
])
def test_log_scores_that_do_not_normalise_over_the_classes_fire(tmp_path, name, head):
    r = _verdict(_classifier_run(tmp_path / name, head))
    assert r.status == ISSUES, (name, r.status, r.detail)
    reason = r.findings[0].reason
    assert "does not sum to 1 over the class axis" in reason and "NLLLoss_input_0" in reason, reason


def test_a_log_softmax_over_the_classes_is_sound(tmp_path):
    r = _verdict(_classifier_run(tmp_path / "classes", lambda z: F.log_softmax(z, dim=1)))
    assert r.status == NO_ISSUES, (r.status, r.detail, r.findings)


class _Segmenter(nn.Module):
    """Per-pixel classes ``(N, C, H, W)``, normalised over ``dim``."""

    def __init__(self, dim):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(self.conv(x), dim=self.dim)


@pytest.mark.parametrize("dim, status", [(1, NO_ISSUES), (0, ISSUES)])
def test_a_segmentation_is_judged_over_its_class_axis(tmp_path, dim, status):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 2, 6, 6, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()  # a class per pixel
    train_recommended(tmp_path, _Segmenter(dim), x, y, nn.NLLLoss(), steps=20, batch_size=16, lr=0.1)
    r = _verdict(tmp_path)
    assert r.status == status, (dim, r.status, r.detail, r.findings)


class _Contrastive(nn.Module):
    """Two views of a batch embedded; ``(N, N)`` similarities, each column normalised over the batch (the
    image-given-text direction of a symmetric contrastive loss: the samples are the classes)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Linear(8, 16), nn.Linear(8, 16)

    def forward(self, x):
        za, zb = F.normalize(self.a(x[:, 0]), dim=1), F.normalize(self.b(x[:, 1]), dim=1)
        return F.log_softmax(za @ zb.T / 0.1, dim=0)


def test_a_contrastive_loss_normalised_over_the_batch_is_sound(tmp_path):
    g = torch.Generator().manual_seed(2)
    base = torch.randn(256, 8, generator=g)
    x = torch.stack([base + 0.1 * torch.randn(256, 8, generator=g), base], dim=1)  # two noisy views
    path = tmp_path / "contrastive"
    hook_batches = 32
    import smdebug.pytorch as smd

    model, loss_fn = _Contrastive(), nn.NLLLoss()
    hook = smd.Hook.recommended(str(path))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(20):
        start = (step * hook_batches) % len(x)
        xb = x[start:start + hook_batches]
        opt.zero_grad()
        loss_fn(model(xb), torch.arange(len(xb))).backward()  # sample i's partner is the class i
        opt.step()
    hook.close()
    r = _verdict(path)
    assert r.status == NO_ISSUES, (r.status, r.detail, r.findings)


class _Heatmap(nn.Module):
    """A keypoint heatmap ``(N, K, H, W)``: each keypoint's log-probabilities normalised over its H x W pixels."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x):
        z = self.conv(x)
        return F.log_softmax(z.flatten(2), dim=-1).view_as(z)


def test_a_heatmap_normalised_over_its_pixels_is_sound(tmp_path):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(128, 1, 5, 5, generator=g)
    target = F.softmax(torch.randn(128, 2, 25, generator=g), dim=-1).view(128, 2, 5, 5)
    train_recommended(tmp_path, _Heatmap(), x, target, nn.KLDivLoss(reduction="batchmean"), steps=20,
                      batch_size=32, optimizer=None, lr=0.1)
    r = _verdict(tmp_path)
    assert r.status == NO_ISSUES, (r.status, r.detail, r.findings)
