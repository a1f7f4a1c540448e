"""Legacy module (smdebug 1.0.x's ``smdebug.mxnet.singleton_utils``): the process's hook, as
``smdebug.mxnet.get_hook``/``set_hook``/``del_hook`` give it. See docs/compatibility.md."""

from smdebug.mxnet.hook import del_hook, get_hook, set_hook  # noqa: F401
