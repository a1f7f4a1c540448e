"""Legacy module path (smdebug 1.0.x's ``smdebug.rules.action.stop_training_action``): see docs/compatibility.md."""

from smdebug.rules.action.stop_training import StopTrainingAction  # noqa: F401
