"""A third-party plugin, installed like any other package: tests/fixtures/smdebug-numpy-plugin.

`nox -s core` installs it (editable) next to smdebug-core and every smdebug plugin; nothing here installs
anything. The end-to-end test trains a real numpy logistic regression with the plugin's hook and reads
the run back with ``create_trial``.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json

import numpy as np
import pytest

pytest.importorskip("smdebug_numpyfw", reason="install tests/fixtures/smdebug-numpy-plugin (nox -s core does)")

from smdebug_numpyfw import NumpyTensor  # noqa: E402


def test_found_through_its_entry_point(fresh_plugins):
    [ep] = [ep for ep in metadata.entry_points(group="smdebug.frameworks") if ep.name == "numpyfw"]
    assert ep.dist.metadata["Name"] == "smdebug-numpy-plugin"
    status = {s.name: s for s in fresh_plugins.plugin_report()}["numpyfw"]
    assert (status.status, status.group, status.distribution) == ("loaded", "smdebug.frameworks", "smdebug-numpy-plugin")
    info = fresh_plugins.frameworks()["numpyfw"]
    assert info.import_name == "numpy" and info.module == "smdebug_numpyfw"
    from smdebug_numpyfw.hook import Hook

    assert info.load_hook_class("Hook") is Hook


def test_every_installed_smdebug_plugin_discovers_cleanly(fresh_plugins):
    report = fresh_plugins.plugin_report()
    failed = [s for s in report if s.status == "failed"]
    assert not failed, failed
    names = {s.name for s in report}
    for ep in metadata.entry_points(group="smdebug.frameworks"):
        assert ep.name in names


def test_cli_lists_it(smdebug_cli):
    out = smdebug_cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    assert by_name["numpyfw"]["status"] == "loaded"
    assert by_name["numpyfw"]["distribution"] == "smdebug-numpy-plugin"
    assert data["frameworks"]["numpyfw"]["plugin"] == "numpyfw"
    assert data["frameworks"]["numpyfw"]["hook_classes"] == {"Hook": "smdebug_numpyfw.hook:Hook"}
    assert data["commands"]["numpyfw-summary"] == {"name": "numpyfw-summary", "module": "smdebug_numpyfw.command",
                                                   "help": "Summarise a run saved by a numpyfw hook.",
                                                   "plugin": "numpyfw"}


def test_cli_respects_the_allow_list(smdebug_cli):
    out = smdebug_cli("plugins", "--json", env={"SMDEBUG_LOAD_PLUGINS": "smdebug-numpy-plugin"})
    data = json.loads(out.stdout)
    assert {p["name"] for p in data["plugins"] if p["status"] == "loaded"} == {"numpyfw"}
    assert set(data["frameworks"]) == {"numpyfw"}


def test_its_tensor_type_converts_through_the_plugin(fresh_plugins):
    value = NumpyTensor([[1.0, 2.0], [3.0, 4.0]])
    out = fresh_plugins.tensor_to_numpy(value)
    assert isinstance(out, np.ndarray) and out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError):
        np.asarray(value, dtype=np.float64)  # numpy alone cannot: the plugin did it
    monkey = fresh_plugins.get_plugin_manager()
    monkey.set_blocked("numpyfw")
    with pytest.raises(TypeError, match="NumpyTensor"):
        fresh_plugins.tensor_to_numpy(value)


def test_its_runtime_names_the_worker(fresh_plugins, monkeypatch):
    assert fresh_plugins.detect_worker("numpyfw").name == "worker_0"
    monkeypatch.setenv("NUMPYFW_RANK", "2")
    monkeypatch.setenv("NUMPYFW_WORLD_SIZE", "3")
    worker = fresh_plugins.detect_worker("numpyfw")
    assert (worker.rank, worker.size, worker.name) == (2, 3, "worker_2")


def _synthetic_data(seed=0, n=128, features=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    true_w = np.array([2.0, -1.0, 0.5], dtype=np.float32)[:features]
    y = (x @ true_w + 0.25 * rng.normal(size=n) > 0).astype(np.float32)
    return x, y


@pytest.mark.needs_core
def test_numpy_training_loop_end_to_end(fresh_plugins, tmp_path):
    import smdebug.trials
    from smdebug import SaveConfig, modes
    from smdebug_numpyfw import Hook
    from smdebug_numpyfw.plugin import EVENTS

    out_dir = tmp_path / "run"
    x, y = _synthetic_data()
    w = np.zeros(x.shape[1], dtype=np.float32)
    lr, steps = 0.5, 10
    recorded = {}
    EVENTS.clear()

    hook = Hook(out_dir=str(out_dir), save_config=SaveConfig(save_interval=2),
                include_collections=["weights", "gradients", "losses"])
    hook.set_mode(modes.TRAIN)
    for step in range(steps):
        hook.begin_step()
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        loss = np.float32(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
        grad = (x.T @ (p - y) / len(y)).astype(np.float32)
        hook.record("weights/w", NumpyTensor(w))  # converted by the plugin's smdebug_tensor_to_numpy
        hook.record("gradient/w", grad)
        hook.record("loss", np.array([loss], dtype=np.float32))
        recorded[step] = (w.copy(), grad.copy(), loss)
        w -= lr * grad  # in place, after recording: what was saved must not change
        hook.end_step()
    hook.close()
    assert not hook.disabled, hook

    losses = [recorded[s][2] for s in range(steps)]
    assert losses[-1] < losses[0]  # it really trained

    trial = smdebug.trials.create_trial(str(out_dir))
    saved_steps = list(range(0, steps, 2))
    assert trial.steps() == saved_steps
    assert trial.steps(mode=modes.TRAIN) == saved_steps
    assert {"weights/w", "gradient/w", "loss"} <= set(trial.tensor_names())
    for step in saved_steps:
        w_rec, g_rec, loss_rec = recorded[step]
        np.testing.assert_array_equal(trial.tensor("weights/w").value(step), w_rec)
        np.testing.assert_array_equal(trial.tensor("gradient/w").value(step), g_rec)
        np.testing.assert_allclose(trial.tensor("loss").value(step), [loss_rec])
    assert trial.tensor("loss").steps() == saved_steps
    assert trial.workers() == ["worker_0"]

    # The plugin heard the hook's lifecycle: one step_end per step, then the close.
    ours = [e for e in EVENTS if e[1] == id(hook)]
    step_ends = [e for e in ours if e[0] == "step_end"]
    assert [e[2] for e in step_ends] == list(range(steps))
    assert all(e[3] == "TRAIN" for e in step_ends)
    assert ours[-1][0] == "closed"


def _numpyfw_run(out_dir, steps=3) -> str:
    """A short real run saved by the plugin's hook (the loss of a numpy logistic regression)."""
    from smdebug import SaveConfig
    from smdebug_numpyfw import Hook

    x, y = _synthetic_data()
    w = np.zeros(x.shape[1], dtype=np.float32)
    hook = Hook(out_dir=str(out_dir), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for _ in range(steps):
        hook.begin_step()
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        hook.record("loss", np.array([-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7))]))
        w -= 0.5 * (x.T @ (p - y) / len(y)).astype(np.float32)
        hook.end_step()
    hook.close()
    return str(out_dir)


@pytest.mark.needs_core
def test_its_command_is_listed_and_runs(smdebug_cli, tmp_path):
    out = smdebug_cli("--help")
    assert out.returncode == 0, out.stderr
    assert "numpyfw-summary" in out.stdout and "Summarise a run saved by a numpyfw hook." in out.stdout
    run = _numpyfw_run(tmp_path / "run")
    out = smdebug_cli("numpyfw-summary", run, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"steps": [0, 1, 2], "tensors": ["loss"]}
    out = smdebug_cli("numpyfw-summary", "--help")
    assert out.returncode == 0 and "smdebug numpyfw-summary RUN" in out.stdout


@pytest.mark.needs_core
def test_a_plugin_command_that_cannot_load_fails_alone(fresh_plugins, tmp_path, capsys):
    """A plugin whose command module is missing: that command fails with a message naming the plugin and
    the module; the other plugins' commands and smdebug's own still work, and --help lists them all."""
    from smdebug.cli.main import main
    from smdebug.core.plugins import CommandInfo, hookimpl

    class Broken:
        @staticmethod
        @hookimpl
        def smdebug_register_commands(register):
            register(CommandInfo("broken-cmd", "smdebug_numpyfw.no_such_module", "a command that cannot load"))

    fresh_plugins.get_plugin_manager().register(Broken(), name="broken-pack")
    assert main(["broken-cmd", "--some", "args"]) == 2
    err = capsys.readouterr().err
    assert "smdebug broken-cmd: this command comes from plugin 'broken-pack'" in err
    assert "smdebug_numpyfw.no_such_module" in err and "ModuleNotFoundError" in err

    run = _numpyfw_run(tmp_path / "run")
    assert main(["numpyfw-summary", run, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == [0, 1, 2]
    assert main(["ls", run]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    listing = capsys.readouterr().out
    assert "broken-cmd" in listing and "numpyfw-summary" in listing and "ls" in listing
