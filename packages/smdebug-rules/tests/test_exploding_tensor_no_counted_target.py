"""ExplodingTensor on a NaN loss from a batch whose targets the loss all ignored (probe 15b F6).

A CrossEntropyLoss leaves out the targets equal to its ``ignore_index`` (-100 by default; 255 on the unlabelled
borders of segmentation masks). A batch in which *every* target is ignored -- a small last batch of an epoch of
partly labelled data, a heavily masked image -- is averaged over no element: 0/0 = NaN, while the gradient is zero
and the weights stay finite. ExplodingTensor reported "CrossEntropyLoss_output_0 has 1 NaN" as an explosion and
the healthy run exited 1. The loss's own targets saved at that step now show that it counted none: the value is
left out and the verdict's detail says so with numbers. A NaN loss whose targets were counted, or one with no
targets saved to tell, still fires.
"""

import pytest

torch = pytest.importorskip("torch")
smd = pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp, train_recommended, train_torch  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

BATCH = 8


def partly_labelled(unlabelled_steps, n=96):
    """Data of ``n`` rows whose batches (of :data:`BATCH`, in order) at ``unlabelled_steps`` are all
    unlabelled (target -100, CrossEntropyLoss's default ignore_index), and a few other rows unlabelled too."""
    x, y = classification_data(n=n)
    y = y.clone()
    y[::5] = -100  # (partial labels elsewhere: the loss counts the rest)
    for step in unlabelled_steps:
        start = (step * BATCH) % n
        y[start:start + BATCH] = -100
    return x, y


def test_a_batch_with_every_target_ignored_is_no_explosion(tmp_path):
    # the batch of steps 5, 17, 29, 41 (12 batches an epoch): 5 is a step whose loss inputs the recommended hook
    # saves anyway, the others steps it saves them at because the loss came out NaN
    x, y = partly_labelled([5])
    losses = train_recommended(tmp_path / "run", mlp(), x, y, nn.CrossEntropyLoss(), steps=48, lr=0.5,
                               batch_size=BATCH)
    # (the run really had all-ignored batches there, and no other NaN)
    assert [i for i, loss in enumerate(losses) if loss != loss] == [5, 17, 29, 41]
    result = judged(tmp_path / "run", "ExplodingTensor")
    assert result.status == "NoIssuesFound", result.findings
    assert result.detail.startswith("4 NaN loss value(s) (CrossEntropyLoss_output_0 at steps 5, 17, 29, 41) where "
                                    "every target was ignored"), result.detail
    assert "not counted as an explosion" in result.detail
    # the curve rules judge the curve of the other saves (SlowConvergence was NotEvaluated: "not finite ... no
    # curve"), and say what they left out
    result = judged(tmp_path / "run", "SlowConvergence")
    assert result.status == "NoIssuesFound", (result.findings, result.detail)
    assert result.detail.startswith("4 NaN loss save(s) left out of the curve (CrossEntropyLoss_output_0 at TRAIN "
                                    "steps 5, 17, 29, 41)"), result.detail


def test_a_segmentation_mask_all_ignore_index_255_is_no_explosion(tmp_path):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    images = torch.randn(32, 2, 5, 5, generator=g)
    masks = (images[:, 0] > 0).long()  # (N, H, W): a pixel's class is the sign of its first channel
    masks[:, 0, :] = 255  # (unlabelled borders)
    masks[24:32] = 255  # the fourth batch of 8: nothing labelled (steps 3 and 7, whose loss inputs the hook saves
    # anyway, and 11 and 15, where it saves the targets alone: the class count comes from the scores of other steps)
    model = nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
    losses = train_recommended(tmp_path / "run", model, images, masks, nn.CrossEntropyLoss(ignore_index=255),
                               steps=16, lr=0.1, batch_size=8)
    assert [i for i, loss in enumerate(losses) if loss != loss] == [3, 7, 11, 15]
    result = judged(tmp_path / "run", "ExplodingTensor")
    assert result.status == "NoIssuesFound", result.findings
    assert result.detail.startswith("4 NaN loss value(s) (CrossEntropyLoss_output_0 at steps 3, 7, 11, 15)"), \
        result.detail


def test_an_empty_batch_is_no_explosion(tmp_path):
    # a loop that hands the loss an empty batch at step 13 (a step whose inputs the hook saves because of it)
    x, y = classification_data(n=96)
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = smd.Hook.recommended(str(tmp_path / "run"))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(16):
        rows = slice(0, 0) if step == 13 else slice(BATCH * (step % 12), BATCH * (step % 12) + BATCH)
        opt.zero_grad()
        loss = loss_fn(model(x[rows]), y[rows])
        loss.backward()
        opt.step()
        assert (loss.item() != loss.item()) == (step == 13)
    hook.close()
    result = judged(tmp_path / "run", "ExplodingTensor")
    assert result.status == "NoIssuesFound", result.findings
    assert result.detail.startswith("1 NaN loss value(s) (CrossEntropyLoss_output_0 at step 13) where every target "
                                    "was ignored or none was given"), result.detail


class LogCrossEntropy(nn.Module):
    """A custom loss with a real bug: the log of the cross-entropy minus an offset, NaN once the cross-entropy
    falls below it, with every target counted."""

    def forward(self, scores, targets):
        return torch.log(nn.functional.cross_entropy(scores, targets) - 0.9)


def test_a_nan_loss_whose_targets_were_counted_still_fires(tmp_path):
    x, y = classification_data(n=96)
    losses = train_recommended(tmp_path / "run", mlp(), x, y, LogCrossEntropy(), steps=24, lr=0.5,
                               batch_size=BATCH)
    assert any(loss != loss for loss in losses)
    result = judged(tmp_path / "run", "ExplodingTensor")
    assert result.status == "IssuesFound"
    assert "NaN" in result.first_finding.reason


def test_a_nan_loss_with_no_targets_saved_still_fires(tmp_path):
    # the same all-ignored batch, but the run saved the loss alone: nothing shows that no target was counted
    x, y = partly_labelled([5])
    train_torch(tmp_path / "run", mlp(), (x, y), steps=8, batch_size=BATCH, include_collections=("losses",))
    result = judged(tmp_path / "run", "ExplodingTensor")
    assert result.status == "IssuesFound"
    assert result.first_finding.reason.startswith("CrossEntropyLoss_output_0 has 1 NaN"), result.first_finding.reason
