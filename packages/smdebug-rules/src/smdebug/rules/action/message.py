"""Email and SMS actions: publish to an SNS topic the endpoint is subscribed to."""

from __future__ import annotations

import json
from typing import Optional

from smdebug.core.logger import get_logger

logger = get_logger()

TOPIC_NAME = "SMDebugRules"


class MessageAction:
    """Subscribes ``endpoint`` (protocol ``email`` or ``sms``) to the ``SMDebugRules`` topic on first use,
    with a filter policy so each endpoint only receives its own messages, and publishes one message each
    time the rule fires."""

    def __init__(self, rule_name: str, protocol: str, endpoint: str):
        self.rule_name = rule_name
        self.protocol = protocol
        self.endpoint = endpoint
        # SMS subscriptions filter on "phone_num" in smdebug 1.0.x; keep the names so existing
        # subscriptions created by it keep working.
        self.attribute = "phone_num" if protocol == "sms" else "email"
        self._sns = None
        self._topic_arn: Optional[str] = None

    def _setup(self) -> None:
        from smdebug.rules.action.aws import client

        self._sns = client("sns")
        self._topic_arn = self._sns.create_topic(Name=TOPIC_NAME)["TopicArn"]  # idempotent
        paginator = self._sns.get_paginator("list_subscriptions_by_topic")
        for page in paginator.paginate(TopicArn=self._topic_arn):
            for sub in page.get("Subscriptions", []):
                if sub.get("Endpoint") == self.endpoint and sub.get("Protocol") == self.protocol:
                    return
        self._sns.subscribe(
            TopicArn=self._topic_arn, Protocol=self.protocol, Endpoint=self.endpoint,
            Attributes={"FilterPolicy": json.dumps({self.attribute: [self.endpoint]})},
        )
        logger.info("%s: subscribed %s to SNS topic %s", self.rule_name, self.endpoint, TOPIC_NAME)

    def invoke(self, step: int, reason: Optional[str] = None) -> None:
        if self._sns is None:
            self._setup()
        subject = f"SMDebugRule:{self.rule_name} fired"
        message = f"{subject} at step {step}." + (f" {reason}" if reason else "")
        self._sns.publish(
            TopicArn=self._topic_arn, Subject=subject[:100], Message=message,
            MessageAttributes={self.attribute: {"DataType": "String", "StringValue": self.endpoint}},
        )
