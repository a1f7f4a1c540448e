"""The framework-neutral hook: what gets saved when, reductions, scalars, errors, background writing."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from _support import NumpyHook, train_logistic_regression
from smdebug import ReductionConfig, SaveConfig, SaveConfigMode, modes
from smdebug.core.collection import Collection
from smdebug.core.reductions import compute_reduction
from smdebug.core.storage.local import LocalStorage
from smdebug.core.writer import BackgroundWriter
from smdebug.exceptions import InvalidConfigurationError, SMDebugRuntimeError, TensorUnavailableForStep
from smdebug.trials import create_trial

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


def run_script(code, env=None, cwd=None, timeout=120):
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_values_saved_are_snapshots_at_due_steps(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=3),
                     include_collections=["weights", "gradients", "losses", "biases"])
    history = train_logistic_regression(hook, steps=10)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 3, 6, 9]
    assert trial.loaded_all_steps
    w = trial.tensor("weights/w")
    for step, weights, grad, loss in history:
        if step % 3:
            continue
        np.testing.assert_array_equal(w.value(step), weights)  # not the later, in-place-updated array
        np.testing.assert_array_equal(trial.tensor("gradient/weights/w").value(step), grad)
        np.testing.assert_allclose(trial.tensor("loss").value(step), [loss])
    assert sorted(trial.collection("weights").tensor_names) == ["weights/w"]
    assert trial.tensor_names(collection="gradients") == ["gradient/biases/b", "gradient/weights/w"]


def test_default_config_saves_only_losses_every_500(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path))
    train_logistic_regression(hook, steps=3)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0]
    assert trial.tensor_names() == ["loss"]


def test_modes_mode_steps_and_no_gradients_in_eval(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses"])
    train_logistic_regression(hook, steps=4, mode=modes.TRAIN)
    train_logistic_regression(hook, steps=2, mode=modes.EVAL)
    train_logistic_regression(hook, steps=3, mode=modes.TRAIN)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.steps() == list(range(9))
    assert trial.steps(modes.TRAIN) == list(range(7))
    assert trial.steps(modes.EVAL) == [0, 1]
    assert trial.modes() == {modes.TRAIN, modes.EVAL}
    assert trial.mode_modestep(4) == (modes.EVAL, 0)
    assert trial.global_step(modes.TRAIN, 4) == 6
    assert trial.tensor("gradient/weights/w").steps(modes.EVAL) == []
    assert trial.tensor("loss").steps(modes.EVAL) == [0, 1]
    assert trial.tensor_names(mode=modes.PREDICT) == []  # the original raised KeyError
    np.testing.assert_array_equal(trial.tensor("loss").value(1, mode=modes.EVAL), trial.tensor("loss").value(5))


def test_per_mode_schedule(tmp_path):
    cfg = SaveConfig(mode_save_configs={modes.TRAIN: SaveConfigMode(save_interval=2),
                                        modes.EVAL: SaveConfigMode(save_steps=[1])})
    hook = NumpyHook(out_dir=str(tmp_path), save_config=cfg, include_collections=["losses"])
    train_logistic_regression(hook, steps=5, mode=modes.TRAIN)
    train_logistic_regression(hook, steps=3, mode=modes.EVAL)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.steps(modes.TRAIN) == [0, 2, 4]
    assert trial.steps(modes.EVAL) == [0, 1]  # save_steps is a union with the default interval


def test_schedule_changed_during_a_quiet_stretch_takes_effect_at_the_next_step(tmp_path):
    """Steps with nothing due skip the schedules until the next due step; any change to a schedule (a
    collection's save_config replaced, a schedule changed in place) is still seen at the next step."""
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=100), include_collections=["losses"])
    losses = hook.get_collection("losses")
    train_logistic_regression(hook, steps=4, mode=modes.TRAIN)  # step 0 saved; then quiet until 100
    # (no hook method in between: the change reaches the hook only through the objects themselves)
    losses.save_config.get_save_config(modes.TRAIN).save_interval = 3  # in place
    train_logistic_regression(hook, steps=3)  # steps 4, 5, 6: 6 is due now
    losses.save_config.set_save_config(modes.TRAIN, SaveConfigMode(save_steps=[8]))
    train_logistic_regression(hook, steps=3)  # steps 7, 8, 9
    losses.save_config = SaveConfig(save_steps=[11])
    train_logistic_regression(hook, steps=3)  # steps 10, 11, 12
    hook.close()
    assert create_trial(str(tmp_path)).steps() == [0, 6, 8, 11]


def test_reductions_shapes_and_raw(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses"])
    hook.get_collection("weights").reduction_config = ReductionConfig(
        reductions=["mean", "max", "std"], norms=["l2"], abs_reductions=["min"], abs_norms=["l1"], save_shape=True)
    hook.get_collection("gradients").reduction_config = ReductionConfig(norms=["l2"], save_raw_tensor=True)
    history = train_logistic_regression(hook, steps=3)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert "smdebug/reductions/mean/weights/w" not in trial.tensor_names()
    w = trial.tensor("weights/w")
    for step, weights, grad, _ in history:
        with pytest.raises(TensorUnavailableForStep) as info:
            w.value(step)
        assert info.value.has_reductions
        assert w.shape(step) == (4,)
        stored = w.reduction_values(step)
        assert set(stored) == {("mean", False), ("max", False), ("std", False), ("l2", False), ("min", True), ("l1", True)}
        for (op, is_abs), v in stored.items():
            np.testing.assert_allclose(v, [compute_reduction(weights, op, is_abs)], rtol=1e-6)
        np.testing.assert_allclose(w.reduction_value(step, "l1", abs=True), compute_reduction(weights, "l1", True), rtol=1e-6)
        g = trial.tensor("gradient/weights/w")
        np.testing.assert_array_equal(g.value(step), grad)
        # not stored but computable from the raw value, with the same definition
        np.testing.assert_allclose(g.reduction_value(step, "variance"), np.var(grad), rtol=1e-6)
    # losses are never reduced
    assert trial.tensor("loss").reduction_values(0) == {}


def test_shape_only_and_norm_definition(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.get_collection("weights").reduction_config = ReductionConfig(save_shape=True)
    hook.begin_step()
    hook.record("weights/m", np.ones((3, 4, 5), np.float32))
    hook.end_step()
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.tensor("weights/m").shape(0) == (3, 4, 5)
    with pytest.raises(TensorUnavailableForStep):
        trial.tensor("weights/m").value(0)
    # one definition: vector norms of the flattened tensor, also for >= 3-D
    assert compute_reduction(np.ones((3, 4, 5)), "l2") == pytest.approx(np.sqrt(60))
    assert compute_reduction(np.array([1.0, 2.0, 3.0, 4.0]), "std") == pytest.approx(np.std([1, 2, 3, 4]))


def test_save_scalar_and_save_tensor(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=2))
    for step in range(4):
        hook.begin_step()
        hook.save_scalar("lr", 0.1 * step)
        hook.save_tensor("my/activations", np.full((2, 2), step, np.float32), collections_to_write=["acts", "extra"])
        hook.end_step()
    hook.save_scalar("final_accuracy", 0.93)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.tensor("scalar/lr").steps() == [0, 1, 2, 3]  # scalars ignore the schedule
    assert trial.tensor("my/activations").steps() == [0, 2]
    np.testing.assert_array_equal(trial.tensor("my/activations").value(2), np.full((2, 2), 2))
    assert "my/activations" in trial.collection("acts").tensor_names
    assert "my/activations" in trial.collection("extra").tensor_names  # every listed collection
    np.testing.assert_allclose(trial.tensor("scalar/final_accuracy").value(3), [0.93])


def test_save_scalar_rejects_non_scalars_without_disabling(tmp_path, caplog):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1))
    hook.begin_step()
    hook.save_scalar("bad", np.ones(3))
    hook.record("loss", np.ones(1))
    hook.end_step()
    hook.close()
    assert not hook.disabled
    assert create_trial(str(tmp_path)).tensor_names() == ["loss"]


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"out_dir": None}, InvalidConfigurationError, "out_dir is required"),
        ({"out_dir": "  "}, InvalidConfigurationError, "out_dir is required"),
        ({"include_workers": "most"}, InvalidConfigurationError, "include_workers"),
        ({"reduction_config": {"reductions": "mean"}}, InvalidConfigurationError, "ReductionConfig"),
        ({"save_config": "every step"}, InvalidConfigurationError, "Invalid save_config"),
        ({"save_config": SaveConfigMode(save_interval=3), "include_collections": "weights"},
         InvalidConfigurationError, "list of collection names"),
    ],
)
def test_bad_configuration_fails_fast(tmp_path, kwargs, exc, match):
    kwargs.setdefault("out_dir", str(tmp_path))
    with pytest.raises(exc, match=match):
        NumpyHook(**kwargs)


def test_out_dir_errors(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "run"))
    train_logistic_regression(hook, steps=1)
    hook.close()
    with pytest.raises(SMDebugRuntimeError, match="already holds a finished run"):
        NumpyHook(out_dir=str(tmp_path / "run"))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InvalidConfigurationError, match="not a directory"):
        NumpyHook(out_dir=str(tmp_path / "afile"))
    with pytest.raises(InvalidConfigurationError, match="Cannot create out_dir"):
        NumpyHook(out_dir=str(tmp_path / "afile" / "sub"))


def test_an_unfinished_earlier_run_in_out_dir_is_said_once_before_its_steps_are_replaced(tmp_path, caplog):
    """smdebug 1.0.x reuses a folder holding a run that never ended (a crashed job): its steps with the same
    numbers are replaced and the others stay, so the folder reads back as one run mixing both jobs. That
    was silent (probe 14c F4); it is said once, as the new run starts writing."""
    from smdebug.trials import create_trial

    run = tmp_path / "run"
    hook = NumpyHook(out_dir=str(run), save_config=SaveConfigMode(save_interval=1))
    train_logistic_regression(hook, steps=6)
    hook.close()
    os.remove(run / "training_job_end.ts")  # (the first job "crashed" before its end)
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "notes.txt").write_text("a user's file, no run")
    for out_dir, earlier in ((tmp_path / "fresh", False), (run, True)):
        caplog.clear()
        hook = NumpyHook(out_dir=str(out_dir), save_config=SaveConfigMode(save_interval=1))
        train_logistic_regression(hook, steps=2)
        hook.close()
        said = [r.getMessage() for r in caplog.records if "earlier run that did not end" in r.getMessage()]
        assert len(said) == (1 if earlier else 0), said
    assert str(run) in said[0] and "index/000000000/" in said[0]
    # (what happens, said as it is: the numbering starts again, whatever the job meant; probe 15d F2)
    assert "This job's steps start again at step 0: they replace the earlier job's steps" in said[0], said[0]
    assert create_trial(str(run)).steps() == list(range(6))  # (what it warned of: 2 new steps, 4 old)
    assert (tmp_path / "fresh" / "notes.txt").read_text() == "a user's file, no run"


def test_tilde_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    hook = NumpyHook(out_dir="~/runs/one")
    assert hook.out_dir == str(tmp_path / "runs" / "one")
    hook.close()


def test_dry_run_writes_nothing(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path / "dry"), dry_run=True, save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=3)
    hook.close()
    assert not (tmp_path / "dry").exists()


def test_invalid_collection_is_skipped_not_fatal(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), include_collections=["losses", "nothing_matches_me"],
                     save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=2)
    hook.close()
    assert not hook.disabled
    assert create_trial(str(tmp_path)).steps() == [0, 1]


def test_collection_added_after_construction(tmp_path):
    hook = NumpyHook(out_dir=str(tmp_path), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    coll = hook.get_collection("bias_only")
    coll.include("^biases/")
    hook.include_collections.append("bias_only")
    train_logistic_regression(hook, steps=2)
    hook.close()
    assert "biases/b" in create_trial(str(tmp_path)).tensor_names()


def test_internal_write_failure_disables_hook_and_training_continues(tmp_path):
    # A real I/O fault: the process may not create files over 64 KiB (RLIMIT_FSIZE).
    out = tmp_path / "run"
    res = run_script(
        f"""
        import resource, signal, numpy as np
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        from _support import NumpyHook
        from smdebug import SaveConfig
        hook = NumpyHook(out_dir={str(out)!r}, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
        total = 0.0
        for step in range(30):
            hook.begin_step()
            w = np.full(1024 * (step + 1), step, np.float32)  # grows 4 KiB a step: the limit hits at ~16
            hook.record("weights/w", w)
            total += float(w.sum())
            hook.end_step()
        hook.close()
        print("TRAINING DONE", total, hook.disabled)
        """
    )
    assert res.returncode == 0, res.stderr
    assert "TRAINING DONE" in res.stdout and res.stdout.strip().endswith("True")
    # an OSError is not a bug of smdebug's: one clear line, no traceback
    assert "cannot save to" in res.stdout + res.stderr and "File too large" in res.stdout + res.stderr
    assert res.stdout.count("cannot save to") == 1  # reported once
    assert "Traceback" not in res.stdout + res.stderr
    trial = create_trial(str(out), wait_for_collections=5)
    trial.treat_as_ended()
    steps = trial.steps()
    assert 1 <= len(steps) < 30
    for s in steps:  # everything that became visible is intact
        np.testing.assert_array_equal(trial.tensor("weights/w").value(s), np.full(1024 * (s + 1), s, np.float32))


def test_close_at_interpreter_exit(tmp_path):
    out = tmp_path / "run"
    res = run_script(
        f"""
        from _support import NumpyHook, train_logistic_regression
        from smdebug import SaveConfig
        hook = NumpyHook(out_dir={str(out)!r}, save_config=SaveConfig(save_interval=1))
        train_logistic_regression(hook, steps=5)
        # no hook.close(): the at-exit handler must flush and mark the end
        """
    )
    assert res.returncode == 0, res.stderr
    assert (out / "training_job_end.ts").exists()
    assert create_trial(str(out)).steps() == [0, 1, 2, 3, 4]


def test_run_folder_stays_open_until_the_at_exit_close(tmp_path):
    # At interpreter exit the pass that runs weakref finalizers came before the hook's own at-exit close
    # and closed the run folder's descriptors while the writer thread, behind on a loaded machine, still
    # used them: the steps still queued failed with "Bad file descriptor" and the run was marked ended
    # without them or its collections file. ``check`` is registered before the run folder is first
    # opened, so it runs after that pass and before the hook's close (at-exit handlers run last first).
    out = tmp_path / "run"
    res = run_script(
        f"""
        import atexit, os
        from _support import NumpyHook, train_logistic_regression
        from smdebug import SaveConfig
        hook = NumpyHook(out_dir={str(out)!r}, save_config=SaveConfig(save_interval=1))
        seen = {{}}
        def check():
            try:
                os.fstat(seen["fd"])
                print("descriptor open")
            except OSError as e:
                print("descriptor closed:", e)
        atexit.register(check)
        train_logistic_regression(hook, steps=5)
        seen["fd"] = hook._storage._root_fd()  # the folder the writer writes through
        """
    )
    assert res.returncode == 0, res.stderr
    assert "descriptor open" in res.stdout, res.stdout + res.stderr
    assert create_trial(str(out)).steps() == [0, 1, 2, 3, 4]


def test_large_tensors_still_queued_at_exit_are_saved(run_loc):
    # Python's thread pools take no new work once the interpreter exits, before the hook's at-exit close
    # runs: the checksum of a large tensor (a helper thread) and the parts of an S3 upload were refused
    # ("cannot schedule new futures after interpreter shutdown") and the steps still queued were lost.
    res = run_script(
        f"""
        import time
        import numpy as np
        from _support import NumpyHook
        from smdebug import SaveConfig
        hook = NumpyHook(out_dir={str(run_loc)!r}, save_config=SaveConfig(save_interval=1),
                         include_collections=["weights"])
        for step in range(3):
            if step == 2:
                hook._writer.call(time.sleep, 0.5)  # the writer falls behind: the last step is queued at exit
            hook.begin_step()
            hook.record("weights/big", np.full(6 << 18, step, dtype=np.float32))  # 6 MiB: two upload parts
            hook.end_step()
        """,
        env={"SMDEBUG_S3_MULTIPART_THRESHOLD": str(5 << 20), "SMDEBUG_S3_PART_SIZE": str(5 << 20)},
    )
    assert res.returncode == 0, res.stderr
    assert "not saved" not in res.stderr and "cannot save" not in res.stderr, res.stderr
    trial = create_trial(str(run_loc))
    assert trial.steps() == [0, 1, 2]
    for step in range(3):
        value = trial.tensor("weights/big").value(step)
        assert value.shape == (6 << 18,) and (value == step).all()


def test_no_end_marker_on_sagemaker(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINING_JOB_NAME", "job")
    hook = NumpyHook(out_dir=str(tmp_path))
    train_logistic_regression(hook, steps=1)
    hook.close()
    assert not (tmp_path / "training_job_end.ts").exists()


def test_two_processes_sharing_out_dir_only_one_writes(tmp_path):
    out = tmp_path / "shared"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    done = tmp_path / "done"
    done.mkdir()
    code = f"""
        import os, time
        from _support import NumpyHook, train_logistic_regression
        from smdebug import SaveConfig
        hook = NumpyHook(out_dir={str(out)!r}, save_config=SaveConfig(save_interval=1))
        open(os.path.join({str(barrier)!r}, str(os.getpid())), "w").close()
        while len(os.listdir({str(barrier)!r})) < 2:  # both processes train at the same time
            time.sleep(0.01)
        train_logistic_regression(hook, steps=3)
        # Close (and release the claim) only once both have tried to write: on a loaded machine the second
        # could otherwise start after the first had finished, and rightly write.
        open(os.path.join({str(done)!r}, str(os.getpid())), "w").close()
        while len(os.listdir({str(done)!r})) < 2:
            time.sleep(0.01)
        hook.close()
        """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)],
                              env={**os.environ, "PYTHONPATH": os.path.dirname(__file__)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sum("will not write" in o for o in outs) == 1
    assert not (out / "claim.smd").exists()
    assert create_trial(str(out)).steps() == [0, 1, 2]


def test_background_writer_applies_back_pressure(tmp_path):
    storage = LocalStorage(str(tmp_path))
    budget = 4 << 20
    writer = BackgroundWriter(storage, "worker_0", max_pending_bytes=budget)
    item = np.ones(1 << 18, np.float32)  # 1 MiB
    peak = 0
    for step in range(40):
        writer.write_tensor(step, modes.GLOBAL, step, "t", item)
        peak = max(peak, writer.pending_bytes)
        writer.close_step(step)
    assert writer.close()
    assert peak <= budget
    assert len(storage.list("index")) == 40


def test_json_config_creates_configured_hook(tmp_path, monkeypatch):
    cfg = tmp_path / "hook.json"
    cfg.write_text(
        '{"LocalPath": "%s", "HookParameters": {"save_interval": "2"},'
        ' "CollectionConfigurations": [{"CollectionName": "weights", "CollectionParameters": {"save_interval": "1"}},'
        ' {"CollectionName": "gradients", "CollectionParameters": {"reductions": "mean"}}]}' % (tmp_path / "out")
    )
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    hook = NumpyHook.create_from_json_file()
    train_logistic_regression(hook, steps=4)
    hook.close()
    trial = create_trial(str(tmp_path / "out"))
    assert trial.tensor("weights/w").steps() == [0, 1, 2, 3]
    assert trial.tensor("loss").steps() == [0, 2]
    assert trial.tensor("gradient/weights/w").reduction_values(2).keys() == {("mean", False)}
    with pytest.raises(FileNotFoundError):
        NumpyHook.create_from_json_file(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{oops")
    with pytest.raises(InvalidConfigurationError, match="not valid JSON"):
        NumpyHook.create_from_json_file(str(tmp_path / "bad.json"))


def test_get_hook_singleton_and_use_smdebug(tmp_path, monkeypatch):
    from smdebug.core import singleton

    singleton.del_hook()
    assert singleton.get_hook(NumpyHook) is None
    cfg = tmp_path / "hook.json"
    cfg.write_text('{"LocalPath": "%s"}' % (tmp_path / "zcc"))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    hook = singleton.get_hook(NumpyHook, create_if_not_exists=True)
    assert isinstance(hook, NumpyHook) and singleton.get_hook(NumpyHook) is hook
    monkeypatch.setenv("USE_SMDEBUG", "0")
    assert singleton.get_hook(NumpyHook) is None
    monkeypatch.delenv("USE_SMDEBUG")
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "absent.json"))
    singleton.del_hook()
    assert singleton.get_hook(NumpyHook, create_if_not_exists=True) is None
    hook.close()


# checkpoints directly in the checkpoint folder, or in a folder per checkpoint (as many frameworks write them)
@pytest.mark.parametrize("checkpoint_file", ["model.ckpt", "epoch_4/model.pt"])
def test_step_numbering_resumes_after_restart_from_checkpoint(tmp_path, monkeypatch, checkpoint_file, caplog):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    cfg = tmp_path / "checkpointconfig.json"
    cfg.write_text('{"LocalPath": "%s"}' % ckpt)
    monkeypatch.setenv("CHECKPOINT_CONFIG_FILE_PATH", str(cfg))
    out = str(tmp_path / "run")

    def checkpoint(step):
        if step == 4:
            (ckpt / checkpoint_file).parent.mkdir(exist_ok=True)
            (ckpt / checkpoint_file).write_bytes(b"x" * 10)

    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
    train_logistic_regression(hook, steps=7, mode=modes.TRAIN, on_step=checkpoint)
    hook._closed = True  # simulate a crash: no close, no end marker
    hook._writer.close()
    # restart: training resumes from the checkpoint taken at step 4
    hook2 = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1))
    assert hook2.training_run == 1 and hook2.step == 4
    caplog.clear()
    train_logistic_regression(hook2, steps=2, mode=modes.TRAIN)
    hook2.close()
    said = [r.getMessage() for r in caplog.records if "earlier run that did not end" in r.getMessage()]
    assert len(said) == 1 and "This job resumed from smdebug's checkpoint record at step 5: its steps continue " \
        "the run" in said[0], said
    trial = create_trial(out)
    assert trial.steps() == list(range(7))  # steps 5, 6 were redone, nothing before was overwritten
    assert trial.steps(modes.TRAIN) == list(range(7))


def test_set_mode_refuses_a_bad_mode_at_once(tmp_path):
    """A wrong mode is a mistake in the training script: ValueError at the call (as in smdebug 1.0.x),
    not a log line; the hook is unaffected."""
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    for bad in ("a", "TRAIN", 1, None):
        with pytest.raises(ValueError):
            hook.set_mode(bad)
    hook.set_mode(modes.EVAL)
    train_logistic_regression(hook, steps=2)
    hook.close()
    assert not hook.disabled
    assert create_trial(str(tmp_path / "run")).steps(modes.EVAL) == [0, 1]


def test_dicts_are_refused_but_training_goes_on(tmp_path):
    from smdebug.core.testing import capture_smdebug_log

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    with capture_smdebug_log() as log:
        hook.save_tensor("config", {"lr": 0.1})
        hook.save_scalar("config", {"lr": 0.1})
        train_logistic_regression(hook, steps=2)
    hook.close()
    assert "A dict cannot be saved" in log.text and not hook.disabled
    assert "config" not in create_trial(str(tmp_path / "run")).tensor_names()
