"""Built-in generic rules on hand-made runs: each fires exactly at the steps where it should."""

import numpy as np
import pytest

from smdebug import ReductionConfig, SaveConfig
from smdebug.exceptions import SMDebugValueError
from smdebug.rules.generic import AllZero, ExplodingTensor, TensorVariance, UnchangedTensor, VanishingGradient
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from _hooks import NumpyHook




def run(path, steps, reduction_config=None):
    """``steps``: list of {name: array} per step; every step saved."""
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients"])
    if reduction_config is not None:
        hook.get_collection("gradients").reduction_config = reduction_config
    for tensors in steps:
        hook.begin_step()
        for name, value in tensors.items():
            hook.record(name, np.asarray(value, np.float32))
        hook.end_step()
    hook.close()
    return create_trial(str(path))


def grads(*means):
    """Gradients of two weight matrices; the first one's mean |gradient| is ``means[step]``."""
    return [{"gradient/w/a": np.full((2, 2), m), "gradient/w/b": np.full((2, 2), 1.0)} for m in means]


def test_vanishing_gradient_leaves_out_biases_and_normalisation_parameters(tmp_path):
    # a bias followed by BatchNorm gets no gradient by construction: 1-D gradients are not judged
    steps = [{"gradient/w/bias": np.zeros(4), "gradient/w/a": np.full((2, 2), 1e-3)}] * 2
    trial = run(tmp_path, steps)
    rule = VanishingGradient(trial)
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 2
    assert invoke_rule(VanishingGradient(run(tmp_path / "matrix", grads(1e-9)))) == [0]


@pytest.mark.parametrize("bias", ["gradient/mha/key/bias", "gradient/mha/key/bias:0", "gradient/mha0_key_bias",
                                  "gradient/Attn_k.bias"])
def test_vanishing_gradient_leaves_out_biases_of_any_rank(tmp_path, bias):
    # Keras' MultiHeadAttention keeps its projections' biases as (heads, key_dim) matrices; the key projection's
    # gets a gradient of ~0 by construction (it shifts all of a query's logits alike, which the softmax removes)
    tiny = np.full((4, 8), 6.75e-11)
    steps = [{bias: tiny, "gradient/mha/key/kernel": np.full((8, 4, 8), 1e-3)}] * 4
    rule = VanishingGradient(run(tmp_path, steps))
    assert invoke_rule(rule) == [] and rule.evaluation.steps == 4
    # the same values as a weight's gradient vanish
    as_weight = [{"gradient/mha/key/kernel_b": tiny, "gradient/mha/key/kernel": np.full((8, 4, 8), 1e-3)}] * 4
    assert invoke_rule(VanishingGradient(run(tmp_path / "weight", as_weight))) == [0, 1, 2, 3]


def test_vanishing_gradient_threshold_is_strict(tmp_path):
    trial = run(tmp_path, grads(1e-3, 2e-7, 1e-7, 5e-8, 0.0))
    assert invoke_rule(VanishingGradient(trial, threshold="1e-7")) == [3, 4]  # 1e-7 itself is not below
    assert invoke_rule(VanishingGradient(trial, threshold="3e-7")) == [1, 2, 3, 4]


def test_vanishing_gradient_from_stored_reductions_only(tmp_path):
    trial = run(tmp_path, grads(1.0, 1e-9), reduction_config=ReductionConfig(abs_reductions=["mean"]))
    assert invoke_rule(VanishingGradient(trial)) == [1]


def test_exploding_tensor(tmp_path):
    steps = [{"w/x": [1.0, 2.0]}, {"w/x": [np.inf, 1.0]}, {"w/x": [np.nan, 1.0]}, {"w/x": [1.0, 1.0]}]
    trial = run(tmp_path, steps)
    assert invoke_rule(ExplodingTensor(trial, collection_names="weights")) == [1, 2]
    assert invoke_rule(ExplodingTensor(trial, tensor_regex="^w/", only_nan="True")) == [2]
    assert invoke_rule(ExplodingTensor(trial), start_step=2) == [2]


def test_all_zero_threshold_in_percent(tmp_path):
    steps = [{"w/z": [0, 0, 0, 1]}, {"w/z": [0, 0, 0, 0]}, {"w/z": [0, 1, 1, 1]}]
    trial = run(tmp_path, steps)
    assert invoke_rule(AllZero(trial, collection_names="weights")) == [1]
    # a weight's first save is its initialisation (zero biases, normalisation shifts): not judged
    assert invoke_rule(AllZero(trial, collection_names="weights", threshold="75")) == [1]
    # ... but a gradient's first save is a computed value: judged (with patience 1, at one save)
    trial = run(tmp_path / "gradients", [{"gradient/w/z": [0, 0, 0, 0]}, {"gradient/w/z": [0, 0, 1, 1]}])
    assert invoke_rule(AllZero(trial, collection_names="gradients", patience="1")) == [0]
    assert invoke_rule(AllZero(trial, collection_names="gradients", patience="1", threshold="50")) == [0, 1]
    with pytest.raises(SMDebugValueError, match="collection_names or tensor_regex"):
        AllZero(trial)


def test_unchanged_tensor_needs_num_steps_equal_values(tmp_path):
    steps = [{"w/u": [1.0]}, {"w/u": [1.0]}, {"w/u": [1.0]}, {"w/u": [2.0]}, {"w/u": [2.0 + 1e-9]}, {"w/u": [2.0]}]
    trial = run(tmp_path, steps)
    assert invoke_rule(UnchangedTensor(trial, tensor_regex="w/u")) == [2, 5]
    assert invoke_rule(UnchangedTensor(trial, tensor_regex="w/u", num_steps="2")) == [1, 2, 4, 5]
    assert invoke_rule(UnchangedTensor(trial, tensor_regex="w/u"), end_step=2) == []
    with pytest.raises(SMDebugValueError, match="num_steps must be an integer"):
        UnchangedTensor(trial, num_steps="three")


def test_tensor_variance_bounds(tmp_path):
    steps = [{"w/v": [0.0, 0.0]}, {"w/v": [-1.0, 1.0]}, {"w/v": [-10.0, 10.0]}]
    trial = run(tmp_path, steps)
    assert invoke_rule(TensorVariance(trial, collection_names="weights", max_threshold="5")) == [2]
    assert invoke_rule(TensorVariance(trial, collection_names="weights", min_threshold="0.5")) == [0]
    with pytest.raises(SMDebugValueError, match="max_threshold and/or min_threshold"):
        TensorVariance(trial, collection_names="weights")
    with pytest.raises(SMDebugValueError, match="must be a number"):
        TensorVariance(trial, collection_names="weights", max_threshold="lots")


def test_rules_are_registered_by_the_builtin_pack():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    registered = manager.rules()
    for name in ["VanishingGradient", "ExplodingTensor", "AllZero", "UnchangedTensor", "TensorVariance"]:
        assert registered[name].pack == "builtin"
        assert registered[name].load().__name__ == name
    manager.reset_for_tests()
