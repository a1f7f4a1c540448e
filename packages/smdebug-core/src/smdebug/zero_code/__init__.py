"""Zero-code-change: attach a hook to an unmodified training script (what ``smdebug run`` does).

``smdebug run -- python train.py`` starts the script with this package's ``bootstrap`` folder first on
PYTHONPATH; its ``sitecustomize`` calls :func:`install` before the script runs. :func:`install` asks the
framework plugins for their ``zero_code`` attach functions (``FrameworkInfo.zero_code``) and arranges for
each to run right after its framework is imported (or at once if it already is). The attach function builds
the hook from the JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``) the way SageMaker's framework containers
did, and wires it into the framework (PyTorch: global module hooks; XGBoost: the training callback).
"""

from __future__ import annotations

import functools
import logging
from typing import Callable, Dict

from smdebug.core.after_import import call_after_import

_log = logging.getLogger("smdebug")
_attached: Dict[str, bool] = {}


def _run_attach(framework: str, target: str) -> None:
    if _attached.get(framework):
        return
    _attached[framework] = True
    try:
        from smdebug.core.plugins.info import resolve_target

        attach: Callable[[], None] = resolve_target(target)
        attach()
    except Exception as e:  # noqa: BLE001 - never break the user's script
        _log.error("smdebug: could not attach to %s (%s: %s); the script runs without a hook", framework,
                   type(e).__name__, e)


def install() -> None:
    """Arrange for every installed framework plugin with a zero-code attach function to attach."""
    from smdebug.core.plugins import frameworks

    attachable = 0
    for name, info in frameworks().items():
        if not info.zero_code:
            continue
        attachable += 1
        call_after_import(info.import_name, functools.partial(_run_attach, name, info.zero_code))
    if not attachable:
        _log.warning("smdebug: no framework plugin can attach a hook (%s); the script runs without a hook",
                     _why_none())


def _why_none() -> str:
    """Why no framework plugin is there to attach: ``smdebug run`` with ``SMDEBUG_DISABLE_PLUGINS='*'`` or an
    ``SMDEBUG_LOAD_PLUGINS`` naming no installed plugin ran the script without a hook, and said nothing."""
    from smdebug.core.plugins.manager import DISABLED, FRAMEWORKS_GROUP, plugin_report

    report = [s for s in plugin_report() if s.group == FRAMEWORKS_GROUP]
    disabled = sorted({s.detail for s in report if s.status == DISABLED})
    if disabled:
        names = ", ".join(sorted(s.name for s in report if s.status == DISABLED))
        return f"{names}: {'; '.join(disabled)}"
    if report:
        return "; ".join(f"{s.name}: {s.status} {s.detail}".strip() for s in report)
    return "none is installed: pip install smdebug-torch, smdebug-tf, smdebug-mxnet or smdebug-xgboost"
