"""Email and SMS actions: publish to an SNS topic the endpoint is subscribed to."""

from __future__ import annotations

import json
from typing import Optional

from smdebug.core.logger import get_logger

logger = get_logger()

TOPIC_NAME = "SMDebugRules"


class MessageAction:
    """Subscribes ``endpoint`` (protocol ``email`` or ``sms``) to the ``SMDebugRules`` topic when the
    action is built, with a filter policy so each endpoint only receives its own messages, and publishes
    one message each time the rule fires.

    Subscribing up front (as smdebug 1.0.x did) matters for e-mail: SNS delivers nothing to an address
    until it confirms, so a subscription made only when the rule first fires would lose that finding.
    When SNS cannot be reached then, the rule still starts and the subscription is tried again at the
    first finding.
    """

    def __init__(self, rule_name: str, protocol: str, endpoint: str):
        self.rule_name = rule_name
        self.protocol = protocol
        self.endpoint = endpoint
        # SMS subscriptions filter on "phone_num" in smdebug 1.0.x; keep the names so existing
        # subscriptions created by it keep working.
        self.attribute = "phone_num" if protocol == "sms" else "email"
        self._sns = None
        self._topic_arn: Optional[str] = None
        # What SNS answered last (smdebug 1.0.x kept these too; scripts check them after a test message).
        self.last_subscription_response = None
        self.last_publish_response = None
        try:
            self._setup()
        except Exception as e:  # noqa: BLE001 - no network/credentials: retried when the rule fires
            logger.warning("%s: could not subscribe %s to SNS topic %s yet (%s); trying again when the rule fires",
                           rule_name, endpoint, TOPIC_NAME, e)

    def _setup(self) -> None:
        from smdebug.rules.action.aws import client

        sns = client("sns")
        topic_arn = sns.create_topic(Name=TOPIC_NAME)["TopicArn"]  # idempotent
        existing = None
        paginator = sns.get_paginator("list_subscriptions_by_topic")
        for page in paginator.paginate(TopicArn=topic_arn):
            for sub in page.get("Subscriptions", []):
                if sub.get("Endpoint") == self.endpoint and sub.get("Protocol") == self.protocol:
                    existing = sub
                    break
            if existing is not None:
                break
        if existing is not None:
            self.last_subscription_response = existing
        else:
            self.last_subscription_response = sns.subscribe(
                TopicArn=topic_arn, Protocol=self.protocol, Endpoint=self.endpoint,
                Attributes={"FilterPolicy": json.dumps({self.attribute: [self.endpoint]})},
            )
            logger.info("%s: subscribed %s to SNS topic %s", self.rule_name, self.endpoint, TOPIC_NAME)
        # Only a complete setup is kept: a failure half-way is tried again from the start.
        self._sns, self._topic_arn = sns, topic_arn

    def invoke(self, step: Optional[int] = None, reason: Optional[str] = None) -> None:
        if self._sns is None:
            self._setup()
        subject = f"SMDebugRule:{self.rule_name} fired"
        message = subject + (f" at step {step}." if step is not None else ".") + (f" {reason}" if reason else "")
        self.last_publish_response = self._sns.publish(
            TopicArn=self._topic_arn, Subject=subject[:100], Message=message,
            MessageAttributes={self.attribute: {"DataType": "String", "StringValue": self.endpoint}},
        )

    # smdebug 1.0.x's attribute names, read by scripts written for it.
    _topic_name = property(lambda self: TOPIC_NAME)
    _protocol = property(lambda self: self.protocol)
    _message_endpoint = property(lambda self: self.endpoint)
    _rule_name = property(lambda self: self.rule_name)
    _last_subscription_response = property(lambda self: self.last_subscription_response)
    _last_send_mesg_response = property(lambda self: self.last_publish_response)
