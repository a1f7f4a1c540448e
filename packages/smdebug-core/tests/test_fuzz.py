"""Fuzzing the readers of untrusted bytes: event records, index files, collection files and the hook's
JSON configuration. Each may only raise its documented exception, must not hang and must not allocate
without bound. The default run tries a few hundred inputs per target; the ``slow`` tests 100,000 each:
``pytest --run-slow -m slow packages/smdebug-core/tests/test_fuzz.py`` (docs/reliability.md).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from smdebug.core.collection_manager import CollectionManager  # noqa: E402
from smdebug.core.json_config import load_hook_config, parse_hook_config  # noqa: E402
from smdebug.core.modes import ModeKeys  # noqa: E402
from smdebug.core.tfevent.index_file import build_index, parse_index_file  # noqa: E402
from smdebug.core.tfevent.records import encode_record, iter_records  # noqa: E402
from smdebug.core.tfevent.tensor_codec import decode_tensor_record, encode_tensor_event  # noqa: E402
from smdebug.exceptions import (  # noqa: E402
    CollectionFileCorrupted,
    EventFileCorrupted,
    IndexReaderException,
    InvalidConfigurationError,
)

QUICK = settings(max_examples=300, deadline=None, database=None,
                 suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=100_000, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

# --- seeds: valid inputs the mutations start from --------------------------------------------------
_SEED_RECORDS = [
    encode_record(encode_tensor_event(name, arr, 3, ModeKeys.TRAIN, 1))
    for name, arr in [("w", np.arange(6, dtype=np.float32).reshape(2, 3)), ("s", np.array(["a", "b"])),
                      ("i", np.array([1, 2], np.int64)), ("z", np.zeros((0, 2), np.float64))]
]
_SEED_INDEX = build_index(ModeKeys.TRAIN, 1, "events/000000000003/000000000003_worker_0.tfevents",
                          [{"tensorname": "w", "start_idx": 0, "length": 120}],
                          [{"tensorname": "w", "originalname": "w", "shape": [2, 3]}])
_SEED_COLLECTIONS = json.dumps({
    "collections": {"weights": {"name": "weights", "include_regex": ["^w"], "tensor_names": ["w"],
                                "reduction_config": {"save_raw_tensor": True, "reductions": "min,abs_l2_norm",
                                                     "save_shape": False},
                                "save_config": {"TRAIN": {"save_interval": 2, "save_steps": [1], "start_step": 0,
                                                          "end_step": None}, "EVAL": None},
                                "save_histogram": False}},
    "_meta": {"num_workers": 2}}).encode()
_SEED_CONFIG = json.dumps({
    "LocalPath": "/tmp/x", "HookParameters": {"save_interval": "3", "train.save_steps": "1,2",
                                              "reductions": "mean,l1_norm", "save_raw_tensor": "true",
                                              "include_regex": "a.*,b"},
    "CollectionConfigurations": [{"CollectionName": "weights",
                                  "CollectionParameters": {"eval.save_interval": 5, "save_histogram": "False"}}]}).encode()


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


# --- targets ---------------------------------------------------------------------------------------
def fuzz_record(data: bytes) -> None:
    try:
        for _off, _len, _payload in iter_records(data, "f.tfevents"):
            pass
    except EventFileCorrupted:
        pass
    try:
        decode_tensor_record(data, "f.tfevents", 7, "t")
    except EventFileCorrupted as e:
        assert e.step == 7 and e.path == "f.tfevents"


def fuzz_index(data: bytes) -> None:
    for lazy in (True, False):
        try:
            f = parse_index_file("i.json", 5, "worker_0", data, lazy=lazy)
            f.tensor_names()
            for e in f.entries.values():
                assert e.location is None or (e.location[0] >= 0 and e.location[1] > 0)
        except IndexReaderException as e:
            assert e.step == 5 and e.path == "i.json"


def fuzz_collections(data: bytes) -> None:
    try:
        cm = CollectionManager.loads(data, "c.json")
    except CollectionFileCorrupted as e:
        assert e.path == "c.json"
        return
    CollectionManager.loads(cm.dumps())  # what loads accepted, dumps writes back readably


def fuzz_config_doc(doc) -> None:
    try:
        parse_hook_config(doc, source="fuzz")
    except InvalidConfigurationError:
        pass


def fuzz_config_bytes(data: bytes, path: str) -> None:
    with open(path, "wb") as f:
        f.write(data)
    try:
        load_hook_config(path)
    except InvalidConfigurationError:
        pass


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


_CONFIG_KEYS = ["LocalPath", "HookParameters", "CollectionConfigurations", "CollectionName",
                "CollectionParameters", "save_interval", "save_steps", "start_step", "end_step",
                "train.save_interval", "eval.save_steps", "reductions", "save_raw_tensor", "include_regex",
                "save_all", "include_workers", "export_tensorboard", "tensorboard_dir", "save_histogram"]


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


# --- slow: 100,000 inputs per target -----------------------------------------------------------------
@pytest.mark.slow
def test_fuzz_event_records_100k():
    SLOW(given(st.one_of(*[mutated(r) for r in _SEED_RECORDS], st.binary(max_size=400)))(fuzz_record))()


@pytest.mark.slow
def test_fuzz_index_files_100k():
    SLOW(given(st.one_of(mutated(_SEED_INDEX), st.binary(max_size=400),
                         st.builds(lambda d: json.dumps(d).encode(),
                                   _json_like(["meta", "tensor_payload", "shape_payload"]))))(fuzz_index))()


@pytest.mark.slow
def test_fuzz_collection_files_100k():
    SLOW(given(st.one_of(mutated(_SEED_COLLECTIONS), st.binary(max_size=400),
                         st.builds(lambda d: json.dumps({"collections": {"c": d}}).encode(),
                                   _json_like(["name", "include_regex", "tensor_names", "reduction_config",
                                               "save_config", "save_histogram"]))))(fuzz_collections))()


@pytest.mark.slow
def test_fuzz_hook_config_100k(tmp_path):
    SLOW(given(st.one_of(_json_like(_CONFIG_KEYS),
                         st.builds(lambda h, c: {"HookParameters": h, "CollectionConfigurations": c},
                                   _json_like(_CONFIG_KEYS), st.lists(_json_like(_CONFIG_KEYS), max_size=3)),
                         json_values))(fuzz_config_doc))()
