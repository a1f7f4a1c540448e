"""Fuzzing the readers of untrusted bytes: event records, index files, collection files and the hook's
JSON configuration. Each may only raise its documented exception, must not hang and must not allocate
without bound. The default run tries a few hundred inputs per target; the ``slow`` tests 100,000 each:
``pytest --run-slow -m slow packages/smdebug-core/tests/test_fuzz.py`` or ``nox -s slow`` (RELIABILITY.md).
"""

from __future__ import annotations

import json

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz.targets import (  # noqa: E402 - shared with the atheris harness (fuzz/harness.py)
    COLLECTION_KEYS,
    CONFIG_KEYS,
    INDEX_KEYS,
    SEED_COLLECTIONS as _SEED_COLLECTIONS,
    SEED_CONFIG as _SEED_CONFIG,
    SEED_INDEX as _SEED_INDEX,
    SEED_RECORDS as _SEED_RECORDS,
    fuzz_collections,
    fuzz_config_bytes,
    fuzz_config_doc,
    fuzz_index,
    fuzz_record,
)

QUICK = settings(max_examples=300, deadline=None, database=None,
                 suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=100_000, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def _mutate(seed: bytes, edits, cut):
    b = bytearray(seed)
    for pos, val in edits:
        if b:
            b[pos % len(b)] = val
    if cut is not None and b:
        del b[cut % len(b):]
    return bytes(b)


def mutated(seed):
    return st.builds(_mutate, st.just(seed), st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)),
                                                      max_size=6),
                     st.none() | st.integers(0, 1 << 16))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)


def _json_like(keys):
    """Dicts whose keys are mostly the real ones, with arbitrary values: reaches deep into the parsers."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=8), json_values, max_size=6)


# --- quick (default run) ---------------------------------------------------------------------------
@QUICK
@given(st.one_of(*[mutated(r) for r in _SEED_RECORDS], st.binary(max_size=200)))
def test_fuzz_event_records(data):
    fuzz_record(data)


@QUICK
@given(st.one_of(mutated(_SEED_INDEX), st.binary(max_size=200),
                 st.builds(lambda d: json.dumps(d).encode(),
                           _json_like(["meta", "tensor_payload", "shape_payload"]))))
def test_fuzz_index_files(data):
    fuzz_index(data)


@QUICK
@given(st.one_of(mutated(_SEED_COLLECTIONS), st.binary(max_size=200),
                 st.builds(lambda d: json.dumps({"collections": {"c": d}}).encode(),
                           _json_like(["name", "include_regex", "tensor_names", "reduction_config",
                                       "save_config", "save_histogram"]))))
def test_fuzz_collection_files(data):
    fuzz_collections(data)


_CONFIG_KEYS = CONFIG_KEYS


@QUICK
@given(st.one_of(_json_like(_CONFIG_KEYS),
                 st.builds(lambda h, c: {"HookParameters": h, "CollectionConfigurations": c},
                           _json_like(_CONFIG_KEYS), st.lists(_json_like(_CONFIG_KEYS), max_size=3)),
                 json_values))
def test_fuzz_hook_config(doc):
    fuzz_config_doc(doc)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(mutated(_SEED_CONFIG), st.binary(max_size=100)))
def test_fuzz_hook_config_file(tmp_path, data):
    fuzz_config_bytes(data, str(tmp_path / "config.json"))


@pytest.mark.parametrize("field", ['"mode_step": 1e999', '"mode_step": -1e999'])
def test_index_number_too_large_for_an_integer(field):
    """Found by atheris: JSON numbers beyond float range parse as infinity, which int() refuses with
    OverflowError; the reader must say IndexReaderException like for any other bad number."""
    event = '"event_file_name": "events/000000000003/000000000003_worker_0.tfevents"'
    for doc in ('{"meta": {"mode": "TRAIN", %s, %s}, "tensor_payload": []}' % (field, event),
                '{"meta": {"mode": "TRAIN", "mode_step": 1, %s}, "tensor_payload": '
                '[{"tensorname": "w", "start_idx": %s, "length": 3}]}' % (event, field.split(": ")[1]),
                '{"meta": {"mode": "TRAIN", "mode_step": 1, %s}, "shape_payload": '
                '[{"tensorname": "w", "shape": [%s]}]}' % (event, field.split(": ")[1])):
        fuzz_index(doc.encode())


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_collections_and_save_config_number_too_large_for_an_integer(number):
    """Found by atheris: _meta.num_workers of 1e999 (infinity once parsed) raised OverflowError."""
    for doc in ('{"collections": {}, "_meta": {"num_workers": %s}}' % number,
                '{"collections": {"c": {"name": "c", "save_config": {"TRAIN": {"save_interval": %s}}}}}' % number):
        fuzz_collections(doc.encode())
    from smdebug import SaveConfig
    from smdebug.exceptions import SMDebugValueError

    with pytest.raises(SMDebugValueError):
        SaveConfig(save_interval=float(number))


# --- slow: 100,000 inputs per target -----------------------------------------------------------------
# Hypothesis spends about 1 ms of its own per example, and several on a deeply recursive JSON strategy:
# 100,000 examples of the quick strategies would take over half an hour of CPU for the four targets.
# The slow tests therefore draw BATCH inputs per example (a failing batch shrinks to its one bad input)
# and build JSON documents of bounded depth, deep enough for every level the readers know (the
# quick tests above keep the unbounded recursive strategy).
BATCH = 10
SLOW_BATCHES = settings(SLOW, max_examples=SLOW.max_examples // BATCH)

_leaf = st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=True) | st.text(max_size=10)


def _bounded_json(keys, depth=3):
    """JSON objects ``depth`` levels deep whose keys are mostly the readers' own: cheap to draw."""
    key = st.sampled_from(keys) | st.text(max_size=8)
    value = _leaf
    for _ in range(depth - 1):
        value = _leaf | st.lists(value, max_size=3) | st.dictionaries(key, value, max_size=3)
    return st.dictionaries(key, value, max_size=5)


def _fuzz_counted(label, strategy, target):
    """Run ``target`` on 100,000 inputs drawn from ``strategy``, BATCH per example; count them."""
    calls = [0]

    @SLOW_BATCHES
    @given(st.lists(strategy, min_size=BATCH, max_size=BATCH))
    def batch(inputs):
        for data in inputs:
            calls[0] += 1
            target(data)

    batch()
    assert calls[0] >= SLOW.max_examples, f"hypothesis tried only {calls[0]} inputs"
    print(f"hypothesis {label}: {calls[0]} inputs, no finding")


def _encoded(strategy):
    return st.builds(lambda d: json.dumps(d).encode(), strategy)


@pytest.mark.slow
def test_fuzz_event_records_100k():
    _fuzz_counted("records", st.one_of(*[mutated(r) for r in _SEED_RECORDS], st.binary(max_size=400)), fuzz_record)


@pytest.mark.slow
def test_fuzz_index_files_100k():
    _fuzz_counted("index", st.one_of(mutated(_SEED_INDEX), st.binary(max_size=400),
                                     _encoded(_bounded_json(INDEX_KEYS))), fuzz_index)


@pytest.mark.slow
def test_fuzz_collection_files_100k():
    _fuzz_counted("collections", st.one_of(mutated(_SEED_COLLECTIONS), st.binary(max_size=400),
                                           _encoded(_bounded_json(COLLECTION_KEYS, depth=4)),
                                           _encoded(st.builds(lambda c: {"collections": {"c": c}},
                                                              _bounded_json(COLLECTION_KEYS)))),
                  fuzz_collections)


@pytest.mark.slow
def test_fuzz_hook_config_100k():
    doc = _bounded_json(_CONFIG_KEYS)
    _fuzz_counted("config", st.one_of(doc, st.builds(lambda h, c: {"HookParameters": h, "CollectionConfigurations": c},
                                                     doc, st.lists(doc, max_size=3)), _leaf),
                  fuzz_config_doc)
