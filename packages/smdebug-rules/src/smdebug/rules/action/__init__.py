"""What happens when a rule's condition is met: stop the training job, send an email or an SMS.

Two sides, as in smdebug 1.0.x:

* building an action string for a job's rule configuration:
  ``ActionList(StopTraining(), Email("me@example.com")).serialize()``;
* running the actions of such a string inside a rule (:class:`Actions`, created by every :class:`Rule`
  from its ``action_str``).

Unlike the original, the action string is not lower-cased before parsing (that mangled e-mail addresses,
training-job prefixes and endpoints); only the ``name`` key is matched case-insensitively.
"""

from smdebug.rules.action.actions import Actions, parse_action_str
from smdebug.rules.action.builders import SMS, ActionList, Email, StopTraining
from smdebug.rules.action.message import MessageAction
from smdebug.rules.action.stop_training import StopTrainingAction

__all__ = ["Actions", "parse_action_str", "ActionList", "StopTraining", "Email", "SMS", "MessageAction",
           "StopTrainingAction"]
