"""The scenarios: small real training runs, healthy or with one known mistake, as data.

Each row says what is trained (framework, architecture, task, optimiser, seed), the bug injected (or
``healthy``, with what makes the run hard for naive rules), the ground-truth problem classes — each one's
measurable property is checked on the written run (properties.py), so a label that does not hold is
reported, not trusted — and the rules expected to be *relevant* (the classes' usual rules, from
:data:`CLASS_RULES`, plus any the row adds). ``train`` is the dict the framework's training function
(torch_runs / keras_runs / xgboost_runs) runs; ``quick`` marks the rows of the CI subset.

Bugs are modelled on how training goes wrong in practice (AUTOTRAINER, ICSE'21; DeepDiagnosis, ICSE'22):
learning rates far off, bad initialisation, saturating activations stacked deep, unscaled inputs, an output
activation the loss does not expect, a mislabelled or leaked data set, an optimiser that never touches the
model, too little data for the model, trees grown too deep.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

HEALTHY = "healthy"

#: problem class -> (what it is, the rules whose job it is)
CLASS_RULES: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "vanishing_gradient": ("early layers get (almost) no gradient", ("VanishingGradient",)),
    "exploding_nan": ("NaN/infinite loss, weights or gradients", ("ExplodingTensor",)),
    "exploding_finite": ("loss or weights growing by orders of magnitude, still finite",
                         ("Divergence", "TensorVariance", "WeightUpdateRatio", "LossNotDecreasing")),
    "dead_relu": ("most ReLU units of a layer never active", ("DeadRelu",)),
    "saturated_activation": ("tanh/sigmoid inputs mostly in the flat region", ("SaturatedActivation",)),
    "poor_weight_init": ("initial weights badly scaled", ("PoorWeightInitialization",)),
    "loss_not_decreasing": ("the training loss does not go down", ("LossNotDecreasing",)),
    "slow_convergence": ("the loss goes down far too slowly for the budget", ("SlowConvergence", "LossNotDecreasing")),
    "oscillating_loss": ("the loss swings up and down instead of converging", ("OscillatingLoss",)),
    "overfit": ("validation loss rising while training loss falls", ("Overfit",)),
    "overtraining": ("training goes on long after validation stopped improving", ("Overtraining",)),
    "class_imbalance": ("a few classes dominate the labels", ("ClassImbalance",)),
    "bad_image_input": ("image pixels not normalised", ("CheckInputImages",)),
    "unnormalised_input": ("tabular/sequence features in the hundreds or thousands", ("UnnormalizedInput",)),
    "improper_output": ("output activation or loss that do not fit each other", ("ImproperOutput",)),
    "frozen_weights": ("the weights never change", ("UnchangedTensor", "WeightUpdateRatio")),
    "tree_too_deep": ("XGBoost trees deep enough to memorise", ("TreeDepth",)),
    "feature_overweight": ("one (leaked) feature carries almost all importance",
                           ("FeatureImportanceOverweight", "LabelLeak")),
}


@dataclass(frozen=True)
class Scenario:
    id: str
    framework: str  # torch | keras | xgboost
    architecture: str
    task: str
    optimizer: str
    seed: int
    bug: str  # what was done wrong, or "healthy: <what makes it hard>"
    classes: Tuple[str, ...]  # ground truth; () for a healthy run
    train: dict = field(hash=False, compare=False)
    relevant_extra: Tuple[str, ...] = ()
    quick: bool = False
    #: a scenario with the very same training recorded another way, whose run the label is checked on (a
    #: recording too sparse for the label checks, e.g. the hook's default configuration: the training, seeded
    #: and single-threaded, is the same)
    label_twin: str = ""

    @property
    def healthy(self) -> bool:
        return not self.classes

    @property
    def relevant(self) -> Tuple[str, ...]:
        rules = [r for c in self.classes for r in CLASS_RULES[c][1]] + list(self.relevant_extra)
        return tuple(dict.fromkeys(rules))

    def key(self) -> str:
        """Hash of the definition (what is trained, how): part of the cache key."""
        text = json.dumps({"framework": self.framework, "seed": self.seed, "train": self.train}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _t(id, arch, task, opt, seed, bug, classes, train, **kw) -> Scenario:
    train = {"seed": seed, **train}
    return Scenario(id, "torch", arch, task, opt, seed, bug, tuple(classes), train, **kw)


def _k(id, arch, task, opt, seed, bug, classes, train, **kw) -> Scenario:
    train = {"seed": seed, **train}
    return Scenario(id, "keras", arch, task, opt, seed, bug, tuple(classes), train, **kw)


def _x(id, arch, task, seed, bug, classes, train, **kw) -> Scenario:
    train = {"seed": seed, **train}
    return Scenario(id, "xgboost", arch, task, "gradient boosting", seed, bug, tuple(classes), train, **kw)


DIGITS = {"loader": "digits"}
DIGITS_FLAT = {"loader": "digits", "flat": True}
BLOBS = {"loader": "blobs"}
CANCER = {"loader": "tabular", "name": "breast_cancer"}
SGD_M = {"name": "sgd", "lr": 0.05, "momentum": 0.9}
ADAM = {"name": "adam", "lr": 1e-3}

SCENARIOS: List[Scenario] = [
    # ----------------------------------------------------------------------------------- healthy, PyTorch
    _t("h_mlp_relu_sgd", "MLP 64-32 ReLU (nn.Sequential)", "digits, 10 classes", "SGD+momentum", 0,
       "healthy: legitimately sparse ReLUs, noisy minibatch loss",
       [], {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": SGD_M}, quick=True),
    _t("h_mlp_bn_adam", "MLP 128-64 ReLU+BatchNorm+dropout (attribute names)", "synthetic 4 classes", "Adam", 1,
       "healthy: BatchNorm weights start constant, dropout noise",
       [], {"data": BLOBS, "model": {"arch": "mlp", "hidden": [128, 64], "style": "attributes", "batchnorm": True,
                                     "dropout": 0.1}, "optimizer": ADAM}),
    _t("h_cnn_bn_steplr", "CNN 2 conv + BatchNorm, ReLU module reused", "digits images", "SGD+momentum, StepLR", 2,
       "healthy: BatchNorm biases, conv ReLUs sparse, lr steps down",
       [], {"data": DIGITS, "model": {"arch": "cnn", "batchnorm": True}, "optimizer": SGD_M,
            "schedule": {"name": "step", "step_size": 100, "gamma": 0.3}}),
    _t("h_cnn_functional_adamw", "CNN 2 conv, F.relu", "digits images scaled to [-1, 1]", "AdamW, cosine", 3,
       "healthy: images in [-1, 1] (mean -0.4, the usual Normalize(0.5, 0.5)), functional activations",
       [], {"data": {"loader": "digits", "scaling": "minus_one_one"}, "model": {"arch": "cnn", "functional": True},
            "optimizer": {"name": "adamw", "lr": 2e-3, "weight_decay": 0.01}, "schedule": {"name": "cosine"}}),
    _t("h_resnet_warmup", "ResNet, 2 residual blocks with BatchNorm", "digits images", "SGD+momentum, warmup+cosine",
       4, "healthy: lr warmup (slow start), residual ReLUs, no conv biases",
       [], {"data": DIGITS, "model": {"arch": "resnet"}, "optimizer": SGD_M,
            "schedule": {"name": "warmup_cosine", "steps": 60}}),
    _t("h_gru_adam", "GRU 32 + linear", "sequence classification", "Adam", 5,
       "healthy: recurrent weights, sigmoid/tanh gates inside the cell",
       [], {"data": {"loader": "sequences"}, "model": {"arch": "rnn", "cell": "gru"},
            "optimizer": {"name": "adam", "lr": 3e-3}}),
    _t("h_lstm_rmsprop", "LSTM 32 + linear", "sequence classification", "RMSprop", 6,
       "healthy: LSTM gates, RMSprop's noisy updates",
       [], {"data": {"loader": "sequences"}, "model": {"arch": "rnn", "cell": "lstm"},
            "optimizer": {"name": "rmsprop", "lr": 2e-3}}),
    _t("h_bow_embedding", "embedding bag-of-words + MLP", "token sequences, 3 classes", "Adam", 7,
       "healthy: padding row of the embedding never changes (zero gradient), token ids as input",
       [], {"data": {"loader": "tokens"}, "model": {"arch": "bow"}, "optimizer": {"name": "adam", "lr": 5e-3}},
       quick=True),
    _t("h_regression_tanh", "MLP 64-64 tanh (attribute names)", "regression", "Adam", 8,
       "healthy: tanh units (some near saturation), MSE converging to a small value",
       [], {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64, 64], "activation": "tanh",
                                                         "style": "attributes"}, "optimizer": ADAM, "loss": "mse"}),
    _t("h_logreg_cancer", "logistic regression", "breast cancer, binary", "SGD", 9,
       "healthy: a linear model, loss converging to a small value",
       [], {"data": CANCER, "model": {"arch": "logreg"}, "optimizer": {"name": "sgd", "lr": 0.1}, "loss": "bce"}),
    _t("h_mlp_sigmoid_binary", "MLP 32 sigmoid (attribute names)", "breast cancer, binary", "Adam", 10,
       "healthy: sigmoid hidden units, BCE on logits",
       [], {"data": CANCER, "model": {"arch": "mlp", "hidden": [32], "activation": "sigmoid", "style": "attributes"},
            "optimizer": {"name": "adam", "lr": 1e-2}, "loss": "bce"}),
    _t("h_mlp_logsoftmax_small_batch", "MLP 128 LeakyReLU + LogSoftmax", "digits", "SGD, batch 8", 11,
       "healthy: batch of 8 (very noisy loss), log-probabilities fed to NLLLoss",
       [], {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [128], "activation": "leaky_relu",
                                           "output_activation": "log_softmax"},
            "optimizer": {"name": "sgd", "lr": 0.05}, "loss": "nll", "batch_size": 8}),
    _t("h_plateau_then_drop", "MLP 64-64-64 ReLU", "synthetic 4 classes", "Adam, long warmup", 12,
       "healthy: a loss plateau for the first ~100 steps before it drops",
       [], {"data": BLOBS, "model": {"arch": "mlp", "hidden": [64, 64, 64]}, "optimizer": ADAM,
            "schedule": {"name": "warmup", "steps": 150}, "steps": 400}),
    _t("h_cnn_converged", "CNN 2 conv + BatchNorm", "digits images", "Adam", 13,
       "healthy: trained to a tiny loss (about 0.01), evaluation loss noise",
       [], {"data": DIGITS, "model": {"arch": "cnn", "batchnorm": True}, "optimizer": {"name": "adam", "lr": 2e-3},
            "steps": 400}),
    # ------------------------------------------------------------------------------------- healthy, Keras
    _k("h_keras_seq_mlp", "Sequential MLP 32-16, Dense(activation='relu')", "breast cancer, binary", "Adam", 20,
       "healthy: compiled fit() with validation data, fused activations",
       [], {"data": CANCER, "model": {"arch": "mlp", "hidden": [32, 16], "activation": "relu",
                                      "output_activation": "sigmoid"}, "loss": "bce",
            "optimizer": {"name": "adam", "lr": 1e-3}, "epochs": 15}, quick=False),
    _k("h_keras_functional_cnn", "functional CNN + BatchNormalization + ReLU layers", "digits images", "SGD+momentum, decay",
       21, "healthy: functional model, BatchNorm, softmax output with its matching loss",
       [], {"data": DIGITS, "model": {"arch": "cnn", "batchnorm": True, "output_activation": "softmax"},
            "loss": "sparse_ce", "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "decay_steps": 100,
                                               "decay_rate": 0.5}, "epochs": 8}),
    _k("h_keras_gru", "functional GRU 32", "sequence classification", "RMSprop", 22,
       "healthy: Keras recurrent layer, softmax output",
       [], {"data": {"loader": "sequences"}, "model": {"arch": "gru", "output_activation": "softmax"},
            "loss": "sparse_ce", "optimizer": {"name": "rmsprop", "lr": 3e-3}, "epochs": 6}),
    # ----------------------------------------------------------------------------------- healthy, XGBoost
    _x("h_xgb_binary", "gradient-boosted trees, depth 3", "breast cancer, binary", 30,
       "healthy: shallow trees, validation set watched",
       [], {"data": CANCER, "params": {"objective": "binary:logistic", "max_depth": 3, "eta": 0.1,
                                       "eval_metric": "logloss"}, "rounds": 60}, quick=True),
    _x("h_xgb_regression_default_depth", "gradient-boosted trees, XGBoost's default depth 6", "diabetes regression",
       31, "healthy: XGBoost's default max_depth=6 on a small regression",
       [], {"data": {"loader": "tabular", "name": "diabetes"},
            "params": {"objective": "reg:squarederror", "eta": 0.05, "subsample": 0.8, "eval_metric": "rmse"},
            "rounds": 80}),
    _x("h_xgb_multiclass", "gradient-boosted trees, depth 4", "digits, 10 classes", 32,
       "healthy: multi-class softprob, many features",
       [], {"data": DIGITS_FLAT, "params": {"objective": "multi:softprob", "num_class": 10, "max_depth": 4,
                                            "eta": 0.3, "eval_metric": "mlogloss"}, "rounds": 30}),

    # ------------------------------------------------------------------------------- vanishing gradients
    _t("b_vanish_deep_sigmoid", "MLP 10x32 sigmoid", "digits", "SGD", 100,
       "ten stacked sigmoid layers", ["vanishing_gradient"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [32] * 10, "activation": "sigmoid"},
        "optimizer": {"name": "sgd", "lr": 0.1}}, quick=True),
    _t("b_vanish_deep_tanh_small_init", "MLP 8x32 tanh, init std 0.05", "synthetic 4 classes", "SGD+momentum", 101,
       "deep tanh net initialised too small", ["vanishing_gradient"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [32] * 8, "activation": "tanh", "style": "attributes"},
        "init": {"std": 0.05}, "optimizer": SGD_M}),
    _t("b_vanish_deep_relu_tiny_init", "MLP 12x32 ReLU, init std 0.02", "digits", "SGD", 102,
       "deep ReLU net initialised far too small", ["vanishing_gradient"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [32] * 12}, "init": {"std": 0.02},
        "optimizer": {"name": "sgd", "lr": 0.05}}),
    # ----------------------------------------------------------------------------------- NaN / infinity

    _t("b_nan_missing_values", "MLP 32 ReLU", "breast cancer, binary", "Adam", 111,
       "2% of the rows have a missing (NaN) feature, never imputed", ["exploding_nan"],
       {"data": CANCER, "model": {"arch": "mlp", "hidden": [32]}, "optimizer": ADAM, "loss": "bce",
        "bug": {"nan_rows": 0.02}}, quick=True),
    _t("b_nan_log_of_softmax", "MLP 64 ReLU, hand-written cross-entropy", "synthetic 4 classes", "Adam lr 0.5", 112,
       "log(softmax) computed by hand with a learning rate too high: a probability underflows to 0",
       ["exploding_nan"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [64]}, "optimizer": {"name": "adam", "lr": 0.5},
        "loss": "manual_ce"}),
    # ---------------------------------------------------------------------------- finite explosion
    _t("b_nan_gradient_ascent_mse", "MLP 32 ReLU", "regression", "SGD, maximize", 120,
       "the loss is maximised (sign error): gradient ascent until it overflows", ["exploding_nan"],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [32]},
        "optimizer": {"name": "sgd", "lr": 0.01}, "loss": "mse", "bug": {"gradient_ascent": True}}),
    _t("b_explode_linear_lr_above_stability", "linear regression", "regression", "SGD lr just above 2/L", 121,
       "learning rate just above the stability limit: the error grows every step", ["exploding_finite"],
       {"data": {"loader": "regression"}, "model": {"arch": "logreg"}, "optimizer": {"name": "sgd", "lr": 0.85},
        "loss": "mse"}),
    _t("b_explode_adam_ascent_ce", "MLP 64 ReLU", "digits", "Adam, maximize", 122,
       "cross-entropy maximised (sign error) with Adam: logits and loss grow without bound",
       ["exploding_finite"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64]}, "optimizer": {"name": "adam", "lr": 0.05},
        "bug": {"gradient_ascent": True}}),
    # ------------------------------------------------------------------------------------- dead ReLUs
    _t("b_lr_huge_regression", "MLP 64-32 ReLU", "regression", "SGD+momentum lr 0.5", 110,
       "learning rate 50x too large: the weights grow 1000-fold and every ReLU of a layer dies",
       ["exploding_finite", "dead_relu"],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64, 32]},
        "optimizer": {"name": "sgd", "lr": 0.5, "momentum": 0.9}, "loss": "mse"}),
    _t("b_dead_relu_negative_bias", "MLP 64-64 ReLU, bias init -3", "digits", "SGD+momentum", 130,
       "biases initialised to -3: most ReLUs start (and stay) off", ["dead_relu"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 64], "style": "attributes"},
        "init": {"bias": -3.0}, "optimizer": SGD_M}, quick=True),
    _t("b_dead_relu_adam_lr_high", "MLP 256-256 ReLU", "synthetic 4 classes", "Adam lr 0.05", 131,
       "Adam's learning rate 50x too high knocks the ReLUs off", ["dead_relu"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [256, 256]}, "optimizer": {"name": "adam", "lr": 0.05}}),
    _t("b_dead_relu_cnn_sgd_lr_high", "CNN 2 conv, ReLU module reused", "digits images", "SGD lr 0.5", 132,
       "SGD learning rate too high for a plain CNN: the conv ReLUs die", ["dead_relu"],
       {"data": DIGITS, "model": {"arch": "cnn"}, "optimizer": {"name": "sgd", "lr": 0.5, "momentum": 0.9}}),
    # ---------------------------------------------------------------------------- saturated activations
    _t("b_saturated_tanh_raw_features", "MLP 32-32 tanh (attribute names)", "breast cancer raw features", "Adam", 140,
       "features in the hundreds fed to tanh units", ["saturated_activation", "unnormalised_input"],
       {"data": {**CANCER, "standardise": False}, "model": {"arch": "mlp", "hidden": [32, 32], "activation": "tanh",
                                                             "style": "attributes"}, "optimizer": ADAM, "loss": "bce"}),
    _t("b_saturated_sigmoid_big_init", "MLP 64-64 sigmoid, init std 3", "synthetic 4 classes", "SGD+momentum", 141,
       "weights initialised 20x too large under sigmoid units", ["saturated_activation"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [64, 64], "activation": "sigmoid"}, "init": {"std": 3.0},
        "optimizer": SGD_M}),
    _t("b_saturated_tanh_adam_lr_high", "MLP 64-64 tanh", "regression", "Adam lr 0.1", 142,
       "Adam's learning rate far too high drives the tanh units into saturation", ["saturated_activation"],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64, 64], "activation": "tanh"},
        "optimizer": {"name": "adam", "lr": 0.1}, "loss": "mse"}),
    # ----------------------------------------------------------------------------- poor initialisation
    _t("b_init_std_one", "MLP 128-128-128 ReLU, init N(0, 1)", "digits", "Adam", 150,
       "weights drawn from N(0, 1) instead of a fan-in scaled distribution", ["poor_weight_init"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [128, 128, 128], "style": "attributes"},
        "init": {"std": 1.0}, "optimizer": ADAM}),
    _t("b_init_zeros", "MLP 64-64 tanh, all-zero init", "synthetic 4 classes", "SGD+momentum", 151,
       "all weights initialised to zero (units stay symmetric)", ["poor_weight_init"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [64, 64], "activation": "tanh"},
        "init": {"zeros": True, "bias": 0.0}, "optimizer": SGD_M}),
    _t("b_init_cnn_tiny", "CNN 2 conv, init std 0.0003", "digits images", "SGD+momentum", 152,
       "convolution kernels initialised 300x too small: the signal dies out, the second ReLU layer never "
       "turns on and the first layer gets no gradient", ["vanishing_gradient", "dead_relu"],
       {"data": DIGITS, "model": {"arch": "cnn"}, "init": {"std": 0.0003}, "optimizer": SGD_M}),
    _t("b_init_tiny_no_bias", "MLP 128-128-128 ReLU, init N(0, 0.001), zero biases", "digits", "SGD+momentum", 153,
       "weights drawn 100x too small with zero biases: the signal shrinks 100-fold per layer",
       ["poor_weight_init"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [128, 128, 128], "style": "attributes"},
        "init": {"std": 0.001, "bias": 0.0}, "optimizer": SGD_M}),
    # ----------------------------------------------------------------------------- loss not decreasing
    _t("b_flat_shuffled_labels", "MLP 32 ReLU", "synthetic 4 classes, labels shuffled", "Adam", 160,
       "labels shuffled independently of the inputs (data-loading bug)", ["loss_not_decreasing"],
       {"data": {"loader": "blobs", "n": 4000}, "model": {"arch": "mlp", "hidden": [32]}, "optimizer": ADAM,
        "bug": {"shuffle_labels": True}}),
    _t("b_flat_lr_tiny", "CNN 2 conv", "digits images", "SGD lr 1e-5", 161,
       "learning rate 10,000x too small", ["loss_not_decreasing"],
       {"data": DIGITS, "model": {"arch": "cnn"}, "optimizer": {"name": "sgd", "lr": 1e-5}}),
    # ------------------------------------------------------------------------------------ frozen weights
    _t("b_frozen_zero_grad_after_backward", "MLP 64-32 ReLU", "digits", "SGD+momentum", 170,
       "optimizer.zero_grad() called between backward() and step()", ["frozen_weights", "loss_not_decreasing"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": SGD_M,
        "bug": {"zero_grad_after_backward": True}}, quick=True),
    _t("b_frozen_stale_optimizer", "CNN 2 conv + BatchNorm", "digits images", "Adam", 171,
       "the model was rebuilt after the optimiser was created: the optimiser updates the old one",
       ["frozen_weights"],
       {"data": DIGITS, "model": {"arch": "cnn", "batchnorm": True}, "optimizer": ADAM,
        "bug": {"stale_optimizer": True}}),
    _t("b_frozen_lr_factor_zero", "ResNet, 2 residual blocks", "digits images", "SGD+momentum, LambdaLR", 172,
       "an lr schedule written with integer division multiplies the rate by 0", ["frozen_weights"],
       {"data": DIGITS, "model": {"arch": "resnet"}, "optimizer": SGD_M,
        "schedule": {"name": "decay_per_epoch_int"}}),
    # ------------------------------------------------------------------------------ overfit / overtraining
    _t("b_overfit_tiny_digits", "MLP 256-256 ReLU", "digits, 60 training images", "Adam", 180,
       "60 training examples for a 80k-parameter model, trained on and on", ["overfit", "overtraining"],
       {"data": {**DIGITS_FLAT, "train_size": 60}, "model": {"arch": "mlp", "hidden": [256, 256]},
        "optimizer": ADAM, "steps": 1000, "eval_every": 50}),
    _t("b_overfit_noisy_labels", "MLP 256-256 ReLU (attribute names)", "synthetic, 30% label noise, 225 rows",
       "Adam", 181, "a big model memorising noisy labels of a small set", ["overfit", "overtraining"],
       {"data": {"loader": "blobs", "n": 300, "label_noise": 0.3}, "model": {"arch": "mlp", "hidden": [256, 256],
                                                                           "style": "attributes"},
        "optimizer": {"name": "adam", "lr": 3e-3}, "steps": 400}),
    _t("b_overfit_cnn_small_set", "CNN 2 conv", "digits images, 80 training images", "Adam", 182,
       "80 training images for a CNN, no regularisation", ["overfit", "overtraining"],
       {"data": {**DIGITS, "train_size": 80}, "model": {"arch": "cnn"}, "optimizer": {"name": "adam", "lr": 3e-3},
        "steps": 800, "eval_every": 50}),
    _t("b_overtrain_cancer_long", "MLP 64 ReLU", "breast cancer, 100 training rows", "Adam", 183,
       "training runs 6x longer than the validation loss keeps improving", ["overtraining"],
       {"data": {**CANCER, "train_size": 100}, "model": {"arch": "mlp", "hidden": [64]},
        "optimizer": {"name": "adam", "lr": 3e-3}, "loss": "bce", "steps": 600}),
    # ---------------------------------------------------------------------------------- class imbalance
    _t("b_imbalance_blobs", "MLP 64 ReLU", "synthetic 4 classes, 95% one class", "Adam", 190,
       "three of four classes kept at 3% of their rows", ["class_imbalance"],
       {"data": {"loader": "blobs", "n": 4000, "imbalance": 0.03}, "model": {"arch": "mlp", "hidden": [64]},
        "optimizer": ADAM}),
    _t("b_imbalance_digits", "CNN 2 conv", "digits images, 9 classes at 4%", "SGD+momentum", 191,
       "all digits but 0 subsampled to 4%", ["class_imbalance"],
       {"data": {**DIGITS, "minority_keep": 0.04}, "model": {"arch": "cnn"}, "optimizer": SGD_M}),
    # ------------------------------------------------------------------------------- input normalisation
    _t("b_images_raw_0_16", "CNN 2 conv", "digits images, raw 0-16 pixels", "SGD", 200,
       "pixel values never scaled (0-16)", ["bad_image_input"],
       {"data": {"loader": "digits", "scaling": "raw"}, "model": {"arch": "cnn"}, "optimizer": {"name": "sgd", "lr": 0.01}}),
    _t("b_images_bytes_resnet", "ResNet, 2 residual blocks", "digits images, 0-255 pixels", "Adam", 201,
       "8-bit pixel values fed as they are (0-255)", ["bad_image_input"],
       {"data": {"loader": "digits", "scaling": "bytes"}, "model": {"arch": "resnet"}, "optimizer": ADAM}),
    _t("b_tabular_raw_cancer", "MLP 64-32 ReLU", "breast cancer raw features", "Adam", 202,
       "tabular features (areas in the thousands) never standardised", ["unnormalised_input"],
       {"data": {**CANCER, "standardise": False}, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": ADAM,
        "loss": "bce"}),
    _t("b_tabular_scaled_logreg", "logistic regression", "synthetic, features up to 10,000", "Adam", 203,
       "amount-like features in the thousands fed to a linear model", ["unnormalised_input"],
       {"data": {"loader": "blobs", "feature_scale": 1e4}, "model": {"arch": "logreg"},
        "optimizer": {"name": "adam", "lr": 1e-2}}),
    _t("b_sequence_raw_gru", "GRU 32", "sequences of raw sensor readings (x500)", "Adam", 204,
       "sequence readings in the hundreds fed to a GRU", ["unnormalised_input"],
       {"data": {"loader": "sequences", "input_scale": 500.0}, "model": {"arch": "rnn", "cell": "gru"},
        "optimizer": {"name": "adam", "lr": 3e-3}}),
    # ----------------------------------------------------------------------------------- improper output
    _t("b_output_softmax_into_ce", "MLP 64 ReLU + Softmax", "digits", "Adam", 210,
       "a softmax output fed to CrossEntropyLoss (which applies log-softmax itself)", ["improper_output"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64], "output_activation": "softmax"},
        "optimizer": ADAM}, quick=True),
    _t("b_output_mse_on_labels", "MLP 64 ReLU, one output", "synthetic 4 classes as numbers", "Adam", 211,
       "classification trained as regression: MSE against the class index", ["improper_output"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [64]}, "optimizer": ADAM, "loss": "mse_labels"}),
    _t("b_output_sigmoid_multiclass", "MLP 64 ReLU + Sigmoid", "digits, 10 classes", "SGD+momentum", 212,
       "sigmoid on a 10-class output fed to CrossEntropyLoss", ["improper_output"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64], "output_activation": "sigmoid"},
        "optimizer": SGD_M}),
    # --------------------------------------------------------------------------------- oscillating loss
    _t("b_oscillate_momentum_linear", "linear regression", "regression", "SGD momentum 0.99", 220,
       "momentum 0.99: the heavy ball overshoots back and forth and the loss never settles",
       ["oscillating_loss", "loss_not_decreasing"],
       {"data": {"loader": "regression"}, "model": {"arch": "logreg"},
        "optimizer": {"name": "sgd", "lr": 0.03, "momentum": 0.99}, "loss": "mse"}),
    _t("b_oscillate_logreg_cancer", "logistic regression", "breast cancer, binary", "SGD momentum 0.99, lr 0.5", 221,
       "momentum 0.99 with a large learning rate: the loss swings instead of converging", ["oscillating_loss"],
       {"data": CANCER, "model": {"arch": "logreg"}, "optimizer": {"name": "sgd", "lr": 0.5, "momentum": 0.99},
        "loss": "bce"}),
    _t("b_oscillate_mlp_tanh_momentum", "MLP 64 tanh", "regression", "SGD momentum 0.99", 222,
       "momentum 0.99 on a tanh MLP: the loss swings up and down", ["oscillating_loss", "loss_not_decreasing"],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64], "activation": "tanh"},
        "optimizer": {"name": "sgd", "lr": 0.025, "momentum": 0.99}, "loss": "mse"}),
    _t("b_oscillate_mlp_cancer", "MLP 32 ReLU", "breast cancer, binary", "SGD momentum 0.99, lr 0.2", 223,
       "momentum 0.99 and a learning rate too large for a small MLP", ["oscillating_loss", "loss_not_decreasing"],
       {"data": CANCER, "model": {"arch": "mlp", "hidden": [32]}, "optimizer": {"name": "sgd", "lr": 0.2, "momentum": 0.99},
        "loss": "bce"}),
    # --------------------------------------------------------------------------------- slow convergence
    _t("b_slow_sgd_small_lr", "MLP 64-32 ReLU", "digits", "SGD lr 0.018", 230,
       "plain SGD at a learning rate far too small for the step budget", ["slow_convergence"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": {"name": "sgd", "lr": 0.018}}),
    _t("b_slow_cnn_small_lr", "CNN 2 conv", "digits images", "SGD lr 0.008", 231,
       "a CNN trained with plain SGD at a small learning rate", ["slow_convergence"],
       {"data": DIGITS, "model": {"arch": "cnn"}, "optimizer": {"name": "sgd", "lr": 0.008}}),
    _t("b_slow_adagrad_small", "MLP 64 tanh", "regression", "Adagrad lr 0.0005", 232,
       "Adagrad with a small learning rate: its steps shrink before the loss is down", ["slow_convergence"],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64], "activation": "tanh"},
        "optimizer": {"name": "adagrad", "lr": 0.0005}, "loss": "mse"}),
    # ------------------------------------------------------------------------------------- Keras bugs
    _k("b_keras_softmax_from_logits", "functional CNN, softmax output", "digits images", "Adam", 240,
       "softmax output with SparseCategoricalCrossentropy(from_logits=True)", ["improper_output"],
       {"data": DIGITS, "model": {"arch": "cnn", "output_activation": "softmax"}, "loss": "sparse_ce_logits",
        "optimizer": {"name": "adam", "lr": 2e-3}, "epochs": 6}),
    _k("b_keras_raw_tabular", "Sequential MLP 32-16, ReLU layers", "breast cancer raw features", "Adam", 241,
       "raw tabular features (in the thousands) into a Keras MLP", ["unnormalised_input"],
       {"data": {**CANCER, "standardise": False}, "model": {"arch": "mlp", "hidden": [32, 16], "activation": "relu",
                                                             "separate_activation": True, "output_activation": "sigmoid"},
        "loss": "bce", "optimizer": {"name": "adam", "lr": 1e-3}, "epochs": 15}),
    _k("b_keras_lr_typo", "Sequential MLP 64", "digits", "Adam lr 1e-6", 242,
       "learning rate typed as 1e-6 instead of 1e-3", ["loss_not_decreasing"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64], "activation": "relu",
                                       "output_activation": "softmax"},
        "loss": "sparse_ce", "optimizer": {"name": "adam", "lr": 1e-6}, "epochs": 8}),
    _k("b_keras_dead_relu_bias", "Sequential MLP 64-64, ReLU layers, bias init -3", "digits", "SGD", 243,
       "biases initialised to -3 under ReLUs", ["dead_relu"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 64], "activation": "relu",
                                       "separate_activation": True, "output_activation": "softmax",
                                       "bias_initializer": {"class_name": "Constant", "config": {"value": -3.0}}},
        "loss": "sparse_ce", "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}, "epochs": 8}),
    _k("b_keras_lr_huge", "Sequential MLP 64", "digits", "SGD lr 20", 244,
       "learning rate far too large: the weights grow 1000-fold and the ReLUs die",
       ["exploding_finite", "dead_relu"],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64], "activation": "relu"},
        "loss": "sparse_ce_logits", "optimizer": {"name": "sgd", "lr": 20.0}, "epochs": 6}),
    # ------------------------------------------------------------------------------------ XGBoost bugs
    _x("b_xgb_deep_trees_noisy", "gradient-boosted trees, depth 14", "synthetic binary-ish, 20% label noise", 250,
       "max_depth=14 with no minimum child weight on noisy labels", ["tree_too_deep"],
       {"data": {"loader": "blobs", "n": 1000, "classes": 2, "label_noise": 0.2},
        "params": {"objective": "binary:logistic", "max_depth": 14, "min_child_weight": 0, "eta": 0.3,
                   "eval_metric": "logloss"}, "rounds": 30}, quick=True),
    _x("b_xgb_deep_trees_regression", "gradient-boosted trees, depth 12", "noisy regression", 251,
       "max_depth=12 on a noisy regression", ["tree_too_deep"],
       {"data": {"loader": "regression", "n": 1000, "noise": 1.0},
        "params": {"objective": "reg:squarederror", "max_depth": 12, "min_child_weight": 0, "eta": 0.3,
                   "eval_metric": "rmse"}, "rounds": 30}),
    _x("b_xgb_leak_cancer", "gradient-boosted trees, depth 3", "breast cancer + a leaked label column", 252,
       "a feature derived from the label left in the data", ["feature_overweight"],
       {"data": CANCER, "params": {"objective": "binary:logistic", "max_depth": 3, "eta": 0.1,
                                   "eval_metric": "logloss"}, "rounds": 40, "bug": {"leak": 0.1}}),
    _x("b_xgb_leak_multiclass", "gradient-boosted trees, depth 4", "synthetic 4 classes + a leaked column", 253,
       "the class id leaked into a feature", ["feature_overweight"],
       {"data": BLOBS, "params": {"objective": "multi:softprob", "num_class": 4, "max_depth": 4, "eta": 0.2,
                                  "eval_metric": "mlogloss"}, "rounds": 30, "bug": {"leak": 0.05}}),
    _x("b_xgb_imbalance", "gradient-boosted trees, depth 4", "synthetic 4 classes, 97% one class", 254,
       "three of four classes nearly absent", ["class_imbalance"],
       {"data": {"loader": "blobs", "n": 4000, "imbalance": 0.03},
        "params": {"objective": "multi:softprob", "num_class": 4, "max_depth": 4, "eta": 0.2,
                   "eval_metric": "mlogloss"}, "rounds": 30}),
    _x("b_xgb_overfit_small", "gradient-boosted trees, depth 8, eta 0.5", "synthetic, 150 training rows", 255,
       "a big learning rate and deep trees on a tiny noisy set, 150 rounds", ["overfit"],
       {"data": {"loader": "blobs", "n": 200, "classes": 2, "label_noise": 0.2},
        "params": {"objective": "binary:logistic", "max_depth": 8, "eta": 0.5, "min_child_weight": 0,
                   "eval_metric": "logloss"}, "rounds": 150}),
    _x("b_xgb_slow_eta", "gradient-boosted trees, depth 3, eta 0.005", "breast cancer, binary", 256,
       "a learning rate 20x too small for the number of rounds", ["slow_convergence"],
       {"data": CANCER, "params": {"objective": "binary:logistic", "max_depth": 3, "eta": 0.005,
                                   "eval_metric": "logloss"}, "rounds": 60}),
    # ----------------------------------------------------------------------------------------------------
    # Held-out variants (ids hv_/bv_): added after the rules were designed, to check that they generalise --
    # other seeds, sizes, optimisers and learning rates than the rows above. A rule failing one is fixed in
    # its idea, never by a threshold picked for it.
    _t("hv_mlp_wide_adamw", "MLP 128-64 ReLU", "digits", "AdamW", 300,
       "healthy: a wider MLP, AdamW, another seed", [],
       {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [128, 64]},
        "optimizer": {"name": "adamw", "lr": 1e-3, "weight_decay": 0.01}}),
    _t("hv_cnn_bn_sgd_small_lr", "CNN 2 conv + BatchNorm", "digits images", "SGD+momentum lr 0.02", 301,
       "healthy: BatchNorm CNN with a smaller learning rate, 250 steps", [],
       {"data": DIGITS, "model": {"arch": "cnn", "batchnorm": True},
        "optimizer": {"name": "sgd", "lr": 0.02, "momentum": 0.9}, "steps": 250}),
    _t("hv_gru_rmsprop", "GRU 32 + linear", "sequence classification", "RMSprop", 302,
       "healthy: GRU with RMSprop, another seed", [],
       {"data": {"loader": "sequences"}, "model": {"arch": "rnn", "cell": "gru"},
        "optimizer": {"name": "rmsprop", "lr": 2e-3}}),
    _t("hv_regression_relu_sgd", "MLP 64-32 ReLU", "regression", "SGD+momentum", 303,
       "healthy: ReLU regression with SGD and momentum", [],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": SGD_M,
        "loss": "mse"}),
    _t("bv_softmax_into_ce_blobs", "MLP 128 ReLU + Softmax", "synthetic 4 classes", "SGD+momentum", 310,
       "a softmax output fed to CrossEntropyLoss, another model, data and optimiser", ["improper_output"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [128], "output_activation": "softmax"},
        "optimizer": SGD_M}),
    _t("bv_tabular_raw_small_mlp", "MLP 16 ReLU", "breast cancer raw features", "SGD+momentum", 311,
       "raw tabular features into a small MLP trained with SGD", ["unnormalised_input"],
       {"data": {**CANCER, "standardise": False}, "model": {"arch": "mlp", "hidden": [16]},
        "optimizer": {"name": "sgd", "lr": 1e-3, "momentum": 0.9}, "loss": "bce"}),
    _t("bv_explode_ascent_wide", "MLP 128-64 ReLU", "synthetic 4 classes", "Adam, maximize", 313,
       "cross-entropy maximised (sign error), a wider model on other data", ["exploding_finite"],
       {"data": BLOBS, "model": {"arch": "mlp", "hidden": [128, 64]}, "optimizer": {"name": "adam", "lr": 0.02},
        "bug": {"gradient_ascent": True}}),
    _t("bv_overfit_small_blobs", "MLP 256-256 ReLU", "synthetic, 40% label noise, 150 rows", "Adam", 314,
       "a big model memorising a small noisy set, another seed and size", ["overfit", "overtraining"],
       {"data": {"loader": "blobs", "n": 200, "label_noise": 0.4}, "model": {"arch": "mlp", "hidden": [256, 256]},
        "optimizer": {"name": "adam", "lr": 3e-3}, "steps": 400}),
    _t("bv_oscillate_logreg_blobs", "logistic regression", "synthetic 4 classes", "SGD momentum 0.99, lr 0.5", 315,
       "momentum 0.99 with a large learning rate on a linear classifier", ["oscillating_loss"],
       {"data": BLOBS, "model": {"arch": "logreg"}, "optimizer": {"name": "sgd", "lr": 0.5, "momentum": 0.99}}),
    _t("bv_slow_sgd_regression", "MLP 64 tanh", "regression", "SGD lr 0.002", 316,
       "plain SGD at a learning rate far too small for the step budget, regression", ["slow_convergence"],
       {"data": {"loader": "regression"}, "model": {"arch": "mlp", "hidden": [64], "activation": "tanh"},
        "optimizer": {"name": "sgd", "lr": 0.002}, "loss": "mse"}),
]


# ----------------------------------------------------------------------------------------------------------
# Held-out batch (ids hh_/bh_): written before any rule was changed for it, by other code (heldout_torch.py,
# heldout_keras.py, heldout_xgboost.py, heldout_data.py) than the runs above, and recorded as somebody outside
# the team records a run: ``Hook.recommended(out_dir)`` and nothing more unless ``hook`` says otherwise
# (hooks.HELDOUT_HOOKS). Other architectures, losses, optimisers, schedules, lengths and bugs produced other
# ways (see heldout_torch.py's docstring). The verdicts the rules gave on them before any fix are kept in
# benchmarks/RESULTS.md ("Rule accuracy", held-out batch).
def _ht(id, arch, task, opt, seed, bug, classes, train, **kw) -> Scenario:
    return _t(id, arch, task, opt, seed, bug, classes, {"trainer": "heldout_torch", **train}, **kw)


def _hk(id, arch, task, opt, seed, bug, classes, train, **kw) -> Scenario:
    return _k(id, arch, task, opt, seed, bug, classes, {"trainer": "heldout_keras", **train}, **kw)


def _hx(id, arch, task, seed, bug, classes, train, **kw) -> Scenario:
    return _x(id, arch, task, seed, bug, classes, {"trainer": "heldout_xgboost", **train}, **kw)


TOKENS = {"loader": "tokens"}
SEQ = {"loader": "sequences"}
DIGITS_UNIT = {"loader": "digits", "flat": True, "scaling": "standard"}
WINE = {"loader": "wine"}

HELDOUT: List[Scenario] = [
    # ------------------------------------------------------------------------------ healthy, PyTorch
    _ht("hh_transformer_adamw_warmup", "transformer encoder 2x(4 heads, d=32, GELU, pre-LayerNorm), dropout 0.1",
        "token sequences, 3 classes", "AdamW, warmup + linear decay, clip 1.0", 400,
        "healthy: attention, LayerNorm, GELU, warmup, clipping, validation every epoch", [],
        {"data": TOKENS, "model": {"arch": "transformer"}, "optimizer": {"name": "adamw", "lr": 3e-3, "weight_decay": 0.01},
         "schedule": {"name": "warmup_linear", "warmup": 40}, "clip": 1.0, "epochs": 8}),
    _ht("hh_conv1d_silu_onecycle", "1-D conv net, BatchNorm + SiLU", "sequence classification", "SGD nesterov, OneCycle",
        401, "healthy: OneCycle (lr rises 25x then falls), SiLU units, BatchNorm", [],
        {"data": SEQ, "model": {"arch": "conv1d"}, "optimizer": {"name": "sgd", "lr": 0.01, "momentum": 0.9,
                                                              "nesterov": True},
         "schedule": {"name": "onecycle", "max_lr": 0.1}, "epochs": 8}),
    _ht("hh_autoencoder_digits", "MLP autoencoder 64-32-8-32-64, ReLU", "digits reconstruction", "Adam", 402,
        "healthy: reconstruction loss that plateaus at a bottleneck's floor; narrow 8-unit code of ReLUs", [],
        {"data": DIGITS_UNIT, "model": {"arch": "autoencoder"}, "loss": "mse_recon",
         "optimizer": {"name": "adam", "lr": 3e-3}, "epochs": 15}),
    _ht("hh_resmlp_huber", "residual MLP, 8 pre-LayerNorm blocks, GELU", "Friedman regression", "Adam, Huber loss", 403,
        "healthy: a deep residual net (16 linear layers), Huber loss, validation every epoch", [],
        {"data": {"loader": "friedman"}, "model": {"arch": "resmlp"}, "loss": "huber",
         "optimizer": {"name": "adam", "lr": 1e-3}, "epochs": 12}),
    _ht("hh_multitask_two_losses", "shared ReLU trunk, classification + regression heads", "digits + an auxiliary regression target",
        "Adam", 404, "healthy: two loss modules (CrossEntropy + SmoothL1), summed", [],
        {"data": DIGITS_FLAT, "model": {"arch": "multitask"}, "loss": "multitask", "optimizer": ADAM, "epochs": 6}),
    _ht("hh_multilabel_bce_dropout", "MLP 128-64 ReLU, dropout 0.5", "multi-label, 5 labels", "AdamW wd 0.05",
        405, "healthy: multi-label BCEWithLogits, heavy dropout (validation below training loss)", [],
        {"data": {"loader": "multilabel"}, "model": {"arch": "mlp", "hidden": [128, 64], "dropout": 0.5}, "loss": "bce",
         "optimizer": {"name": "adamw", "lr": 1e-2, "weight_decay": 0.05}, "epochs": 25}),
    _ht("hh_cnn_label_smoothing_restarts", "CNN stem + 2 residual conv blocks", "digits images",
        "SGD+momentum, cosine warm restarts", 406,
        "healthy: label smoothing 0.1 (loss floor ~0.5), lr restarts every 60 steps (loss bumps)", [],
        {"data": DIGITS, "model": {"arch": "cnn", "blocks": 2}, "loss": "ce_smooth",
         "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}, "schedule": {"name": "cosine_restarts", "period": 60},
         "epochs": 8}),
    _ht("hh_l1_plateau_diabetes", "MLP 32-32 tanh", "diabetes regression, L1 loss", "Adam, ReduceLROnPlateau", 407,
        "healthy: L1 loss on a small noisy regression (plateaus high), lr halved on plateau, tanh units", [],
        {"data": {"loader": "tabular", "name": "diabetes"}, "model": {"arch": "mlp", "hidden": [32, 32], "activation": "tanh"},
         "loss": "l1", "optimizer": {"name": "adam", "lr": 3e-3}, "schedule": {"name": "plateau"}, "epochs": 30,
         "batch_size": 16}),
    _ht("hh_gru_nll_clip", "2-layer GRU + LogSoftmax", "sequence classification", "RMSprop, clip 0.5", 408,
        "healthy: NLLLoss on log-probabilities, stacked GRU, gradient clipping", [],
        {"data": SEQ, "model": {"arch": "recurrent", "cell": "gru", "layers": 2, "log_softmax": True}, "loss": "nll",
         "optimizer": {"name": "rmsprop", "lr": 2e-3}, "clip": 0.5, "epochs": 6}),
    _ht("hh_kldiv_distillation", "MLP 64 SiLU student", "wine, soft teacher targets", "NAdam", 409,
        "healthy: KL divergence to soft targets (a loss floor above 0), tiny data set (133 rows)", [],
        {"data": WINE, "model": {"arch": "mlp", "hidden": [64], "activation": "silu"}, "loss": "kldiv",
         "optimizer": {"name": "nadam", "lr": 3e-3}, "epochs": 40, "batch_size": 16}),
    _ht("hh_grad_accumulation", "MLP 64-64 ReLU", "digits", "SGD+momentum, 4 micro-batches per step", 410,
        "healthy: gradient accumulation, steps counted by hook.register_optimizer", [],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 64]}, "optimizer": SGD_M, "batch_size": 16,
         "accumulate": 4, "epochs": 12}),
    _ht("hh_cnn_bf16_autocast", "CNN stem + 1 residual block", "digits images", "Adam, bf16 autocast", 411,
        "healthy: bf16 activations under torch.autocast", [],
        {"data": DIGITS, "model": {"arch": "cnn", "blocks": 1}, "optimizer": {"name": "adam", "lr": 3e-3},
         "autocast": True, "epochs": 12}),
    _ht("hh_short_15_steps", "MLP 64 ReLU", "breast cancer, binary", "Adam", 412,
        "healthy: a 15-step run (a smoke test, or a fine-tuning job), validated once", [],
        {"data": CANCER, "model": {"arch": "mlp", "hidden": [64]}, "loss": "bce", "optimizer": {"name": "adam", "lr": 3e-2},
         "steps": 15}),
    _ht("hh_long_2000_steps_batch8", "MLP 64-32 ReLU, dropout 0.1", "synthetic 4 classes, 6000 rows", "SGD, batch 8",
        413, "healthy: 2000 noisy steps of batch 8, validation every 250 steps, no schedule", [],
        {"data": {"loader": "blobs", "n": 8000}, "model": {"arch": "mlp", "hidden": [64, 32], "dropout": 0.1},
         "optimizer": {"name": "sgd", "lr": 0.02}, "batch_size": 8, "steps": 2000, "validate": 250}),
    _ht("hh_regression_l1_sgd", "MLP 32 SiLU", "regression", "SGD", 414,
        "healthy: L1 loss, plain SGD with no schedule, validation every 50 steps", [],
        {"data": {"loader": "regression", "noise": 0.3}, "model": {"arch": "mlp", "hidden": [32], "activation": "silu"},
         "loss": "l1", "optimizer": {"name": "sgd", "lr": 0.05}, "batch_size": 32, "steps": 800, "validate": 50}),
    _ht("hh_noisy_labels_plateau", "MLP 64 ReLU", "synthetic 4 classes, 35% label noise", "Adam", 415,
        "healthy: a task with irreducible noise: the loss drops a little, then plateaus high for most of the run", [],
        {"data": {"loader": "blobs", "n": 6000, "label_noise": 0.35}, "model": {"arch": "mlp", "hidden": [64]},
         "optimizer": {"name": "adam", "lr": 1e-3}, "epochs": 8}),
    _ht("hh_resnet_no_validation", "CNN stem + 4 residual conv blocks", "digits images", "SGD+momentum, exponential decay",
        416, "healthy: deeper residual CNN, no validation at all", [],
        {"data": DIGITS, "model": {"arch": "cnn", "blocks": 4}, "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9},
         "schedule": {"name": "exponential", "gamma": 0.995}, "validate": "none", "epochs": 8}),
    _ht("hh_large_batch_warmup", "MLP 256-256 GELU + LayerNorm", "synthetic 4 classes, batch 256",
        "AdamW lr 1e-2 wd 0.1, warmup", 417,
        "healthy: large batch (23 steps an epoch), high peak rate with warmup (LAMB-like recipe)", [],
        {"data": {"loader": "blobs", "n": 8000}, "model": {"arch": "mlp", "hidden": [256, 256], "activation": "gelu", "layernorm": True},
         "optimizer": {"name": "adamw", "lr": 1e-2, "weight_decay": 0.1},
         "schedule": {"name": "warmup_linear", "warmup": 10}, "batch_size": 256, "epochs": 8}),
    _ht("hh_readme_hook_interval", "MLP 64-32 ReLU", "digits", "Adam", 418,
        "healthy, recorded with the README's hook: weights, gradients and losses every 10 steps", [],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": ADAM, "epochs": 10,
         "hook": "readme_interval"}),
    _ht("hh_default_hook", "MLP 64-32 ReLU", "digits", "Adam", 418,
        "healthy, recorded with Hook(out_dir) as it comes (default collections, every 500 steps): the same training "
        "as hh_readme_hook_interval", [],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": ADAM, "epochs": 10,
         "hook": "default"}, label_twin="hh_readme_hook_interval"),
    _ht("hh_finetune_frozen_body", "MLP 128-64 ReLU, body pre-trained then frozen", "digits", "Adam on the head",
        423, "healthy: transfer learning: the body trained first, then frozen (requires_grad=False), a new head trained",
        [], {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [128, 64]}, "optimizer": ADAM, "epochs": 6,
             "pretrain_then_freeze": {"epochs": 3}}, quick=True),
    # -------------------------------------------------------------------------------- healthy, Keras
    _hk("hh_keras_conv1d_callbacks", "functional Conv1D x2, ReLU Activation layers", "sequence classification",
        "Adam, EarlyStopping + ReduceLROnPlateau", 420,
        "healthy: validation_split, callbacks that stop early and cut the rate", [],
        {"data": SEQ, "model": {"arch": "conv1d", "output_activation": "softmax"}, "loss": "sparse_ce",
         "optimizer": {"name": "adam", "lr": 3e-3}, "epochs": 20, "validation_split": True,
         "callbacks": ["early_stopping", "reduce_lr"]}),
    _hk("hh_keras_lstm_binary", "functional LSTM 32 + Dense ReLU", "sequence classification, sigmoid output", "RMSprop",
        421, "healthy: recurrent binary classifier, BCE on a sigmoid output", [],
        {"data": {"loader": "sequences"}, "model": {"arch": "lstm", "output_activation": "sigmoid"}, "loss": "bce",
         "optimizer": {"name": "rmsprop", "lr": 2e-3}, "epochs": 8}),
    _hk("hh_keras_dropout_wine", "Sequential MLP 64-64, tanh, Dropout 0.4", "wine, 3 classes", "Nadam", 422,
        "healthy: heavy dropout on a 133-row data set, 40 epochs", [],
        {"data": WINE, "model": {"arch": "mlp", "hidden": [64, 64], "activation": "tanh", "dropout": 0.4,
                                 "output_activation": "softmax"},
         "loss": "sparse_ce", "optimizer": {"name": "nadam", "lr": 2e-3}, "epochs": 40, "batch_size": 16}),
    # ------------------------------------------------------------------------------ healthy, XGBoost
    _hx("hh_xgb_early_stopping", "gradient-boosted trees, depth 4, early stopping 10", "breast cancer, binary", 430,
        "healthy: up to 500 rounds, stopped early on the validation log loss; AUC watched too", [],
        {"data": CANCER, "params": {"objective": "binary:logistic", "max_depth": 4, "eta": 0.1,
                                    "eval_metric": ["auc", "logloss"]}, "rounds": 500, "early_stopping": 10}),
    _hx("hh_xgb_many_rounds_regression", "gradient-boosted trees, depth 5, eta 0.03", "Friedman regression", 431,
        "healthy: 400 rounds of a small learning rate (a long, slowly flattening curve)", [],
        {"data": {"loader": "friedman", "n": 2000}, "params": {"objective": "reg:squarederror", "max_depth": 5,
                                                               "eta": 0.03, "subsample": 0.8, "eval_metric": "rmse"},
         "rounds": 400}),
    _hx("hh_xgb_ranking_ndcg", "LambdaMART, depth 4", "learning to rank, 200 queries", 432,
        "healthy: rank:ndcg with NDCG as the only metric (higher is better)", [],
        {"data": {"loader": "ranking"}, "params": {"objective": "rank:ndcg", "max_depth": 4, "eta": 0.1,
                                                   "eval_metric": "ndcg@5"}, "rounds": 80}, quick=True),
    _hx("hh_xgb_absolute_error", "gradient-boosted trees, depth 3", "Friedman regression, absolute error", 433,
        "healthy: reg:absoluteerror with MAE, 60 rounds", [],
        {"data": {"loader": "friedman", "n": 3000}, "params": {"objective": "reg:absoluteerror", "max_depth": 3,
                                                               "eta": 0.5, "eval_metric": "mae"},
         "rounds": 60}),
    _hx("hh_xgb_poisson_counts", "gradient-boosted trees, depth 3", "event counts 0-20 (mostly 0-2)", 435,
        "healthy: count:poisson on integer counts (targets that look like skewed class ids)", [],
        {"data": {"loader": "counts"}, "params": {"objective": "count:poisson", "max_depth": 3, "eta": 0.3,
                                                  "eval_metric": "poisson-nloglik"}, "rounds": 100}),
    _hx("hh_xgb_multiclass_merror", "gradient-boosted trees, depth 3", "wine, 3 classes", 434,
        "healthy: multi:softprob, merror and mlogloss watched", [],
        {"data": WINE, "params": {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "eta": 0.2,
                                  "eval_metric": ["merror", "mlogloss"]}, "rounds": 120}),

    # ------------------------------------------------------------------------------------ buggy, PyTorch
    _ht("bh_transformer_lr_too_high", "post-norm transformer encoder 2x(4 heads, d=32)", "token sequences, 3 classes",
        "Adam lr 0.1, no warmup", 450, "a post-norm transformer at 200x its usual rate with no warmup: the loss "
        "wobbles and creeps down, far from what the model reaches at a sound rate", ["slow_convergence"],
        {"data": TOKENS, "model": {"arch": "transformer", "norm_first": False}, "optimizer": {"name": "adam", "lr": 0.1},
         "epochs": 8}),
    _ht("bh_transformer_sgd_lr_huge", "transformer encoder 2x(4 heads, d=32)", "token sequences, 3 classes",
        "SGD lr 1.0", 449, "plain SGD at lr 1.0 on a transformer: the loss jumps by ten orders of magnitude and stays "
        "up", ["exploding_finite"],
        {"data": TOKENS, "model": {"arch": "transformer"}, "optimizer": {"name": "sgd", "lr": 1.0}, "epochs": 8}),
    _ht("bh_forgot_zero_grad", "MLP 64-32 ReLU", "digits", "SGD+momentum", 451,
        "optimizer.zero_grad() never called: gradients pile up step after step", ["exploding_finite"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": SGD_M, "epochs": 6,
         "bug": {"no_zero_grad": True}}),
    _ht("bh_sigmoid_into_bce_with_logits", "MLP 64 ReLU + Sigmoid", "multi-label, 5 labels", "Adam", 452,
        "a Sigmoid output layer fed to BCEWithLogitsLoss (which applies the sigmoid again)", ["improper_output"],
        {"data": {"loader": "multilabel"}, "model": {"arch": "mlp", "hidden": [64], "output_activation": "sigmoid"},
         "loss": "bce", "optimizer": ADAM, "epochs": 8, "hook": "recommended_loss_io"}),
    _ht("bh_nll_on_logits", "MLP 64 ReLU, no LogSoftmax", "digits", "Adam", 453,
        "NLLLoss fed raw logits (the log_softmax forgotten): the loss falls without bound", ["improper_output"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64]}, "loss": "nll", "optimizer": ADAM, "epochs": 6}),
    _ht("bh_labels_shifted_by_one", "MLP 64-32 ReLU", "digits, labels joined off by one row", "Adam", 454,
        "row i trained with row i+1's label: nothing links the labels to the inputs", ["loss_not_decreasing"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": ADAM, "epochs": 8,
         "bug": {"labels_shifted": True}}),
    _ht("bh_sorted_labels_no_shuffle", "MLP 64 ReLU", "digits sorted by label, shuffle=False", "SGD+momentum", 455,
        "the data set is sorted by class and never shuffled: every batch holds one class", ["oscillating_loss"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64]}, "optimizer": SGD_M, "epochs": 8,
         "bug": {"sorted_by_label": True}}),
    _ht("bh_step_before_backward", "MLP 128-64 ReLU", "digits", "Adam", 456,
        "optimizer.step() called before loss.backward(): every step applies the gradient zero_grad() just cleared",
        ["frozen_weights"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [128, 64]}, "optimizer": ADAM, "epochs": 6,
         "bug": {"step_before_backward": True}}),
    _ht("bh_rnn_exploding_no_clip", "vanilla RNN (tanh) 64, recurrent init std 0.5", "sequences of 60 steps",
        "SGD lr 0.1, no clipping", 457, "a vanilla RNN on long sequences, recurrent weights too large, no clipping: "
        "the weights blow up and the loss never falls", ["exploding_finite", "loss_not_decreasing"],
        {"data": {"loader": "sequences", "length": 60}, "model": {"arch": "recurrent", "cell": "rnn", "hidden": 64},
         "init": {"recurrent_std": 0.5}, "optimizer": {"name": "sgd", "lr": 0.1}, "epochs": 6}),
    _ht("bh_sigmoid_unscaled_wine", "MLP 32-32 sigmoid", "wine, raw features (proline ~ 1000)", "Adam", 458,
        "raw tabular features into sigmoid units", ["saturated_activation", "unnormalised_input"],
        {"data": {"loader": "wine", "standardise": False}, "model": {"arch": "mlp", "hidden": [32, 32], "activation": "sigmoid"},
         "optimizer": ADAM, "epochs": 30, "batch_size": 16}),
    _ht("bh_dead_relu_warmup_overshoot", "MLP 128-128 ReLU", "synthetic 4 classes", "SGD, warmup to lr 3",
        459, "a warmup schedule written with the peak rate 100x too large: the ReLUs die as the rate climbs",
        ["dead_relu"],
        {"data": BLOBS, "model": {"arch": "mlp", "hidden": [128, 128]}, "optimizer": {"name": "sgd", "lr": 3.0},
         "schedule": {"name": "warmup_linear", "warmup": 50}, "epochs": 6}),
    _ht("bh_conv1d_relu_lr_huge", "1-D conv net, BatchNorm + ReLU", "sequence classification", "SGD lr 5", 460,
        "a learning rate 500x too large for a 1-D conv net", ["dead_relu"],
        {"data": SEQ, "model": {"arch": "conv1d", "activation": "relu"}, "optimizer": {"name": "sgd", "lr": 5.0,
                                                                                    "momentum": 0.9}, "epochs": 6}),
    _ht("bh_deep_tanh_default_init", "MLP 20x32 tanh (PyTorch's default init)", "digits", "SGD", 461,
        "twenty tanh layers at PyTorch's default initialisation: the signal and the gradient fade with depth",
        ["vanishing_gradient"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [32] * 20, "activation": "tanh"},
         "optimizer": {"name": "sgd", "lr": 0.05}, "epochs": 6}, quick=True),
    _ht("bh_autoencoder_lr_tiny", "MLP autoencoder 64-32-8-32-64", "digits reconstruction", "Adam lr 1e-7", 462,
        "learning rate 1e-7 (typed for 1e-3)", ["loss_not_decreasing"],
        {"data": DIGITS_UNIT, "model": {"arch": "autoencoder"}, "loss": "mse_recon",
         "optimizer": {"name": "adam", "lr": 1e-7}, "epochs": 10}),
    _ht("bh_slow_resmlp_sgd", "residual MLP, 8 blocks", "Friedman regression", "SGD lr 3e-4", 463,
        "plain SGD at a rate far too small for a deep residual net's budget", ["slow_convergence"],
        {"data": {"loader": "friedman"}, "model": {"arch": "resmlp"}, "loss": "mse",
         "optimizer": {"name": "sgd", "lr": 3e-4}, "epochs": 12}),
    _ht("bh_overfit_transformer_tiny_data", "transformer encoder 2x(4 heads, d=64), no dropout",
        "token sequences, 60 training rows", "AdamW", 464,
        "a transformer trained for 600 steps on 60 rows: it memorises them", ["overfit", "overtraining"],
        {"data": {"loader": "tokens", "n": 400, "valid_fraction": 0.85}, "model": {"arch": "transformer", "dim": 64,
                                                                                 "dropout": 0.0},
         "optimizer": {"name": "adamw", "lr": 3e-3, "weight_decay": 0.0}, "steps": 600, "validate": 20,
         "batch_size": 16}),
    _ht("bh_imbalance_wine", "MLP 32 ReLU", "wine, two classes kept at 5%", "Adam", 465,
        "two of three classes almost absent from the training data", ["class_imbalance"],
        {"data": {"loader": "wine", "minority_keep": 0.05}, "model": {"arch": "mlp", "hidden": [32]},
         "optimizer": ADAM, "epochs": 60, "batch_size": 8}, quick=True),
    _ht("bh_nan_zero_std_feature", "MLP 32 ReLU", "breast cancer + a constant column", "Adam", 466,
        "standardised with (x - mean) / std and no epsilon: a constant column becomes 0/0 = NaN", ["exploding_nan"],
        {"data": CANCER, "model": {"arch": "mlp", "hidden": [32]}, "loss": "bce", "optimizer": ADAM, "epochs": 4,
         "bug": {"constant_feature_zero_std": True}}),
    _ht("bh_images_mean_subtracted_only", "CNN stem + 1 residual block", "digits as 8-bit pixels minus 127.5",
        "SGD+momentum", 467, "the mean subtracted, the division by the standard deviation forgotten (std ~ 90)",
        ["bad_image_input"],
        {"data": {"loader": "digits", "scaling": "raw"}, "model": {"arch": "cnn", "blocks": 1},
         "optimizer": {"name": "sgd", "lr": 1e-3, "momentum": 0.9}, "epochs": 4,
         "bug": {"mean_only_images": True}}),
    _ht("bh_mse_on_class_ids_wine", "MLP 32 ReLU, one output", "wine classes as numbers", "Adam", 468,
        "a 3-class problem trained with MSE against the class index", ["improper_output"],
        {"data": WINE, "model": {"arch": "mlp", "hidden": [32]}, "loss": "mse_labels", "optimizer": ADAM,
         "epochs": 30, "batch_size": 16, "hook": "recommended_loss_io"}),
    _ht("bh_readme_hook_lr_tiny", "MLP 64-32 ReLU", "digits", "SGD lr 1e-5", 469,
        "learning rate 1e-5, recorded with the README's hook (every 10 steps)", ["loss_not_decreasing"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 32]}, "optimizer": {"name": "sgd", "lr": 1e-5},
         "epochs": 10, "hook": "readme_interval"}),
    # -------------------------------------------------------------------------------------- buggy, Keras
    _hk("bh_keras_adam_lr_huge", "Sequential MLP 64-64 ReLU", "digits", "Adam lr 1.0", 470,
        "Adam at lr 1.0: the ReLUs die", ["dead_relu"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64, 64], "output_activation": "softmax"},
         "loss": "sparse_ce", "optimizer": {"name": "adam", "lr": 1.0}, "epochs": 6}),
    _hk("bh_keras_raw_images", "functional CNN, ReLU layers", "digits, 0-255 pixels", "SGD", 471,
        "8-bit pixels fed unscaled", ["bad_image_input"],
        {"data": {"loader": "digits", "scaling": "bytes"}, "model": {"arch": "cnn", "output_activation": "softmax"},
         "loss": "sparse_ce", "optimizer": {"name": "sgd", "lr": 1e-4}, "epochs": 4}),
    _hk("bh_keras_sorted_no_shuffle", "Sequential MLP 64 ReLU", "digits sorted by label, shuffle=False", "SGD+momentum",
        472, "fit(shuffle=False) on data sorted by class", ["oscillating_loss"],
        {"data": DIGITS_FLAT, "model": {"arch": "mlp", "hidden": [64], "output_activation": "softmax"},
         "loss": "sparse_ce", "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}, "epochs": 8,
         "bug": {"sorted_by_label": True}}),
    # ------------------------------------------------------------------------------------ buggy, XGBoost
    _hx("bh_xgb_depth_16_regression", "gradient-boosted trees, depth 16", "Friedman regression, noisy", 480,
        "max_depth=16 and min_child_weight=0", ["tree_too_deep"],
        {"data": {"loader": "friedman", "n": 3000, "noise": 2.0},
         "params": {"objective": "reg:squarederror", "max_depth": 16, "min_child_weight": 0, "eta": 0.1,
                    "eval_metric": "rmse"}, "rounds": 40}),
    _hx("bh_xgb_overfit_noisy_many_rounds", "gradient-boosted trees, depth 8, eta 0.3", "synthetic binary, 30% noise, 300 rows",
        481, "deep trees boosted for 400 rounds on a small noisy set", ["overfit"],
        {"data": {"loader": "blobs", "n": 400, "classes": 2, "label_noise": 0.3},
         "params": {"objective": "binary:logistic", "max_depth": 8, "eta": 0.3, "eval_metric": "logloss"},
         "rounds": 400}),
    _hx("bh_xgb_slow_eta_regression", "gradient-boosted trees, depth 4, eta 0.002", "Friedman regression", 482,
        "a learning rate 50x too small for 150 rounds", ["slow_convergence"],
        {"data": {"loader": "friedman"}, "params": {"objective": "reg:squarederror", "max_depth": 4, "eta": 0.002,
                                                    "eval_metric": "rmse"}, "rounds": 150}),
    _hx("bh_xgb_imbalance_binary", "gradient-boosted trees, depth 3", "synthetic binary, one class kept at 4%", 483,
        "the minority class almost absent", ["class_imbalance"],
        {"data": {"loader": "blobs", "n": 6000, "classes": 2, "imbalance": 0.04},
         "params": {"objective": "binary:logistic", "max_depth": 3, "eta": 0.2, "eval_metric": "logloss"},
         "rounds": 60}),
]
SCENARIOS += HELDOUT

# The second held-out batch (ids h2_/b2_), in a module of its own; imported here, after the helpers it uses
from .scenarios_heldout2 import HELDOUT2  # noqa: E402

SCENARIOS += HELDOUT2


def by_id() -> Dict[str, Scenario]:
    return {s.id: s for s in SCENARIOS}
