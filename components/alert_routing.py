"""Alertmanager routing by severity, as one model printed two ways.

The cluster gets an AlertmanagerConfig (the Prometheus Operator turns it into
Alertmanager's config); `stackctl rules` and the amtool test get the plain
alertmanager.yml the same routes and receivers mean, with credentials redacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.monitoring_config import Credential, MonitoringConfig, Receiver

NULL_RECEIVER = "null"
"""Takes what no route claims: dev, or a severity the stack routes nowhere."""
GROUP_BY = ["alertname", "namespace", "deployment", "model"]
TIMING = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
REDACTED_URL = "https://redacted.invalid/"
REDACTED_KEY = "redacted"


@dataclass(frozen=True)
class ReceiverSecret:
    """Credentials this stack stores in a Secret of its own, one per receiver: values stay Pulumi secrets."""

    secret_name: str
    values: dict[str, str]


def _secret_name(receiver: str) -> str:
    return f"alertmanager-{receiver}"


def credential_ref(receiver: str, field: str, credential: Credential) -> dict[str, str]:
    """Where the AlertmanagerConfig reads a credential: an existing Secret, or the one this stack creates."""
    if credential.secret is not None:
        return {"name": credential.secret.name, "key": credential.secret.key}
    return {"name": _secret_name(receiver), "key": field}


def receiver_secrets(monitoring: MonitoringConfig) -> list[ReceiverSecret]:
    """Credentials given as Pulumi secrets, which the stack writes into one Secret per receiver."""
    out = []
    for name, receiver in sorted(monitoring.receivers.items()):
        values = {field: c.value for field, c in _credentials(receiver) if c.value is not None}
        if values:
            out.append(ReceiverSecret(_secret_name(name), values))
    return out


def _credentials(receiver: Receiver) -> list[tuple[str, Credential]]:
    found = []
    if receiver.slack:
        found.append(("webhook-url", receiver.slack.webhook_url))
    if receiver.pagerduty:
        found.append(("routing-key", receiver.pagerduty.routing_key))
    if receiver.webhook:
        found.append(("url", receiver.webhook.url))
    return found


def _matchers(namespace: str, severity: str) -> list[tuple[str, str]]:
    return [("severity", severity), ("namespace", namespace)]


def alertmanager_config_manifest(
    monitoring: MonitoringConfig, namespace: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The AlertmanagerConfig custom resource (monitoring.coreos.com/v1alpha1): routes alerts about `namespace`."""
    receivers: list[dict[str, Any]] = [{"name": NULL_RECEIVER}]
    for name, receiver in sorted(monitoring.receivers.items()):
        entry: dict[str, Any] = {"name": name}
        if receiver.slack:
            ref = credential_ref(name, "webhook-url", receiver.slack.webhook_url)
            entry["slackConfigs"] = [{"apiURL": ref, "channel": receiver.slack.channel, "sendResolved": True}]
        if receiver.pagerduty:
            ref = credential_ref(name, "routing-key", receiver.pagerduty.routing_key)
            entry["pagerdutyConfigs"] = [{"routingKey": ref, "sendResolved": True}]
        if receiver.webhook:
            entry["webhookConfigs"] = [
                {"urlSecret": credential_ref(name, "url", receiver.webhook.url), "sendResolved": True}
            ]
        receivers.append(entry)
    routes = [
        {
            "receiver": receiver,
            "matchers": [{"name": k, "value": v, "matchType": "="} for k, v in _matchers(namespace, severity)],
        }
        for severity, receiver in sorted(monitoring.routes.items())
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
                "routes": routes,
            },
            "receivers": receivers,
        },
    }


def alertmanager_yaml(monitoring: MonitoringConfig, namespace: str) -> dict[str, Any]:
    """The same routing as a plain alertmanager.yml, credentials redacted (for amtool and reviewers)."""
    receivers: list[dict[str, Any]] = [{"name": NULL_RECEIVER}]
    for name, receiver in sorted(monitoring.receivers.items()):
        entry: dict[str, Any] = {"name": name}
        if receiver.slack:
            entry["slack_configs"] = [
                {"api_url": REDACTED_URL, "channel": receiver.slack.channel, "send_resolved": True}
            ]
        if receiver.pagerduty:
            entry["pagerduty_configs"] = [{"routing_key": REDACTED_KEY, "send_resolved": True}]
        if receiver.webhook:
            entry["webhook_configs"] = [{"url": REDACTED_URL, "send_resolved": True}]
        receivers.append(entry)
    routes = [
        {"receiver": receiver, "matchers": [f'{k}="{v}"' for k, v in _matchers(namespace, severity)]}
        for severity, receiver in sorted(monitoring.routes.items())
    ]
    return {
        "route": {"receiver": NULL_RECEIVER, "group_by": GROUP_BY, **TIMING, "routes": routes},
        "receivers": receivers,
    }
