"""Client side: build the JSON action string a rule is configured with."""

from __future__ import annotations

import json
import re
from typing import Dict, List, Optional

from smdebug.exceptions import SMDebugValueError

_PREFIX_RE = re.compile(r"^[A-Za-z0-9\-]+$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_PHONE_RE = re.compile(r"^\+\d{1,15}$")  # E.164


class _Action:
    def __init__(self, **params):
        self.params: Dict[str, str] = {k: v for k, v in params.items() if v is not None}
        self.params["name"] = type(self).__name__.lower()

    def serialize(self) -> str:
        return json.dumps(self.params)

    def __repr__(self):
        return f"{type(self).__name__}({self.params})"


class StopTraining(_Action):
    """Stop the training job when the rule fires.

    Locally (and with the rule runner) the job writing the trial is stopped at its next step boundary
    through a stop signal in the run directory. On SageMaker, ``training_job_prefix`` names the job to
    stop (the prefix must match exactly one running job).
    """

    def __init__(self, training_job_prefix: Optional[str] = None):
        if training_job_prefix is not None and not _PREFIX_RE.match(training_job_prefix):
            raise SMDebugValueError(
                f"StopTraining: training_job_prefix must use letters, digits and '-', got {training_job_prefix!r}")
        super().__init__(training_job_prefix=training_job_prefix)


class Email(_Action):
    """Send an e-mail through Amazon SNS (the address must confirm the SNS subscription once)."""

    def __init__(self, email_address: str):
        if not isinstance(email_address, str) or not _EMAIL_RE.match(email_address):
            raise SMDebugValueError(f"Email: not an e-mail address: {email_address!r}")
        super().__init__(endpoint=email_address)


class SMS(_Action):
    """Send a text message through Amazon SNS to an E.164 phone number (``+15555550100``)."""

    def __init__(self, phone_number: str):
        if not isinstance(phone_number, str) or not _PHONE_RE.match(phone_number):
            raise SMDebugValueError(f"SMS: phone number must be in E.164 form (+ and up to 15 digits), "
                                    f"got {phone_number!r}")
        super().__init__(endpoint=phone_number)


class ActionList:
    """Several actions for one rule."""

    def __init__(self, *actions: _Action):
        for action in actions:
            if not isinstance(action, _Action):
                raise SMDebugValueError(f"ActionList takes StopTraining/Email/SMS actions, got {action!r}")
        self.actions: List[_Action] = list(actions)

    def update_training_job_prefix_if_not_specified(self, training_job_name: str) -> None:
        for action in self.actions:
            if isinstance(action, StopTraining) and "training_job_prefix" not in action.params:
                action.params["training_job_prefix"] = training_job_name

    def serialize(self) -> str:
        return json.dumps([a.params for a in self.actions])
