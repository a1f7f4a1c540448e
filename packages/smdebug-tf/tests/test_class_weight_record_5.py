"""``Model.fit(class_weight=...)`` is recorded in the run (``_meta.class_weights``): ClassImbalance then
judges the weighted class counts, so a fit that already compensates its rare class is no alarm, while the
same data fitted without weights still is."""

import numpy as np

import keras
from keras import layers

import smdebug.tensorflow as smd
from smdebug.core.class_weights import recorded_class_weights
from smdebug.rules import run_rules


def _imbalanced(n=1600, seed=0):
    """Two classes, 1 in 20 positive, separable by the first feature."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.05).astype("int64")
    x = rng.normal(size=(n, 6)).astype("float32")
    x[:, 0] += 3.0 * y
    return x, y


def _fit(path, **fit_kwargs):
    keras.utils.set_random_seed(0)
    x, y = _imbalanced()
    model = keras.Sequential([keras.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hook = smd.KerasHook.recommended(str(path))
    model.fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[hook], **fit_kwargs)
    hook.close()
    return str(path)


def _class_imbalance(path):
    r = run_rules(path, ["ClassImbalance"]).rules[0]
    assert r.error is None, r.error
    return r


def test_fit_class_weight_is_recorded_and_judged_as_compensation(tmp_path):
    weighted = _fit(tmp_path / "weighted", class_weight={0: 1.0, 1: 19.0})
    [record] = recorded_class_weights(smd.create_trial(weighted))
    assert record.source == "class_weight of Model.fit" and record.weights == {0: 1.0, 1: 19.0}
    r = _class_imbalance(weighted)
    assert r.status == "NoIssuesFound", (r.status, r.detail, [f.reason for f in r.findings])

    plain = _fit(tmp_path / "plain")
    assert recorded_class_weights(smd.create_trial(plain)) == []
    r = _class_imbalance(plain)
    assert r.status == "IssuesFound", (r.status, r.detail)
