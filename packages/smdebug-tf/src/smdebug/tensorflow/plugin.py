"""Entry point of smdebug-tf (group ``smdebug.frameworks``, name ``tensorflow``).

This module is imported during plugin discovery, even where TensorFlow is not installed: it must
import nothing but smdebug's plugin API. smdebug checks ``FRAMEWORK_IMPORT`` and skips the plugin when
that module cannot be found.
"""

from smdebug.core.plugins import FrameworkInfo, hookimpl

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
    description="TensorFlow: Keras callback, GradientTape and session hooks",
)


@hookimpl
def smdebug_register_frameworks(register):
    register(FRAMEWORK)
