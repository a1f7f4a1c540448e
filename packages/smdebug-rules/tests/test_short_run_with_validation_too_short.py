"""The loss-curve rules on a short finished run with validation (probe 16b F2): a run whose training loss was saved
at every step it trained is too short for a rule that needs more saves (NotApplicable, exit 0); adding a validation
pass per epoch, whose loss is saved once per pass (Keras's ``val_loss``, a loop's mean over its validation batches),
turned it into NotEvaluated (exit 3): such a loss is never saved "at every step", yet one save in every pass is all
it can have. The same runs saved every 2 steps could have been judged had they saved more: NotEvaluated."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.rules.results import NOT_APPLICABLE, NOT_EVALUATED

from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402

TOO_SHORT = ("too short for this rule: its training loss was saved at every step it trained and its validation loss "
             "once in every validation pass")


def keras_fit(path, save_interval: int) -> str:
    """A 16-unit ReLU MLP fitted 4 epochs x 10 batches on a noisy linear target, validated after each epoch
    (``validation_data``): 40 TRAIN steps, 4 validation passes of 3 batches; the losses saved every
    ``save_interval`` steps (``val_loss`` at each pass's last step whatever the schedule says)."""
    tensorflow_one_thread()
    keras = pytest.importorskip("keras")
    import smdebug.tensorflow as smd_tf
    from smdebug.core.save_config import SaveConfig

    keras.utils.set_random_seed(0)
    g = np.random.default_rng(0)
    x = g.standard_normal((400, 10)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] + 0.3 * g.standard_normal(400)).astype("float32")
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    hook = smd_tf.KerasHook(str(path), include_collections=["losses"],
                            save_config=SaveConfig(save_interval=save_interval))
    model.fit(x[:320], y[:320], validation_data=(x[320:], y[320:]), epochs=4, batch_size=32, verbose=0,
              callbacks=[hook])
    hook.close()
    return str(path)


def torch_loop(path, save_interval: int) -> str:
    """A torch loop of 4 epochs x 8 minibatches, each followed by a validation pass in EVAL mode (4 batches through
    the registered loss) whose mean is saved as ``val_loss`` in the losses collection."""
    torch = pytest.importorskip("torch")
    import smdebug.pytorch as smd
    from _torch_runs import classification_data, mlp

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = classification_data(n=256)
    xv, yv = classification_data(n=64, seed=1)
    model, loss_fn = mlp(), torch.nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=save_interval),
                    include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        hook.set_mode(smd.modes.TRAIN)
        for b in range(0, 256, 32):
            opt.zero_grad()
            loss_fn(model(x[b:b + 32]), y[b:b + 32]).backward()
            opt.step()
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            losses = [loss_fn(model(xv[b:b + 16]), yv[b:b + 16]).item() for b in range(0, 64, 16)]
        hook.save_tensor("val_loss", torch.tensor(sum(losses) / len(losses)), "losses")
    hook.close()
    return str(path)


@pytest.mark.parametrize("rule", ["OscillatingLoss", "LossNotDecreasing"])
def test_a_short_torch_loop_validated_each_epoch_is_too_short(tmp_path, rule):
    path = torch_loop(tmp_path / "run", save_interval=1)
    r = judged(path, rule)
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert TOO_SHORT in r.detail, r.detail


def test_a_short_keras_fit_with_validation_is_too_short(tmp_path):
    path = keras_fit(tmp_path / "run", save_interval=1)
    r = judged(path, "OscillatingLoss")
    assert r.status == NOT_APPLICABLE, (r.status, r.detail)
    assert TOO_SHORT in r.detail and "needs at least 50 saves of a loss" in r.detail, r.detail
    # the other rules of the class judge or say the same; none is left "could not judge"
    for rule in ("LossNotDecreasing", "SlowConvergence", "Divergence"):
        other = judged(path, rule)
        assert other.status != NOT_EVALUATED, (rule, other.status, other.detail)


@pytest.mark.parametrize("train", [keras_fit, torch_loop])
def test_the_same_run_saved_every_2_steps_could_have_been_judged(tmp_path, train):
    path = train(tmp_path / "run", save_interval=2)
    r = judged(path, "OscillatingLoss")
    assert r.status == NOT_EVALUATED, (r.status, r.detail)
    assert "needs at least 50 saves of a loss" in r.detail, r.detail
