"""`MonitoringArgs`, what a user gives `Monitoring`, declared once: its builders read the same types, checked.

The Args are plain and typed: Pulumi infers the component's schema from them, so they may come from any Pulumi
language as JSON (whole numbers as floats, optional keys absent). Each key's default, bounds and format are
declared beside its TypedDict (`declare`, triton_platform/args/arg_schema.py); `monitoring_settings`
(triton_platform/monitoring/monitoring_settings.py) checks Args against them and the rules that span keys, and
raises every problem at once, each naming its Arg (triton_platform/args/arg_problems.py).

No `from __future__ import annotations` here: TypedDict reads `NotRequired` only from evaluated annotations,
and Pulumi's schema inference reads the same.
"""

import re
from typing import NotRequired, TypedDict

import pulumi

from triton_platform.args.arg_schema import Setting, declare
from triton_platform.args.durations import PROM_DURATION
from triton_platform.args.excerpts import excerpt
from triton_platform.args.formats import (
    ALERT_FOR,
    DNS1035_LABEL,
    DNS_LABEL,
    IMAGE_DIGEST,
    IMAGE_TAG,
    KUBE_VERSION,
    LABEL_KEY_FORMAT,
    LABEL_VALUE_FORMAT,
    MODEL,
    NAMESPACE,
    OBJECT_NAME,
    PRIORITY_CLASS,
    PROMETHEUS_VOLUME,
    RUNBOOK_BASE_URL,
    SCRAPE_INTERVAL,
    VOLUME_SIZE,
    Format,
    duration_within,
)
from triton_platform.args.integer_limits import INT32_MAX
from triton_platform.kube.helm_chart import ChartSource
from triton_platform.scaling_signal import SIGNAL_KINDS
from triton_platform.token_signal import TOKEN_METRICS

COMPONENT = "Monitoring"
INSTALL_ONLY = ("replicas", "retention", "storage", "priority_class_name")
"""Settings of the Prometheus and Alertmanager mode `install` runs: refused in mode `existing`, where they would
do nothing."""
MODES = ("existing", "install")
"""`existing`: an operator already runs; `install`: the component installs kube-prometheus-stack."""
DEFAULT_CHART: ChartSource = {"version": "88.5.3", "repository": "https://prometheus-community.github.io/helm-charts"}
"""kube-prometheus-stack, pinned, for mode `install`."""
DASHBOARD_TAGS = ("triton", "triton-platform")
"""Grafana tags every dashboard carries unless told otherwise."""
NULL_RECEIVER = "null"
"""Takes what no route claims: dev, or a severity the stack routes nowhere. No receiver of a stack's may take it."""
SEVERITIES = ("critical", "warning", "info")
"""The `severity` label of every alert (triton_platform/monitoring/monitoring_rules.py); routes pick receivers by it."""
INTEGRATIONS = ("slack", "pagerduty", "webhook")
"""What a receiver may send to."""
DASHBOARD_LABEL = {"grafana_dashboard": "1"}
"""The label kube-prometheus-stack's Grafana sidecar loads dashboards by (triton_platform/monitoring/dashboards.py)."""
POD_SECURITY_LABELS = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/warn": "restricted",
}
"""The Pod Security labels of the namespace mode `install` creates: the chart's components pass the baseline
profile; warn about everything restricted would refuse."""
MAX_CAPACITY_RPS = 10_000_000.0
"""The most requests per second one pod of a model may be said to serve: far above any GPU's, a unit slip beyond."""
MAX_MONITORING_REPLICAS = 5
"""More Prometheus replicas add no availability, only copies of every series."""
RETENTION = Format(PROM_DURATION, rule=duration_within("1h", "1y", "a retention"))
LATENCY_SLO_MAX_MS = 3_600_000
"""An hour: far above any inference request's latency, so a value past it is a slip of units, not an objective."""


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
    """How long p95 latency must stay above the SLO. Default: `5m`."""

    queue_time_ms: NotRequired[float]
    """Average queue time per request above which the queue alert fires, in ms; above 0. Default: `20`."""

    queue_time_for: NotRequired[str]
    """How long the queue time must stay above `queue_time_ms`. Default: `5m`."""

    failure_ratio: NotRequired[float]
    """Failed/total inference requests above which the failure alert fires; between 0 and 1. Default: `0.01`."""

    failure_for: NotRequired[str]
    """How long the failure ratio must stay above `failure_ratio`. Default: `5m`."""

    gpu_memory_ratio: NotRequired[float]
    """GPU memory used/total above which the GPU memory alert fires; above 0, at most 1. Default: `0.8`."""

    gpu_memory_for: NotRequired[str]
    """How long GPU memory must stay above `gpu_memory_ratio`. Default: `10m`."""

    gpu_utilization_low: NotRequired[float]
    """GPU utilization below which the cost alert fires; between 0 and 1. Default: `0.3`."""

    gpu_utilization_low_for: NotRequired[str]
    """How long utilization must stay below `gpu_utilization_low`. Default: `2h`."""

    backlog_at_max_for: NotRequired[str]
    """How long a deployment's scaling signal may stay above its target while it runs `max_replicas`. Default: `10m`."""

    replicas_unavailable_for: NotRequired[str]
    """How long a deployment may have fewer available replicas than desired. Default: `10m`."""

    model_missing_for: NotRequired[str]
    """How long a model may report no metrics (not loaded) while its deployment is scraped. Default: `10m`."""

    target_down_for: NotRequired[str]
    """How long a Triton metrics endpoint may be unreachable. Default: `5m`."""

    keda_errors_for: NotRequired[str]
    """How long KEDA may fail to read a trigger (its fallback replicas apply meanwhile). Default: `5m`."""


class DeploymentSignal(TypedDict):
    """What a deployment scales on (triton_platform/scaling_signal.py): Monitoring records it per replica, draws it
    against its target and alerts when it stays above the target at the replica ceiling."""

    kind: str
    """`busy-ratio`: the share of time each pod's busiest model keeps its instances running batches.
    `queue-depth`: pending requests per replica. `demand`: requests arriving per second (served or rejected) over
    what a pod carries, its models' shares added, per replica."""

    target: float
    """The per-replica value the autoscaler aims for: a busy ratio or a demand above 0 and at most 1 (for demand,
    the share of a pod's capacity each pod should carry; the rest is headroom), or a pending-request count above
    0."""

    instances_per_pod: NotRequired[pulumi.Input[dict[str, int]]]
    """For `busy-ratio`, and required there: the instances one pod runs of each model the ratio reads, by model
    name (each one of `models`; ensembles run none and are left out): TritonServing's `instances_per_pod`
    output for the deployment. Default: unset (`queue-depth`)."""

    capacity_per_pod: NotRequired[dict[str, float]]
    """For `demand`, and required there: the requests per second one pod serves of each model alone at full
    batches (its instances x max batch size / the profiled seconds of a full batch), by model name (each one of
    `models`; ensembles run none and are left out). The stack's program derives it from each model's latency
    profile (platform_config/capacity.py). Default: unset (other kinds)."""


class MonitoredDeployment(TypedDict):
    """A Deployment of Triton that the rules, alerts and a dashboard watch."""

    object_name: pulumi.Input[str]
    """Its `metadata.name` and its Service's, e.g. `triton-general` (so a DNS-1035 label, as Service names are):
    the `deployment` label of its series. TritonServing's `deployment_names` output holds it."""

    max_replicas: int
    """Its replica ceiling, at least 1: the at-ceiling alert fires there, and the dashboard draws it."""

    models: pulumi.Input[list[str]]
    """The models it serves: each gets a not-loaded alert. TritonServing's `models` output holds them."""

    signal: DeploymentSignal
    """What it scales on."""

    wake_budget_seconds: NotRequired[int]
    """Set when it idles at zero and wakes on a request through the KEDA HTTP add-on's interceptor (TritonServing's
    `wake_on_request`): the longest a request may wait for the wake, 1-3600. Its pods are then scraped through
    their own Service, `<object_name>-pods`, the interceptor through its wake Service in `interceptor_namespace`,
    and `TritonWakeOverBudget` fires when requests wait at zero ready replicas for longer. Default: unset."""


class TokenObjectives(TypedDict):
    """Token latency objectives of one streaming (decoupled) model, in milliseconds: how soon its first token comes
    (time to first token, TTFT) and how far apart the tokens after it are (inter-token latency, ITL). Monitoring
    records each percentile from the histograms `metrics` names and alerts above its objective
    (triton_platform/monitoring/token_rules.py)."""

    time_to_first_token_p95_ms: int
    """p95 TTFT objective, 1 to 3600000 ms: above it `TritonTimeToFirstTokenAboveSLO` fires."""

    time_to_first_token_p99_ms: NotRequired[int]
    """p99 TTFT objective, 1 to 3600000 ms and at least the p95's: above it `TritonTimeToFirstTokenP99AboveSLO`
    fires. Default: none (no p99 objective, no p99 alert)."""

    inter_token_p95_ms: NotRequired[int]
    """p95 ITL objective, 1 to 3600000 ms: above it `TritonInterTokenLatencyAboveSLO` fires. Only with `metrics`
    `vllm`: Triton itself reports no inter-token latency. Default: none."""

    inter_token_p99_ms: NotRequired[int]
    """p99 ITL objective, 1 to 3600000 ms and at least the p95's: above it `TritonInterTokenLatencyP99AboveSLO`
    fires. Only with `metrics` `vllm`. Default: none."""

    metrics: NotRequired[str]
    """Which series report the model's tokens. `triton`: Triton's first-response histogram
    (`nv_inference_first_response_histogram_ms`), which Triton 2.52 (24.11) and later export for a decoupled model
    under `--metrics-config histogram_latencies=true` (TritonServing sets it where a deployment serves one); it
    gives TTFT only. `vllm`: the vLLM backend's histograms (`vllm:time_to_first_token_seconds`,
    `vllm:time_per_output_token_seconds`), which it reports when the model's config.pbtxt sets the parameter
    `REPORT_CUSTOM_METRICS` to `yes`. `tensorrtllm`: as `triton` for TTFT (the TensorRT-LLM backend reports gauges
    only), and its KV-cache block gauges (`nv_trt_llm_kv_cache_block_metrics`) for a `kv-cache` token trigger
    (`token_queries`). Default: `triton`."""


class MonitoringStorage(TypedDict):
    """Persistent volumes for Prometheus and Alertmanager in mode `install`: each replica claims its own through
    the Prometheus Operator's `storage.volumeClaimTemplate`, so its data outlives a restart or a reschedule."""

    storage_class_name: NotRequired[str]
    """The StorageClass of the claims: a ReadWriteOnce block class (Prometheus does not support NFS-like file
    systems: https://prometheus.io/docs/prometheus/latest/storage/). Default: the cluster's default class."""

    prometheus_size: NotRequired[str]
    """Each Prometheus replica's volume, a Kubernetes quantity. Default: derived from `retention`, the scrape
    interval and the series the platform and the chart produce (triton_platform/monitoring/prometheus_storage.py)."""

    alertmanager_size: NotRequired[str]
    """Each Alertmanager replica's volume (silences and the notification log), a quantity. Default: `1Gi`."""


class MonitoringArgs(TypedDict):
    """What `Monitoring` needs: where the watched Deployments run, which they are, and how to watch them."""

    namespace: str
    """Namespace of the monitored Deployments and Services; the ServiceMonitor, rules, alert routing, receiver
    Secrets and dashboards go there too."""

    latency_slo_ms: int
    """p95 request latency objective in milliseconds, for every model, from 1 to 3600000 (an hour): above it
    `TritonLatencyAboveSLO` fires."""

    latency_p99_slo_ms: NotRequired[int]
    """p99 request latency objective in milliseconds, for every model, from 1 to 3600000 and at least
    `latency_slo_ms`: above it `TritonLatencyP99AboveSLO` fires. Default: none (no p99 objective, no p99 alert)."""

    deployments: NotRequired[dict[str, MonitoredDeployment]]
    """The Deployments to watch, by key; the key names the dashboard's resource (`<name>-<key>-dashboard`). The
    ServiceMonitor scrapes their Services (by `object_name`); with none, nothing is scraped and only the
    namespace-wide rules and alerts are made. Default: none."""

    token_objectives: NotRequired[dict[str, TokenObjectives]]
    """Token latency objectives by model: each a streaming (decoupled) model a monitored deployment serves.
    Default: none."""

    mode: NotRequired[str]
    """`existing`: a Prometheus Operator already runs; only the ServiceMonitor, rules, alert routing and dashboards
    are created. `install`: the kube-prometheus-stack chart too, in `prometheus_namespace`, and everything else
    waits for it (its CRDs). Default: `existing`."""

    chart: NotRequired[ChartSource]
    """The kube-prometheus-stack chart, for mode `install`.
    Default: `{"version": "88.5.3", "repository": "https://prometheus-community.github.io/helm-charts"}`."""

    prometheus_namespace: NotRequired[str]
    """Namespace of the Prometheus that scrapes Triton (mode `install` creates it and installs the chart there).
    Default: `monitoring`."""

    prometheus_pod_labels: NotRequired[dict[str, str]]
    """Labels of that Prometheus' pods, handed on as `metrics_pod_labels` so other components admit its scrapes.
    Default: `{"app.kubernetes.io/name": "prometheus"}`."""

    selector_labels: NotRequired[dict[str, str]]
    """Labels the Prometheus Operator selects ServiceMonitors, rules and AlertmanagerConfigs by
    (kube-prometheus-stack's `release` label). Default: `{"release": "kube-prometheus-stack"}`."""

    receivers: NotRequired[dict[str, AlertReceiver]]
    """Alertmanager receivers by name (any but `null`, which takes what no route claims). Default: none."""

    routes: NotRequired[dict[str, str]]
    """The receiver for each severity (`critical`, `warning`, `info`), by name; alerts of a severity without one
    go nowhere. Default: none."""

    runbook_base_url: NotRequired[str]
    """Every alert's `runbook_url` is this page with `#<alert name in lower case>` as its fragment: an https://
    URL without a fragment of its own (a query is kept).
    Default: `https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md`."""

    grafana_folder: NotRequired[str]
    """Grafana folder the dashboards land in (the dashboard sidecar's folder annotation). Default: `Triton`."""

    scrape_interval: NotRequired[str]
    """How often Prometheus scrapes Triton's metrics port, a Prometheus duration from 1s to 2m (Prometheus marks a
    series stale 5m after its last sample). Default: `15s`."""

    alerts: NotRequired[AlertThresholds]
    """Alert thresholds and durations. Default: each field's default."""

    labels: NotRequired[dict[str, str]]
    """Labels every object created carries (the operator's selector labels are added where it selects).
    Default: none."""

    interceptor_namespace: NotRequired[str]
    """Namespace of the KEDA HTTP add-on's interceptor, for deployments with `wake_budget_seconds`. Default: `keda`."""

    scaling_enabled: NotRequired[bool]
    """Whether an autoscaler (KEDA) scales the Deployments: adds the KEDA-errors and at-max-replicas alerts.
    Default: `false`."""

    dcgm_metrics: NotRequired[bool]
    """Whether a DCGM exporter's metrics reach this Prometheus (the GPU pool's own exporter, or the NVIDIA GPU
    Operator's). Renders the GPU health rules, alerts and dashboard panels. Default: `false`."""

    dashboard_tags: NotRequired[list[str]]
    """Grafana tags of every dashboard. Default: `["triton", "triton-platform"]`."""

    kube_version: NotRequired[str]
    """Kubernetes version the chart is templated for when the program renders manifests instead of deploying.
    Only used in mode `install`. Default: unset (the API server's)."""

    replicas: NotRequired[int]
    """Prometheus and Alertmanager replicas in mode `install`, 1-5. From 2, Prometheus runs as an HA set (each
    replica scrapes every target and evaluates every rule on its own; the operator drops its `prometheus_replica`
    label from alerts, so the clustered Alertmanagers send each once), and each gets a PodDisruptionBudget of
    `minAvailable: 1`. Default: `1`."""

    retention: NotRequired[str]
    """How long Prometheus keeps samples, a Prometheus duration from 1h to 1y. Default: `15d`."""

    storage: NotRequired[MonitoringStorage]
    """Persistent volumes for Prometheus and Alertmanager, mode `install`. Default: none, an emptyDir: every
    restart or reschedule loses the history (and Alertmanager's silences)."""

    priority_class_name: NotRequired[str]
    """A PriorityClass this component creates, mode `install`, of value 200000 (above Triton serving's 100000),
    for Prometheus, Alertmanager, the operator and kube-state-metrics: under node pressure the scaling signal
    is the last thing evicted. Default: unset (the cluster's default priority)."""

    managed_control_plane: NotRequired[bool]
    """Whether the cloud runs the control plane (EKS, GKE, AKS), mode `install`: then the chart's scrape jobs and
    rules for kube-controller-manager, kube-scheduler and etcd, which no pod can reach there, are off (their
    Down alerts would fire forever). Default: `false`."""

    image_digests: NotRequired[dict[str, str]]
    """The charts' images by digest, mode `install`: each container (and the operator's Prometheus and
    Alertmanager images) whose `<image>:<tag>` is a key runs `<image>:<tag>@<digest>` (`stackctl pin-images`
    writes them); an image not listed runs by tag, pulled on every start. Default: none."""


def _secret_key_problem(key: str) -> str | None:
    if re.fullmatch(r"[-._a-zA-Z0-9]+", key) and key not in (".", ".."):
        return None
    return f"must be a Secret key (letters, digits, '-', '_' and '.'; not '.' or '..'); got {excerpt(key)}"


SECRET_KEY = Format(max_length=253, rule=_secret_key_problem)
"""A key of a Secret's data (apimachinery IsConfigMapKey): up to 253 letters, digits, '-', '_' and '.'."""
RECEIVER_NAME = Format(DNS_LABEL, 63)
"""A receiver's name: Alertmanager's, and the Secret `alertmanager-<name>` that holds its credentials."""
SEVERITY = Format(
    rule=lambda key: None if key in SEVERITIES else f"{excerpt(key)} is not one of {', '.join(SEVERITIES)}"
)
WATCHED_KEY = Format(DNS_LABEL, 63)
"""A key of `deployments`: it names the dashboard's resource, `<name>-<key>-dashboard`."""
SERVICE_NAME = Format(DNS1035_LABEL, 63)
"""A Service's name (apimachinery ValidateServiceName): a DNS-1035 label."""

declare(
    MonitoringStorage,
    storage_class_name=Setting(format=OBJECT_NAME),
    prometheus_size=Setting(format=PROMETHEUS_VOLUME),
    alertmanager_size=Setting(default="1Gi", format=VOLUME_SIZE),
)
declare(CredentialSecret, name=Setting(format=OBJECT_NAME), key=Setting(format=SECRET_KEY))
declare(ReceiverCredential, value=Setting(min_length=1), secret=Setting())
declare(SlackReceiver, webhook_url=Setting(), channel=Setting(min_length=1))
declare(PagerDutyReceiver, routing_key=Setting())
declare(WebhookReceiver, url=Setting())
declare(AlertReceiver, slack=Setting(), pagerduty=Setting(), webhook=Setting())
declare(
    AlertThresholds,
    latency_for=Setting(default="5m", format=ALERT_FOR),
    queue_time_ms=Setting(default=20.0, above=0),
    queue_time_for=Setting(default="5m", format=ALERT_FOR),
    # Above 0 and below 1 (monitoring_settings.py `_BELOW_ONE`): a failure ratio of 1 never fires, a low-utilization
    # mark of 1 nearly always.
    failure_ratio=Setting(default=0.01, above=0, maximum=1),
    failure_for=Setting(default="5m", format=ALERT_FOR),
    gpu_memory_ratio=Setting(default=0.8, above=0, maximum=1),
    gpu_memory_for=Setting(default="10m", format=ALERT_FOR),
    gpu_utilization_low=Setting(default=0.3, above=0, maximum=1),
    gpu_utilization_low_for=Setting(default="2h", format=ALERT_FOR),
    backlog_at_max_for=Setting(default="10m", format=ALERT_FOR),
    replicas_unavailable_for=Setting(default="10m", format=ALERT_FOR),
    model_missing_for=Setting(default="10m", format=ALERT_FOR),
    target_down_for=Setting(default="5m", format=ALERT_FOR),
    keda_errors_for=Setting(default="5m", format=ALERT_FOR),
)
declare(
    DeploymentSignal,
    kind=Setting(choices=SIGNAL_KINDS),
    # At most 1 for a busy ratio (monitoring_settings.py `_signal`): it never exceeds 1, so the target would never
    # be reached.
    target=Setting(above=0),
    instances_per_pod=Setting(keys=MODEL, minimum=1, maximum=INT32_MAX),
    # A pod serving more than 10 million requests per second of one model is a unit slip.
    capacity_per_pod=Setting(keys=MODEL, above=0, maximum=MAX_CAPACITY_RPS),
)
declare(
    TokenObjectives,
    time_to_first_token_p95_ms=Setting(minimum=1, maximum=LATENCY_SLO_MAX_MS),
    time_to_first_token_p99_ms=Setting(minimum=1, maximum=LATENCY_SLO_MAX_MS),
    inter_token_p95_ms=Setting(minimum=1, maximum=LATENCY_SLO_MAX_MS),
    inter_token_p99_ms=Setting(minimum=1, maximum=LATENCY_SLO_MAX_MS),
    metrics=Setting(default=TOKEN_METRICS[0], choices=TOKEN_METRICS),
)
declare(
    MonitoredDeployment,
    object_name=Setting(format=SERVICE_NAME),
    max_replicas=Setting(minimum=1, maximum=INT32_MAX),
    models=Setting(format=MODEL, unique=True),
    signal=Setting(),
    wake_budget_seconds=Setting(minimum=1, maximum=3600),
)
declare(
    MonitoringArgs,
    namespace=Setting(format=NAMESPACE),
    latency_slo_ms=Setting(minimum=1, maximum=LATENCY_SLO_MAX_MS),
    latency_p99_slo_ms=Setting(minimum=1, maximum=LATENCY_SLO_MAX_MS),
    deployments=Setting(default={}, keys=WATCHED_KEY),
    token_objectives=Setting(default={}, keys=MODEL),
    mode=Setting(default="existing", choices=MODES),
    chart=Setting(default=DEFAULT_CHART),
    prometheus_namespace=Setting(default="monitoring", format=NAMESPACE),
    prometheus_pod_labels=Setting(
        default={"app.kubernetes.io/name": "prometheus"}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT
    ),
    selector_labels=Setting(
        default={"release": "kube-prometheus-stack"}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT
    ),
    receivers=Setting(default={}, keys=RECEIVER_NAME),
    routes=Setting(default={}, keys=SEVERITY, format=RECEIVER_NAME),
    runbook_base_url=Setting(
        default="https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md", format=RUNBOOK_BASE_URL
    ),
    grafana_folder=Setting(default="Triton", min_length=1),
    scrape_interval=Setting(default="15s", format=SCRAPE_INTERVAL),
    alerts=Setting(default={}),
    labels=Setting(default={}, keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    interceptor_namespace=Setting(default="keda", format=NAMESPACE),
    scaling_enabled=Setting(default=False),
    dcgm_metrics=Setting(default=False),
    dashboard_tags=Setting(default=DASHBOARD_TAGS, min_length=1, unique=True),
    kube_version=Setting(format=Format(KUBE_VERSION)),
    replicas=Setting(default=1, minimum=1, maximum=MAX_MONITORING_REPLICAS),
    retention=Setting(default="15d", format=RETENTION),
    storage=Setting(),
    priority_class_name=Setting(format=PRIORITY_CLASS),
    managed_control_plane=Setting(default=False),
    image_digests=Setting(default={}, keys=IMAGE_TAG, format=IMAGE_DIGEST),
)
