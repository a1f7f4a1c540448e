"""Runtime side: parse a rule's action string and run its actions when the rule fires."""

from __future__ import annotations

import importlib.util
import json
from typing import List, Optional

from smdebug.core.logger import get_logger
from smdebug.exceptions import SMDebugValueError

logger = get_logger()


def parse_action_str(action_str) -> List[dict]:
    """The action objects of ``action_str`` (a JSON object or list, or already-parsed dicts).

    Raises SMDebugValueError for text that is not JSON or not objects: a misconfigured action should be
    noticed when the rule starts, not silently dropped when it fires.
    """
    if action_str is None or (isinstance(action_str, str) and not action_str.strip()):
        return []
    if isinstance(action_str, str):
        try:
            parsed = json.loads(action_str)
        except (ValueError, RecursionError) as e:  # RecursionError: absurd nesting
            shown = action_str if len(action_str) <= 200 else action_str[:200] + "..."
            raise SMDebugValueError(f"action string is not valid JSON ({e}): {shown!r}") from None
    else:
        parsed = action_str
    items = parsed if isinstance(parsed, list) else [parsed]
    for item in items:
        if not isinstance(item, dict):
            raise SMDebugValueError(f"each action must be a JSON object with a 'name', got {item!r}")
    return items


class Actions:
    """The actions of one rule."""

    def __init__(self, action_str=None, rule_name: str = "", trial=None, *, actions_str=None):
        """``actions_str``: smdebug 1.0.x's name of ``action_str``."""
        from smdebug.rules.action.message import MessageAction
        from smdebug.rules.action.stop_training import StopTrainingAction

        self.rule_name = rule_name
        self.trial = trial
        self.actions = []
        if actions_str is not None:
            if action_str is not None:
                raise SMDebugValueError("Pass either action_str or actions_str, not both")
            action_str = actions_str
        for spec in parse_action_str(action_str):
            name = str(spec.get("name", "")).lower()
            try:
                if name == "stoptraining":
                    self.actions.append(StopTrainingAction(rule_name, trial, spec.get("training_job_prefix")))
                elif name in ("email", "sms"):
                    if not spec.get("endpoint"):
                        raise SMDebugValueError(f"the {name} action needs an 'endpoint'")
                    if importlib.util.find_spec("boto3") is None:  # said now, not at every finding
                        raise SMDebugValueError(f"the {name} action sends through SNS and needs boto3: "
                                                "pip install 'smdebug-rules[aws]'")
                    self.actions.append(MessageAction(rule_name, name, spec["endpoint"]))
                else:
                    raise SMDebugValueError(f"unknown action {spec.get('name')!r} (use stoptraining, email or sms)")
            except SMDebugValueError as e:
                logger.error("%s: action skipped: %s", rule_name, e)

    def add_stop_training(self, training_job_prefix: Optional[str] = None) -> None:
        """Add a StopTraining action unless there already is one (rules with a stop option use this)."""
        from smdebug.rules.action.stop_training import StopTrainingAction

        if not any(isinstance(a, StopTrainingAction) for a in self.actions):
            self.actions.append(StopTrainingAction(self.rule_name, self.trial, training_job_prefix))

    def __len__(self):
        return len(self.actions)

    @property
    def _actions(self):
        """smdebug 1.0.x's name of :attr:`actions`."""
        return self.actions

    def invoke(self, step: Optional[int] = None, reason: Optional[str] = None) -> None:
        """Run every action. An action that fails is logged; it never stops the rule."""
        for action in self.actions:
            try:
                action.invoke(step, reason)
            except Exception as e:  # noqa: BLE001 - e.g. no network/credentials for SNS
                logger.error("%s: %s failed: %s", self.rule_name, type(action).__name__, e)
