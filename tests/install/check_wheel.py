"""Checks run inside a virtualenv holding one package installed from its wheel with only what it declares
(``tests/install/run_checks.py`` makes the venvs; ``nox -s install``). Each check trains a real tiny model
or writes a real run, reads it back, and fails with a message saying what is wrong.

    python check_wheel.py readme|core|torch|xgboost|mxnet|tf|rules|rules-aws WORKDIR

Imports only the standard library at the top: what each check needs comes from the venv under test.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from importlib import metadata


class CheckFailed(AssertionError):
    pass


def expect(condition, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def smdebug_cli(*args: str) -> subprocess.CompletedProcess:
    exe = os.path.join(os.path.dirname(sys.executable), "smdebug")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)


def error_logs():
    """Collect what the smdebug logger says at ERROR and above (a hook's failures are logged, not raised)."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.ERROR:
                records.append(record.getMessage())

    logging.getLogger("smdebug").addHandler(Keep())
    return records


def plugin_status(name: str) -> dict:
    out = smdebug_cli("plugins", "--json")
    expect(out.returncode == 0, f"smdebug plugins failed: {out.stderr[-2000:]}")
    plugins = {p["name"]: p for p in json.loads(out.stdout)["plugins"]}
    expect(name in plugins, f"plugin {name} not found by smdebug plugins: {sorted(plugins)}")
    return plugins[name]


def expect_loaded(name: str) -> None:
    status = plugin_status(name)
    expect(status["status"] == "loaded", f"plugin {name} is {status['status']}: {status['detail']}")


def not_installed(dist: str) -> bool:
    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return True
    return False


# --------------------------------------------------------------------------------------------------
def check_torch(work: str) -> None:
    """PyTorch: a hook on a real model; values read back equal what the model had."""
    import numpy as np
    import torch

    import smdebug.pytorch as smd
    from smdebug.trials import create_trial

    errors = error_logs()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    out = os.path.join(work, "torch-run")
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    weights = []
    for _ in range(4):
        weights.append(model[0].weight.detach().numpy().copy())
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    trial = create_trial(out)
    expect(trial.steps() == [0, 1, 2, 3], f"saved steps {trial.steps()}")
    name = next(n for n in trial.tensor_names(collection="weights") if n.endswith("0.weight"))
    for step, want in enumerate(weights):
        np.testing.assert_array_equal(trial.tensor(name).value(step), want)
    expect(trial.tensor_names(collection="gradients"), "no gradients saved")
    expect(not errors, f"the hook logged errors: {errors}")
    expect_loaded("pytorch")
    ls = smdebug_cli("ls", out)
    expect(ls.returncode == 0 and "Global steps 4 (0-3)" in ls.stdout, f"smdebug ls: {ls.stdout}{ls.stderr}")
    strict = smdebug_cli("plugins", "--strict")
    expect(strict.returncode == 0, f"smdebug plugins --strict: {strict.stdout}{strict.stderr}")


def check_readme(work: str) -> None:
    """What the README's block installs (torch, rules, cli extras) works together."""
    check_torch(work)
    out = os.path.join(work, "torch-run")
    rules = smdebug_cli("rules", "run", out, "--rule", "vanishing_gradient", "--rule", "exploding_tensor")
    expect(rules.returncode in (0, 1), f"smdebug rules run exited {rules.returncode}: {rules.stderr[-2000:]}")
    png = os.path.join(work, "loss.png")
    plot = smdebug_cli("plot", out, "--collection", "losses", "-o", png)
    expect(plot.returncode == 0 and os.path.getsize(png) > 0, f"smdebug plot: {plot.stderr[-2000:]}")


def check_core(work: str) -> None:
    """smdebug-core as a plugin's dependency, with nothing else: a run is written and read; what needs an
    extra or a framework says what to install."""
    import numpy as np

    from _support import NumpyHook, train_logistic_regression  # the core tests' numpy hook
    from smdebug.core.plugins.missing import MissingFrameworkError, MissingPluginError
    from smdebug.exceptions import SMDebugNotImplementedError
    from smdebug.trials import create_trial

    expect(not_installed("torch"), "torch is installed: this venv must hold smdebug-torch without it")
    import smdebug.pytorch as smd

    try:
        smd.Hook
        raise CheckFailed("smd.Hook without torch did not fail")
    except MissingFrameworkError as e:
        expect("needs PyTorch" in str(e) and "pip install torch" in str(e), f"hint: {e}")
    try:
        import smdebug.xgboost  # noqa: F401
        raise CheckFailed("import smdebug.xgboost without smdebug-xgboost did not fail")
    except MissingPluginError as e:
        expect("--find-links dist 'smdebug-core[xgboost]'" in str(e), f"hint: {e}")
    from smdebug.core.save_config import SaveConfig

    out = os.path.join(work, "core-run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1),
                     include_collections=["weights", "gradients", "losses"])
    history = train_logistic_regression(hook, steps=3)
    hook.close()
    trial = create_trial(out)
    for step, w, _g, _loss in history:
        np.testing.assert_array_equal(trial.tensor("weights/w").value(step), w)
    try:
        trial.tensor("loss").to_dataframe()
        raise CheckFailed("to_dataframe without pandas did not fail")
    except ImportError as e:
        expect("smdebug-core[analysis]" in str(e), f"hint: {e}")
    try:
        create_trial("s3://bucket/run")
        raise CheckFailed("an S3 trial without boto3 did not fail")
    except SMDebugNotImplementedError as e:
        expect("smdebug-core[s3]" in str(e), f"hint: {e}")
    ls = smdebug_cli("ls", out)
    expect(ls.returncode == 0, f"smdebug ls: {ls.stderr[-2000:]}")
    plot = smdebug_cli("plot", out, "loss", "-o", os.path.join(work, "x.png"))
    expect(plot.returncode == 2 and "smdebug-core[cli]" in plot.stderr, f"smdebug plot: {plot.stderr}")
    status = plugin_status("pytorch")
    expect(status["status"] == "skipped", f"pytorch plugin without torch: {status}")


def check_xgboost(work: str) -> None:
    """XGBoost: trees (pandas), metrics, a sparse input (scipy)."""
    import numpy as np
    import xgboost as xgb
    from scipy import sparse

    import smdebug.xgboost as smd

    errors = error_logs()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=64)
    out = os.path.join(work, "xgb-run")
    hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["metrics", "trees"])
    d = xgb.DMatrix(sparse.csr_matrix(X), label=y)
    xgb.train({"max_depth": 2, "nthread": 1}, d, num_boost_round=3, evals=[(d, "train")], verbose_eval=False,
              callbacks=[hook])
    trial = smd.create_trial(out)
    expect(trial.tensor("trees/Node").steps() == [0, 1, 2], f"trees saved at {trial.tensor_names()}")
    expect(set(trial.tensor("trees/Tree").value(2).tolist()) == {2}, "the trees of step 2")
    expect(not errors, f"the hook logged errors: {errors}")
    expect_loaded("xgboost")


def check_mxnet(work: str) -> None:
    """MXNet: the framework extra's numpy pin lets MXNet import, and the hook saves a Gluon network."""
    import numpy as np

    expect(np.__version__ < "1.24", f"numpy {np.__version__}: the framework extra must keep numpy < 1.24")
    import mxnet as mx
    from mxnet import autograd, gluon

    import smdebug.mxnet as smd

    errors = error_logs()
    net = gluon.nn.Dense(2, in_units=4)
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    out = os.path.join(work, "mx-run")
    hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_block(net)
    hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, y = mx.nd.random.normal(shape=(8, 4)), mx.nd.array([0, 1] * 4)
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(8)
    hook.close()
    trial = smd.create_trial(out)
    expect(trial.steps() == [0, 1, 2], f"saved steps {trial.steps()}")
    expect(trial.tensor_names(collection="weights"), f"no weights: {trial.tensor_names()}")
    expect(not errors, f"the hook logged errors: {errors}")
    expect_loaded("mxnet")


def check_tf(work: str) -> None:
    """TensorFlow / Keras 3: KerasHook under fit()."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    import smdebug.tensorflow as smd

    errors = error_logs()
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    out = os.path.join(work, "tf-run")
    hook = smd.KerasHook(out, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights", "losses"])
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(16, 4)), rng.normal(size=(16, 2)), batch_size=8, epochs=2, verbose=0,
              callbacks=[hook])
    hook.close()
    trial = smd.create_trial(out)
    expect(trial.steps() == [0, 1, 2, 3], f"saved steps {trial.steps()}")
    expect(trial.tensor_names(collection="weights"), f"no weights: {trial.tensor_names()}")
    expect(not errors, f"the hook logged errors: {errors}")
    expect_loaded("tensorflow")


def _rules_run(work: str) -> str:
    from _support import NumpyHook, train_logistic_regression

    out = os.path.join(work, "rules-run")
    if not os.path.exists(out):
        hook = NumpyHook(out_dir=out, include_collections=["weights", "gradients", "losses"])
        train_logistic_regression(hook, steps=12)
        hook.close()
    return out


def check_rules(work: str) -> None:
    """The built-in rules run; an Email action without boto3 is refused with the extra to install."""
    from smdebug.rules import run_rules

    expect(not_installed("boto3"), "boto3 is installed: this venv must hold smdebug-rules without extras")
    errors = error_logs()
    result = run_rules(_rules_run(work), [("ExplodingTensor", {}, '{"name": "email", "endpoint": "a@example.org"}')])
    expect(result.status == "NoIssuesFound", f"ExplodingTensor on a sound run: {result.status}")
    expect(any("smdebug-rules[aws]" in e for e in errors), f"no hint about the aws extra: {errors}")
    expect_loaded("builtin")


def check_rules_aws(work: str) -> None:
    """With the aws extra: the SNS client of the actions is built."""
    from smdebug.rules.action.aws import client

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    expect(client("sns").meta.service_model.service_name == "sns", "no SNS client")


CHECKS = {"readme": check_readme, "core": check_core, "torch": check_torch, "xgboost": check_xgboost,
          "mxnet": check_mxnet, "tf": check_tf, "rules": check_rules, "rules-aws": check_rules_aws}


def main(argv) -> int:
    name, work = argv[0], argv[1]
    os.makedirs(work, exist_ok=True)
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    try:
        CHECKS[name](work)
    except CheckFailed as e:
        print(f"check {name} FAILED: {e}", file=sys.stderr)
        return 1
    print(f"check {name}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
