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
from smdebug.exceptions import InvalidCollectionConfiguration, InvalidConfigurationError, SMDebugTypeError
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
    assert "collection 'mine' has no include_regex and no tensor_names, and the numpy-test hook fills no collection" in log.text
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


# --- a collection's own schedule is checked as the hook's is -----------------------------------------------
# The hook refuses a schedule that can never save (start_step at or after a positive end_step) or that
# names steps past int64 for itself; a collection's own schedule used to be taken without a word, and the
# collection was silently never saved.
IMPOSSIBLE = {
    "start_after_end": lambda: SaveConfig(start_step=100, end_step=5),
    "start_is_end": lambda: {modes.TRAIN: SaveConfigMode(start_step=3, end_step=3)},
    "steps_past_int64": lambda: {"TRAIN": {"save_interval": 1, "save_steps": [2 ** 64]}},  # (read leniently)
}


@pytest.mark.parametrize("case", sorted(IMPOSSIBLE))
def test_an_included_collections_impossible_schedule_is_said_once_and_training_goes_on(tmp_path, case):
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, include_collections=["weights", "biases"], save_config=SaveConfig(save_interval=1))
    hook.get_collection("weights").save_config = IMPOSSIBLE[case]()
    with capture_smdebug_log() as log:
        train_logistic_regression(hook, steps=4, mode=modes.TRAIN)
    hook.close()
    assert not hook.disabled, hook._failure
    said = [line for line in log.text.splitlines() if "has a save_config the hook refuses" in line]
    assert len(said) == 1 and "'weights'" in said[0] and "mode TRAIN" in said[0], log.text  # once, not per step
    assert ("must be before end_step" in said[0]) == (case != "steps_past_int64")
    trial = create_trial(out)
    assert trial.tensor("biases/b").steps() == [0, 1, 2, 3]  # the other collections are saved
    assert "weights/w" not in trial.tensor_names()


def test_asked_for_directly_the_preparation_raises_as_the_hook_does_for_its_own(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), include_collections=["weights"])
    hook.get_collection("weights").save_config = SaveConfig(start_step=100, end_step=5)
    with capture_smdebug_log(), pytest.raises(InvalidConfigurationError,
                                              match=r"collection 'weights': mode TRAIN: start_step \(100\)"):
        hook._prepare_collections()
    hook.close()


def test_a_schedule_assigned_mid_run_is_checked_and_a_fixed_one_is_used(tmp_path):
    """Schedules built before the run and assigned between steps: the bad one is refused at the next step
    (the hook used to go on skipping steps by the schedules it had), the good one saves from then on."""
    out = str(tmp_path / "run")
    bad, good = SaveConfig(start_step=50, end_step=10), SaveConfig(save_interval=1)
    hook = NumpyHook(out_dir=out, include_collections=["weights", "biases"], save_config=SaveConfig(save_interval=1))

    def on_step(step):
        if step == 1:
            hook.get_collection("weights").save_config = bad
        if step == 4:
            hook.get_collection("weights").save_config = good

    with capture_smdebug_log() as log:
        train_logistic_regression(hook, steps=7, on_step=on_step)
    hook.close()
    assert log.text.count("collection 'weights' has a save_config the hook refuses") == 1, log.text
    trial = create_trial(out)
    assert trial.tensor("weights/w").steps() == [0, 1, 5, 6]
    assert trial.tensor("biases/b").steps() == list(range(7))


def test_a_prebuilt_schedule_assigned_during_quiet_steps_is_followed(tmp_path):
    """Steps with nothing due are skipped by the schedules the hook last looked at: assigning a schedule
    object built earlier used to go unnoticed until the next step the old schedules named (step 100)."""
    out = str(tmp_path / "run")
    soon = SaveConfig(save_steps=[3])
    hook = NumpyHook(out_dir=out, include_collections=["weights"], save_config=SaveConfig(save_interval=100))
    weights = hook.get_collection("weights")  # (the user keeps the collection, as with any object)

    def on_step(step):
        if step == 1:
            weights.save_config = soon

    train_logistic_regression(hook, steps=6, on_step=on_step)
    hook.close()
    assert create_trial(out).tensor("weights/w").steps() == [0, 3]
