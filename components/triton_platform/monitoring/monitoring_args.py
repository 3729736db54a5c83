"""`MonitoringArgs`, what a user gives `Monitoring`, declared once: its builders read the same types, checked.

The Args are plain and typed: Pulumi infers the component's schema from them, so they may come from any Pulumi
language as JSON (whole numbers as floats, optional keys absent). Each key's default, bounds and format are
declared beside its TypedDict (`declare`, triton_platform/args/arg_schema.py); `monitoring_settings` checks Args
against them and the rules that span keys, and raises every problem at once, each naming its Arg
(triton_platform/args/arg_problems.py).

No `from __future__ import annotations` here: TypedDict reads `NotRequired` only from evaluated annotations,
and Pulumi's schema inference reads the same.
"""

import re
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, TypeVar, cast

import pulumi

from triton_platform.args.arg_problems import ArgPath, ArgProblems
from triton_platform.args.arg_schema import Setting, declare, named_by, resolve_record
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
from triton_platform.http_add_on import pods_service_name
from triton_platform.kube.helm_chart import ChartSource, chart_source_problem
from triton_platform.scaling_signal import PER_MODEL_SIGNALS, QUEUE_DEPTH_SIGNAL, SIGNAL_KINDS

COMPONENT = "Monitoring"
T = TypeVar("T")
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
    """Each Alertmanager replica's volume (silences and the notification log), a quantity. Default: 1Gi."""


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
    """The Deployments to watch, by key; the key names the dashboard's resource (`<name>-<key>-dashboard`).
    Default: none (only the namespace-wide rules and alerts)."""

    mode: NotRequired[str]
    """`existing`: a Prometheus Operator already runs; only the ServiceMonitor, rules, alert routing and dashboards
    are created. `install`: the kube-prometheus-stack chart too, in `prometheus_namespace`, and everything else
    waits for it (its CRDs). Default: existing."""

    chart: NotRequired[ChartSource]
    """The kube-prometheus-stack chart, for mode `install`. Default: version 88.5.3 from
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
    """Every alert's `runbook_url` is this page with `#<alert name in lower case>` as its fragment: an https://
    URL without a fragment of its own (a query is kept). Default: https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md."""

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

    interceptor_namespace: NotRequired[str]
    """Namespace of the KEDA HTTP add-on's interceptor, for deployments with `wake_budget_seconds`. Default `keda`."""

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

    replicas: NotRequired[int]
    """Prometheus and Alertmanager replicas in mode `install`, 1-5. From 2, Prometheus runs as an HA set (each
    replica scrapes every target and evaluates every rule on its own; the operator drops its `prometheus_replica`
    label from alerts, so the clustered Alertmanagers send each once), and each gets a PodDisruptionBudget of
    `minAvailable: 1`. Default: 1."""

    retention: NotRequired[str]
    """How long Prometheus keeps samples, a Prometheus duration from 1h to 1y. Default: 15d."""

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
    Down alerts would fire forever). Default: false."""

    image_digests: NotRequired[dict[str, str]]
    """The charts' images by digest, mode `install`: each container (and the operator's Prometheus and
    Alertmanager images) whose `<image>:<tag>` is a key runs `<image>:<tag>@<digest>` (`stackctl pin-images`
    writes them). Default: none (by tag, pulled on every start)."""


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
    # Above 0 and below 1 (`_below_one`): a failure ratio of 1 never fires, a low-utilization mark of 1 nearly always.
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
    # At most 1 for a busy ratio (`_signal`): it never exceeds 1, so the target would never be reached.
    target=Setting(above=0),
    instances_per_pod=Setting(keys=MODEL, minimum=1, maximum=INT32_MAX),
    # A pod serving more than 10 million requests per second of one model is a unit slip.
    capacity_per_pod=Setting(keys=MODEL, above=0, maximum=MAX_CAPACITY_RPS),
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


def monitoring_settings(name: str, args: MonitoringArgs) -> MonitoringArgs:
    """`args` checked against their declaration and the rules across keys, every default applied: what the
    builders read. An ArgsError names every problem found. TritonServing's outputs among them are checked by
    stand-ins until they are known (`joined_settings` checks them then)."""
    problems = ArgProblems(COMPONENT, name, named_by(MonitoringArgs))
    checked = cast(MonitoringArgs, resolve_record(problems, (), _with_stand_ins(args), MonitoringArgs))
    # The rules across keys read only entries whose keys are right (a wrong one is named already).
    deployments = _rightly_named(checked.get("deployments", {}), WATCHED_KEY)
    for key, deployment in deployments.items():
        _signal(problems, ("deployments", key), deployment)
    _one_object_per_name(problems, deployments)
    routing_rules(problems, (), checked)
    alert_rules(problems, ("alerts",), checked.get("alerts", {}))
    _tail_objective(problems, checked)
    _labels_of_the_components_own(problems, checked)
    mode = checked.get("mode", "existing")
    if mode != "install" and isinstance(args, dict):
        for key in INSTALL_ONLY:
            # A value refused already is named once, by its own check.
            if key in args and problems.clean((key,)):
                problems.add(
                    (key,),
                    f"applies only to mode 'install': in mode {mode!r} this component installs no Prometheus or "
                    "Alertmanager, so the setting would do nothing; remove it or set mode 'install'",
                )
    chart = checked.get("chart")
    # A chart that is no mapping at all is named as such already.
    if checked.get("mode") == "install" and chart and problems.clean(("chart", "repository"), ("chart", "path")):
        problem = chart_source_problem(chart)
        if problem is not None:
            problems.add(("chart",), problem)
    if checked.get("mode") == "install" and chart and problems.clean(("chart", "values")):
        _renderer_token(problems, chart.get("values") or {})
    problems.check()
    return checked


def _renderer_token(problems: ArgProblems, values: Mapping[str, Any]) -> None:
    """Grafana 13's image renderer, where chart values turn it on, reads its token from a Secret the user names.

    Without `existingSecret` the grafana chart (12.x, kube-prometheus-stack 84 and later) writes the token from
    `randAlphaNum 40` unless a `lookup` finds the Secret (templates/_helpers.tpl, `grafana.imageRenderer.token`),
    and `lookup` finds nothing when the chart is templated rather than installed (helm_chart.py): every preview
    would replace the Secret. A `token` among the values would sit in the stack's state in plain text."""
    grafana = values.get("grafana")
    renderer = grafana.get("imageRenderer") if isinstance(grafana, Mapping) else None
    # Truthy as Helm's `if` reads it (a non-empty string turns the renderer on too).
    if not isinstance(renderer, Mapping) or not renderer.get("enabled") or renderer.get("existingSecret"):
        return
    problems.add(
        ("chart", "values", "grafana", "imageRenderer"),
        "enabled without existingSecret: the grafana chart would write a new random token on every preview (it is "
        "templated, so its lookup of the last one finds nothing), and a `token` value would be stored in plain "
        "text; create a Secret with the key `token` and name it in existingSecret",
    )


def object_name(deployment: MonitoredDeployment) -> str:
    """A checked deployment's object name: plain once checked (`monitoring_settings` refuses no Output there, but
    the builders only ever read Args whose Outputs are known, `joined_settings`)."""
    return cast(str, deployment["object_name"])


def scraped_service(deployment: MonitoredDeployment) -> str:
    """The Service the ServiceMonitor scrapes a deployment's pods through (its `service` label): its own, or the
    pods' `<name>-pods` where it wakes on request (its own Service then points at the interceptor)."""
    name = object_name(deployment)
    return name if deployment.get("wake_budget_seconds") is None else pods_service_name(name)


def served_models(deployment: MonitoredDeployment) -> list[str]:
    """A checked deployment's models, plain (as `object_name`)."""
    return cast(list[str], deployment["models"])


def signal_divisors(deployment: MonitoredDeployment) -> dict[str, float]:
    """What a checked deployment's signal divides each model's series by, plain (as `object_name`): its instances
    per pod for a busy ratio, its capacity per pod for a demand; none for a queue depth."""
    signal = deployment["signal"]
    key = PER_MODEL_SIGNALS.get(signal["kind"])
    return cast(dict[str, float], signal.get(key, {})) if key else {}


def _with_stand_ins(args: MonitoringArgs) -> MonitoringArgs:
    """`args` with each Output among the deployments' `object_name`, `models` and `signal.instances_per_pod`
    (TritonServing's outputs) replaced by a plain stand-in of the right form, so every other key is checked when
    the program runs."""
    deployments = args.get("deployments") if isinstance(args, Mapping) else None
    if not isinstance(deployments, Mapping):
        return args
    return {**args, "deployments": {key: _stand_ins(index, d) for index, (key, d) in enumerate(deployments.items())}}


def _stand_ins(index: int, deployment: MonitoredDeployment) -> MonitoredDeployment:
    if not isinstance(deployment, Mapping):
        return deployment  # refused by shape
    out = dict(deployment)
    if isinstance(out.get("object_name"), pulumi.Output):
        out["object_name"] = f"stand-in-{index}"
    signal = out.get("signal")
    if isinstance(out.get("models"), pulumi.Output):
        # A plain capacity per model names the models the demand reads: they stand in, checked again once known.
        capacities = signal.get("capacity_per_pod") if isinstance(signal, Mapping) else None
        plain = isinstance(capacities, Mapping) and capacities and all(isinstance(m, str) for m in capacities)
        out["models"] = list(cast(Mapping[str, float], capacities)) if plain else ["stand-in"]
    if isinstance(signal, Mapping) and isinstance(signal.get("instances_per_pod"), pulumi.Output):
        models = out.get("models")
        names = [m for m in models if isinstance(m, str)] if isinstance(models, list) else []
        out["signal"] = {**signal, "instances_per_pod": dict.fromkeys(names or ["stand-in"], 1)}
    return cast(MonitoredDeployment, out)


def joins_outputs(args: MonitoringArgs) -> bool:
    """Whether some deployment's `object_name`, `models` or `signal.instances_per_pod` is an Output (checked
    Args: a mapping of deployments)."""
    return _with_stand_ins(args) != args


def joined_settings(name: str, args: MonitoringArgs, checked: MonitoringArgs) -> "pulumi.Output[MonitoringArgs]":
    """The settings the builders read once TritonServing's outputs among `args` are known: `checked` (the Args
    checked with stand-ins) itself when there are none, else the Args checked again with the real values."""
    if not joins_outputs(args):
        return pulumi.Output.from_input(checked)
    deployments = pulumi.Output.from_input(args["deployments"])
    return deployments.apply(lambda known: monitoring_settings(name, {**args, "deployments": known}))


def _rightly_named(entries: Mapping[str, T], keys: Format) -> dict[str, T]:
    """The entries of `entries` whose keys are of the format `keys`."""
    return {key: entry for key, entry in entries.items() if keys.problem(key) is None}


TARGET_ABOVE_ONE = {
    "busy-ratio": "a busy ratio never exceeds 1, so the target would never be met",
    "demand": "each pod would have to carry more than it serves at full batches, so the target is met only once "
    "requests are already being rejected",
}
"""Why a per-model signal's target is at most 1."""


def _signal(problems: ArgProblems, path: ArgPath, deployment: MonitoredDeployment) -> None:
    """A busy ratio's or a demand's target and what it divides each model by, which its kind requires and bounds."""
    models, signal = deployment.get("models", []), deployment.get("signal", {})
    kind = signal.get("kind")
    # No kind, or a signal that is no mapping (it stands in empty): named as such already.
    if kind is None or not problems.clean((*path, "signal", "kind")):
        return
    models_clean, path = problems.clean((*path, "models")), (*path, "signal")
    for other_kind, key in PER_MODEL_SIGNALS.items():
        if kind != other_kind and signal.get(key) is not None:
            problems.add((*path, key), f"only kind {other_kind} reads it; this signal is {kind!r}")
    if kind == QUEUE_DEPTH_SIGNAL:
        return
    key = PER_MODEL_SIGNALS[kind]
    target = signal.get("target", 0)
    if problems.clean((*path, "target")) and target > 1:
        problems.add((*path, "target"), f"{target:g} is above 1; {TARGET_ABOVE_ONE[kind]}")
    divisors = signal.get(key)
    if not divisors:
        what = "what its ratio divides by" if kind == "busy-ratio" else "what each model's requests are divided by"
        problems.add((*path, key), f"missing (required for kind {kind}: {what})")
        return
    if models_clean:
        for model in _rightly_named(cast(dict[str, float], divisors), MODEL):
            if model not in cast(list[str], models):
                problems.add(
                    (*path, key, model),
                    f"is not one of the deployment's models ({', '.join(cast(list[str], models)) or 'none'})",
                )


def _one_object_per_name(problems: ArgProblems, deployments: Mapping[str, MonitoredDeployment]) -> None:
    """Two deployments of one object name would be one Deployment watched twice, and two dashboards of one name."""
    seen: dict[str, str] = {}
    for key, deployment in deployments.items():
        if "object_name" not in deployment or not problems.clean(("deployments", key, "object_name")):
            continue
        name = object_name(deployment)
        if name in seen:
            problems.add(
                ("deployments", key, "object_name"),
                f"{name!r} is deployments.{seen[name]}.object_name too; watch each Deployment once",
            )
        seen.setdefault(name, key)


def routing_rules(problems: ArgProblems, path: ArgPath, args: MonitoringArgs) -> None:
    """Each receiver by its rules, and each route to one of them."""
    receivers = args.get("receivers", {})
    for key, receiver in _rightly_named(receivers, RECEIVER_NAME).items():
        receiver_rules(problems, (*path, "receivers", key), key, receiver)
    if problems.clean((*path, "receivers")):
        known = ", ".join(sorted(receivers)) or "none"
        for severity, receiver_name in _rightly_named(args.get("routes", {}), SEVERITY).items():
            where = (*path, "routes", severity)
            if problems.clean(where) and receiver_name not in receivers:
                problems.add(where, f"{receiver_name!r} names no receiver of receivers ({known})")


def receiver_rules(problems: ArgProblems, path: ArgPath, name: str, receiver: AlertReceiver) -> None:
    """A receiver's name apart from the null receiver's, at least one integration, one form of each credential."""
    if name == NULL_RECEIVER:
        problems.add(path, f"the name {NULL_RECEIVER!r} is taken: it receives what no route claims")
    if not any(integration in receiver for integration in INTEGRATIONS) and problems.clean(path):
        problems.add(path, f"names no integration; give one or more of {', '.join(INTEGRATIONS)}")
    credentials: list[tuple[ArgPath, ReceiverCredential | None]] = [
        (("slack", "webhook_url"), receiver.get("slack", {}).get("webhook_url")),
        (("pagerduty", "routing_key"), receiver.get("pagerduty", {}).get("routing_key")),
        (("webhook", "url"), receiver.get("webhook", {}).get("url")),
    ]
    for steps, credential in credentials:
        where = (*path, *steps)
        if credential is None or not problems.clean(where):
            continue
        given = [part for part in ("value", "secret") if part in credential]
        if len(given) != 1:
            problems.add(
                where,
                f"sets {'both' if given else 'neither'} value {'and' if given else 'nor'} secret; give exactly one",
            )


_BELOW_ONE = {
    "failure_ratio": "a failure ratio of 1 would never fire",
    "gpu_utilization_low": "a utilization mark of 1 would fire nearly always",
}


def alert_rules(problems: ArgProblems, path: ArgPath, thresholds: AlertThresholds) -> None:
    """The ratios a threshold of exactly 1 makes meaningless (their Setting bounds them at most 1)."""
    for key, why in _BELOW_ONE.items():
        value = cast(Mapping[str, float], thresholds).get(key, 0.0)
        where = (*path, key)
        if problems.clean(where) and value >= 1:
            problems.add(where, f"{value:g} is not below 1: {why}")


def _tail_objective(problems: ArgProblems, checked: MonitoringArgs) -> None:
    """A p99 objective below the p95 one: no latency distribution meets it without meeting a tighter p95."""
    p99 = checked.get("latency_p99_slo_ms")
    if p99 is None or not problems.clean(("latency_slo_ms",), ("latency_p99_slo_ms",)):
        return
    if p99 < checked["latency_slo_ms"]:
        problems.add(
            ("latency_p99_slo_ms",),
            f"{p99} is below the p95 objective ({checked['latency_slo_ms']} ms): a p99 is never below the p95; "
            f"give at least {checked['latency_slo_ms']}",
        )


def _labels_of_the_components_own(problems: ArgProblems, checked: MonitoringArgs) -> None:
    """User labels the component would overwrite on some of its objects without a word."""
    labels = checked.get("labels", {})
    own = dict(DASHBOARD_LABEL)
    if problems.clean(("selector_labels",)):
        own.update(checked.get("selector_labels", {}))
    if checked.get("mode") == "install":
        own.update(POD_SECURITY_LABELS)
    for key, value in labels.items():
        if key in own and own[key] != value and problems.clean(("labels", key)):
            problems.add(
                ("labels", key),
                f"{excerpt(value)} differs from {own[key]!r}, which the component sets on {_setter(key, checked)}; "
                "leave it out or give that value",
            )


def _setter(key: str, checked: MonitoringArgs) -> str:
    if key in DASHBOARD_LABEL:
        return "its dashboards (Grafana's sidecar loads them by it)"
    if key in POD_SECURITY_LABELS:
        return "the namespace mode install creates"
    return "the objects the operator selects (args.selector_labels)"
