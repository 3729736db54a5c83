"""`triton-platform:monitoring`: scraping, alert thresholds, routing and the operator's chart."""

from __future__ import annotations

from typing import Annotated, Literal

from platform_config.component_fields import arg_format, component_rule, from_component
from platform_config.secret_values import SECRET
from platform_config.types import (
    ChartRepository,
    ChartVersion,
    HelmChart,
    Strict,
)
from triton_platform.monitoring import monitoring_args
from triton_platform.monitoring.monitoring_args import (
    DEFAULT_CHART,
)
from triton_platform.monitoring.monitoring_settings import alert_rules, routing_rules

# [[[cog
# import cog
# from platform_config.component_fields import stack_fields
# from triton_platform.monitoring import monitoring_args
# def fields(args_type, **options): cog.outl(stack_fields(args_type, **options))
# ]]]
# [[[end]]]


class PrometheusStackChart(HelmChart):
    """The kube-prometheus-stack chart (prometheus-community/helm-charts)."""

    repository: ChartRepository = DEFAULT_CHART["repository"]
    """Chart repository URL."""

    version: ChartVersion = DEFAULT_CHART["version"]
    """Exact chart version. With `path`, the folder's `Chart.yaml` must declare this version."""


class StorageConfig(Strict):
    """Persistent volumes for Prometheus and Alertmanager, mode `install`."""

    # [[[cog fields(monitoring_args.MonitoringStorage)]]]
    # fmt: off
    storage_class_name: Annotated[str, arg_format(monitoring_args.MonitoringStorage, "storage_class_name")] | None = from_component(monitoring_args.MonitoringStorage, "storage_class_name")
    """The StorageClass of the claims: a ReadWriteOnce block class (Prometheus does not support NFS-like file systems: https://prometheus.io/docs/prometheus/latest/storage/). Default: the cluster's default class."""

    prometheus_size: Annotated[str, arg_format(monitoring_args.MonitoringStorage, "prometheus_size")] | None = from_component(monitoring_args.MonitoringStorage, "prometheus_size")
    """Each Prometheus replica's volume, a Kubernetes quantity. Default: derived from `retention`, the scrape interval and the series the platform and the chart produce (triton_platform/monitoring/prometheus_storage.py)."""

    alertmanager_size: Annotated[str, arg_format(monitoring_args.MonitoringStorage, "alertmanager_size")] = from_component(monitoring_args.MonitoringStorage, "alertmanager_size")
    """Each Alertmanager replica's volume (silences and the notification log), a quantity."""
    # fmt: on
    # [[[end]]]


class AlertsConfig(Strict):
    """Alert thresholds and how long a condition must last before it fires (`for:`)."""

    # [[[cog fields(monitoring_args.AlertThresholds)]]]
    # fmt: off
    latency_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "latency_for")] = from_component(monitoring_args.AlertThresholds, "latency_for")
    """How long p95 latency must stay above the SLO."""

    queue_time_ms: float = from_component(monitoring_args.AlertThresholds, "queue_time_ms")
    """Average queue time per request above which the queue alert fires, in ms; above 0."""

    queue_time_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "queue_time_for")] = from_component(monitoring_args.AlertThresholds, "queue_time_for")
    """How long the queue time must stay above `queueTimeMs`."""

    failure_ratio: float = from_component(monitoring_args.AlertThresholds, "failure_ratio")
    """Failed/total inference requests above which the failure alert fires; between 0 and 1."""

    failure_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "failure_for")] = from_component(monitoring_args.AlertThresholds, "failure_for")
    """How long the failure ratio must stay above `failureRatio`."""

    gpu_memory_ratio: float = from_component(monitoring_args.AlertThresholds, "gpu_memory_ratio")
    """GPU memory used/total above which the GPU memory alert fires; above 0, at most 1."""

    gpu_memory_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "gpu_memory_for")] = from_component(monitoring_args.AlertThresholds, "gpu_memory_for")
    """How long GPU memory must stay above `gpuMemoryRatio`."""

    gpu_utilization_low: float = from_component(monitoring_args.AlertThresholds, "gpu_utilization_low")
    """GPU utilization below which the cost alert fires; between 0 and 1."""

    gpu_utilization_low_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "gpu_utilization_low_for")] = from_component(monitoring_args.AlertThresholds, "gpu_utilization_low_for")
    """How long utilization must stay below `gpuUtilizationLow`."""

    backlog_at_max_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "backlog_at_max_for")] = from_component(monitoring_args.AlertThresholds, "backlog_at_max_for")
    """How long a deployment's scaling signal may stay above its target while it runs `max_replicas`."""

    replicas_unavailable_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "replicas_unavailable_for")] = from_component(monitoring_args.AlertThresholds, "replicas_unavailable_for")
    """How long a deployment may have fewer available replicas than desired."""

    model_missing_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "model_missing_for")] = from_component(monitoring_args.AlertThresholds, "model_missing_for")
    """How long a model may report no metrics (not loaded) while its deployment is scraped."""

    target_down_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "target_down_for")] = from_component(monitoring_args.AlertThresholds, "target_down_for")
    """How long a Triton metrics endpoint may be unreachable."""

    keda_errors_for: Annotated[str, arg_format(monitoring_args.AlertThresholds, "keda_errors_for")] = from_component(monitoring_args.AlertThresholds, "keda_errors_for")
    """How long KEDA may fail to read a trigger (its fallback replicas apply meanwhile)."""
    # fmt: on
    # [[[end]]]

    _rules = component_rule(alert_rules)


class PrometheusPeer(Strict):
    """The Prometheus that scrapes Triton; the NetworkPolicy admits it to the metrics port."""

    # The stack groups Monitoring's `prometheus_namespace` and `prometheus_pod_labels` here.
    # [[[cog fields(monitoring_args.MonitoringArgs, only=["prometheus_namespace", "prometheus_pod_labels"], names={"prometheus_namespace": "namespace", "prometheus_pod_labels": "pod_labels"})]]]
    # fmt: off
    namespace: Annotated[str, arg_format(monitoring_args.MonitoringArgs, "prometheus_namespace")] = from_component(monitoring_args.MonitoringArgs, "prometheus_namespace")
    """Namespace of the Prometheus that scrapes Triton (mode `install` creates it and installs the chart there)."""

    pod_labels: dict[Annotated[str, arg_format(monitoring_args.MonitoringArgs, "prometheus_pod_labels", "key")], Annotated[str, arg_format(monitoring_args.MonitoringArgs, "prometheus_pod_labels")]] = from_component(monitoring_args.MonitoringArgs, "prometheus_pod_labels")
    """Labels of that Prometheus' pods, handed on as `metricsPodLabels` so other components admit its scrapes."""
    # fmt: on
    # [[[end]]]


class SecretRef(Strict):
    """A key of an existing Kubernetes Secret in the platform namespace."""

    # [[[cog fields(monitoring_args.CredentialSecret)]]]
    # fmt: off
    name: Annotated[str, arg_format(monitoring_args.CredentialSecret, "name")] = from_component(monitoring_args.CredentialSecret, "name")
    """The Secret's name."""

    key: Annotated[str, arg_format(monitoring_args.CredentialSecret, "key")] = from_component(monitoring_args.CredentialSecret, "key")
    """The key in it that holds the credential."""
    # fmt: on
    # [[[end]]]


class Credential(Strict):
    """A receiver credential: a Pulumi secret value (`secure:` in the stack file), or an existing Secret's key."""

    # [[[cog fields(monitoring_args.ReceiverCredential, metadata={"value": "SECRET"})]]]
    # fmt: off
    value: Annotated[str | None, SECRET] = from_component(monitoring_args.ReceiverCredential, "value")
    """The credential (a webhook URL, a routing key). The component marks it secret and stores it in a Secret of its own, `alertmanager-<receiver>`; give a Pulumi secret so it is never plain text in the program's config either. Default: unset (then `secret`)."""

    secret: SecretRef | None = from_component(monitoring_args.ReceiverCredential, "secret")
    """Where an existing Secret holds it. Default: unset (then `value`)."""
    # fmt: on
    # [[[end]]]


class SlackReceiver(Strict):
    """Slack incoming webhook."""

    # [[[cog fields(monitoring_args.SlackReceiver)]]]
    # fmt: off
    webhook_url: Credential = from_component(monitoring_args.SlackReceiver, "webhook_url")
    """The webhook URL."""

    channel: str = from_component(monitoring_args.SlackReceiver, "channel")
    """The channel to post to, e.g. `#ml-alerts`."""
    # fmt: on
    # [[[end]]]


class PagerDutyReceiver(Strict):
    """PagerDuty Events API v2."""

    # [[[cog fields(monitoring_args.PagerDutyReceiver)]]]
    # fmt: off
    routing_key: Credential = from_component(monitoring_args.PagerDutyReceiver, "routing_key")
    """The integration's routing key."""
    # fmt: on
    # [[[end]]]


class WebhookReceiver(Strict):
    """A generic webhook."""

    # [[[cog fields(monitoring_args.WebhookReceiver)]]]
    # fmt: off
    url: Credential = from_component(monitoring_args.WebhookReceiver, "url")
    """The URL to POST alerts to."""
    # fmt: on
    # [[[end]]]


class Receiver(Strict):
    """Where Alertmanager sends a class of alerts: one or more integrations."""

    # [[[cog fields(monitoring_args.AlertReceiver)]]]
    # fmt: off
    slack: SlackReceiver | None = from_component(monitoring_args.AlertReceiver, "slack")
    """Post to Slack."""

    pagerduty: PagerDutyReceiver | None = from_component(monitoring_args.AlertReceiver, "pagerduty")
    """Page through PagerDuty."""

    webhook: WebhookReceiver | None = from_component(monitoring_args.AlertReceiver, "webhook")
    """POST to a webhook."""
    # fmt: on
    # [[[end]]]


Severity = Literal["critical", "warning", "info"]


class MonitoringConfig(Strict):
    """Prometheus scraping, rules, Alertmanager routing and Grafana dashboards."""

    # [[[cog fields(monitoring_args.MonitoringArgs, only=['mode', 'selector_labels', 'receivers', 'routes', 'runbook_base_url', 'grafana_folder', 'scrape_interval', 'alerts', 'replicas', 'retention', 'storage', 'priority_class_name'])]]]
    # fmt: off
    mode: Literal["existing", "install"] = from_component(monitoring_args.MonitoringArgs, "mode")
    """`existing`: a Prometheus Operator already runs; only the ServiceMonitor, rules, alert routing and dashboards are created. `install`: the kube-prometheus-stack chart too, in `prometheus.namespace`, and everything else waits for it (its CRDs)."""

    selector_labels: dict[Annotated[str, arg_format(monitoring_args.MonitoringArgs, "selector_labels", "key")], Annotated[str, arg_format(monitoring_args.MonitoringArgs, "selector_labels")]] = from_component(monitoring_args.MonitoringArgs, "selector_labels")
    """Labels the Prometheus Operator selects ServiceMonitors, rules and AlertmanagerConfigs by (kube-prometheus-stack's `release` label)."""

    receivers: dict[Annotated[str, arg_format(monitoring_args.MonitoringArgs, "receivers", "key")], Receiver] = from_component(monitoring_args.MonitoringArgs, "receivers")
    """Alertmanager receivers by name (any but `null`, which takes what no route claims)."""

    routes: dict[Annotated[str, arg_format(monitoring_args.MonitoringArgs, "routes", "key")], Annotated[str, arg_format(monitoring_args.MonitoringArgs, "routes")]] = from_component(monitoring_args.MonitoringArgs, "routes")
    """The receiver for each severity (`critical`, `warning`, `info`), by name; alerts of a severity without one go nowhere."""

    runbook_base_url: Annotated[str, arg_format(monitoring_args.MonitoringArgs, "runbook_base_url")] = from_component(monitoring_args.MonitoringArgs, "runbook_base_url")
    """Every alert's `runbook_url` is this page with `#<alert name in lower case>` as its fragment: an https:// URL without a fragment of its own (a query is kept)."""

    grafana_folder: str = from_component(monitoring_args.MonitoringArgs, "grafana_folder")
    """Grafana folder the dashboards land in (the dashboard sidecar's folder annotation)."""

    scrape_interval: Annotated[str, arg_format(monitoring_args.MonitoringArgs, "scrape_interval")] = from_component(monitoring_args.MonitoringArgs, "scrape_interval")
    """How often Prometheus scrapes Triton's metrics port, a Prometheus duration from 1s to 2m (Prometheus marks a series stale 5m after its last sample)."""

    alerts: AlertsConfig = from_component(monitoring_args.MonitoringArgs, "alerts")
    """Alert thresholds and durations."""

    replicas: int = from_component(monitoring_args.MonitoringArgs, "replicas")
    """Prometheus and Alertmanager replicas in mode `install`, 1-5. From 2, Prometheus runs as an HA set (each replica scrapes every target and evaluates every rule on its own; the operator drops its `prometheus_replica` label from alerts, so the clustered Alertmanagers send each once), and each gets a PodDisruptionBudget of `minAvailable: 1`."""

    retention: Annotated[str, arg_format(monitoring_args.MonitoringArgs, "retention")] = from_component(monitoring_args.MonitoringArgs, "retention")
    """How long Prometheus keeps samples, a Prometheus duration from 1h to 1y."""

    storage: StorageConfig | None = from_component(monitoring_args.MonitoringArgs, "storage")
    """Persistent volumes for Prometheus and Alertmanager, mode `install`. Default: none, an emptyDir: every restart or reschedule loses the history (and Alertmanager's silences)."""

    priority_class_name: Annotated[str, arg_format(monitoring_args.MonitoringArgs, "priority_class_name")] | None = from_component(monitoring_args.MonitoringArgs, "priority_class_name")
    """A PriorityClass this component creates, mode `install`, of value 200000 (above Triton serving's 100000), for Prometheus, Alertmanager, the operator and kube-state-metrics: under node pressure the scaling signal is the last thing evicted. Default: unset (the cluster's default priority)."""
    # fmt: on
    # [[[end]]]

    chart: PrometheusStackChart = PrometheusStackChart()
    """The chart, for mode `install`."""

    prometheus: PrometheusPeer = PrometheusPeer()
    """Which Prometheus scrapes Triton."""

    _rules = component_rule(routing_rules)
