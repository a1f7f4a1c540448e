"""Started by ``smdebug run`` (this folder is put first on PYTHONPATH): install smdebug's zero-code hooks,
then run the environment's own sitecustomize, if there is one, as Python would have."""

import importlib.machinery
import importlib.util
import os
import sys


def _smdebug():
    if os.environ.get("SMDEBUG_ZERO_CODE") != "1":
        return
    try:
        from smdebug.zero_code import install

        install()
    except Exception as e:  # noqa: BLE001 - the script must run anyway
        print(f"smdebug: zero-code set-up failed ({type(e).__name__}: {e}); running without a hook", file=sys.stderr)


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_smdebug()
_chain()
