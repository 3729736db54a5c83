"""`triton-platform:monitoring`: scraping, alert thresholds, routing and the operator's chart."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from platform_config.component_fields import from_component
from platform_config.secret_values import SECRET
from platform_config.types import (
    AlertFor,
    ChartRepository,
    ChartVersion,
    HelmChart,
    HttpsUrl,
    Labels,
    NamespaceName,
    ObjectName,
    ScrapeInterval,
    Strict,
)
from triton_platform.formats import DNS_LABEL
from triton_platform.monitoring_args import (
    DEFAULT_CHART,
    AlertReceiver,
    AlertThresholds,
    MonitoringArgs,
    ReceiverCredential,
)


class PrometheusStackChart(HelmChart):
    """The kube-prometheus-stack chart (prometheus-community/helm-charts)."""

    repository: ChartRepository = DEFAULT_CHART["repository"]
    """Chart repository URL."""

    version: ChartVersion = DEFAULT_CHART["version"]
    """Exact chart version. With `path`, the folder's `Chart.yaml` must declare this version."""


class AlertsConfig(Strict):
    """Alert thresholds and how long a condition must last before it fires (`for:`)."""

    latency_for: AlertFor = from_component(AlertThresholds, "latency_for")
    """How long p95 latency must stay above the SLO."""

    queue_time_ms: float = from_component(AlertThresholds, "queue_time_ms")
    """Average queue time per request above which the queue alert fires, in ms."""

    queue_time_for: AlertFor = from_component(AlertThresholds, "queue_time_for")
    """How long the queue time must stay above `queueTimeMs`."""

    failure_ratio: float = from_component(AlertThresholds, "failure_ratio", lt=1)
    """Failed/total inference requests above which the failure alert fires."""

    failure_for: AlertFor = from_component(AlertThresholds, "failure_for")
    """How long the failure ratio must stay above `failureRatio`."""

    gpu_memory_ratio: float = from_component(AlertThresholds, "gpu_memory_ratio")
    """GPU memory used/total above which the GPU memory alert fires."""

    gpu_memory_for: AlertFor = from_component(AlertThresholds, "gpu_memory_for")
    """How long GPU memory must stay above `gpuMemoryRatio`."""

    gpu_utilization_low: float = from_component(AlertThresholds, "gpu_utilization_low", lt=1)
    """GPU utilization below which the cost alert fires."""

    gpu_utilization_low_for: AlertFor = from_component(AlertThresholds, "gpu_utilization_low_for")
    """How long utilization must stay below `gpuUtilizationLow`."""

    backlog_at_max_for: AlertFor = from_component(AlertThresholds, "backlog_at_max_for")
    """How long the scaling signal may stay above its target (`scaling.busyRatioTarget` or `queueDepthTarget`) while a deployment runs at `replicas.max`."""

    replicas_unavailable_for: AlertFor = from_component(AlertThresholds, "replicas_unavailable_for")
    """How long a deployment may have fewer available replicas than desired."""

    model_missing_for: AlertFor = from_component(AlertThresholds, "model_missing_for")
    """How long a configured model may report no metrics (not loaded) while its deployment is scraped."""

    target_down_for: AlertFor = from_component(AlertThresholds, "target_down_for")
    """How long a Triton metrics endpoint may be unreachable."""

    keda_errors_for: AlertFor = from_component(AlertThresholds, "keda_errors_for")
    """How long KEDA may fail to read a trigger (its fallback replicas apply meanwhile)."""

    def args(self) -> AlertThresholds:
        """The thresholds as Monitoring takes them."""
        return {
            "latency_for": self.latency_for,
            "queue_time_ms": self.queue_time_ms,
            "queue_time_for": self.queue_time_for,
            "failure_ratio": self.failure_ratio,
            "failure_for": self.failure_for,
            "gpu_memory_ratio": self.gpu_memory_ratio,
            "gpu_memory_for": self.gpu_memory_for,
            "gpu_utilization_low": self.gpu_utilization_low,
            "gpu_utilization_low_for": self.gpu_utilization_low_for,
            "backlog_at_max_for": self.backlog_at_max_for,
            "replicas_unavailable_for": self.replicas_unavailable_for,
            "model_missing_for": self.model_missing_for,
            "target_down_for": self.target_down_for,
            "keda_errors_for": self.keda_errors_for,
        }


class PrometheusPeer(Strict):
    """The Prometheus that scrapes Triton; the NetworkPolicy admits it to the metrics port."""

    namespace: NamespaceName = from_component(MonitoringArgs, "prometheus_namespace")
    """Its namespace."""

    pod_labels: Labels = from_component(MonitoringArgs, "prometheus_pod_labels")
    """Its pod labels."""


class SecretRef(Strict):
    """A key of an existing Kubernetes Secret in the platform namespace."""

    name: ObjectName
    """Secret name."""

    key: Annotated[str, Field(pattern=r"^[-._a-zA-Z0-9]+$")]
    """Key in the Secret."""


class Credential(Strict):
    """A receiver credential: a Pulumi secret value (`secure:` in the stack file), or an existing Secret's key."""

    value: Annotated[str | None, SECRET] = None
    """The credential itself; must be a Pulumi secret (`pulumi config set --secret --path ...`), never plain text."""

    secret: SecretRef | None = None
    """Or: where an existing Secret holds it."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Credential:
        if (self.value is None) == (self.secret is None):
            raise ValueError("set exactly one of value (a Pulumi secret) and secret (an existing Secret's key)")
        return self

    def args(self) -> ReceiverCredential:
        """The credential as Monitoring takes it."""
        if self.secret is not None:
            return {"secret": {"name": self.secret.name, "key": self.secret.key}}
        assert self.value is not None, "_exactly_one holds"
        return {"value": self.value}


class SlackReceiver(Strict):
    """Slack incoming webhook."""

    webhook_url: Credential
    """The webhook URL."""

    channel: Annotated[str, Field(min_length=1)]
    """Channel, e.g. `#ml-alerts`."""


class PagerDutyReceiver(Strict):
    """PagerDuty Events API v2."""

    routing_key: Credential
    """The integration's routing key."""


class WebhookReceiver(Strict):
    """A generic webhook."""

    url: Credential
    """The URL to POST alerts to."""


class Receiver(Strict):
    """Where Alertmanager sends a class of alerts: one or more integrations."""

    slack: SlackReceiver | None = None
    """Post to Slack."""

    pagerduty: PagerDutyReceiver | None = None
    """Page through PagerDuty."""

    webhook: WebhookReceiver | None = None
    """POST to a webhook."""

    @model_validator(mode="after")
    def _has_integration(self) -> Receiver:
        if not (self.slack or self.pagerduty or self.webhook):
            raise ValueError("a receiver needs at least one of slack, pagerduty, webhook")
        return self

    def args(self) -> AlertReceiver:
        """The receiver as Monitoring takes it."""
        out: AlertReceiver = {}
        if self.slack:
            out["slack"] = {"webhook_url": self.slack.webhook_url.args(), "channel": self.slack.channel}
        if self.pagerduty:
            out["pagerduty"] = {"routing_key": self.pagerduty.routing_key.args()}
        if self.webhook:
            out["webhook"] = {"url": self.webhook.url.args()}
        return out


Severity = Literal["critical", "warning", "info"]


class MonitoringConfig(Strict):
    """Prometheus scraping, rules, Alertmanager routing and Grafana dashboards."""

    mode: Literal["install", "existing"] = from_component(MonitoringArgs, "mode")
    """`install`: the kube-prometheus-stack chart, pinned, in `prometheus.namespace`. `existing`: an operator already runs; only the platform's ServiceMonitor, rules, routing and dashboards are created."""

    chart: PrometheusStackChart = PrometheusStackChart()
    """The chart, for mode `install`."""

    prometheus: PrometheusPeer = PrometheusPeer()
    """Which Prometheus scrapes Triton."""

    selector_labels: Labels = from_component(MonitoringArgs, "selector_labels")
    """Labels the Prometheus Operator selects ServiceMonitors, rules and AlertmanagerConfigs by (kube-prometheus-stack's `release` label)."""

    receivers: dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=63)], Receiver] = {}
    """Alertmanager receivers by name."""

    routes: dict[Severity, Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]] = {}
    """Receiver for each severity; a severity without one is dropped (dev)."""

    runbook_base_url: HttpsUrl = from_component(MonitoringArgs, "runbook_base_url")
    """Every alert's runbook_url is this plus `#<alert name in lower case>`."""

    grafana_folder: str = from_component(MonitoringArgs, "grafana_folder", min_length=1)
    """Grafana folder the dashboards land in (sidecar annotation)."""

    scrape_interval: ScrapeInterval = from_component(MonitoringArgs, "scrape_interval")
    """How often Prometheus scrapes Triton's metrics port; 1s-2m (Prometheus marks a series stale 5m after its last sample)."""

    alerts: AlertsConfig = AlertsConfig()
    """Alert thresholds; each `...For` duration is 0s-1d."""
