"""WeightUpdateRatio on Keras BatchNormalization's moving statistics, which the Keras hook saves with the weights.

``moving_mean`` starts at zero and follows the batch means; after a BatchNormalization and a linear layer the
first batch mean is zero up to rounding, so the first saved moving mean is ~1e-9 and its next update reads as a
ratio in the thousands. No optimizer moves it (the run saves no gradient of it): the rule used to report "update/
weight ratio ... > large_threshold" on it (probe 9, k_h_mbconv_se: 4.5e4). The large test now leaves out tensors
the run never saved a gradient of; when the run saves no gradients at all, nothing tells them apart and the moving
mean is judged as before."""

from __future__ import annotations

import numpy as np

from smdebug.rules.results import ISSUES, NO_ISSUES
from _judging import judged  # noqa: E402
from _tensorflow import tensorflow_one_thread  # noqa: E402


def keras_batchnorm_run(path, collections):
    tensorflow_one_thread()
    import keras

    import smdebug.tensorflow as smd

    L = keras.layers
    keras.utils.set_random_seed(0)
    g = np.random.default_rng(0)
    x = g.standard_normal((256, 8)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int64")
    # the second BatchNormalization's input is a linear map of the first one's zero-mean output
    model = keras.Sequential([keras.Input((8,)), L.Dense(16), L.BatchNormalization(), L.Dense(16),
                              L.BatchNormalization(), L.ReLU(), L.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook(str(path), save_config=smd.SaveConfig(save_interval=1), include_collections=collections)
    model.fit(x, y, epochs=1, batch_size=32, verbose=0, callbacks=[hook])
    hook.close()
    return str(path)


def largest_moving_mean_ratio(path):
    from smdebug.trials import create_trial

    trial = create_trial(path)
    largest = 0.0
    for name in trial.tensor_names(collection="weights"):
        if name.endswith("moving_mean"):
            steps = trial.tensor(name).steps()
            for a, b in zip(steps, steps[1:]):
                before, after = trial.tensor(name).value(a), trial.tensor(name).value(b)
                if np.any(before):
                    largest = max(largest, float(np.linalg.norm(after - before) / np.linalg.norm(before)))
    return largest


def test_keras_moving_statistics_are_no_optimizer_updates(tmp_path):
    path = keras_batchnorm_run(tmp_path / "run", ["weights", "gradients", "losses"])
    assert largest_moving_mean_ratio(path) > 10  # the case is there: a "large update" of a moving mean
    r = judged(path, "WeightUpdateRatio")
    assert r.status == NO_ISSUES, [f.reason for f in r.findings[:3]]


def test_without_gradients_the_moving_mean_is_judged_as_before(tmp_path):
    path = keras_batchnorm_run(tmp_path / "run", ["weights", "losses"])
    r = judged(path, "WeightUpdateRatio")
    assert r.status == ISSUES
    assert "moving_mean: update/weight ratio" in r.findings[0].reason and "> large_threshold" in r.findings[0].reason
