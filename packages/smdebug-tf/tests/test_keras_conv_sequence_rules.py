"""DeadRelu and CheckInputImages on Keras runs, whose convolutions and sequences are channels-last: a conv
ReLU's units are its channels (the last axis), not (position, channel) pairs; a recurrent model's (N, L, F)
input is no image, a CNN's (N, H, W, C) input is."""

import numpy as np

import keras
from keras import layers

import smdebug.tensorflow as smd
from smdebug.rules import rule_configs, run_rules


def _bordered_images(n=256, size=12, inner=4, seed=0):
    """(n, size, size, 1) images that are 0 outside a centred inner x inner patch, labels from the patch."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, size, size, 1), "float32")
    lo = (size - inner) // 2
    x[:, lo:lo + inner, lo:lo + inner, 0] = rng.normal(size=(n, inner, inner))
    return x, (x[:, lo:lo + inner // 2].sum(axis=(1, 2, 3)) > 0).astype("int64")


def _fit(out_dir, model, x, y, lr=0.05):
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="sparse_categorical_crossentropy")
    hook = smd.KerasHook.recommended(str(out_dir))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False, callbacks=[hook])
    hook.close()
    return str(out_dir)


def _rule(path, rule, **params):
    return run_rules(path, [(rule, {**rule_configs.rule_parameters(rule, "tensorflow"), **params})]).rules[0]


def _cnn(dead_channels=()):
    keras.utils.set_random_seed(0)
    bias = np.zeros(8, "float32")
    bias[list(dead_channels)] = -50.0  # below 0 everywhere: dead filters
    conv = layers.Conv2D(8, 3, padding="same", activation="relu", use_bias=bool(dead_channels), name="conv",
                         bias_initializer=keras.initializers.Constant(bias) if dead_channels else "zeros")
    return keras.Sequential([keras.Input((12, 12, 1)), conv, layers.Flatten(), layers.Dense(2, activation="softmax")],
                            name="cnn")


def test_conv_positions_off_for_every_image_are_no_dead_units(tmp_path):
    x, y = _bordered_images()
    path = _fit(tmp_path / "healthy", _cnn(), x, y)
    r = _rule(path, "DeadRelu")
    assert r.status == "NoIssuesFound", (r.detail, r.findings)

    path = _fit(tmp_path / "dead", _cnn(dead_channels=(0, 1, 2, 4, 6, 7)), x, y)
    r = _rule(path, "DeadRelu")
    assert r.status == "IssuesFound", (r.detail, r.findings)
    reason = r.findings[0].reason
    assert "6 of 8 units (channels, the last axis; dead: 0, 1, 2, 4, 6, 7)" in reason, reason


def test_an_lstm_input_is_no_image_and_a_cnn_input_is(tmp_path):
    rng = np.random.default_rng(0)
    seq = (rng.normal(size=(256, 10, 3)) * 5 + 1013).astype("float32")  # hPa readings, (N, L, F)
    keras.utils.set_random_seed(0)
    lstm = keras.Sequential([keras.Input((10, 3)), layers.LSTM(4), layers.Dense(2, activation="softmax")])
    path = _fit(tmp_path / "lstm", lstm, seq, (seq[:, :, 0].mean(axis=1) > 1013).astype("int64"), lr=1e-3)
    r = _rule(path, "CheckInputImages", threshold_samples="100")
    assert r.status == "NotApplicable" and "recurrent layer" in r.detail, (r.status, r.detail)

    x, y = _bordered_images()
    path = _fit(tmp_path / "cnn", _cnn(), x * 50 + 120, y, lr=1e-5)  # pixels in 0-255, never scaled
    r = _rule(path, "CheckInputImages", threshold_samples="100")
    assert r.status == "IssuesFound" and "mean of channel 0 is" in r.findings[0].reason, (r.status, r.detail)
