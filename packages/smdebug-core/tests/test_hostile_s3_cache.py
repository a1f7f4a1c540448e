"""The S3 disk cache (``create_trial(..., cache_dir=)``) against runs that look alike: it must never serve
bytes of another object than the one S3 holds now, and it must still save the GETs of a re-read.

Everything runs against a moto server over HTTP (``moto_server``), with the real writers and readers.
"""

import os
import time

import numpy as np
import pytest

from _support import write_run

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

import boto3  # noqa: E402

from smdebug.trials import create_trial  # noqa: E402

STEPS = range(4)
_buckets = [0]


def new_bucket(prefix):
    _buckets[0] += 1
    name = f"{prefix}-{os.getpid()}-{_buckets[0]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


def _tensors(seed):
    # the same names, shapes and dtypes for every seed: the index files of two seeds are byte-identical
    return lambda s, w: {"w": np.full(3, seed * 100 + s, np.float32), "b": np.full(2, -seed - s, np.float64)}


def _values(path, **kw):
    t = create_trial(path, **kw)
    return {s: (t.tensor("w").value(s).tolist(), t.tensor("b").value(s).tolist()) for s in t.steps()}


def _read_counts(path, cache):
    t = create_trial(path, cache_dir=cache)
    for s in t.steps():
        for name in t.tensor_names():
            t.tensor(name).value(s)
    return t.storage.request_counts()


def _wipe(bucket, prefix):
    c = boto3.client("s3")
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents") or ():
            c.delete_object(Bucket=bucket, Key=item["Key"])


def _index_etags(bucket, prefix):
    c = boto3.client("s3")
    items = c.list_objects_v2(Bucket=bucket, Prefix=prefix + "index/")["Contents"]
    return {i["Key"]: i["ETag"] for i in items}


def test_a_new_job_on_the_same_prefix_with_identical_index_files_is_not_served_the_old_values(moto_server, tmp_path):
    bucket = new_bucket("smdcache")
    path, cache = f"s3://{bucket}/job", str(tmp_path / "cache")
    write_run(path, STEPS, tensors=_tensors(1))
    first = _values(path, cache_dir=cache)
    assert first[2][0] == [102, 102, 102]
    etags_a = _index_etags(bucket, "job/")
    time.sleep(1.1)  # (a new job: its objects are at least a second younger)
    _wipe(bucket, "job/")
    write_run(path, STEPS, tensors=_tensors(2))
    assert _index_etags(bucket, "job/") == etags_a  # the attack: the same ETags for every index object
    truth = _values(path)
    assert truth[2][0] == [202, 202, 202]
    assert _values(path, cache_dir=cache) == truth
    # and the cache still does its job: a re-read costs one GET (the collections file)
    fresh = str(tmp_path / "fresh")
    cold = _read_counts(path, fresh)
    warm = _read_counts(path, fresh)
    assert cold["GetObject"] == 1 + 2 * len(STEPS), cold  # collections, index and event objects
    assert warm["GetObject"] == 1 and warm["ListObjectsV2"] <= cold["ListObjectsV2"] + 1, (cold, warm)
    print(f"\nFIGURE s3 cache re-read, {len(STEPS)} steps x 2 tensors: first {cold}, again {warm}")


def test_an_event_object_replaced_under_an_unchanged_index_is_read_again(moto_server, tmp_path):
    """The identity of each cached byte range is its own object's, not the run's."""
    bucket = new_bucket("smdcache")
    path, cache = f"s3://{bucket}/run", str(tmp_path / "cache")
    write_run(path, STEPS, tensors=_tensors(1))
    assert _values(path, cache_dir=cache)[3][0] == [103, 103, 103]
    other = tmp_path / "other"
    write_run(str(other), STEPS, tensors=_tensors(7))
    key = "events/000000000003/000000000003_worker_0.tfevents"
    boto3.client("s3").put_object(Bucket=bucket, Key=f"run/{key}", Body=(other / key).read_bytes())
    got = _values(path, cache_dir=cache)
    assert got[3][0] == [703, 703, 703] and got[2][0] == [102, 102, 102]


def test_prefixes_s3_tells_apart_do_not_share_a_cache(moto_server, tmp_path):
    bucket = new_bucket("smdcache")
    cache = str(tmp_path / "cache")
    dotted, plain = f"s3://{bucket}/a/../b", f"s3://{bucket}/a/b"
    write_run(dotted, STEPS, tensors=_tensors(1))
    write_run(plain, STEPS, tensors=_tensors(2))
    assert _values(dotted)[1][0] == [101, 101, 101] and _values(plain)[1][0] == [201, 201, 201]
    assert _values(dotted, cache_dir=cache) == _values(dotted)
    assert _values(plain, cache_dir=cache) == _values(plain)
    assert _values(dotted, cache_dir=cache)[1][0] == [101, 101, 101]
    # one folder per run, named by a digest, with a readable hint in front
    names = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(names) == 2 and all(n.startswith(f"{bucket}_a_") for n in names), names


def test_the_same_bucket_and_prefix_on_two_endpoints_do_not_share_a_cache(moto_server, tmp_path, monkeypatch):
    from smdebug_test_support.s3 import MotoServer

    bucket = new_bucket("smdcache")
    path, cache = f"s3://{bucket}/run", str(tmp_path / "cache")
    write_run(path, STEPS, tensors=_tensors(1))
    assert _values(path, cache_dir=cache)[1][0] == [101, 101, 101]
    second = MotoServer().start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", second.endpoint)
        boto3.client("s3").create_bucket(Bucket=bucket)
        write_run(path, STEPS, tensors=_tensors(2))
        assert _values(path, cache_dir=cache)[1][0] == [201, 201, 201]
    finally:
        second.stop()
