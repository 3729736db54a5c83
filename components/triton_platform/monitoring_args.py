"""Monitoring's Args: the TypedDicts a user writes, the frozen settings its builders read, and the check between.

The Args may come from any Pulumi language through the component provider, as plain JSON: a whole number may
arrive as a float and a NotRequired key may be missing. `monitoring_settings` applies every default, checks
what a user could get wrong and raises every problem at once, each naming its Arg (triton_platform/arg_problems.py).

No `from __future__ import annotations` here: TypedDict reads `NotRequired` only from evaluated annotations,
and Pulumi's schema inference reads the same.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import pulumi

from triton_platform.alert_routing import INTEGRATIONS, NULL_RECEIVER, SEVERITIES, Credential, Receiver, Slack
from triton_platform.arg_problems import ArgProblems
from triton_platform.durations import duration_seconds, is_prometheus_duration
from triton_platform.helm_chart import ChartSource
from triton_platform.scaling_signal import BUSY_RATIO_SIGNAL, SIGNAL_KINDS

COMPONENT = "Monitoring"
MODES = ("existing", "install")
"""`existing`: an operator already runs; `install`: the component installs kube-prometheus-stack."""
DEFAULT_CHART: ChartSource = {"version": "79.7.1", "repository": "https://prometheus-community.github.io/helm-charts"}
"""kube-prometheus-stack, pinned, for mode `install`."""
DASHBOARD_TAGS = ("triton", "triton-platform")
"""Grafana tags every dashboard carries unless told otherwise."""
SCRAPE_INTERVAL_BOUNDS = ("1s", "2m")
"""Prometheus marks a series stale 5m after its last sample and KEDA reads the queue gauge at an instant, so an
interval near 5m leaves gaps; 2m still survives one missed scrape."""


class CredentialSecret(TypedDict):
    """A key of an existing Kubernetes Secret in the monitored namespace."""

    name: str
    """The Secret's name."""

    key: str
    """The key in it that holds the credential."""


class ReceiverCredential(TypedDict):
    """A receiver's credential: the value itself, or where an existing Secret holds it. Exactly one of the two."""

    value: NotRequired[pulumi.Input[str]]
    """The credential (a webhook URL, a routing key). The component marks it secret and stores it in a Secret of
    its own, `alertmanager-<receiver>`; give a Pulumi secret so it is never plain text in the program's config
    either. Default: unset (then `secret`)."""

    secret: NotRequired[CredentialSecret]
    """Where an existing Secret holds it. Default: unset (then `value`)."""


class SlackReceiver(TypedDict):
    """A Slack incoming webhook."""

    webhook_url: ReceiverCredential
    """The webhook URL."""

    channel: str
    """The channel to post to, e.g. `#ml-alerts`."""


class PagerDutyReceiver(TypedDict):
    """PagerDuty's Events API v2."""

    routing_key: ReceiverCredential
    """The integration's routing key."""


class WebhookReceiver(TypedDict):
    """A generic webhook."""

    url: ReceiverCredential
    """The URL to POST alerts to."""


class AlertReceiver(TypedDict):
    """Where Alertmanager sends a class of alerts: one or more of its integrations."""

    slack: NotRequired[SlackReceiver]
    """Post to Slack. Default: unset."""

    pagerduty: NotRequired[PagerDutyReceiver]
    """Page through PagerDuty. Default: unset."""

    webhook: NotRequired[WebhookReceiver]
    """POST to a webhook. Default: unset."""


class AlertThresholds(TypedDict):
    """Alert thresholds, and how long a condition must last before its alert fires (a Prometheus duration such as
    30s, 5m or 1h30m: the rule's `for`)."""

    latency_for: NotRequired[str]
    """How long p95 latency must stay above the SLO. Default: 5m."""

    queue_time_ms: NotRequired[float]
    """Average queue time per request above which the queue alert fires, in ms; above 0. Default: 20."""

    queue_time_for: NotRequired[str]
    """How long the queue time must stay above `queue_time_ms`. Default: 5m."""

    failure_ratio: NotRequired[float]
    """Failed/total inference requests above which the failure alert fires; between 0 and 1. Default: 0.01."""

    failure_for: NotRequired[str]
    """How long the failure ratio must stay above `failure_ratio`. Default: 5m."""

    gpu_memory_ratio: NotRequired[float]
    """GPU memory used/total above which the GPU memory alert fires; above 0, at most 1. Default: 0.8."""

    gpu_memory_for: NotRequired[str]
    """How long GPU memory must stay above `gpu_memory_ratio`. Default: 10m."""

    gpu_utilization_low: NotRequired[float]
    """GPU utilization below which the cost alert fires; between 0 and 1. Default: 0.3."""

    gpu_utilization_low_for: NotRequired[str]
    """How long utilization must stay below `gpu_utilization_low`. Default: 2h."""

    backlog_at_max_for: NotRequired[str]
    """How long a deployment's scaling signal may stay above its target while it runs `max_replicas`.
    Default: 10m."""

    replicas_unavailable_for: NotRequired[str]
    """How long a deployment may have fewer available replicas than desired. Default: 10m."""

    model_missing_for: NotRequired[str]
    """How long a model may report no metrics (not loaded) while its deployment is scraped. Default: 10m."""

    target_down_for: NotRequired[str]
    """How long a Triton metrics endpoint may be unreachable. Default: 5m."""

    keda_errors_for: NotRequired[str]
    """How long KEDA may fail to read a trigger (its fallback replicas apply meanwhile). Default: 5m."""


class DeploymentSignal(TypedDict):
    """What a deployment scales on (triton_platform/scaling_signal.py): Monitoring records it per replica, draws it
    against its target and alerts when it stays above the target at the replica ceiling."""

    kind: str
    """`busy-ratio`: the share of time each pod's busiest model keeps its instances running batches.
    `queue-depth`: pending requests per replica."""

    target: float
    """The per-replica value the autoscaler aims for: a busy ratio above 0 and at most 1, or a pending-request
    count above 0."""

    instances_per_pod: NotRequired[dict[str, int]]
    """For `busy-ratio`, and required there: the instances one pod runs of each model the ratio reads, by model
    name (each one of `models`; ensembles run none and are left out). Default: unset (`queue-depth`)."""


class MonitoredDeployment(TypedDict):
    """A Deployment of Triton that the rules, alerts and a dashboard watch."""

    object_name: str
    """Its `metadata.name` and its Service's, e.g. `triton-general`: the `deployment` label of its series."""

    max_replicas: int
    """Its replica ceiling, at least 1: the at-ceiling alert fires there, and the dashboard draws it."""

    models: list[str]
    """The models it serves: each gets a not-loaded alert."""

    signal: DeploymentSignal
    """What it scales on."""


class MonitoringArgs(TypedDict):
    """What `Monitoring` needs: where the watched Deployments run, which they are, and how to watch them."""

    namespace: str
    """Namespace of the monitored Deployments and Services; the ServiceMonitor, rules, alert routing, receiver
    Secrets and dashboards go there too."""

    latency_slo_ms: int
    """p95 request latency objective in milliseconds, for every model, at least 1: above it
    `TritonLatencyAboveSLO` fires."""

    deployments: NotRequired[dict[str, MonitoredDeployment]]
    """The Deployments to watch, by key; the key names the dashboard's resource (`<name>-<key>-dashboard`).
    Default: none (only the namespace-wide rules and alerts)."""

    mode: NotRequired[str]
    """`existing`: a Prometheus Operator already runs; only the ServiceMonitor, rules, alert routing and dashboards
    are created. `install`: the kube-prometheus-stack chart too, in `prometheus_namespace`, and everything else
    waits for it (its CRDs). Default: existing."""

    chart: NotRequired[ChartSource]
    """The kube-prometheus-stack chart, for mode `install`. Default: version 79.7.1 from
    https://prometheus-community.github.io/helm-charts."""

    prometheus_namespace: NotRequired[str]
    """Namespace of the Prometheus that scrapes Triton (mode `install` creates it and installs the chart there).
    Default: monitoring."""

    prometheus_pod_labels: NotRequired[dict[str, str]]
    """Labels of that Prometheus' pods, handed on as `metrics_pod_labels` so other components admit its scrapes.
    Default: `app.kubernetes.io/name: prometheus`."""

    selector_labels: NotRequired[dict[str, str]]
    """Labels the Prometheus Operator selects ServiceMonitors, rules and AlertmanagerConfigs by
    (kube-prometheus-stack's `release` label). Default: `release: kube-prometheus-stack`."""

    receivers: NotRequired[dict[str, AlertReceiver]]
    """Alertmanager receivers by name (any but `null`, which takes what no route claims). Default: none."""

    routes: NotRequired[dict[str, str]]
    """The receiver for each severity (`critical`, `warning`, `info`), by name; alerts of a severity without one
    go nowhere. Default: none."""

    runbook_base_url: NotRequired[str]
    """Every alert's `runbook_url` is this plus `#<alert name in lower case>`.
    Default: https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md."""

    grafana_folder: NotRequired[str]
    """Grafana folder the dashboards land in (the dashboard sidecar's folder annotation). Default: Triton."""

    scrape_interval: NotRequired[str]
    """How often Prometheus scrapes Triton's metrics port, a Prometheus duration from 1s to 2m (Prometheus marks a
    series stale 5m after its last sample). Default: 15s."""

    alerts: NotRequired[AlertThresholds]
    """Alert thresholds and durations. Default: each threshold's own."""

    labels: NotRequired[dict[str, str]]
    """Labels every object created carries (the operator's selector labels are added where it selects).
    Default: none."""

    scaling_enabled: NotRequired[bool]
    """Whether an autoscaler (KEDA) scales the Deployments: adds the KEDA-errors and at-max-replicas alerts.
    Default: false."""

    dcgm_metrics: NotRequired[bool]
    """Whether a DCGM exporter's metrics reach this Prometheus (the GPU pool's own exporter, or the NVIDIA GPU
    Operator's). Renders the GPU health rules, alerts and dashboard panels. Default false."""

    dashboard_tags: NotRequired[list[str]]
    """Grafana tags of every dashboard. Default: `triton`, `triton-platform`."""

    kube_version: NotRequired[str]
    """Kubernetes version the chart is templated for when the program renders manifests instead of deploying.
    Only used in mode `install`. Default: unset (the API server's)."""


@dataclass(frozen=True)
class Thresholds:
    """`AlertThresholds`, each default applied."""

    latency_for: str = "5m"
    queue_time_ms: float = 20.0
    queue_time_for: str = "5m"
    failure_ratio: float = 0.01
    failure_for: str = "5m"
    gpu_memory_ratio: float = 0.8
    gpu_memory_for: str = "10m"
    gpu_utilization_low: float = 0.3
    gpu_utilization_low_for: str = "2h"
    backlog_at_max_for: str = "10m"
    replicas_unavailable_for: str = "10m"
    model_missing_for: str = "10m"
    target_down_for: str = "5m"
    keda_errors_for: str = "5m"


@dataclass(frozen=True)
class Signal:
    """`DeploymentSignal`, checked: `instances` is empty for `queue-depth`."""

    kind: str
    target: float
    instances: Mapping[str, int]


@dataclass(frozen=True)
class Watched:
    """`MonitoredDeployment`, checked."""

    object_name: str
    max_replicas: int
    models: tuple[str, ...]
    signal: Signal


@dataclass(frozen=True)
class MonitoringSettings:
    """`MonitoringArgs` with every default applied and every value checked: what the builders read."""

    namespace: str
    latency_slo_ms: int
    deployments: Mapping[str, Watched]
    mode: str
    chart: ChartSource
    prometheus_namespace: str
    prometheus_pod_labels: Mapping[str, str]
    selector_labels: Mapping[str, str]
    receivers: Mapping[str, Receiver]
    routes: Mapping[str, str]
    runbook_base_url: str
    grafana_folder: str
    scrape_interval: str
    alerts: Thresholds
    labels: Mapping[str, str]
    scaling_enabled: bool
    dcgm_metrics: bool
    dashboard_tags: tuple[str, ...]
    kube_version: str | None


def monitoring_settings(name: str, args: MonitoringArgs) -> MonitoringSettings:
    """`args` with every default applied and every value checked; an ArgsError names every problem found."""
    problems = ArgProblems(COMPONENT, name)
    problems.unknown_keys("", args, MonitoringArgs)
    namespace = problems.required("", args, "namespace")
    slo = problems.required("", args, "latency_slo_ms")
    receivers = {key: _receiver(problems, key, value) for key, value in args.get("receivers", {}).items()}
    settings = MonitoringSettings(
        namespace=str(namespace),
        latency_slo_ms=0 if slo is None else problems.integer("latency_slo_ms", slo, minimum=1),
        deployments={
            key: _watched(problems, f"deployments.{key}", d) for key, d in args.get("deployments", {}).items()
        },
        mode=problems.choice("mode", args.get("mode", "existing"), MODES),
        chart=args.get("chart", DEFAULT_CHART),
        prometheus_namespace=args.get("prometheus_namespace", "monitoring"),
        prometheus_pod_labels=dict(args.get("prometheus_pod_labels", {"app.kubernetes.io/name": "prometheus"})),
        selector_labels=dict(args.get("selector_labels", {"release": "kube-prometheus-stack"})),
        receivers=receivers,
        routes=_routes(problems, args.get("routes", {}), receivers),
        runbook_base_url=args.get(
            "runbook_base_url", "https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md"
        ),
        grafana_folder=args.get("grafana_folder", "Triton"),
        scrape_interval=_scrape_interval(problems, args.get("scrape_interval", "15s")),
        alerts=_thresholds(problems, args.get("alerts", {})),
        labels=dict(args.get("labels", {})),
        scaling_enabled=args.get("scaling_enabled", False),
        dcgm_metrics=args.get("dcgm_metrics", False),
        dashboard_tags=tuple(args.get("dashboard_tags", DASHBOARD_TAGS)),
        kube_version=args.get("kube_version"),
    )
    problems.check()
    return settings


def _duration(problems: ArgProblems, path: str, value: Any) -> str:
    if not is_prometheus_duration(value):
        problems.add(path, f"{value!r} is not a Prometheus duration such as 30s, 5m or 1h30m")
    return str(value)


def _scrape_interval(problems: ArgProblems, value: Any) -> str:
    low, high = SCRAPE_INTERVAL_BOUNDS
    if not is_prometheus_duration(value):
        problems.add("scrape_interval", f"{value!r} is not a Prometheus duration from {low} to {high}, such as 15s")
    elif not duration_seconds(low) <= duration_seconds(value) <= duration_seconds(high):
        problems.add("scrape_interval", f"{value!r} is not between {low} and {high}")
    return str(value)


_THRESHOLD_BOUNDS: dict[str, dict[str, float]] = {
    "queue_time_ms": {},
    "failure_ratio": {"below": 1},
    "gpu_memory_ratio": {"at_most": 1},
    "gpu_utilization_low": {"below": 1},
}
"""The numeric thresholds, each above 0, and the ratios bounded: a failure ratio of 1 would never fire, a
low-utilization mark of 1 nearly always."""


def _thresholds(problems: ArgProblems, given: Mapping[str, Any]) -> Thresholds:
    problems.unknown_keys("alerts", given, AlertThresholds)
    values: dict[str, Any] = {}
    for key, value in given.items():
        if key in _THRESHOLD_BOUNDS:
            values[key] = problems.number(f"alerts.{key}", value, above=0, **_THRESHOLD_BOUNDS[key])
        elif key in AlertThresholds.__annotations__:
            values[key] = _duration(problems, f"alerts.{key}", value)
    return Thresholds(**values)


def _watched(problems: ArgProblems, path: str, given: Mapping[str, Any]) -> Watched:
    problems.unknown_keys(path, given, MonitoredDeployment)
    object_name = problems.required(path, given, "object_name")
    max_replicas = problems.required(path, given, "max_replicas")
    models = tuple(problems.required(path, given, "models") or ())
    signal = problems.required(path, given, "signal")
    return Watched(
        object_name=str(object_name),
        max_replicas=0 if max_replicas is None else problems.integer(f"{path}.max_replicas", max_replicas, minimum=1),
        models=models,
        signal=Signal(BUSY_RATIO_SIGNAL, 0, {})
        if signal is None
        else _signal(problems, f"{path}.signal", signal, models),
    )


def _signal(problems: ArgProblems, path: str, given: Mapping[str, Any], models: tuple[str, ...]) -> Signal:
    problems.unknown_keys(path, given, DeploymentSignal)
    kind = problems.required(path, given, "kind")
    if kind is not None:
        problems.choice(f"{path}.kind", kind, SIGNAL_KINDS)
    target = problems.required(path, given, "target")
    at_most = 1.0 if kind == BUSY_RATIO_SIGNAL else None  # a busy ratio never exceeds 1: the target would never be hit
    instances: dict[str, int] = {}
    given_instances = given.get("instances_per_pod")
    if kind == BUSY_RATIO_SIGNAL:
        if not given_instances:
            problems.add(
                f"{path}.instances_per_pod", "missing (required for kind busy-ratio: what its ratio divides by)"
            )
        for model, count in (given_instances or {}).items():
            instances[model] = problems.integer(f"{path}.instances_per_pod.{model}", count, minimum=1)
            if model not in models:
                problems.add(
                    f"{path}.instances_per_pod.{model}", f"is not one of the deployment's models ({', '.join(models)})"
                )
    elif given_instances is not None:
        problems.add(f"{path}.instances_per_pod", f"only kind busy-ratio reads it; this signal is {kind!r}")
    return Signal(
        kind=str(kind),
        target=0.0 if target is None else problems.number(f"{path}.target", target, above=0, at_most=at_most),
        instances=instances,
    )


def _receiver(problems: ArgProblems, name: str, given: Mapping[str, Any]) -> Receiver:
    path = f"receivers.{name}"
    problems.unknown_keys(path, given, AlertReceiver)
    if name == NULL_RECEIVER:
        problems.add(path, f"the name {NULL_RECEIVER!r} is taken: it receives what no route claims")
    if not any(given.get(integration) for integration in INTEGRATIONS):
        problems.add(path, f"names no integration; give one or more of {', '.join(INTEGRATIONS)}")
    slack, pagerduty, webhook = given.get("slack"), given.get("pagerduty"), given.get("webhook")
    if slack:
        problems.unknown_keys(f"{path}.slack", slack, SlackReceiver)
    if pagerduty:
        problems.unknown_keys(f"{path}.pagerduty", pagerduty, PagerDutyReceiver)
    if webhook:
        problems.unknown_keys(f"{path}.webhook", webhook, WebhookReceiver)
    return Receiver(
        slack=Slack(
            _credential(problems, f"{path}.slack", slack, "webhook_url"),
            str(problems.required(f"{path}.slack", slack, "channel")),
        )
        if slack
        else None,
        pagerduty_routing_key=_credential(problems, f"{path}.pagerduty", pagerduty, "routing_key")
        if pagerduty
        else None,
        webhook_url=_credential(problems, f"{path}.webhook", webhook, "url") if webhook else None,
    )


def _credential(problems: ArgProblems, path: str, parent: Mapping[str, Any], key: str) -> Credential:
    given = problems.required(path, parent, key)
    if given is None:
        return Credential(None, None)
    path = f"{path}.{key}"
    problems.unknown_keys(path, given, ReceiverCredential)
    value, secret = given.get("value"), given.get("secret")
    if value is not None and secret is not None:
        problems.add(path, "sets both value and secret; give exactly one")
    elif value is None and secret is None:
        problems.add(path, "sets neither value nor secret; give exactly one")
    if secret is None:
        return Credential(value, None)
    problems.unknown_keys(f"{path}.secret", secret, CredentialSecret)
    ref = {k: str(problems.required(f"{path}.secret", secret, k)) for k in ("name", "key")}
    return Credential(value, ref)


def _routes(problems: ArgProblems, given: Mapping[str, str], receivers: Mapping[str, Receiver]) -> dict[str, str]:
    known = ", ".join(sorted(receivers)) or "none"
    for severity, receiver in given.items():
        if severity not in SEVERITIES:
            problems.add(f"routes.{severity}", f"{severity!r} is not a severity; they are {', '.join(SEVERITIES)}")
        elif receiver not in receivers:
            problems.add(f"routes.{severity}", f"{receiver!r} is not one of args.receivers ({known})")
    return dict(given)
