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

from triton_platform.monitoring.monitoring_args import NULL_RECEIVER, AlertReceiver, ReceiverCredential
from triton_platform.promql import label_value

GROUP_BY = ["alertname", "namespace", "deployment", "model"]
TIMING = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
REDACTED_URL = "https://redacted.invalid/"
REDACTED_KEY = "redacted"


@dataclass(frozen=True)
class ReceiverSecret:
    """Credentials this stack stores in a Secret of its own, one per receiver: values stay Pulumi secrets."""

    secret_name: str
    values: dict[str, pulumi.Input[str]]


def _secret_name(receiver: str) -> str:
    return f"alertmanager-{receiver}"


def credential_ref(receiver: str, field: str, credential: ReceiverCredential) -> dict[str, str]:
    """Where the AlertmanagerConfig reads a credential: an existing Secret, or the one this stack creates."""
    if "secret" in credential:
        return {"name": credential["secret"]["name"], "key": credential["secret"]["key"]}
    return {"name": _secret_name(receiver), "key": field}


def receiver_secrets(receivers: Mapping[str, AlertReceiver]) -> list[ReceiverSecret]:
    """Credentials given as values, which the stack writes into one Secret per receiver (`receivers` checked:
    each credential is a value or a Secret's key, never both)."""
    out = []
    for name, receiver in sorted(receivers.items()):
        values = {field: c["value"] for field, c in _credentials(receiver) if "value" in c}
        if values:
            out.append(ReceiverSecret(_secret_name(name), values))
    return out


def _credentials(receiver: AlertReceiver) -> list[tuple[str, ReceiverCredential]]:
    found = []
    if "slack" in receiver:
        found.append(("webhook-url", receiver["slack"]["webhook_url"]))
    if "pagerduty" in receiver:
        found.append(("routing-key", receiver["pagerduty"]["routing_key"]))
    if "webhook" in receiver:
        found.append(("url", receiver["webhook"]["url"]))
    return found


def _matchers(namespace: str, severity: str) -> list[tuple[str, str]]:
    return [("severity", severity), ("namespace", namespace)]


def alertmanager_config_manifest(
    receivers: Mapping[str, AlertReceiver], routes: Mapping[str, str], namespace: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The AlertmanagerConfig custom resource (monitoring.coreos.com/v1alpha1): routes alerts about `namespace`,
    each severity of `routes` to the receiver it names."""
    entries: list[dict[str, Any]] = [{"name": NULL_RECEIVER}]
    for name, receiver in sorted(receivers.items()):
        entry: dict[str, Any] = {"name": name}
        if "slack" in receiver:
            slack = receiver["slack"]
            ref = credential_ref(name, "webhook-url", slack["webhook_url"])
            entry["slackConfigs"] = [{"apiURL": ref, "channel": slack["channel"], "sendResolved": True}]
        if "pagerduty" in receiver:
            ref = credential_ref(name, "routing-key", receiver["pagerduty"]["routing_key"])
            entry["pagerdutyConfigs"] = [{"routingKey": ref, "sendResolved": True}]
        if "webhook" in receiver:
            entry["webhookConfigs"] = [
                {"urlSecret": credential_ref(name, "url", receiver["webhook"]["url"]), "sendResolved": True}
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


def alertmanager_yaml(
    receivers: Mapping[str, AlertReceiver], routes: Mapping[str, str], namespace: str
) -> dict[str, Any]:
    """The same routing as a plain alertmanager.yml, credentials redacted (for amtool and reviewers)."""
    entries: list[dict[str, Any]] = [{"name": NULL_RECEIVER}]
    for name, receiver in sorted(receivers.items()):
        entry: dict[str, Any] = {"name": name}
        if "slack" in receiver:
            entry["slack_configs"] = [
                {"api_url": REDACTED_URL, "channel": receiver["slack"]["channel"], "send_resolved": True}
            ]
        if "pagerduty" in receiver:
            entry["pagerduty_configs"] = [{"routing_key": REDACTED_KEY, "send_resolved": True}]
        if "webhook" in receiver:
            entry["webhook_configs"] = [{"url": REDACTED_URL, "send_resolved": True}]
        entries.append(entry)
    matched = [
        {"receiver": receiver, "matchers": [f"{k}={label_value(v)}" for k, v in _matchers(namespace, severity)]}
        for severity, receiver in sorted(routes.items())
    ]
    return {
        "route": {"receiver": NULL_RECEIVER, "group_by": GROUP_BY, **TIMING, "routes": matched},
        "receivers": entries,
    }
