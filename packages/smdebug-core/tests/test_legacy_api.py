"""The legacy module paths and names of smdebug 1.0.x (smdebug.core.legacy, docs/compatibility.md): each is
an adapter over the project's own code, so what it writes is a normal run and what it reads is what the
project's writers wrote. Local directories and S3 (moto over HTTP) alike where the name takes a path."""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import time

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression, write_run
from smdebug import modes
from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.testing import capture_smdebug_log
from smdebug.exceptions import IndexReaderException, SMDebugRuntimeError
from smdebug.trials import create_trial


@pytest.fixture(autouse=True)
def fast_end_refresh(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


# ------------------------------------------------------------------------------------------------
# FileWriter / FileReader / locations
# ------------------------------------------------------------------------------------------------
def test_file_writer_steps_read_back_by_a_trial_and_file_reader(run_loc):
    from smdebug.core.locations import IndexFileLocationUtils, TensorFileLocation
    from smdebug.core.reader import FileReader
    from smdebug.core.writer import FileWriter

    for step in range(4):
        mode = modes.TRAIN if step % 2 == 0 else modes.EVAL
        with FileWriter(trial_dir=run_loc.path, step=step, worker="algo-1") as fw:
            fw.write_tensor(tdata=np.full((2, 3), step, np.float32), tname="w", mode=mode, mode_step=step // 2)
            fw.write_tensor(tdata=np.array(["a", "bc"]), tname="s", mode=mode, mode_step=step // 2)
            fw.write_tensor(tdata=np.ones(2), tname="hidden", write_index=False)
            event_file = fw.name()
    CollectionManager().export(run_loc.path, "algo-1_collections.json")
    trial = create_trial(run_loc.path)
    assert trial.steps() == [0, 1, 2, 3]
    assert trial.steps(modes.TRAIN) == [0, 1] and trial.steps(modes.EVAL) == [0, 1]
    assert trial.tensor_names() == ["s", "w"]  # the record written without index entry is not seen
    np.testing.assert_array_equal(trial.tensor("w").value(1, mode=modes.EVAL), np.full((2, 3), 3, np.float32))

    # FileReader reads every record of the file, the unindexed one too, with its mode and mode step
    records = list(FileReader(event_file).read_tensors())
    assert [(name, step, mode, mode_step) for name, step, _, mode, mode_step in records] == [
        ("w", 3, modes.EVAL, 1), ("s", 3, modes.EVAL, 1), ("hidden", 3, modes.GLOBAL, 3)]
    assert list(records[1][2]) == ["a", "bc"]
    if not run_loc.is_s3:
        assert event_file == TensorFileLocation(3, "algo-1").get_file_location(run_loc.path)
        index = json.loads(open(IndexFileLocationUtils.get_index_key_for_step(run_loc.path, 3, "algo-1")).read())
        assert [e["tensorname"] for e in index["tensor_payload"]] == ["w", "s"]


def test_file_reader_events_carry_the_saved_timestamps(tmp_path):
    from smdebug.core.reader import FileReader

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    hook.begin_step()
    hook.save_scalar("lr", 0.5, timestamp=1234.5)
    hook.close()
    event_files = sorted((tmp_path / "run" / "events").rglob("*.tfevents"))
    events = [e for f in event_files for e in FileReader(pathlib.Path(f)).read_events(regex_list=["^scalar/"])]
    assert [(e["name"], e["timestamp"], float(e["value"][0])) for e in events] == [("scalar/lr", 1234.5, 0.5)]


def test_file_reader_refuses_a_damaged_file(tmp_path):
    from smdebug.core.reader import FileReader
    from smdebug.core.writer import FileWriter
    from smdebug.exceptions import EventFileCorrupted

    with FileWriter(trial_dir=str(tmp_path), step=0, worker="w") as fw:
        fw.write_tensor(np.arange(100.0), "x")
        path = fw.name()
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF  # the record's data checksum
    open(path, "wb").write(bytes(data))
    with pytest.raises(EventFileCorrupted):
        list(FileReader(path).read_tensors())
    assert len(list(FileReader(path).read_tensors(check=False))) == 1  # 1.0.x's "no check" mode


def test_file_writer_misuse_is_refused(tmp_path):
    from smdebug.core.writer import FileWriter
    from smdebug.exceptions import SMDebugValueError

    fw = FileWriter(trial_dir=str(tmp_path), step=0, worker="w")
    with pytest.raises(SMDebugRuntimeError):
        fw.name()  # nothing written yet
    with pytest.raises(SMDebugValueError):
        fw.write_tensor(np.ones(1), "x", mode="TRAIN")
    fw.close()
    with pytest.raises(SMDebugRuntimeError):
        fw.write_tensor(np.ones(1), "x")
    # a with-block left by an exception leaves no half-written step behind
    with pytest.raises(KeyError):
        with FileWriter(trial_dir=str(tmp_path / "b"), step=0, worker="w") as fw:
            fw.write_tensor(np.ones(3), "x")
            raise KeyError("boom")
    assert not list((tmp_path / "b").rglob("*.json")) and not list((tmp_path / "b").rglob("*.tfevents"))


def test_location_helpers():
    from smdebug.core.locations import IndexFileLocationUtils as I, TensorFileLocation

    assert I.get_index_key_for_step("/r", 1234, "worker_1") == "/r/index/000000001/000000001234_worker_1.json"
    assert I.parse_step_from_index_file_name("/r/index/000000001/000000001234_worker_1.json") == 1234
    assert I.get_prefix_from_index_file("s3://b/run_1/index/000000000/000000000000_worker_0.json") == "s3://b/run_1"
    assert TensorFileLocation(7, "w").get_file_location() == "events/000000000007/000000000007_w.tfevents"
    loc = TensorFileLocation.load_filename("/x/events/000000000007/000000000007_my_worker-1.tfevents")
    assert (loc.step_num, loc.worker_name) == (7, "my_worker-1")


# ------------------------------------------------------------------------------------------------
# configurations and collections
# ------------------------------------------------------------------------------------------------
def test_json_round_trips():
    sc = SaveConfig({modes.TRAIN: SaveConfigMode(save_interval=10), modes.EVAL: SaveConfigMode(start_step=1)})
    assert SaveConfig.from_json(sc.to_json()) == sc
    rc = ReductionConfig(reductions=["min"], abs_norms=["l2"], save_shape=True)
    assert ReductionConfig.from_json(rc.to_json()) == rc
    assert ReductionConfig.from_json("null") is None
    c = Collection("c", include_regex=["conv"], tensor_names=["a", "b"], reduction_config=rc, save_config=sc)
    back = Collection.from_json(c.to_json())
    assert back == c and back.tensor_names == {"a", "b"}
    from smdebug.exceptions import CollectionFileCorrupted, SMDebugValueError

    with pytest.raises(SMDebugValueError):
        SaveConfig.from_json("{not json")
    with pytest.raises(CollectionFileCorrupted):
        Collection.from_json("[1, 2]")


def test_collection_manager_export_and_load(run_loc):
    cm = CollectionManager()
    cm.create_collection("default").include("loss")
    cm.create_collection("default").add_tensor_name("x")  # an existing one is kept
    cm.add("trial2")
    cm.export(run_loc.path, "worker_0_collections.json")
    from smdebug.core.utils import get_path_to_collections

    loaded = CollectionManager.load(os.path.join(get_path_to_collections(run_loc.path), "worker_0_collections.json"))
    assert loaded == cm and loaded.get("default").tensor_names == {"x"}


def test_legacy_json_config_functions(tmp_path):
    from smdebug.core.json_config import (
        add_collections_to_manager,
        collect_hook_config_params,
        get_include_collections,
        get_json_config_as_dict,
    )

    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "LocalPath": str(tmp_path / "out"),
        "HookParameters": {"save_interval": "2", "save_all": "true", "include_workers": "all",
                           "reductions": "min,abs_l2_norm"},
        "CollectionConfigurations": [
            {"CollectionName": "weights", "CollectionParameters": {"save_histogram": "false", "save_steps": "1,5"}},
            {"CollectionName": "relu", "CollectionParameters": {"include_regex": "relu*"}},
        ],
    }))
    params = get_json_config_as_dict(str(path))
    hook_params = collect_hook_config_params(params)
    assert hook_params["out_dir"] == str(tmp_path / "out") and hook_params["save_all"] is True
    assert hook_params["include_workers"] == "all"
    assert hook_params["reduction_config"] == ReductionConfig(reductions=["min"], abs_norms=["l2"])
    assert hook_params["save_config_modes"][modes.TRAIN]["save_interval"] == 2
    assert get_include_collections(params) == ["weights", "relu"]
    cm = CollectionManager()
    add_collections_to_manager(cm, params, hook_params)
    assert cm.get("weights").save_histogram is False
    assert cm.get("weights").save_config.should_save_step(modes.TRAIN, 5)
    assert cm.get("relu").include_regex == ["relu*"]


# ------------------------------------------------------------------------------------------------
# smdebug.core.utils, access_layer, index_reader, hook_utils
# ------------------------------------------------------------------------------------------------
def test_utils_paths_and_worker_names():
    from smdebug.core.utils import (
        deserialize_tf_device,
        get_path_to_collections,
        get_worker_name_from_collection_file,
        is_s3,
        make_numpy_array,
        parse_worker_name_from_file,
        serialize_tf_device,
    )

    assert is_s3("s3://a/b/c") == (True, "a", "b/c") and is_s3("s3://a") == (True, "a", "")
    assert is_s3(pathlib.Path("a/b")) == (False, None, None)
    assert get_path_to_collections("/run") == "/run/collections/000000000/"
    assert parse_worker_name_from_file("/r/index/000000001/000000001230_worker_2.json") == "worker_2"
    assert parse_worker_name_from_file("/r/index/000000000/000000000499__job-worker_replica-0_task-1_device-GPU-6.json") \
        == "/job:worker/replica:0/task:1/device:GPU:6"
    assert parse_worker_name_from_file("/r/index/000000000/000000000001_my_worker-1.json") == "my_worker-1"
    with pytest.raises(IndexReaderException):
        parse_worker_name_from_file("/r/index/000000001/000000001230_worker_2.json.tmp")
    assert get_worker_name_from_collection_file("/r/collections/000000000/job-worker_1_collections.json") == "job-worker_1"
    assert deserialize_tf_device(serialize_tf_device("/replica:0/task:0/device:GPU:0")) == "/replica:0/task:0/device:GPU:0"
    assert make_numpy_array({"a": 1}).dtype == object and make_numpy_array("foo").tolist() == ["foo"]


def _claim(path, is_dir, results):
    from smdebug.core.utils import is_first_process

    results.append(is_first_process(path, is_dir))


@pytest.mark.parametrize("is_dir", [True, False])
def test_is_first_process_one_winner_among_real_processes(tmp_path, is_dir):
    from smdebug.core.utils import is_first_process

    assert is_first_process("s3://bucket/any/prefix")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        results = manager.list()
        procs = [ctx.Process(target=_claim, args=(str(tmp_path / "claimed"), is_dir, results)) for _ in range(8)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert [p.exitcode for p in procs] == [0] * 8
        assert sorted(results) == [False] * 7 + [True]


def test_training_end_helpers_take_path_likes(run_loc, tmp_path):
    from smdebug.core.access_layer import check_dir_exists, has_training_ended, training_has_ended
    from smdebug.core.hook_utils import verify_and_get_out_dir

    assert has_training_ended(run_loc) is False  # a RunLocation is os.PathLike (its path: local or s3://)
    assert check_dir_exists(run_loc) is False
    assert verify_and_get_out_dir(run_loc.path) == run_loc.path
    training_has_ended(run_loc)
    assert has_training_ended(run_loc) is True and check_dir_exists(run_loc.path) is True
    with pytest.raises(SMDebugRuntimeError):
        verify_and_get_out_dir(run_loc.path)
    local = tmp_path / "local"
    local.mkdir()

    class PyPathLike:  # what py.path.local (pytest's tmpdir) is to os.fspath
        def __fspath__(self):
            return str(local)

    training_has_ended(PyPathLike())
    assert has_training_ended(pathlib.Path(local)) and has_training_ended(PyPathLike())


def test_rule_stop_signal_grace_time(tmp_path, monkeypatch):
    from smdebug.core.access_layer import (
        DEFAULT_GRACETIME_FOR_RULE_STOP_SEC,
        ENV_RULE_STOP_SIGNAL_FILENAME,
        is_rule_signalled_gracetime_passed,
    )

    assert is_rule_signalled_gracetime_passed(str(tmp_path)) is False  # no variable
    monkeypatch.setenv(ENV_RULE_STOP_SIGNAL_FILENAME, "rule_stop")
    assert is_rule_signalled_gracetime_passed(str(tmp_path)) is False  # no file
    signal = tmp_path / "rule_stop"
    signal.write_text(str(int(time.time())))
    assert is_rule_signalled_gracetime_passed(str(tmp_path)) is False
    signal.write_text(str(int(time.time() - 2 * DEFAULT_GRACETIME_FOR_RULE_STOP_SEC)))
    assert is_rule_signalled_gracetime_passed(str(tmp_path)) is True
    signal.write_text("not a time")
    assert is_rule_signalled_gracetime_passed(str(tmp_path)) is True


def test_access_file_is_written_atomically(tmp_path):
    from smdebug.core.access_layer import TSAccessFile
    from smdebug.core.access_layer.file import get_temp_path

    path = str(tmp_path / "sub" / "f.txt")
    f = TSAccessFile(path, "w")
    assert f.write("abc") == [0, 3] and f.write("de") == [3, 2]
    assert not os.path.exists(path) and os.path.exists(get_temp_path(path))
    f.close()
    assert open(path).read() == "abcde" and not os.path.exists(get_temp_path(path))
    r = TSAccessFile(path, "r")
    assert r.read(2) == "ab" and r.has_data() and r.read(3) == "cde" and not r.has_data()


def test_s3_handler_lists_reads_and_deletes(s3_run):
    from smdebug.core.access_layer.s3handler import DeleteRequest, ListRequest, ReadObjectRequest, S3Handler
    from smdebug.core.s3_utils import list_s3_objects
    from smdebug.core.storage.base import parse_s3_path

    write_run(s3_run, [0, 1, 2])
    bucket, prefix = parse_s3_path(s3_run.path)
    keys = S3Handler.list_prefix(ListRequest(bucket, prefix.rstrip("/") + "/index/"))
    assert [k.rsplit("/", 1)[1] for k in keys] == [f"00000000000{i}_worker_0.json" for i in range(3)]
    listed, last = list_s3_objects(bucket, prefix.rstrip("/") + "/index/")
    assert listed == keys and last == keys[-1]
    first = S3Handler.get_objects([ReadObjectRequest(f"s3://{bucket}/{keys[0]}"),
                                   ReadObjectRequest(f"s3://{bucket}/{keys[0]}", start=2, length=4)])
    assert json.loads(first[0])["meta"]["mode_step"] == 0 and first[1] == first[0][2:6]
    S3Handler.delete_prefix(delete_request=DeleteRequest(bucket, prefix.rstrip("/") + "/index/"))
    assert S3Handler.list_prefix(ListRequest(bucket, prefix.rstrip("/") + "/index/")) == []


def test_index_reader_lists_and_cache_evicts(run_loc):
    from smdebug.core.index_reader import IndexReader, ReadIndexFilesCache

    write_run(run_loc, [0, 1, 2])
    files, last = IndexReader(run_loc.path).list_index_files()
    assert len(files) == 3 and last == files[-1]
    assert IndexReader(run_loc.path).list_index_files(files[0])[0] == files[1:]

    cache = ReadIndexFilesCache()
    for name in ["f1", "f1", "f2", "f3", "f4"]:
        cache.add(name, None)
    assert len(cache.lookup_set) == 4 and not cache.has_not_read("f1") and cache.has_not_read("f9")
    cache.cache_limit = 2
    cache.add("f5", None)  # no start key: nothing can be dropped (a soft limit)
    cache.add("f6", "f4")  # over the limit: what sorts before the start key goes
    assert sorted(cache.lookup_set) == ["f4", "f5", "f6"]


# ------------------------------------------------------------------------------------------------
# hooks: legacy methods, the error handling agent, trace events, the logger's filter
# ------------------------------------------------------------------------------------------------
def test_hook_legacy_methods(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    assert hook._get_worker_name() == "worker_0" and hook.has_default_configuration()
    train_logistic_regression(hook, steps=3)
    hook._cleanup()  # 1.0.x's name of close()
    assert create_trial(str(tmp_path / "run")).loaded_all_steps


def test_error_handling_agent(tmp_path):
    from smdebug.core import singleton
    from smdebug.core.error_handling_agent import BASE_ERROR_MESSAGE
    from smdebug.core.utils import error_handling_agent

    calls = []

    @error_handling_agent.catch_smdebug_errors(default_return_val=lambda x: -x)
    def callback(x):
        calls.append(x)
        raise RuntimeError(f"callback failed on {x}")

    try:
        # with the default configuration: caught once, logged with its stack, smdebug disabled
        hook = NumpyHook(out_dir=str(tmp_path / "a"))
        with capture_smdebug_log() as log:
            assert callback(1) == -1 and callback(2) == -2
        assert calls == [1] and error_handling_agent.disable_smdebug and hook.disabled
        assert log.text.count(BASE_ERROR_MESSAGE) == 1 and "callback failed on 1" in log.text
        # with a configuration the user chose: raised as it is
        error_handling_agent.disable_smdebug = False
        NumpyHook(out_dir=str(tmp_path / "b"), include_collections=["weights"])
        with pytest.raises(RuntimeError, match="failed on 3"):
            callback(3)
        assert not error_handling_agent.disable_smdebug
    finally:
        error_handling_agent.disable_smdebug = False
        error_handling_agent.hook = None
        singleton.del_hook()


def test_error_handling_agent_hook_assignment_holds_until_the_next_hook(tmp_path):
    """1.0.x's agent kept the hook last assigned to it (every hook's constructor assigned itself): a script
    (or a test's teardown) that resets ``agent.hook = None`` gets the default-configuration behaviour back
    even though a hook with a chosen configuration is still the current one, until another hook is built."""
    from smdebug.core import singleton
    from smdebug.core.utils import error_handling_agent

    @error_handling_agent.catch_smdebug_errors(default_return_val="fallback")
    def callback():
        raise ValueError("callback broke")

    try:
        chosen = NumpyHook(out_dir=str(tmp_path / "a"), include_collections=["weights"])
        with pytest.raises(ValueError):
            callback()
        error_handling_agent.hook = None  # reset: no hook decides
        assert singleton.current_hook() is chosen and error_handling_agent.hook is None
        with capture_smdebug_log():
            assert callback() == "fallback"
        assert error_handling_agent.disable_smdebug
        error_handling_agent.disable_smdebug = False
        NumpyHook(out_dir=str(tmp_path / "b"), include_collections=["weights"])  # a new hook takes over
        with pytest.raises(ValueError):
            callback()
        default = NumpyHook(out_dir=str(tmp_path / "c"))
        NumpyHook(out_dir=str(tmp_path / "d"), include_collections=["weights"])
        error_handling_agent.set_hook(default)  # set_hook names the hook that decides, the same way
        with capture_smdebug_log():
            assert callback() == "fallback"
    finally:
        error_handling_agent.disable_smdebug = False
        error_handling_agent.hook = None
        singleton.del_hook()


def test_record_trace_events_writes_chrome_trace_files(run_loc):
    from smdebug.core.timeline import TIMELINE_DIR

    hook = NumpyHook(out_dir=run_loc.path, save_config=SaveConfig(save_interval=1))
    start = time.time()
    hook.record_trace_events(timestamp=start, training_phase="Training", op_name="EpochStart", phase="B", epoch=0)
    hook.record_trace_events(timestamp=start + 1, training_phase="Training", op_name="EpochEnd", phase="E", epoch=0)
    hook.record_trace_events(timestamp=start, training_phase="Data", op_name="load", duration=0.25, tid=7)
    hook.record_trace_events(timestamp="yesterday", op_name="bad")  # refused and logged, training goes on
    assert not hook.disabled
    train_logistic_regression(hook, steps=2)
    hook.close()
    files = [k for k in run_loc.storage.list(TIMELINE_DIR) if k.endswith("_pythontimeline.json")]
    assert len(files) == 1
    events = json.loads(run_loc.read(files[0]))
    real = [e for e in events if e["ph"] != "M"]
    assert [(e["name"], e["ph"]) for e in real] == [("EpochStart", "B"), ("EpochEnd", "E"), ("load", "X")]
    assert real[2]["dur"] == 250000 and real[2]["tid"] == 7 and real[0]["ts"] == int(round(start * 1e6))
    assert {e["args"]["name"] for e in events if e["ph"] == "M"} == {"Training", "Data"}
    assert create_trial(run_loc.path).steps() == [0, 1]


def test_duplicate_log_filter_is_on_the_logger():
    import logging

    from smdebug.core.logger import MAX_REPEATS, DuplicateLogFilter, get_logger

    logger = get_logger()
    assert any(isinstance(f, DuplicateLogFilter) for f in logger.filters)

    class Collect(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    handler = Collect()
    logger.addHandler(handler)
    try:
        for _ in range(MAX_REPEATS + 3):
            logger.warning("the same words %s", "again")
    finally:
        logger.removeHandler(handler)
    assert handler.messages == ["the same words again"] * MAX_REPEATS


def test_state_store_legacy_names(tmp_path, monkeypatch):
    from smdebug.core.state_store import StateStore

    monkeypatch.setenv("CHECKPOINT_CONFIG_FILE_PATH", str(tmp_path / "none.json"))
    assert StateStore().is_checkpoint_updated() is False  # no checkpoint configuration
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "metadata.json.sagemaker-uploaded").write_text("[]")  # SageMaker's copy: not a checkpoint
    (tmp_path / "cfg.json").write_text(json.dumps({"LocalPath": str(ckpt)}))
    monkeypatch.setenv("CHECKPOINT_CONFIG_FILE_PATH", str(tmp_path / "cfg.json"))
    store = StateStore()
    assert store._checkpoint_dir == str(ckpt) and store.is_checkpoint_updated() is False
    (ckpt / "sub").mkdir()
    (ckpt / "sub" / "model.pt").write_bytes(b"1")
    assert store.is_checkpoint_updated() and store.is_checkpoint_updated()  # until the state is saved
    store.update_state({"training-run": 0, "latest-global-step-seen": 7})
    assert store.is_checkpoint_updated() is False
    assert StateStore().get_last_saved_state()["latest-global-step-seen"] == 7
    (ckpt / "sub" / "model.pt").write_bytes(b"22")
    assert store.is_checkpoint_updated()


def test_increment_step_begins_the_next_step(tmp_path):
    """1.0.x scripts that drove a hook by hand moved it on with ``_increment_step``: here it begins the
    next step of the current mode, closing the previous one."""
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, include_collections=["weights"], save_config=SaveConfig(save_interval=1))
    hook.set_mode(modes.TRAIN)
    for step in range(3):
        hook._increment_step()
        assert (hook.step, hook.mode_steps[modes.TRAIN]) == (step, step)
        hook.record("weights/w", np.full(2, step, dtype=np.float32))
    hook.close()
    trial = create_trial(out)
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor("weights/w").value(2).tolist() == [2.0, 2.0]
