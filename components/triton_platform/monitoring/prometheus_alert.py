"""One Prometheus alert rule: what the rule modules decide (name, expression, `for`, severity, text) and how it is
printed into a rule group, with the labels routing reads and a runbook link (docs/runbooks.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit


@dataclass(frozen=True)
class Alert:
    """One alert rule, before it is printed."""

    name: str
    expr: str
    duration: str
    severity: str
    """One of triton_platform/monitoring/monitoring_args.py SEVERITIES."""
    summary: str
    description: str
    labels: tuple[tuple[str, str], ...] = ()
    """Extra labels, set over the series' own: the deployment and model a per-deployment rule is about; the stack's
    namespace on a rule about GPUs, which routing matches on."""


def runbook_link(runbook_base_url: str, alert_name: str) -> str:
    """The runbook page with the alert's anchor (its name in lower case, a docs/runbooks.md heading) as the
    fragment, set with urllib.parse rather than appended: a query stays in place; a base with a fragment of its own is
    refused by the settings (formats.runbook_base_problem), and replaced here, never doubled."""
    return urlunsplit(urlsplit(runbook_base_url)._replace(fragment=alert_name.lower()))


def alert_rule(alert: Alert, runbook_base_url: str) -> dict[str, Any]:
    return {
        "alert": alert.name,
        "expr": alert.expr,
        "for": alert.duration,
        "labels": {"severity": alert.severity, "platform": "triton-platform", **dict(alert.labels)},
        "annotations": {
            "summary": alert.summary,
            "description": alert.description,
            "runbook_url": runbook_link(runbook_base_url, alert.name),
        },
    }
