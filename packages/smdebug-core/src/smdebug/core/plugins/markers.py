"""The pluggy markers of the ``smdebug`` project.

Plugins decorate their hook implementations with :data:`hookimpl`; :mod:`smdebug.core.plugins.hookspecs`
is the only module that uses :data:`hookspec`. Both belong to the pluggy project ``"smdebug"``, so a
function marked by another project's marker (pytest's, for example) is never mistaken for an smdebug hook.
"""

import pluggy

PROJECT_NAME = "smdebug"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["PROJECT_NAME", "hookspec", "hookimpl"]
