"""Legacy module (smdebug 1.0.x's ``smdebug.pytorch.singleton_utils``): the process's hook, as
``smdebug.pytorch.get_hook``/``set_hook``/``del_hook`` give it. See docs/compatibility.md."""

from smdebug.pytorch.hook import del_hook, get_hook, set_hook  # noqa: F401
