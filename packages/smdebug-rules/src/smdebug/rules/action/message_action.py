"""Legacy module path (smdebug 1.0.x's ``smdebug.rules.action.message_action``): see docs/compatibility.md."""

from smdebug.rules.action.message import MessageAction  # noqa: F401
