"""Legacy module (smdebug 1.0.x's ``smdebug.tensorflow.singleton_utils``): the process's hook, as
``smdebug.tensorflow.get_hook``/``set_hook``/``del_hook`` give it. See docs/compatibility.md.

Importing it does not import TensorFlow (``smdebug.tensorflow.api`` loads the hook classes on use)."""

from smdebug.tensorflow.api import del_hook, get_hook, set_hook  # noqa: F401
