"""S3 storage against a real endpoint over HTTP (moto's server mode): request counts, multipart uploads,
the disk cache, the claim, the stop signal, outages in the middle of a run and permission errors.

The trial tests of test_trial.py also run on S3 (their ``run_loc`` fixture); these are the S3-only ones.
"""

import json
import os
import time

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression, write_run

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

import boto3  # noqa: E402

from smdebug import SaveConfig  # noqa: E402
from smdebug.core.locations import CLAIM_FILE, END_OF_JOB_FILE  # noqa: E402
from smdebug.core.storage import get_storage  # noqa: E402
from smdebug.core.storage.errors import StorageAccessDenied, StorageBucketNotFound  # noqa: E402
from smdebug.core.storage.s3 import S3Storage  # noqa: E402
from smdebug.core.stop_signal import write_stop_signal  # noqa: E402
from smdebug.exceptions import TrainingStopRequested  # noqa: E402
from smdebug.trials import S3Trial, create_trial  # noqa: E402


@pytest.fixture(autouse=True)
def fast_end_refresh(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _counts_without(counts, *ops):
    return {k: v for k, v in counts.items() if k not in ops}


# --- the storage layer ------------------------------------------------------------------------

def test_paths_listing_ranges_and_markers(s3_run):
    bucket = s3_run.storage.bucket
    st = get_storage(f"s3://{bucket}//a///b")
    assert isinstance(st, S3Storage) and st.prefix == "a/b/" and st.display_path == f"s3://{bucket}/a/b/"
    for key in ("index/000000000/000000000001_w.json", "index/000000000/000000000000_w.json",
                "index/000000001/000000001000_w.json", "indexes/other.json", "x"):
        st.write_atomic(key, key.encode())
    assert st.list("index") == ["index/000000000/000000000000_w.json", "index/000000000/000000000001_w.json",
                                "index/000000001/000000001000_w.json"]  # "indexes/" is not under "index/"
    assert st.list("index", start_after="index/000000000/000000000001_") == [
        "index/000000000/000000000001_w.json", "index/000000001/000000001000_w.json"]
    assert st.list("") == sorted(st.list("")) and len(st.list("")) == 5
    assert st.read("x") == b"x" and st.read("indexes/other.json", 8, 5) == b"other"
    assert st.read("x", 10, 4) == b""  # past the end, like a file
    with pytest.raises(FileNotFoundError):
        st.read("missing")
    assert st.exists("x") and not st.exists("missing") and st.age("x") < 60 and st.age("missing") is None
    st.remove("x")
    st.remove("x")  # removing twice is fine
    assert not st.exists("x")
    assert st.full_path("events/e") == f"s3://{bucket}/a/b/events/e"


def test_read_many_coalesces_neighbours_and_runs_in_parallel(s3_run):
    st = s3_run.storage
    blob = bytes(range(256)) * 64  # 16 KiB
    st.write_atomic("events/a", blob)
    st.write_atomic("events/b", blob)
    st.reset_request_counts()
    reqs = [("events/a", 0, 100), ("events/a", 100, 50), ("events/a", 400, 10), ("events/b", 5, 5), ("events/b", 0, None)]
    out = st.read_many(reqs)
    assert out == [blob[0:100], blob[100:150], blob[400:410], blob[5:10], blob]
    assert st.request_counts() == {"GetObject": 2}  # one GET per object, not one per range
    st.coalesce_gap = 0
    st.reset_request_counts()
    assert st.read_many(reqs[:3]) == out[:3]
    assert st.request_counts() == {"GetObject": 2}  # [0,150) and [400,410): too far apart to merge


def test_exclusive_create_is_a_conditional_put(s3_run):
    st = s3_run.storage
    assert st.create_exclusive("claim.smd", b"first")
    assert not st.create_exclusive("claim.smd", b"second")
    assert st.read("claim.smd") == b"first"
    etag, _ = st.stat("claim.smd")
    assert not st.replace_if_unchanged("claim.smd", b"third", '"0000"')
    assert st.replace_if_unchanged("claim.smd", b"third", etag)
    assert st.read("claim.smd") == b"third"


def test_service_specific_endpoint_variable_wins(s3_run, monkeypatch, moto_server):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_server.endpoint)
    write_run(s3_run, range(2))
    assert create_trial(str(s3_run)).steps() == [0, 1]


# --- request counts ---------------------------------------------------------------------------

def test_request_counts_of_opening_and_reading(s3_run):
    n_steps, n_tensors = 30, 12
    write_run(s3_run, range(n_steps), tensors=lambda s, w: {f"t{i:02d}": np.full(8, s, np.float32)
                                                            for i in range(n_tensors)})
    t = create_trial(str(s3_run))
    assert isinstance(t, S3Trial) and t.steps() == list(range(n_steps))
    opened = t.storage.request_counts()
    # collections: 1 list + 1 get; end marker: exists + age; index: 1 list (1,000 keys a page) and one
    # GET per index file, fetched in parallel
    assert opened == {"ListObjectsV2": 2, "GetObject": 1 + n_steps, "HeadObject": 2}

    t.storage.reset_request_counts()
    for name in t.tensor_names():
        np.testing.assert_array_equal(t.tensor(name).value(7), np.full(8, 7))
    assert t.storage.request_counts() == {"GetObject": 1}  # 12 tensors of one step: one ranged GET

    t.storage.reset_request_counts()
    values = t.tensor("t03").values()
    assert sorted(values) == list(range(n_steps)) and values[29][0] == 29
    # one ranged GET per step (different objects; in parallel), minus the step already fetched
    assert t.storage.request_counts() == {"GetObject": n_steps - 1}


def test_disk_cache_serves_a_second_analysis(s3_run, tmp_path):
    write_run(s3_run, range(10), tensors=lambda s, w: {"a": np.full(3, s, np.float32), "b": np.ones(2)})
    cache = str(tmp_path / "cache")
    first = create_trial(str(s3_run), cache_dir=cache)
    expected = {s: v.tolist() for s, v in first.tensor("a").values().items()}
    first.tensor("b").value(4)
    second = create_trial(str(s3_run), cache_dir=cache)
    assert {s: v.tolist() for s, v in second.tensor("a").values().items()} == expected
    second.tensor("b").value(4)
    counts = second.storage.request_counts()
    assert counts.get("GetObject") == 1  # only the collections file; index and tensor data came from disk
    assert second.storage.cache.hits >= 10 + 10
    # a rewritten run is noticed (an index object's ETag changed) and its cache dropped
    write_run(s3_run, range(10), tensors=lambda s, w: {"a": np.full(3, -s, np.float32)})
    third = create_trial(str(s3_run), cache_dir=cache)
    assert third.tensor("a").value(3).tolist() == [-3, -3, -3]


def test_large_tensors_go_multipart(s3_run, monkeypatch):
    monkeypatch.setenv("SMDEBUG_S3_MULTIPART_THRESHOLD", str(5 << 20))
    monkeypatch.setenv("SMDEBUG_S3_PART_SIZE", str(5 << 20))
    big = np.arange(3 << 20, dtype=np.float32)  # 12 MiB: three parts
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.begin_step()
    hook.record("weights/big", big)
    hook.end_step()
    hook.close()
    counts = hook._storage.request_counts()
    assert counts["CreateMultipartUpload"] == 1 and counts["UploadPart"] == 3 and counts["CompleteMultipartUpload"] == 1
    np.testing.assert_array_equal(create_trial(str(s3_run)).tensor("weights/big").value(0), big)


# --- hooks writing to S3 ----------------------------------------------------------------------

def test_hook_creates_a_missing_bucket_and_claims_the_prefix(moto_server):
    bucket = f"fresh-{os.getpid()}-{time.monotonic_ns()}"
    out = f"s3://{bucket}/job/"
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=3)
    claim = json.loads(get_storage(out).read(CLAIM_FILE))
    assert claim["pid"] == os.getpid()
    hook.close()
    assert not get_storage(out).exists(CLAIM_FILE) and get_storage(out).exists(END_OF_JOB_FILE)
    assert create_trial(out).tensor("loss").steps() == [0, 1, 2]


def test_a_live_claim_keeps_a_second_writer_out_and_a_stale_one_is_taken_over(s3_run, monkeypatch, smdebug_log):
    other = json.dumps({"pid": 1, "host": "another-machine"}).encode()
    s3_run.write(CLAIM_FILE, other)
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=2)
    hook.close()
    assert any("pid 1 on another-machine" in m and "will not write" in m for m in smdebug_log.warnings)
    assert s3_run.read(CLAIM_FILE) == other and not s3_run.keys("index")
    monkeypatch.setenv("SMDEBUG_S3_CLAIM_STALE", "0")  # the other owner stopped refreshing its claim
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=2)
    hook.close()
    assert len(s3_run.keys("index")) == 2


def test_stop_signal_through_s3(s3_run):
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1))
    stopped_at = None
    try:
        for step in range(200):
            hook.begin_step()
            hook.record("loss", np.array([1.0 / (step + 1)], np.float32))
            hook.end_step()
            if step == 3:
                write_stop_signal(str(s3_run), rule="LossNotDecreasing", step=3, reason="test")
            time.sleep(0.02)
    except TrainingStopRequested as e:
        stopped_at = hook.step
        assert e.rule == "LossNotDecreasing"
    assert stopped_at is not None and 3 <= stopped_at < 100
    t = create_trial(str(s3_run))
    assert t.loaded_all_steps and t.steps()[-1] == stopped_at  # everything up to the stop is saved


def test_endpoint_down_in_the_middle_of_a_run(s3_run, moto_server, monkeypatch, smdebug_log):
    """The endpoint refuses connections for a while: training goes on at full speed, what fits in the
    budget is kept and uploaded when S3 is back, the rest is reported, later steps land."""
    from smdebug.core.writer import _ITEM_OVERHEAD

    # A few steps of this small model: 4 tensors of at most 16 bytes a step, each also counted for what
    # holding it in the queue costs.
    monkeypatch.setenv("SMDEBUG_WRITER_MAX_PENDING_BYTES", str(6 * 4 * (16 + _ITEM_OVERHEAD)))
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses"])
    step_times, waited = [], [0.0]

    def on_step(step):
        started = time.monotonic()
        if step == 5:
            assert hook.flush(10)
            moto_server.interrupt()
        if step == 10:  # let the writer run into the outage
            deadline = time.monotonic() + 20
            while hook._storage.outage is None and time.monotonic() < deadline:
                time.sleep(0.02)
        if step == 15:
            moto_server.resume()
            assert hook.flush(30)  # the backlog lands
        waited[0] += time.monotonic() - started  # the test's own waits are not training time
        if not 5 <= step < 15:
            time.sleep(0.05)  # a training step long enough for two PUTs (the budget is tiny)
        step_times.append(time.monotonic() - waited[0])

    try:
        train_logistic_regression(hook, steps=25, on_step=on_step)
    finally:
        moto_server.resume()
    hook.close()
    assert not hook.disabled
    gaps = np.diff(step_times)
    assert gaps.max() < 1.0, gaps  # no step waited for S3

    unsaved = hook.unsaved_steps
    t = create_trial(str(s3_run))
    assert t.loaded_all_steps
    saved = t.steps()
    assert set(range(6)) <= set(saved) and set(range(16, 25)) <= set(saved)  # before and after the outage
    assert unsaved and sorted(set(range(25)) - set(saved)) == unsaved
    assert set(unsaved) < set(range(6, 16))
    for s in saved:  # every step that was saved is complete
        assert set(t.tensor_names(step=s)) == {"weights/w", "gradient/weights/w", "gradient/biases/b", "loss"}
    log = "\n".join(smdebug_log.warnings)
    assert "cannot reach the endpoint" in log and "reachable again" in log
    assert "not saved" in log and "did not reach" in log


def test_endpoint_down_at_close(s3_run, moto_server, monkeypatch, smdebug_log):
    monkeypatch.setenv("SMDEBUG_S3_CLOSE_TIMEOUT", "1")
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=3)
    assert hook.flush(10)
    moto_server.interrupt()
    try:
        train_logistic_regression(hook, steps=2)
        started = time.monotonic()
        hook.close()
        took = time.monotonic() - started
    finally:
        moto_server.resume()
    assert took < 20
    assert hook.unsaved_steps == [3, 4]
    log = "\n".join(smdebug_log.warnings)
    assert "still unreachable at close" in log and "steps 3-4" in log and "could not mark" in log
    t = create_trial(str(s3_run), wait_for_collections=5)
    t.treat_as_ended()
    assert t.steps() == [0, 1, 2]


# --- permissions and credentials ----------------------------------------------------------------

@pytest.fixture
def auth(moto_server):
    """moto checks credentials and IAM policies for the test."""
    yield moto_server
    moto_server.set_auth(False)


def _iam_user(policy_actions):
    iam = boto3.client("iam")
    name = f"user-{os.getpid()}-{time.monotonic_ns()}"
    iam.create_user(UserName=name)
    policy = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": policy_actions, "Resource": "*"}]}
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def test_read_only_credentials_give_one_clear_error_and_training_goes_on(s3_run, auth, monkeypatch, smdebug_log):
    key_id, secret = _iam_user(["s3:GetObject", "s3:ListBucket"])
    auth.set_auth(True)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    hook = NumpyHook(out_dir=str(s3_run), save_config=SaveConfig(save_interval=1))
    history = train_logistic_regression(hook, steps=4)
    hook.close()
    assert len(history) == 4 and hook.disabled
    errors = smdebug_log.messages(40)
    assert len(errors) == 1, errors
    msg = errors[0]
    assert "PutObject" in msg and s3_run.storage.bucket in msg and "denied" in msg and "s3:PutObject" in msg
    assert secret not in msg and "Traceback" not in msg


def test_invalid_credentials_and_missing_bucket_when_reading(s3_run, auth, monkeypatch):
    write_run(s3_run, range(2))
    auth.set_auth(True)
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    with pytest.raises(StorageAccessDenied) as info:
        create_trial(str(s3_run))
    msg = str(info.value)
    assert info.value.operation == "ListObjectsV2" and info.value.bucket == s3_run.storage.bucket
    assert "ListObjectsV2" in msg and s3_run.storage.bucket in msg and "credentials" in msg
    assert secret not in msg and "AKIAIOSFODNN7EXAMPLE" not in msg
    auth.set_auth(False)
    with pytest.raises(StorageBucketNotFound, match="no-such-bucket-here"):
        create_trial("s3://no-such-bucket-here/run")
