"""Workers that number their global steps differently are read aligned by (mode, mode step).

Each training process counts its own global steps, EVAL steps included. With validation on rank 0 only,
rank 0's TRAIN step 6 is its global step 8 while rank 1's is its global step 6; with uneven shards rank 1
has TRAIN steps rank 0 lacks. The trial took a global step to be the same step on every worker, so rank 1's
TRAIN values were served as rank 0's EVAL steps and rank 1's extra steps were never read by mode step.
The runs here are written by two real hooks (one per rank) into one folder, as a two-process job does."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from _hostile import run_smdebug
from _support import NumpyHook, WorkerInfo
from smdebug import SaveConfig
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial

TRAIN, EVAL = ModeKeys.TRAIN, ModeKeys.EVAL

# what each rank runs: worker_0 validates twice (EVAL steps worker_1 lacks); worker_1 has two more TRAIN
# steps (a larger shard, as with join())
SCHEDULE = {
    0: [TRAIN] * 6 + [EVAL] * 2 + [TRAIN] * 4 + [EVAL] * 2,
    1: [TRAIN] * 12,
}
# worker_0's own global steps of each (mode, mode step): the run's numbering
WORKER_0_STEPS = {(TRAIN, ms): g for ms, g in enumerate([0, 1, 2, 3, 4, 5, 8, 9, 10, 11])}
WORKER_0_STEPS.update({(EVAL, 0): 6, (EVAL, 1): 7, (EVAL, 2): 12, (EVAL, 3): 13})


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _hook(root, rank):
    cls = type(f"Rank{rank}", (NumpyHook,), {"_detect_worker": lambda self, r=rank: WorkerInfo(r, 2)})
    return cls(out_dir=str(root), save_config=SaveConfig(save_interval=1),
               include_collections=["weights", "losses"], include_workers="all")


def _value(rank, mode, mode_step):
    """What a worker saves: its rank, the mode and mode step (so a value read at the wrong step shows)."""
    return np.array([rank, mode.value, mode_step, 1.0], np.float32)


def write_two_worker_run(root):
    """Both ranks train (a real update of their own weights), stepping turn about; returns the run path."""
    hooks = {rank: _hook(root, rank) for rank in SCHEDULE}
    counters = {rank: {TRAIN: 0, EVAL: 0} for rank in SCHEDULE}
    for i in range(max(len(s) for s in SCHEDULE.values())):
        for rank, hook in hooks.items():
            if i >= len(SCHEDULE[rank]):
                continue
            mode = SCHEDULE[rank][i]
            ms = counters[rank][mode]
            counters[rank][mode] += 1
            hook.set_mode(mode)
            hook.begin_step()
            hook.record("weights/w", _value(rank, mode, ms))
            hook.record("loss", np.array([1.0 / (ms + 1)], np.float32))
            hook.end_step()
    for hook in hooks.values():
        hook.close()
    return str(root)


def _saved():
    """(worker, mode, mode step) of every file the run holds."""
    out = []
    for rank, schedule in SCHEDULE.items():
        counters = {TRAIN: 0, EVAL: 0}
        for mode in schedule:
            out.append((f"worker_{rank}", mode, counters[mode]))
            counters[mode] += 1
    return out


def _answers(trial):
    """Everything a reader is asked per (worker, mode, mode step), as one comparable value."""
    t = trial.tensor("weights/w")
    return {
        "train": trial.steps(mode=TRAIN, show_incomplete_steps=True),
        "eval": trial.steps(mode=EVAL, show_incomplete_steps=True),
        "global": trial.steps(show_incomplete_steps=True),
        "modes": [trial.mode_modestep(g) for g in trial.steps(show_incomplete_steps=True)],
        "values": {(w, m.name, ms): t.value(ms, mode=m, worker=w).tolist() for w, m, ms in _saved()},
        "workers": {(m.name, ms): t.workers(ms, m) for _, m, ms in _saved()},
    }


def test_each_worker_is_read_at_its_own_mode_step(tmp_path, caplog):
    run = write_two_worker_run(tmp_path / "run")
    with caplog.at_level("WARNING", logger="smdebug"):
        trial = create_trial(run)
        trial.steps()
    said = [r.getMessage() for r in caplog.records if "disagree" in r.getMessage()]
    assert len(said) == 1 and "Aligning workers by (mode, mode step)" in said[0], said
    w = trial.tensor("weights/w")
    for worker, mode, ms in _saved():
        rank = int(worker[-1])
        np.testing.assert_array_equal(w.value(ms, mode=mode, worker=worker), _value(rank, mode, ms))
        assert w.shape(ms, mode=mode, worker=worker) == (4,)
        assert float(w.reduction_value(ms, "min", mode=mode, worker=worker)) == min(_value(rank, mode, ms))
    assert trial.steps(mode=TRAIN) == w.steps(mode=TRAIN) == list(range(12))
    assert trial.steps(mode=EVAL) == w.steps(mode=EVAL) == [0, 1, 2, 3]
    assert w.workers(5, TRAIN) == w.workers(9, TRAIN) == ["worker_0", "worker_1"]
    assert w.workers(0, EVAL) == w.workers(3, EVAL) == ["worker_0"]
    assert w.workers(10, TRAIN) == w.workers(11, TRAIN) == ["worker_1"]  # worker_1's extra steps are kept
    # the run's numbering is worker_0's; worker_1's extra TRAIN steps come after worker_0's steps
    for (mode, ms), g in WORKER_0_STEPS.items():
        assert trial.global_step(mode, ms) == g and trial.mode_modestep(g) == (mode, ms)
    extra = [trial.global_step(TRAIN, 10), trial.global_step(TRAIN, 11)]
    assert extra == [14, 15] and [trial.mode_modestep(g) for g in extra] == [(TRAIN, 10), (TRAIN, 11)]
    assert trial.steps() == w.steps() == list(range(16))
    # a global step's files are one (mode, mode step): each worker's file there holds that mode step
    for g in trial.steps():
        mode, ms = trial.mode_modestep(g)
        for f in trial.index_files_with_tensor("weights/w", g, ModeKeys.GLOBAL):
            assert (f.mode, f.mode_step) == (mode, ms)
            np.testing.assert_array_equal(w.value(g, worker=f.worker), _value(int(f.worker[-1]), mode, ms))


def test_tables_and_the_cli_read_the_same_alignment(tmp_path):
    pd = pytest.importorskip("pandas")
    run = write_two_worker_run(tmp_path / "run")
    trial = create_trial(run)
    table = trial.to_dataframe(tensors=["weights/w"])
    assert len(table) == len(_saved())
    for row in table.itertuples():
        mode = ModeKeys[row.mode]
        assert trial.global_step(mode, row.mode_step) == row.step
        np.testing.assert_array_equal(row.value, _value(int(row.worker[-1]), mode, row.mode_step))
    per_tensor = trial.tensor("weights/w").to_dataframe(mode=TRAIN, workers="all")
    assert len(per_tensor) == 22  # 10 TRAIN steps of worker_0, 12 of worker_1
    for row in per_tensor.itertuples():
        assert row.mode == "TRAIN" and row.step == trial.global_step(TRAIN, row.mode_step)
        np.testing.assert_array_equal(row.value, _value(int(row.worker[-1]), TRAIN, row.mode_step))
    assert isinstance(per_tensor, pd.DataFrame)

    doc = json.loads(run_smdebug("ls", run, "--json").stdout)
    assert doc["modes"]["TRAIN"]["steps"] == list(range(12)) and doc["modes"]["EVAL"]["steps"] == [0, 1, 2, 3]
    out = run_smdebug("show", run, "weights/w", "--step", "6", "--mode", "train", "--json")
    rows = json.loads(out.stdout)["rows"]
    assert [(r["step"], r["mode_step"], r["worker"]) for r in rows] == [(8, 6, "worker_0"), (8, 6, "worker_1")]
    assert [r["value"] for r in rows] == [_value(0, TRAIN, 6).tolist(), _value(1, TRAIN, 6).tolist()]


def _index_files(run):
    out = []
    for folder, _, names in os.walk(os.path.join(run, "index")):
        out += [os.path.join(folder, n) for n in names if n.endswith(".json")]
    return sorted(out)


@pytest.mark.parametrize("order", ["worker_0_late", "worker_0_last_steps_late", "interleaved_lagging"])
def test_a_live_run_read_in_any_order_converges_to_the_same_answer(tmp_path, order):
    """The files arrive while a trial reads the run: the first worker lagging behind (its files after all of
    worker_1's), or its last steps (the EVAL steps and the TRAIN steps after them) late. Each worker writes
    its own files in step order. Once every file is there, the trial reads what a fresh one reads."""
    done = write_two_worker_run(tmp_path / "done")
    expected = _answers(create_trial(done))
    run = str(tmp_path / "live")
    shutil.copytree(done, run)
    os.remove(os.path.join(run, "training_job_end.ts"))
    shutil.rmtree(os.path.join(run, "workers_ended"), ignore_errors=True)
    hidden = str(tmp_path / "hidden")
    os.mkdir(hidden)
    files = _index_files(run)
    w0 = [p for p in files if p.endswith("_worker_0.json")]
    w1 = [p for p in files if p.endswith("_worker_1.json")]
    if order == "worker_0_late":  # all of worker_1's files first, then worker_0's one at a time
        late = [[p] for p in w0]
    elif order == "worker_0_last_steps_late":  # worker_0's second TRAIN stretch and EVAL steps late
        late = [w0[6:]]
    else:  # every file late: worker_1's step n arrives with worker_0's step n - 2
        late = [[w1[i]] + ([w0[i - 2]] if i >= 2 else []) for i in range(len(w1))]
        late += [[p] for p in w0[len(w1) - 2:]]
    for chunk in late:
        for p in chunk:
            shutil.move(p, os.path.join(hidden, os.path.basename(p)))
    trial = create_trial(run)
    for chunk in late:
        for p in chunk:
            shutil.move(os.path.join(hidden, os.path.basename(p)), p)
        trial.refresh_data()
        trial.steps(mode=TRAIN, show_incomplete_steps=True)  # (read in between, as a rule would)
    open(os.path.join(run, "training_job_end.ts"), "w").close()
    trial.refresh_data()
    assert _answers(trial) == expected
    assert trial.steps(mode=TRAIN) == list(range(12)) and trial.steps(mode=EVAL) == [0, 1, 2, 3]
