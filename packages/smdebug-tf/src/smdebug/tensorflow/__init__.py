"""smdebug for TensorFlow (the smdebug-tf plugin).

Skeleton: the hooks are added by a later issue. Importing this package never imports tensorflow.
"""

from smdebug.tensorflow._version import __version__

__all__ = ["__version__"]
