"""Legacy module path (smdebug 1.0.x's ``smdebug.rules.action.action``): see docs/compatibility.md."""

from smdebug.rules.action.actions import Actions  # noqa: F401
