"""smdebug 1.0.x's TensorFlow module paths and the internal hook methods scripts drove a hook with by hand:
``smdebug.tensorflow.constants``, ``singleton_utils``, ``_prepare_collections_for_tf2``, ``_increment_step``."""

import pytest

import models
import smdebug.tensorflow as smd
from smdebug.core.collection import CollectionKeys
from smdebug.exceptions import InvalidCollectionConfiguration

LAYER_NAMES = ("dense", "out")


def driven_by_hand(out_dir, include_collections, regex=None):
    """A hook stepped by hand as 1.0.x scripts did: model registered, TRAIN mode, collections prepared,
    step 0 begun, then Keras' on_train_begin."""
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=3), include_collections=include_collections)
    if regex:
        for name in include_collections:
            hook.get_collection(name).include(regex)
    hook.register_model(models.dense(compile=False))
    hook.set_mode(smd.modes.TRAIN)
    hook._prepare_collections_for_tf2()
    hook._increment_step()
    hook.on_train_begin()
    return hook


def test_default_collections_constant_is_what_a_hook_saves_by_default(out_dir):
    from smdebug.tensorflow.constants import TF_DEFAULT_SAVED_COLLECTIONS

    hook = smd.KerasHook(out_dir)
    assert set(hook.include_collections) == set(TF_DEFAULT_SAVED_COLLECTIONS) == {"losses", "metrics", "sm_metrics"}
    hook.close()


def test_should_save_follows_the_included_collections_at_a_due_step(out_dir):
    from smdebug.tensorflow.constants import TF_DEFAULT_SAVED_COLLECTIONS

    hook = driven_by_hand(out_dir + "/defaults", list(TF_DEFAULT_SAVED_COLLECTIONS))
    assert hook.step == 0
    for layer in LAYER_NAMES:
        assert not hook.should_save_tensor_or_collection(layer, CollectionKeys.GRADIENTS)
        assert not hook.should_save_tensor_or_collection(layer, CollectionKeys.LAYERS)
    hook.close()

    hook = driven_by_hand(out_dir + "/included", [CollectionKeys.GRADIENTS, CollectionKeys.LAYERS])
    for layer in LAYER_NAMES:
        assert hook.should_save_tensor_or_collection(layer, CollectionKeys.GRADIENTS)
        assert hook.should_save_tensor_or_collection(layer, CollectionKeys.LAYERS)
    hook._increment_step()  # step 1: not due with save_interval=3
    assert not hook.should_save_tensor_or_collection("dense", CollectionKeys.GRADIENTS)
    hook.close()

    hook = driven_by_hand(out_dir + "/custom", ["custom"], regex="^dense")
    assert hook.should_save_tensor_or_collection("dense", CollectionKeys.GRADIENTS)
    assert not hook.should_save_tensor_or_collection("out", CollectionKeys.GRADIENTS)
    hook.close()


def test_nothing_is_due_before_the_collections_are_prepared(out_dir):
    hook = smd.KerasHook(out_dir, save_all=True)
    assert not hook.should_save_tensor_or_collection("dense", CollectionKeys.GRADIENTS)
    hook.close()


def test_preparing_a_collection_that_matches_nothing_raises(out_dir):
    hook = smd.KerasHook(out_dir, include_collections=["nothing_in_it"])
    hook.get_collection("nothing_in_it")
    with pytest.raises(InvalidCollectionConfiguration, match="nothing_in_it"):
        hook._prepare_collections_for_tf2()
    hook.close()


def test_singleton_utils(out_dir):
    from smdebug.tensorflow import singleton_utils

    hook = smd.KerasHook(out_dir)
    singleton_utils.set_hook(hook)
    assert singleton_utils.get_hook() is hook and smd.get_hook() is hook
    singleton_utils.del_hook()
    assert singleton_utils.get_hook() is None
    hook.close()


def test_mixed_precision_support_check():
    from smdebug.tensorflow.utils import does_tf_support_mixed_precision_training

    assert does_tf_support_mixed_precision_training() is True
