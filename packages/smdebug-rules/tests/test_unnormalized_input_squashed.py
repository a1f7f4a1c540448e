"""UnnormalizedInput fires on inputs squashed towards 0, not only on inputs too large: a min-max scaler fitted
while a sentinel row of 1e6 was in the table leaves every other row at ~1e-6, so the first layer sees the same
input for every sample and the model sits at chance. The rule said nothing (the sentinel dropped after scaling,
probe 14a z F4 zb05b) or blamed a scaling of one split (the sentinel left in the training split, zb05: it set the
training batches' scale alone). It judges the table, not single features: a tiny feature beside features of
unit scale (a rare flag) is data."""

from __future__ import annotations

import pytest

from smdebug.rules.results import ISSUES, NO_ISSUES

torch = pytest.importorskip("torch")
nn = torch.nn

from _judging import judged  # noqa: E402
from _torch_runs import classification_data, mlp, train_torch  # noqa: E402


def minmax(x, fit_on):
    low, high = fit_on.min(dim=0).values, fit_on.max(dim=0).values
    return (x - low) / (high - low)


def run(path, x, y, eval_x, eval_y) -> str:
    torch.set_num_threads(1)
    return train_torch(path, mlp(features=x.shape[1], classes=3), (x, y), steps=24, lr=0.05, batch_size=32,
                       include_collections=("inputs", "losses"), eval_data=(eval_x, eval_y), eval_every=8)


def data(sentinel_in_train: bool):
    """Features of unit scale, min-max scaled with a sentinel row of 1e6 in the table fitted; the sentinel
    kept as the training split's first row, or dropped after scaling."""
    x, y = classification_data(n=320, features=10, classes=3)
    sentinel = torch.full((1, 10), 1e6)
    table = torch.cat([sentinel, x])
    scaled = minmax(table, table)
    train_x, train_y = (scaled[:257], torch.cat([y[:1], y[:256]])) if sentinel_in_train else (scaled[1:257],
                                                                                               y[:256])
    return train_x, train_y, scaled[257:], y[256:]


def test_features_squashed_by_a_sentinel_row_fire(tmp_path):
    r = judged(run(tmp_path / "run", *data(sentinel_in_train=False)), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
    assert "squashed towards 0" in r.findings[0].reason, r.findings[0].reason


def test_a_sentinel_row_in_the_training_split_is_no_split_mismatch(tmp_path):
    r = judged(run(tmp_path / "run", *data(sentinel_in_train=True)), "UnnormalizedInput")
    assert r.status == ISSUES, (r.status, r.detail)
    reasons = " ".join(f.reason for f in r.findings)
    assert "squashed towards 0" in reasons and "another scale" not in reasons, reasons


def test_tiny_features_beside_unit_ones_pass(tmp_path):
    # 8 of 10 features at 1e-6 (near-constant columns), 2 at unit scale: the rows are of unit size
    x, y = classification_data(n=320, features=10, classes=3)
    x[:, 2:] *= 1e-6
    r = judged(run(tmp_path / "run", x[:256], y[:256], x[256:], y[256:]), "UnnormalizedInput")
    assert r.status == NO_ISSUES, (r.status, r.detail)


def test_threshold_low_sets_or_turns_off_the_test(tmp_path):
    import numpy as np

    from smdebug.exceptions import SMDebugValueError
    from smdebug.rules.generic import UnnormalizedInput
    from smdebug.rules.rule_invoker import invoke_rule
    from test_data_rules import run as numpy_run

    table = np.random.default_rng(0).random((64, 5)).astype(np.float32) * 1e-5
    trial = numpy_run(tmp_path, [{"model_input_0": table}], collections={"inputs": "model_input"})
    assert invoke_rule(UnnormalizedInput(trial)) == [0]
    assert invoke_rule(UnnormalizedInput(trial, threshold_low="1e-6")) == []
    assert invoke_rule(UnnormalizedInput(trial, threshold_low="0")) == []
    with pytest.raises(SMDebugValueError, match="threshold_low must be a number >= 0"):
        UnnormalizedInput(trial, threshold_low="-1")


def test_a_small_input_beside_one_of_ordinary_size_passes(tmp_path):
    # a second input of tiny values (a noise level, a time step) beside the features: small by design
    import numpy as np

    from smdebug.rules.generic import UnnormalizedInput
    from smdebug.rules.rule_invoker import invoke_rule
    from test_data_rules import run as numpy_run

    rng = np.random.default_rng(0)
    saves = [{"model_input_0": rng.normal(size=(64, 5)).astype(np.float32),
              "model_input_1": (rng.random((64, 1)) * 1e-5).astype(np.float32)}]
    trial = numpy_run(tmp_path, saves, collections={"inputs": "model_input"})
    assert invoke_rule(UnnormalizedInput(trial)) == []
    alone = numpy_run(tmp_path / "alone", [{"model_input_1": saves[0]["model_input_1"]}],
                      collections={"inputs": "model_input"})
    assert invoke_rule(UnnormalizedInput(alone)) == [0]
