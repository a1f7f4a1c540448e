"""Concurrency: a hook recording from several threads writes every tensor exactly once with its exact
value, and readers follow a run while it is being written, seeing only complete, exact data.

The supported model (RELIABILITY.md): ``record`` from any thread; step boundaries (``begin_step`` /
``end_step``) from one thread at a time. A record racing a step boundary lands in one of the two steps
or is refused (``record`` returns False); it never reopens a finished step.

Thread switches are made very frequent (``sys.setswitchinterval``) so that races in the hook's
bookkeeping, which would need hours of normal scheduling to show, show within a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter

import numpy as np
import pytest

from _fault_check import child_env, start_child
from _fault_child import expected_tensors
from _live_reader import follow
from _support import NumpyHook
from smdebug import SaveConfig
from smdebug.core.locations import parse_step_file_name
from smdebug.trials import create_trial

HERE = os.path.dirname(os.path.abspath(__file__))
JOIN_S = 300  # hang guard for joins, never an assertion on speed


@pytest.fixture(autouse=True)
def _busy_scheduler(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _hook(out_dir):
    return NumpyHook(out_dir=out_dir, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "biases", "losses"])


def _value(step, thread, k):
    # Sizes vary so records of different threads straddle buffer boundaries differently.
    n = 1 + (step * 31 + thread * 7 + k * 13) % 300
    return np.arange(n, dtype=np.float64) * (thread + 1) + step * 1000 + k


def _index_entries(out_dir):
    """{step: Counter of tensor names in its index file}: duplicates in a step would show here."""
    entries = {}
    index_root = os.path.join(out_dir, "index")
    for root, _dirs, files in os.walk(index_root):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), out_dir)
            step, _worker = parse_step_file_name(rel)
            with open(os.path.join(root, name)) as f:
                doc = json.load(f)
            entries[step] = Counter(t["tensorname"] for t in doc.get("tensor_payload", []))
    return entries


def _join_all(threads):
    for t in threads:
        t.join(JOIN_S)
        assert not t.is_alive(), f"{t.name} hung"


def test_records_from_many_threads_within_steps(tmp_path):
    """8 threads record at once inside every step; the main thread owns the step boundaries."""
    out = str(tmp_path / "run")
    n_threads, n_steps, per_thread = 8, 30, 3
    hook = _hook(out)
    start, done = threading.Barrier(n_threads + 1), threading.Barrier(n_threads + 1)
    refused, errors = [], []

    def recorder(i):
        try:
            for step in range(n_steps):
                start.wait(JOIN_S)
                for k in range(per_thread):
                    if not hook.record(f"weights/t{i}/k{k}", _value(step, i, k)):
                        refused.append((step, i, k))
                done.wait(JOIN_S)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
            start.abort()
            done.abort()

    threads = [threading.Thread(target=recorder, args=(i,), name=f"recorder-{i}") for i in range(n_threads)]
    for t in threads:
        t.start()
    for step in range(n_steps):
        hook.begin_step()
        start.wait(JOIN_S)  # every thread records during this step...
        done.wait(JOIN_S)   # ...and has finished before it ends
        hook.end_step()
    _join_all(threads)
    hook.close()
    assert not errors and not refused and not hook.disabled, (errors, refused[:5], hook._failure)

    names = {f"weights/t{i}/k{k}" for i in range(n_threads) for k in range(per_thread)}
    entries = _index_entries(out)
    assert sorted(entries) == list(range(n_steps))
    for step, counts in entries.items():
        assert counts == Counter(names), f"step {step}: missing or duplicated tensors"
    trial = create_trial(out)
    assert trial.steps() == list(range(n_steps))
    for step in range(n_steps):
        for i in range(n_threads):
            for k in range(per_thread):
                np.testing.assert_array_equal(trial.tensor(f"weights/t{i}/k{k}").value(step), _value(step, i, k))
    assert set(trial.tensor_names(collection="weights")) == names


def test_records_racing_step_boundaries_are_written_exactly_once(tmp_path):
    """Threads record without pause while the main thread moves from step to step as fast as it can.
    Every record the hook accepted is in exactly one step, exact; none reopens a finished step (which
    would replace that step's files and lose what they held)."""
    out = str(tmp_path / "run")
    n_threads, per_thread = 4, 1500
    hook = _hook(out)
    hook.begin_step()
    accepted = [[] for _ in range(n_threads)]
    stop, errors = threading.Event(), []

    def recorder(i):
        try:
            for seq in range(per_thread):
                name = f"weights/t{i}/{seq}"
                if hook.record(name, np.full(1 + seq % 50, i * 100_000 + seq, np.int64)):
                    accepted[i].append(name)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=recorder, args=(i,), name=f"recorder-{i}") for i in range(n_threads)]
    for t in threads:
        t.start()
    boundaries = 0
    while any(t.is_alive() for t in threads):
        hook.end_step()
        hook.begin_step()
        boundaries += 1
    _join_all(threads)
    hook.close()
    assert not errors and not hook.disabled, (errors, hook._failure)
    assert boundaries > 1

    entries = _index_entries(out)
    written = Counter()
    for counts in entries.values():
        written.update(counts)
    want = Counter(name for names in accepted for name in names)
    assert sum(want.values()) > 0
    lost = sorted(set(want) - set(written))
    extra = sorted(set(written) - set(want))
    dup = sorted(n for n, c in written.items() if c > 1)
    assert not lost and not extra and not dup, (len(lost), lost[:5], extra[:5], dup[:5])

    trial = create_trial(out)
    for step, counts in entries.items():
        for name in counts:
            i, seq = (int(p.lstrip("t")) for p in name.split("/")[1:])
            np.testing.assert_array_equal(trial.tensor(name).value(step), np.full(1 + seq % 50, i * 100_000 + seq))


def test_reader_threads_follow_a_training_process(tmp_path):
    """Two reader threads, each with its own trial, poll a run that a training process is writing;
    every value they see is complete and exact. The writer is told to stop (at a step boundary) only
    after both readers have checked steps while it was running."""
    out = str(tmp_path / "run")
    stop_file = tmp_path / "stop"
    # --steps: never reached, a bound so that a stuck test cannot fill the disk
    proc = start_child(out, "--steps", 50_000, "--stop-file", stop_file)
    live = threading.Barrier(3)
    results, errors = {}, []

    def reader(i):
        try:
            results[i] = follow(out, live_steps=25, on_live=lambda n: live.wait(JOIN_S))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
            live.abort()

    threads = [threading.Thread(target=reader, args=(i,), name=f"reader-{i}") for i in range(2)]
    try:
        assert proc.stdout.readline().strip() == "READY"
        for t in threads:
            t.start()
        try:
            live.wait(JOIN_S)  # both readers checked 25 steps with no end marker yet
        except threading.BrokenBarrierError:
            pass  # a reader failed: reported below
        assert proc.poll() is None, "the writer stopped before the readers saw it run"
    finally:
        stop_file.touch()
        try:
            stdout, stderr = proc.communicate(timeout=JOIN_S)
        finally:
            proc.kill()
    _join_all(threads)
    assert not errors, errors
    assert proc.returncode == 0 and "TRAINING DONE" in stdout, stderr
    trial = create_trial(out)
    total = len(trial.steps())
    for i in range(2):
        assert results[i]["steps"] == total and results[i]["checked_live"] >= 25, results


def test_reader_process_follows_hook_writing_from_threads(tmp_path):
    """The other way round: the hook writes in this process, from several recording threads; a reader
    process follows the run and checks every value."""
    out = str(tmp_path / "run")
    hook = _hook(out)
    errlog = open(tmp_path / "reader.stderr", "w+")  # a file: a full stderr pipe would block the reader
    reader = subprocess.Popen([sys.executable, os.path.join(HERE, "_live_reader.py"), out, "--live-steps", "25"],
                              stdout=subprocess.PIPE, stderr=errlog, text=True,
                              env={**child_env(), "SMDEBUG_TRAINING_END_DELAY_REFRESH": "0"})
    reader_live = threading.Event()
    reader_lines = []

    def read_reader_stdout():
        for line in reader.stdout:
            reader_lines.append(line)
            if line.startswith("LIVE"):
                reader_live.set()

    pump = threading.Thread(target=read_reader_stdout, name="reader-stdout")
    pump.start()
    step = 0
    try:
        # Train until the reader has checked 25 steps while no end marker existed (with a bound).
        while not reader_live.is_set() and reader.poll() is None and step < 50_000:
            hook.begin_step()
            tensors = list(expected_tensors(step).items())
            workers = [threading.Thread(target=hook.record, args=item) for item in tensors]
            for w in workers:
                w.start()
            _join_all(workers)
            hook.end_step()
            step += 1
    finally:
        hook.close()
        reader.wait(JOIN_S)
        pump.join(JOIN_S)
        errlog.seek(0)
        stderr = errlog.read()
        errlog.close()
    assert reader.returncode == 0, stderr
    summary = json.loads(reader_lines[-1])
    assert summary["steps"] == step and summary["checked_live"] >= 25, summary
    assert not hook.disabled


def _write_same_keys(root: str, count: int, barrier, errors) -> None:
    from smdebug.core.storage import get_storage

    storage = get_storage(root)
    failed = 0
    for i in range(count):
        barrier.wait(JOIN_S)
        try:
            storage.write_atomic(f"k{i}", b"x" * i)
        except Exception:  # noqa: BLE001 - counted: the test says how many writes failed
            failed += 1
    errors.put(failed)


def test_processes_writing_one_file_at_once_both_succeed(tmp_path):
    """Two processes write the same file at the same moment (the last two workers of a run each writing its
    end marker): each write completes and the file is there, whole. With one ``.tmp`` name shared by every
    writer, one process unlinked the other's file half-way and both renames could fail: most such pairs left
    no file at all, and a two-worker Horovod run was left without its end marker."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    count = 400
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_write_same_keys, args=(str(tmp_path), count, barrier, errors)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(JOIN_S)
    assert [p.exitcode for p in procs] == [0, 0]
    assert [errors.get(timeout=JOIN_S) for _ in procs] == [0, 0]
    for i in range(count):
        assert (tmp_path / f"k{i}").read_bytes() == b"x" * i
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def _worker_closing_with_the_other(runs, rank: int, barrier) -> None:
    os.environ.update(SMDEBUG_TEST_RANK=str(rank), SMDEBUG_TEST_WORLD_SIZE="2")
    from _support import train_logistic_regression

    for out in runs:
        hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["losses"],
                         include_workers="all")
        train_logistic_regression(hook, steps=1, seed=rank)
        barrier.wait(JOIN_S)
        hook.close()


def test_two_workers_ending_together_mark_the_run_ended(tmp_path):
    """The two workers of a run close at the same moment, run after run: every run gets its end marker (the
    last worker to end writes it; when both see themselves last, both write it)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    runs = [str(tmp_path / f"run{i}") for i in range(150)]
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_worker_closing_with_the_other, args=(runs, rank, barrier)) for rank in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(JOIN_S)
    assert [p.exitcode for p in procs] == [0, 0]
    assert [out for out in runs if not os.path.exists(os.path.join(out, "training_job_end.ts"))] == []
    trial = create_trial(runs[-1])
    assert trial.workers() == ["worker_0", "worker_1"] and trial.loaded_all_steps
