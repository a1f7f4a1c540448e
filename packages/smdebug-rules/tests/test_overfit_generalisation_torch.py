"""Overfit's conditions judged from the curves' own noise, on real (tiny) PyTorch runs: overfitting that shows
before the training loss nears 0 (a model memorising shuffled labels), and a model whose validation loss never
improved at all (validation targets prepared with other statistics than the training targets) -- each
against a healthy twin that must stay quiet."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("smdebug.pytorch")

import torch.nn as nn  # noqa: E402

from smdebug.rules.generic import Overfit  # noqa: E402
from smdebug.rules.rule_invoker import invoke_rule  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

from _torch_runs import classification_data, mlp, train_torch  # noqa: E402


def regression_data(n, seed, noise=0.1):
    """A linear regression with ``noise`` standard deviations of noise on the targets, shape (n, 1)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = x @ torch.linspace(-1, 1, 8) + noise * torch.randn(n, generator=g)
    return x, y.unsqueeze(1)


def regression_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))


def standardised_run(path, validation_shift):
    """Targets standardised with the training set's mean and deviation; the validation targets with a mean
    off by ``validation_shift`` deviations (0: prepared as the training targets)."""
    x, y = regression_data(256, seed=0)
    xv, yv = regression_data(256, seed=1)
    mean, sd = y.mean(), y.std()
    return train_torch(path, regression_mlp(), (x, (y - mean) / sd), steps=80, lr=0.01, optimizer="adam",
                       batch_size=32, loss_fn=nn.MSELoss(), include_collections=["losses"],
                       eval_data=(xv, (yv - (mean - validation_shift * sd)) / sd), eval_every=10)


def classification_run(path, shuffle_labels):
    """A 2x64 MLP on 256 rows, validated every 10 steps on 256 other rows; ``shuffle_labels``: the training
    labels permuted against their rows (nothing to learn but the rows themselves)."""
    x, y = classification_data(256)
    if shuffle_labels:
        y = y[torch.randperm(256, generator=torch.Generator().manual_seed(3))]
    return train_torch(path, mlp(hidden=64, depth=2), (x, y), steps=200, lr=0.003, optimizer="adam", batch_size=32,
                       include_collections=["losses"], eval_data=classification_data(256, seed=1), eval_every=10)


def test_fires_when_the_validation_loss_never_improved_while_training_converged(tmp_path):
    # validation MSE ~9 at every evaluation (3 deviations off), training MSE 0.67 -> 0.005: the gap is
    # enormous but the validation loss never rose (the original condition) -- it was never any good
    trial = create_trial(standardised_run(tmp_path, validation_shift=3))
    rule = Overfit(trial)
    fired = invoke_rule(rule)
    assert fired and all(trial.mode(s).name == "EVAL" for s in fired)
    assert rule.last_reason.startswith("MSELoss_output_0: no generalisation: the validation loss never improved")
    assert "never below the training loss the model started from" in rule.last_reason
    assert invoke_rule(Overfit(create_trial(str(tmp_path)), never_improved="false")) == []


def test_quiet_when_validation_is_prepared_as_training(tmp_path):
    assert invoke_rule(Overfit(create_trial(standardised_run(tmp_path, validation_shift=0)))) == []


def test_quiet_on_a_validation_loss_at_its_noise_floor_from_the_first_evaluation(tmp_path):
    # noiseless training targets, validation targets with noise of deviation 1: a linear model learns the task
    # before the first evaluation; the validation MSE sits at its floor (~1.2) from then on while the training
    # MSE falls to 0 -- "never improved", but well below the loss the model started from: healthy
    x, y = regression_data(256, seed=0, noise=0.0)
    torch.manual_seed(0)
    path = train_torch(tmp_path, nn.Linear(8, 1), (x, y), steps=160, lr=0.05, optimizer="adam", batch_size=32,
                       loss_fn=nn.MSELoss(), include_collections=["losses"],
                       eval_data=regression_data(256, seed=1, noise=1.0), eval_every=20)
    assert invoke_rule(Overfit(create_trial(path))) == []


def test_fires_on_a_steady_rise_long_before_the_training_loss_nears_zero(tmp_path):
    # validation 1.0 -> 1.47 over 15 evaluations while training falls 0.91 -> 0.27: validation only ~5 times
    # training at the end, far from ratio_threshold's 21 times, but rising evaluation after evaluation
    trial = create_trial(classification_run(tmp_path, shuffle_labels=True))
    rule = Overfit(trial)
    fired = invoke_rule(rule)
    assert fired and all(trial.mode(s).name == "EVAL" for s in fired)
    assert rule.last_reason.startswith("CrossEntropyLoss_output_0: overfitting: median validation loss")
    assert "validation rose and training fell steadily" in rule.last_reason
    assert invoke_rule(Overfit(create_trial(str(tmp_path)), significance="0")) == []


def test_quiet_on_the_same_model_with_true_labels(tmp_path):
    # the validation loss levels off (and wobbles by ~3% at the end) while the training loss goes on falling
    assert invoke_rule(Overfit(create_trial(classification_run(tmp_path, shuffle_labels=False)))) == []


def test_overtraining_says_when_the_validation_loss_never_improved_at_all(tmp_path):
    """No best epoch to stop at: a validation loss at its best from its first evaluations is said as a model that
    never generalised, not as training gone on past its best (probe 12b W1)."""
    from smdebug.rules.generic import Overtraining

    x, y = regression_data(256, seed=0)
    xv, yv = regression_data(256, seed=1)
    mean, sd = y.mean(), y.std()
    run = train_torch(tmp_path, regression_mlp(), (x, (y - mean) / sd), steps=240, lr=0.01, optimizer="adam",
                      batch_size=32, loss_fn=nn.MSELoss(), include_collections=["losses"],
                      eval_data=(xv, (yv - (mean - 3 * sd)) / sd), eval_every=10)
    rule = Overtraining(create_trial(run))
    assert invoke_rule(rule)
    assert "never improved" in rule.last_reason and "never generalised" in rule.last_reason, rule.last_reason
    assert "has not improved" not in rule.last_reason
