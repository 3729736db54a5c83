"""Alertmanager routing by severity, as one model printed two ways.

The cluster gets an AlertmanagerConfig (the Prometheus Operator turns it into
Alertmanager's config); `stackctl rules` and the amtool test get the plain
alertmanager.yml the same routes and receivers mean, with credentials redacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

NULL_RECEIVER = "null"
"""Takes what no route claims: dev, or a severity the stack routes nowhere. No receiver of a stack's may take it."""
SEVERITIES = ("critical", "warning", "info")
"""The `severity` label of every alert (triton_platform/monitoring_rules.py); routes pick receivers by it."""
INTEGRATIONS = ("slack", "pagerduty", "webhook")
"""What a receiver may send to."""
GROUP_BY = ["alertname", "namespace", "deployment", "model"]
TIMING = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
REDACTED_URL = "https://redacted.invalid/"
REDACTED_KEY = "redacted"


@dataclass(frozen=True)
class Credential:
    """A receiver's credential: exactly one of a value (kept secret, stored in a Secret of the stack's own) and an
    existing Secret's key."""

    value: pulumi.Input[str] | None
    secret: Mapping[str, str] | None
    """`{"name": <Secret>, "key": <key>}`, as AlertmanagerConfig's SecretKeySelector reads it."""


@dataclass(frozen=True)
class Slack:
    """A Slack incoming webhook and the channel it posts to."""

    webhook_url: Credential
    channel: str


@dataclass(frozen=True)
class Receiver:
    """Where a class of alerts goes: one or more integrations."""

    slack: Slack | None = None
    pagerduty_routing_key: Credential | None = None
    webhook_url: Credential | None = None


@dataclass(frozen=True)
class ReceiverSecret:
    """Credentials this stack stores in a Secret of its own, one per receiver: values stay Pulumi secrets."""

    secret_name: str
    values: dict[str, pulumi.Input[str]]


def _secret_name(receiver: str) -> str:
    return f"alertmanager-{receiver}"


def credential_ref(receiver: str, field: str, credential: Credential) -> dict[str, str]:
    """Where the AlertmanagerConfig reads a credential: an existing Secret, or the one this stack creates."""
    if credential.secret is not None:
        return {"name": credential.secret["name"], "key": credential.secret["key"]}
    return {"name": _secret_name(receiver), "key": field}


def receiver_secrets(receivers: Mapping[str, Receiver]) -> list[ReceiverSecret]:
    """Credentials given as values, which the stack writes into one Secret per receiver."""
    out = []
    for name, receiver in sorted(receivers.items()):
        values = {field: c.value for field, c in _credentials(receiver) if c.value is not None}
        if values:
            out.append(ReceiverSecret(_secret_name(name), values))
    return out


def _credentials(receiver: Receiver) -> list[tuple[str, Credential]]:
    found = []
    if receiver.slack:
        found.append(("webhook-url", receiver.slack.webhook_url))
    if receiver.pagerduty_routing_key:
        found.append(("routing-key", receiver.pagerduty_routing_key))
    if receiver.webhook_url:
        found.append(("url", receiver.webhook_url))
    return found


def _matchers(namespace: str, severity: str) -> list[tuple[str, str]]:
    return [("severity", severity), ("namespace", namespace)]


def alertmanager_config_manifest(
    receivers: Mapping[str, Receiver], routes: Mapping[str, str], namespace: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The AlertmanagerConfig custom resource (monitoring.coreos.com/v1alpha1): routes alerts about `namespace`,
    each severity of `routes` to the receiver it names."""
    entries: list[dict[str, Any]] = [{"name": NULL_RECEIVER}]
    for name, receiver in sorted(receivers.items()):
        entry: dict[str, Any] = {"name": name}
        if receiver.slack:
            ref = credential_ref(name, "webhook-url", receiver.slack.webhook_url)
            entry["slackConfigs"] = [{"apiURL": ref, "channel": receiver.slack.channel, "sendResolved": True}]
        if receiver.pagerduty_routing_key:
            ref = credential_ref(name, "routing-key", receiver.pagerduty_routing_key)
            entry["pagerdutyConfigs"] = [{"routingKey": ref, "sendResolved": True}]
        if receiver.webhook_url:
            entry["webhookConfigs"] = [
                {"urlSecret": credential_ref(name, "url", receiver.webhook_url), "sendResolved": True}
            ]
        entries.append(entry)
    matched = [
        {
            "receiver": receiver,
            "matchers": [{"name": k, "value": v, "matchType": "="} for k, v in _matchers(namespace, severity)],
        }
        for severity, receiver in sorted(routes.items())
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1alpha1",
        "kind": "AlertmanagerConfig",
        "metadata": {"name": "triton-platform", "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "route": {
                "receiver": NULL_RECEIVER,
                "groupBy": GROUP_BY,
                "groupWait": TIMING["group_wait"],
                "groupInterval": TIMING["group_interval"],
                "repeatInterval": TIMING["repeat_interval"],
                "routes": matched,
            },
            "receivers": entries,
        },
    }


def alertmanager_yaml(receivers: Mapping[str, Receiver], routes: Mapping[str, str], namespace: str) -> dict[str, Any]:
    """The same routing as a plain alertmanager.yml, credentials redacted (for amtool and reviewers)."""
    entries: list[dict[str, Any]] = [{"name": NULL_RECEIVER}]
    for name, receiver in sorted(receivers.items()):
        entry: dict[str, Any] = {"name": name}
        if receiver.slack:
            entry["slack_configs"] = [
                {"api_url": REDACTED_URL, "channel": receiver.slack.channel, "send_resolved": True}
            ]
        if receiver.pagerduty_routing_key:
            entry["pagerduty_configs"] = [{"routing_key": REDACTED_KEY, "send_resolved": True}]
        if receiver.webhook_url:
            entry["webhook_configs"] = [{"url": REDACTED_URL, "send_resolved": True}]
        entries.append(entry)
    matched = [
        {"receiver": receiver, "matchers": [f'{k}="{v}"' for k, v in _matchers(namespace, severity)]}
        for severity, receiver in sorted(routes.items())
    ]
    return {
        "route": {"receiver": NULL_RECEIVER, "group_by": GROUP_BY, **TIMING, "routes": matched},
        "receivers": entries,
    }
