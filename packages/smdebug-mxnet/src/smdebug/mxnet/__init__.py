"""smdebug for MXNet (the smdebug-mxnet plugin).

Skeleton: the hooks are added by a later issue. Importing this package never imports mxnet.
"""

from smdebug.mxnet._version import __version__

__all__ = ["__version__"]
