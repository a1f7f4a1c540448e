"""Legacy module (smdebug 1.0.x's ``smdebug.xgboost.singleton_utils``): the process's hook, as
``smdebug.xgboost.get_hook``/``set_hook``/``del_hook`` give it. See docs/compatibility.md."""

from smdebug.xgboost.hook import del_hook, get_hook, set_hook  # noqa: F401
