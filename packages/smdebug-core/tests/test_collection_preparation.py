"""What a hook does with the collections it is given when it prepares them (1.0.x's ``_prepare_collections``):
collections get the hook's save and reduction configs, a user's collection that can match nothing is an
``InvalidCollectionConfiguration`` when the preparation is asked for directly but only a log line while
training, and a pattern assigned to ``include_regex`` that does not compile matches nothing."""

import pytest

from _support import NumpyHook, train_logistic_regression
from smdebug import ReductionConfig, SaveConfig, SaveConfigMode, modes
from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.testing import capture_smdebug_log
from smdebug.exceptions import InvalidCollectionConfiguration, SMDebugTypeError
from smdebug.trials import create_trial


def test_prepared_collections_take_the_hooks_save_and_reduction_configs(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), include_collections=["probe"],
                     save_config={modes.TRAIN: SaveConfigMode(save_interval=4)},
                     reduction_config=ReductionConfig(reductions=["mean"]))
    probe = hook.get_collection("probe")
    probe.include("^weights/")
    probe.save_config = {modes.EVAL: SaveConfigMode(save_interval=7)}
    assert probe.save_config.mode_save_configs[modes.TRAIN] is None and probe.reduction_config is None
    hook._prepare_collections()
    assert probe.save_config.mode_save_configs[modes.TRAIN].save_interval == 4  # the hook's, for the mode it lacked
    assert probe.save_config.mode_save_configs[modes.EVAL].save_interval == 7  # its own kept
    assert probe.reduction_config.reductions == ["mean"]
    hook.close()


def test_a_users_collection_that_matches_nothing_raises_when_prepared_directly(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), include_collections=["mine", "weights"])
    hook.get_collection("mine")  # created, but no regex and no tensor names
    with capture_smdebug_log() as log, pytest.raises(InvalidCollectionConfiguration, match="mine"):
        hook._prepare_collections()
    assert "collection 'mine' has no include_regex and no tensor_names" in log.text
    # a built-in that is empty is not the user's mistake: replacing the manager leaves `losses` absent
    hook.collection_manager = CollectionManager()
    hook.collection_manager.add(Collection("mine", include_regex=["^weights/"]))
    hook._prepare_collections()
    hook.close()


def test_training_goes_on_and_saves_the_other_collections(tmp_path):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, include_collections=["mine", "weights"], save_config=SaveConfig(save_interval=1))
    hook.get_collection("mine")
    with capture_smdebug_log() as log:
        train_logistic_regression(hook, steps=3)
    hook.close()
    assert log.text.count("collection 'mine' has no include_regex") == 1  # once, not every step
    trial = create_trial(out)
    assert trial.steps() == [0, 1, 2]
    assert "weights/w" in trial.tensor_names()


def test_an_assigned_pattern_that_does_not_compile_matches_nothing(tmp_path):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, include_collections=["stars", "weights"], save_config=SaveConfig(save_interval=1))
    stars = hook.get_collection("stars")
    stars.include_regex = "*"  # a glob, not a regex: 1.0.x stored it and failed later, inside training
    assert stars.include_regex == ["*"] and stars.invalid_regex == ["*"]
    assert not stars.matches("weights/w")
    with capture_smdebug_log() as log:
        hook._prepare_collections()  # has a pattern: not a collection that can never be configured
        train_logistic_regression(hook, steps=2)
    hook.close()
    assert log.text.count("include_regex '*', which is not a valid regular expression") == 1
    trial = create_trial(out)
    assert "weights/w" in trial.tensor_names()
    assert trial.collection("stars").include_regex == []  # not written out: the run's file stays readable


def test_the_constructor_and_include_still_refuse_an_invalid_pattern():
    with pytest.raises(SMDebugTypeError, match="Invalid regex"):
        Collection("bad", include_regex=["*"])
    with pytest.raises(SMDebugTypeError, match="Invalid regex"):
        Collection("bad").include("(")
    mixed = Collection("mixed")
    mixed.include_regex = ["*", "^loss$"]
    assert mixed.matches("loss") and not mixed.matches("*")
    mixed.include_regex = ["^a"]
    assert mixed.invalid_regex == [] and mixed.matches("ab")
    assert mixed.to_json_dict()["include_regex"] == ["^a"]
