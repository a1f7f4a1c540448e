"""smdebug.core.running_means: the record of scalars saved as running means survives the collections file, a
record of another shape is said once and read as absent, and the steps' means come back from running means."""

import json

import numpy as np
import pytest

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.running_means import RUNNING_MEANS_KEY, Restarts, record, resets_of, steps_mean
from smdebug.core.testing import capture_smdebug_log


def _round_trip(cm: CollectionManager) -> CollectionManager:
    return CollectionManager.loads(cm.dumps())


def test_the_record_survives_the_collections_file():
    cm = CollectionManager(create_default=True)
    record(cm, "TRAIN", ["loss", "accuracy", "loss"], [10, 0, 5], upto=12)
    read = _round_trip(cm)
    assert resets_of(read, "loss", "TRAIN") == Restarts([0, 5, 10], 12)
    assert resets_of(read, "accuracy", "TRAIN") == Restarts([0, 5, 10], 12)
    assert resets_of(read, "val_loss", "TRAIN") is None  # a name the record does not list
    assert resets_of(read, "loss", "EVAL") is None  # a mode it does not list
    assert resets_of(CollectionManager(create_default=True), "loss", "TRAIN") is None  # no record: as saved

    cm.meta[RUNNING_MEANS_KEY]["EVAL"] = 7  # a damaged entry of another mode
    read = _round_trip(cm)
    with capture_smdebug_log() as log:
        assert resets_of(read, "loss", "TRAIN") == Restarts([0, 5, 10], 12)
        assert resets_of(read, "loss", "EVAL") is None
    assert "_meta.running_means is not a record of running means (EVAL: not names and restart steps: 7)" in log.text


@pytest.mark.parametrize("value", [
    [0, 5],  # not a mapping of modes
    {"TRAIN": {"names": "loss", "resets": [0]}},  # names not a list
    {"TRAIN": {"names": ["loss"], "resets": [0, -5], "upto": 9}},  # a negative step
    {"TRAIN": {"names": ["loss"], "resets": [0, 5]}},  # no last step covered
    {"TRAIN": {"names": ["loss"], "resets": [0, 5], "upto": "9"}},  # nor one that is no step
    {"TRAIN": {"names": ["loss"], "resets": [0, True], "upto": 9}},  # a boolean is no step
    {"TRAIN": {"names": ["loss"], "resets": [0, 2.5], "upto": 9}},  # nor a fraction
    {"TRAIN": {"names": ["loss"], "resets": [0, 1 << 70], "upto": 9}},  # nor a number past 64 bits
    {"TRAIN": {"names": ["loss", 7], "resets": [0], "upto": 9}},  # a name that is no string
    {"TRAIN": ["loss"]},
])
def test_a_record_of_another_shape_is_said_once_and_read_as_absent(value):
    text = json.dumps({"collections": {}, "_meta": {"num_workers": 1, RUNNING_MEANS_KEY: value}})
    with capture_smdebug_log() as log:
        cm = CollectionManager.loads(text)
        assert resets_of(cm, "loss", "TRAIN") is None
        assert resets_of(cm, "loss", "TRAIN") is None
    if RUNNING_MEANS_KEY in cm.meta:  # (a value the collections file keeps: the reader is the one to say it)
        assert log.text.count(f"_meta.{RUNNING_MEANS_KEY} is not a record of running means") == 1


def test_the_means_of_the_steps_between_saves_come_back():
    rng = np.random.default_rng(0)
    losses = rng.gamma(0.5, 2.0, size=30)  # a heavy-tailed loss, three runs of ten steps
    resets = Restarts([0, 10, 20], upto=29)
    running = np.concatenate([np.cumsum(losses[e:e + 10]) / np.arange(1, 11) for e in resets.steps])

    def recovered(saved_steps, known=resets):
        previous, out = None, []
        for s in saved_steps:
            out.append(steps_mean(known, s, float(running[s]), previous))
            previous = {"step": s, "value": float(running[s])}
        return out

    np.testing.assert_allclose(recovered(range(30)), losses)  # every step saved: each step's own value
    saved = [0, 3, 4, 9, 12, 19, 25, 29]  # gaps, and saves on both sides of a restart
    expected = [losses[0], losses[1:4].mean(), losses[4], losses[5:10].mean(), losses[10:13].mean(),
                losses[13:20].mean(), losses[20:26].mean(), losses[26:30].mean()]
    np.testing.assert_allclose(recovered(saved), expected)
    assert steps_mean(Restarts([5], 9), 3, 1.5, None) == 1.5  # before the first restart the record knows: as saved
    # a record read while the run trained (it knew the restarts up to step 14): later saves are read as saved, not
    # as the continuation of a mean that restarted at step 20 without the record saying so
    early = Restarts([0, 10], upto=14)
    np.testing.assert_allclose(recovered(range(30), early), list(losses[:15]) + list(running[15:]))
