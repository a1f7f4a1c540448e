"""Actions: parsing action strings, StopTraining through the stop signal, Email/SMS through a real SNS
endpoint (moto's server on loopback)."""

import json
import logging

import boto3
import numpy as np
import pytest

from smdebug import SaveConfig
from smdebug.core.stop_signal import read_stop_signal
from smdebug.exceptions import SMDebugValueError, TrainingStopRequested
from smdebug.rules.action import SMS, ActionList, Actions, Email, StopTraining, parse_action_str
from smdebug.rules.generic import ExplodingTensor
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

from _hooks import NumpyHook


def write_run(path, values):
    hook = NumpyHook(out_dir=str(path), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for value in values:
        hook.begin_step()
        hook.record("w", np.asarray(value, np.float32))
        hook.end_step()
    hook.close()
    return create_trial(str(path))


# --- action strings ------------------------------------------------------------------------------------
def test_builders_serialize_to_the_json_the_rule_reads():
    actions = ActionList(StopTraining("my-job"), Email("Alice.Smith@Example.com"), SMS("+15555550100"))
    parsed = parse_action_str(actions.serialize())
    assert parsed == [
        {"training_job_prefix": "my-job", "name": "stoptraining"},
        {"endpoint": "Alice.Smith@Example.com", "name": "email"},
        {"endpoint": "+15555550100", "name": "sms"},
    ]
    assert parse_action_str(StopTraining().serialize()) == [{"name": "stoptraining"}]


def test_update_training_job_prefix_only_fills_missing_prefixes():
    actions = ActionList(StopTraining(), StopTraining("given"))
    actions.update_training_job_prefix_if_not_specified("job-1")
    assert [a["training_job_prefix"] for a in parse_action_str(actions.serialize())] == ["job-1", "given"]


@pytest.mark.parametrize("make, bad", [(Email, "not-an-address"), (SMS, "5555550100"), (SMS, "+1" + "2" * 15),
                                       (StopTraining, "bad prefix!")])
def test_builders_reject_bad_endpoints(make, bad):
    with pytest.raises(SMDebugValueError):
        make(bad)


def test_action_string_case_is_kept_and_names_match_any_case(tmp_path):
    trial = write_run(tmp_path, [[1.0]])
    actions = Actions('{"name": "EMAIL", "endpoint": "Bob.Jones@Example.org"}', "R", trial)
    assert [a.endpoint for a in actions.actions] == ["Bob.Jones@Example.org"]  # the original lower-cased it


def test_bad_action_strings(tmp_path, caplog):
    trial = write_run(tmp_path, [[1.0]])
    assert len(Actions(None, "R", trial)) == 0 and len(Actions("", "R", trial)) == 0
    with pytest.raises(SMDebugValueError, match="not valid JSON"):
        Actions("{name: stoptraining", "R", trial)
    with pytest.raises(SMDebugValueError, match="JSON object"):
        Actions('["stoptraining"]', "R", trial)
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        actions = Actions('[{"name": "pager"}, {"name": "sms"}, {"name": "stoptraining"}]', "R", trial)
    assert len(actions) == 1  # the two bad ones are reported and skipped, the good one kept
    assert "unknown action 'pager'" in caplog.text and "needs an 'endpoint'" in caplog.text


# --- StopTraining -----------------------------------------------------------------------------------------
def test_stop_training_action_stops_a_running_hook(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    rule = None
    stopped_at = None
    try:
        for step in range(20):
            hook.begin_step()
            hook.record("w", np.full(3, np.inf if step == 5 else 1.0, np.float32))
            hook.end_step()
            hook.flush()
            if rule is None:
                rule = ExplodingTensor(create_trial(out), collection_names="weights",
                                       action_str=StopTraining().serialize())
            invoke_rule(rule, start_step=step, end_step=step + 1)
    except TrainingStopRequested as e:
        stopped_at = step
        assert "ExplodingTensor asked to stop training (condition met at step 5)" in str(e)
        assert "w has 0 NaN and 3 infinite values" in str(e)
    assert stopped_at == 6  # the next step boundary after the finding
    signal = read_stop_signal(out)
    assert signal["rule"] == "ExplodingTensor" and signal["step"] == 5
    trial = create_trial(out)
    assert trial.steps() == list(range(6)) and trial.loaded_all_steps  # complete and closed
    np.testing.assert_array_equal(trial.tensor("w").value(5), np.full(3, np.inf, np.float32))
    assert hook.stop_requested


def test_flag_mode_only_sets_stop_requested(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.on_stop = "flag"
    steps = 0
    while not hook.stop_requested and steps < 50:
        hook.begin_step()
        hook.record("w", np.ones(2, np.float32))
        hook.end_step()
        steps += 1
        if steps == 3:
            from smdebug.core.stop_signal import write_stop_signal

            write_stop_signal(out, "Manual", 2, "enough")
    hook.close()
    assert steps == 4 and "Manual asked to stop training" in hook.stop_reason
    assert create_trial(out).steps() == [0, 1, 2, 3]


def test_a_stale_stop_signal_from_an_earlier_run_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    out = tmp_path / "run"
    out.mkdir()
    (out / "stop_training.json").write_text(json.dumps({"rule": "Old", "time": 1.0}))
    trial = write_run(out, [[1.0], [2.0], [3.0]])
    assert trial.steps() == [0, 1, 2]


# --- Email / SMS through SNS -------------------------------------------------------------------------------
def _queue_on_topic(aws):
    sns, sqs = boto3.client("sns"), boto3.client("sqs")
    topic = sns.create_topic(Name="SMDebugRules")["TopicArn"]
    queue_url = sqs.create_queue(QueueName="rule-messages")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "false"})
    return sns, sqs, topic, queue_url


def test_email_and_sms_publish_through_sns(tmp_path, aws):
    sns, sqs, topic, queue_url = _queue_on_topic(aws)
    trial = write_run(tmp_path, [[1.0], [np.nan], [1.0], [np.nan]])
    action_str = ActionList(Email("oncall@example.com"), SMS("+15555550100")).serialize()
    assert invoke_rule(ExplodingTensor(trial, action_str=action_str)) == [1, 3]

    subs = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    by_endpoint = {s["Endpoint"]: s for s in subs}
    assert by_endpoint["oncall@example.com"]["Protocol"] == "email"
    assert by_endpoint["+15555550100"]["Protocol"] == "sms"
    assert len(subs) == 3  # subscribed once each, not once per finding
    policy = sns.get_subscription_attributes(SubscriptionArn=by_endpoint["oncall@example.com"]["SubscriptionArn"])
    assert json.loads(policy["Attributes"]["FilterPolicy"]) == {"email": ["oncall@example.com"]}

    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
    bodies = [json.loads(m["Body"]) for m in messages]
    assert len(bodies) == 4  # 2 findings x (email + sms)
    assert {b["Subject"] for b in bodies} == {"SMDebugRule:ExplodingTensor fired"}
    texts = sorted(b["Message"] for b in bodies)
    assert texts[0].startswith("SMDebugRule:ExplodingTensor fired at step 1. w has 1 NaN")
    assert {b["MessageAttributes"].get("email", b["MessageAttributes"].get("phone_num"))["Value"] for b in bodies} \
        == {"oncall@example.com", "+15555550100"}


def test_an_existing_subscription_is_reused(tmp_path, aws):
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="SMDebugRules")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="email", Endpoint="oncall@example.com")
    trial = write_run(tmp_path, [[np.nan]])
    invoke_rule(ExplodingTensor(trial, action_str=Email("oncall@example.com").serialize()))
    assert len(sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == 1


def test_message_actions_subscribe_when_the_rule_is_built(tmp_path, aws):
    """E-mail subscriptions need confirming before SNS delivers anything: subscribing only at the first
    finding would lose it, so the subscription is made when the rule is built."""
    sns = boto3.client("sns")
    trial = write_run(tmp_path, [[1.0], [np.nan]])
    rule = ExplodingTensor(trial, action_str=ActionList(Email("oncall@example.com"), SMS("+15555550100")).serialize())
    topic = sns.create_topic(Name="SMDebugRules")["TopicArn"]
    subs = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert sorted(s["Endpoint"] for s in subs) == ["+15555550100", "oncall@example.com"]  # before any finding
    email, sms = rule.actions.actions
    assert email.last_subscription_response is not None and email.last_publish_response is None
    assert invoke_rule(rule) == [1]
    assert email.last_publish_response["MessageId"] and sms.last_publish_response["MessageId"]
    assert len(sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == 2  # not again at the finding


def test_message_and_stop_actions_keep_the_1_0_attribute_names(aws):
    """Scripts written for smdebug 1.0.x read the actions' underscored attributes."""
    from smdebug.rules.action.action import Actions as LegacyActions

    actions = LegacyActions(
        actions_str='[{"name": "stoptraining", "training_job_prefix": "job-a"}, {"name": "sms", "endpoint": "+15555550100"}]',
        rule_name="my_rule")
    stop, sms = actions._actions
    assert (stop._training_job_prefix, stop._rule_name) == ("job-a", "my_rule")
    assert (sms._protocol, sms._topic_name, sms._message_endpoint, sms._rule_name) == \
        ("sms", "SMDebugRules", "+15555550100", "my_rule")
    assert sms._last_subscription_response is not None  # subscribed when built
    assert sms._last_send_mesg_response is None
    sms.invoke()  # 1.0.x's invoke() took no step
    assert sms._last_send_mesg_response["MessageId"]
    # Built again (a rule restarted): the existing subscription is reported, none added.
    again = LegacyActions(actions_str='{"name": "sms", "endpoint": "+15555550100"}', rule_name="my_rule")._actions[0]
    assert again._last_subscription_response["Endpoint"] == "+15555550100"
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="SMDebugRules")["TopicArn"]
    assert len(sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == 1


def test_an_unreachable_sns_endpoint_does_not_stop_the_rule(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    trial = write_run(tmp_path, [[np.nan], [1.0], [np.nan]])
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        assert invoke_rule(ExplodingTensor(trial, action_str=SMS("+15555550100").serialize())) == [0, 2]
    assert "MessageAction failed" in caplog.text


def test_stalled_training_with_stop_training_on_fire_stops_the_job(tmp_path, monkeypatch):
    """The runner finds the stall while idle; the stop signal ends the loop at its next step."""
    from smdebug.rules import run_rules

    monkeypatch.setenv("SMDEBUG_STOP_CHECK_INTERVAL", "0")
    out = str(tmp_path / "run")
    hook = NumpyHook(out_dir=out, save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    for _ in range(3):
        hook.begin_step()
        hook.record("w", np.ones(2, np.float32))
        hook.end_step()
    hook.flush()
    result = run_rules(out, [("stalled_training", {"threshold": "0.5", "stop_training_on_fire": "true"})],
                       follow=True, timeout=2, poll_interval=0.1)
    assert result.rules[0].status == "IssuesFound"
    assert read_stop_signal(out)["rule"] == "StalledTrainingRule"
    with pytest.raises(TrainingStopRequested, match="StalledTrainingRule asked to stop training"):
        hook.begin_step()  # the job wakes up: stopped at once, its run closed
    assert create_trial(out).loaded_all_steps


def test_legacy_action_module_paths_and_arguments(tmp_path):
    """smdebug 1.0.x's names: smdebug.rules.action.action.Actions(actions_str=..., rule_name=...), its
    _actions, invoke() without a step, and the message_action / stop_training_action modules."""
    from smdebug.rules.action.action import Actions as LegacyActions
    from smdebug.rules.action.message_action import MessageAction
    from smdebug.rules.action.stop_training_action import StopTrainingAction

    trial = write_run(tmp_path, [[1.0]])
    actions = LegacyActions(actions_str='[{"name": "StopTraining"}, {"name": "email", "endpoint": "a@b.c"}]',
                            rule_name="test_rule", trial=trial)
    assert [type(a) for a in actions._actions] == [StopTrainingAction, MessageAction]
    actions._actions.pop()  # (no SNS endpoint here)
    actions.invoke()
    assert read_stop_signal(str(tmp_path))["rule"] == "test_rule"
    with pytest.raises(SMDebugValueError):
        LegacyActions('{"name": "stoptraining"}', actions_str='{"name": "stoptraining"}')
