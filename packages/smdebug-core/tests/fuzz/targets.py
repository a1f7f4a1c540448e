"""The fuzz targets: readers of untrusted bytes, each allowed to raise only its documented exception
(RELIABILITY.md). Shared by the hypothesis tests (``test_fuzz.py``) and the atheris harness
(``fuzz/harness.py``), so both hold the readers to the same contract. No pytest or hypothesis here:
the harness runs in a plain interpreter.
"""

from __future__ import annotations

import json

import numpy as np

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.json_config import load_hook_config, parse_hook_config
from smdebug.core.modes import ModeKeys
from smdebug.core.tfevent.index_file import build_index, parse_index_file
from smdebug.core.tfevent.records import encode_record, iter_records
from smdebug.core.tfevent.tensor_codec import decode_tensor_record, encode_tensor_event
from smdebug.exceptions import (
    CollectionFileCorrupted,
    EventFileCorrupted,
    IndexReaderException,
    InvalidConfigurationError,
)

# --- seeds: valid inputs the mutations start from --------------------------------------------------
SEED_RECORDS = [
    encode_record(encode_tensor_event(name, arr, 3, ModeKeys.TRAIN, 1))
    for name, arr in [("w", np.arange(6, dtype=np.float32).reshape(2, 3)), ("s", np.array(["a", "b"])),
                      ("i", np.array([1, 2], np.int64)), ("z", np.zeros((0, 2), np.float64))]
]
SEED_INDEX = build_index(ModeKeys.TRAIN, 1, "events/000000000003/000000000003_worker_0.tfevents",
                         [{"tensorname": "w", "start_idx": 0, "length": 120}],
                         [{"tensorname": "w", "originalname": "w", "shape": [2, 3]}])
SEED_COLLECTIONS = json.dumps({
    "collections": {"weights": {"name": "weights", "include_regex": ["^w"], "tensor_names": ["w"],
                                "reduction_config": {"save_raw_tensor": True, "reductions": "min,abs_l2_norm",
                                                     "save_shape": False},
                                "save_config": {"TRAIN": {"save_interval": 2, "save_steps": [1], "start_step": 0,
                                                          "end_step": None}, "EVAL": None},
                                "save_histogram": False}},
    "_meta": {"num_workers": 2}}).encode()
SEED_CONFIG = json.dumps({
    "LocalPath": "/tmp/x", "HookParameters": {"save_interval": "3", "train.save_steps": "1,2",
                                              "reductions": "mean,l1_norm", "save_raw_tensor": "true",
                                              "include_regex": "a.*,b"},
    "CollectionConfigurations": [{"CollectionName": "weights",
                                  "CollectionParameters": {"eval.save_interval": 5, "save_histogram": "False"}}]}).encode()

# --- keys the JSON readers know: hypothesis builds documents from them, libFuzzer mutates with them ---
CONFIG_KEYS = ["LocalPath", "HookParameters", "CollectionConfigurations", "CollectionName",
               "CollectionParameters", "save_interval", "save_steps", "start_step", "end_step",
               "train.save_interval", "eval.save_steps", "reductions", "save_raw_tensor", "include_regex",
               "save_all", "include_workers", "export_tensorboard", "tensorboard_dir", "save_histogram"]
INDEX_KEYS = ["meta", "mode", "mode_step", "event_file_name", "tensor_payload", "shape_payload", "tensorname",
              "start_idx", "length", "originalname", "shape", "TRAIN", "EVAL", "PREDICT", "GLOBAL"]
COLLECTION_KEYS = ["collections", "_meta", "num_workers", "name", "include_regex", "tensor_names",
                   "reduction_config", "save_raw_tensor", "reductions", "save_shape", "save_config",
                   "save_histogram", "save_interval", "save_steps", "start_step", "end_step", "TRAIN", "EVAL",
                   "PREDICT", "GLOBAL"]


# --- targets ---------------------------------------------------------------------------------------
def fuzz_record(data: bytes) -> None:
    """Event records: framing (length, CRCs) and the tensor payload."""
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
    """Index files, parsed lazily (as trials do) and eagerly."""
    for lazy in (True, False):
        try:
            f = parse_index_file("i.json", 5, "worker_0", data, lazy=lazy)
            f.tensor_names()
            for e in f.entries.values():
                assert e.location is None or (e.location[0] >= 0 and e.location[1] > 0)
        except IndexReaderException as e:
            assert e.step == 5 and e.path == "i.json"


def fuzz_collections(data: bytes) -> None:
    """Collection files; what loads accepts, dumps must write back readably."""
    try:
        cm = CollectionManager.loads(data, "c.json")
    except CollectionFileCorrupted as e:
        assert e.path == "c.json"
        return
    CollectionManager.loads(cm.dumps())


def fuzz_config_doc(doc) -> None:
    """A hook configuration already decoded from JSON."""
    try:
        parse_hook_config(doc, source="fuzz")
    except InvalidConfigurationError:
        pass


def fuzz_config_bytes(data: bytes, path: str) -> None:
    """A hook configuration file, read the way hooks read SMDEBUG_CONFIG_FILE_PATH."""
    with open(path, "wb") as f:
        f.write(data)
    try:
        load_hook_config(path)
    except InvalidConfigurationError:
        pass
