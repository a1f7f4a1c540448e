"""tf.distribute: MirroredStrategy over two logical CPU devices (one worker per device, spec §11), and
MultiWorkerMirroredStrategy with two processes on loopback (one worker per process)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorflow as tf

import models
import smdebug.tensorflow as smd

HERE = os.path.dirname(os.path.abspath(__file__))
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def mirrored_fit(out_dir, include_workers):
    if len(tf.config.list_logical_devices("CPU")) < 2:
        pytest.skip("TensorFlow was initialised before the CPU could be split")
    x, y = models.data()
    strategy = tf.distribute.MirroredStrategy([CPU0, CPU1])
    with strategy.scope():
        model = models.dense()
    initial = model.get_weights()
    hook = smd.KerasHook(out_dir, save_config=smd.SaveConfig(save_interval=2), include_workers=include_workers,
                         include_collections=["weights", "gradients", "losses", "inputs", "layers"])
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[hook])
    hook.close()
    return x, y, initial, smd.create_trial(out_dir)


def test_mirrored_strategy_one_worker_per_device(out_dir):
    x, y, initial, trial = mirrored_fit(out_dir, "all")
    assert trial.workers() == [CPU0, CPU1] and trial.num_workers == 2
    assert trial.steps() == [0, 2]
    files = sorted(os.listdir(os.path.join(out_dir, "index", "000000000")))
    assert files == ["000000000000__job-localhost_replica-0_task-0_device-CPU-0.json",
                     "000000000000__job-localhost_replica-0_task-0_device-CPU-1.json",
                     "000000000002__job-localhost_replica-0_task-0_device-CPU-0.json",
                     "000000000002__job-localhost_replica-0_task-0_device-CPU-1.json"]
    # per-replica values: each device saw half of the global batch
    inputs = trial.tensor("inputs")
    assert inputs.workers(0) == [CPU0, CPU1]
    np.testing.assert_array_equal(inputs.value(0, worker=CPU0), x[:4])
    np.testing.assert_array_equal(inputs.value(0, worker=CPU1), x[4:8])
    # each replica's gradient is that of its half (the loss is scaled by 1 / replicas before summing)
    g = trial.tensor("gradients/mlp/out/kernel")
    model = models.dense(compile=False)
    model.set_weights(initial)
    for worker, part in ((CPU0, slice(0, 4)), (CPU1, slice(4, 8))):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x[part]) - y[part])) / 2
        expected = tape.gradient(loss, model.trainable_variables)[2].numpy()
        np.testing.assert_allclose(g.value(0, worker=worker), expected, rtol=1e-4, atol=1e-6)
    # mirrored weights are identical on both devices; the reduced loss goes to both
    w = trial.tensor("mlp/dense/kernel")
    np.testing.assert_array_equal(w.value(2, worker=CPU0), w.value(2, worker=CPU1))
    np.testing.assert_array_equal(w.value(0, worker=CPU1), initial[0])
    assert trial.tensor("loss").workers(0) == [CPU0, CPU1]
    with open(os.path.join(out_dir, "collections", "000000000",
                           "_job-localhost_replica-0_task-0_device-CPU-1_collections.json")) as f:
        assert json.load(f)["_meta"]["num_workers"] == 2


def test_mirrored_strategy_chief_device_only_by_default(out_dir):
    x, _, _, trial = mirrored_fit(out_dir, "one")
    assert trial.workers() == [CPU0] and trial.num_workers == 1
    np.testing.assert_array_equal(trial.tensor("inputs").value(2), x[16:20])
    assert not any("CPU-1" in f for _, _, files in os.walk(out_dir) for f in files)


# What a worker says when its port in TF_CONFIG is no longer free as its gRPC server starts.
PORT_TAKEN = "Could not start gRPC server"


def free_ports(n):
    """``n`` distinct ports free now (bound on every address, as TF's server binds them, then released)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run_mwms_job(out, attempts=3, timeout=240):
    """Both workers of the job, until they exit; every worker's output. The ports go into TF_CONFIG before
    the workers start (MultiWorkerMirroredStrategy has no port 0), so another parallel test's process can bind
    one in between: that worker fails at once (PORT_TAKEN), the other is stopped, and the job is started
    again on new ports in a clean folder. Any other failure fails the test."""
    for attempt in range(attempts):
        cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
        procs = []
        for index in range(2):
            env = {**os.environ,
                   "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
                   "PYTHONPATH": HERE + os.pathsep + os.environ.get("PYTHONPATH", ""), "TF_CPP_MIN_LOG_LEVEL": "2"}
            procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "mwms_worker.py"), out], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs = _wait_for_workers(procs, timeout)
        if any(PORT_TAKEN in o for o in outs) and attempt + 1 < attempts:
            shutil.rmtree(out, ignore_errors=True)
            continue
        assert [p.returncode for p in procs] == [0, 0], "\n".join(outs)
        return outs


def _wait_for_workers(procs, timeout):
    """Wait for every worker; once one has failed, stop the others (they would wait for it until their own
    timeouts). Each worker's output."""
    outs = [""] * len(procs)

    def read(i):
        outs[i] = procs[i].stdout.read()

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(len(procs))]
    for r in readers:
        r.start()
    deadline = time.monotonic() + timeout
    try:
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if any(p.poll() not in (None, 0) for p in procs):
                break
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for r in readers:
            r.join(10)
    return outs


def test_multi_worker_mirrored_strategy_two_processes(tmp_path):
    out = str(tmp_path / "mwms")
    run_mwms_job(out)
    trial = smd.create_trial(out)
    assert trial.workers() == ["worker_0", "worker_1"] and trial.num_workers == 2
    assert trial.steps() == [0, 2]  # each worker's TF_CONFIG task is its worker name
    g = trial.tensor("gradients/mlp/out/kernel")
    assert g.workers(0) == ["worker_0", "worker_1"]
    assert not np.allclose(g.value(0, worker="worker_0"), g.value(0, worker="worker_1"))  # different shards
    w = trial.tensor("mlp/out/kernel")
    np.testing.assert_array_equal(w.value(2, worker="worker_0"), w.value(2, worker="worker_1"))
