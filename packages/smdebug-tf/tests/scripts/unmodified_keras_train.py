"""A Keras training script that knows nothing of smdebug (run by test_zero_code.py through `smdebug run`)."""

import numpy as np
import keras

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")).astype("float32")

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu", name="hidden"),
                          keras.layers.Dense(1, name="head")], name="net")
model.compile(optimizer="sgd", loss="mse")
history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
print("epochs", len(history.history["loss"]))
print("eval", round(float(model.evaluate(x, y, batch_size=16, verbose=0)), 6) >= 0)
