"""Entry point of smdebug-tf (group ``smdebug.frameworks``, name ``tensorflow``).

This module is imported during plugin discovery, even where TensorFlow is not installed: it must
import nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when
that module cannot be found. The hooks below look TensorFlow up in ``sys.modules``: a value can only be
a TensorFlow tensor, and a TensorFlow cluster can only be running, if something imported TensorFlow.
"""

import json
import os
import sys

from smdebug.core.plugins import FrameworkInfo, WorkerInfo, hookimpl

FRAMEWORK_IMPORT = "tensorflow"

FRAMEWORK = FrameworkInfo(
    name="tensorflow",
    module="smdebug.tensorflow",
    import_name=FRAMEWORK_IMPORT,
    # Strings, resolved on first use: the classes (and tensorflow) are never imported here.
    hook_classes={
        "KerasHook": "smdebug.tensorflow.keras:KerasHook",
        "SessionHook": "smdebug.tensorflow.session:SessionHook",
        "EstimatorHook": "smdebug.tensorflow.session:EstimatorHook",
    },
    default_collections=("metrics", "losses", "sm_metrics"),
    zero_code="smdebug.tensorflow.zero_code:attach",  # smdebug run: wraps keras.Model.fit/evaluate/predict
    description="TensorFlow: Keras callback, GradientTape and session hooks",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)


@hookimpl
def smdebug_tensor_to_numpy(value):
    if "tensorflow" not in sys.modules:
        return None
    from smdebug.tensorflow.utils import to_numpy

    return to_numpy(value)


def _tf_config_worker():
    """(rank, size) of this process in a multi-worker TensorFlow job described by ``TF_CONFIG``.

    Training tasks are the chief (if any) followed by the workers, in the order ``cluster`` lists them;
    parameter servers and evaluators do not train and get no answer.
    """
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
        cluster = config.get("cluster") or {}
        task = config.get("task") or {}
        task_type, index = task.get("type"), int(task.get("index", 0))
    except (ValueError, TypeError, AttributeError):
        return None
    training = [("chief", i) for i in range(len(cluster.get("chief") or []))]
    training += [("worker", i) for i in range(len(cluster.get("worker") or []))]
    if len(training) < 2 or (task_type, index) not in training:
        return None
    return training.index((task_type, index)), len(training)


@hookimpl
def smdebug_detect_worker(framework):
    if framework not in (None, FRAMEWORK.name) or "tensorflow" not in sys.modules:
        return None
    hvd = sys.modules.get("horovod.tensorflow")
    if hvd is not None:
        try:
            if hvd.is_initialized() and hvd.size() > 1:
                return WorkerInfo(rank=hvd.rank(), size=hvd.size())
        except Exception:  # noqa: BLE001 - an old or broken Horovod: not our runtime
            pass
    found = _tf_config_worker()
    if found is not None:
        rank, size = found
        return WorkerInfo(rank=rank, size=size)
    return None
