"""The original smdebug 1.0.34 reads an MXNet run written by this hook.

Uses the original's virtualenv that smdebug-core's interoperability tests build (``nox -s core``);
skipped where it has not been built yet.
"""

import json
import os
import subprocess

import pytest
from mxnet import gluon

import smdebug.mxnet as smd
from models import mlp, train

VENV = os.path.abspath(os.path.expanduser(
    os.environ.get("SMDEBUG_ORIGINAL_VENV") or os.path.join("~", ".cache", "smdebug-tests", "original-smdebug-1.0.34")))
PYTHON = os.path.join(VENV, "bin", "python")

READ = """
import json, sys
from smdebug.trials import create_trial
t = create_trial(sys.argv[1])
print(json.dumps({
    "steps": t.steps(),
    "losses": t.tensor_names(collection="losses"),
    "gradients": t.tensor_names(collection="gradients"),
    "weights": t.tensor_names(collection="weights"),
    "grad": t.tensor("gradient/dense0_weight").value(2).tolist(),
    "loss_shape": list(t.tensor("softmaxcrossentropyloss0_output_0").value(1).shape),
}))
"""


@pytest.mark.skipif(not os.path.exists(PYTHON), reason="the original smdebug's virtualenv is not built (nox -s core)")
def test_the_original_reads_an_mxnet_run(out_dir):
    net, loss_fn = mlp(), gluon.loss.SoftmaxCrossEntropyLoss()
    hook = smd.Hook(out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_block(net)
    hook.register_block(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    train(net, 3, loss_fn=loss_fn)
    hook.close()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "PYTHONNOUSERSITE": "1", "SMDEBUG_LOG_LEVEL": "error"}
    out = subprocess.run([PYTHON, "-c", READ, out_dir], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    ours = smd.create_trial(out_dir)
    assert theirs["steps"] == ours.steps() == [0, 1, 2]
    assert theirs["losses"] == ["softmaxcrossentropyloss0_output_0"]
    assert theirs["gradients"] == ["gradient/" + n for n in ("dense0_bias", "dense0_weight", "dense1_bias", "dense1_weight")]
    assert theirs["weights"] == ["dense0_weight", "dense1_weight"]
    assert theirs["grad"] == ours.tensor("gradient/dense0_weight").value(2).tolist()
    assert theirs["loss_shape"] == [32]
