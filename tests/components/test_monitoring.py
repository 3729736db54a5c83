"""`Monitoring` built alone under Pulumi's public mocks (tests/components/mocks.py).

No stack file: the Args are written by hand, for one Deployment `my-model` in namespace `ml`, as a
user of the component would, and what the component registered is compared with literal values.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any, cast

import pulumi
import pytest
from pulumi.provider.experimental.analyzer import Analyzer

from tests.components.mocks import HELM_TEMPLATE, RecordingMocks, install, pulumi_test
from triton_platform.arg_problems import ArgsError
from triton_platform.dashboards import panel_queries
from triton_platform.monitoring import Monitoring
from triton_platform.monitoring_args import (
    AlertThresholds,
    MonitoredDeployment,
    MonitoringArgs,
    Thresholds,
    monitoring_settings,
)
from triton_platform.monitoring_rules import alerts, rule_groups

MONITORING = "triton-platform:index:Monitoring"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
ALERTMANAGER_CONFIG = "kubernetes:monitoring.coreos.com/v1alpha1:AlertmanagerConfig"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SECRET = "kubernetes:core/v1:Secret"

SELECTOR = 'namespace="ml", deployment="my-model"'
PER_REPLICA = f"namespace_deployment:nv_inference_pending_request_count:avg_per_replica{{{SELECTOR}}}"
MY_MODEL: MonitoredDeployment = {
    "object_name": "my-model",
    "max_replicas": 3,
    "models": ["resnet"],
    "signal": {"kind": "queue-depth", "target": 5},
}
"""It scales on pending requests, five per replica."""
RUNBOOKS = "https://github.com/triton-platform/triton-platform/blob/main/docs/runbooks.md"
"""The schema's default `runbookBaseUrl`."""
ALERT_NAMES = [
    "TritonLatencyAboveSLO",
    "TritonQueueTimeHigh",
    "TritonInferenceFailures",
    "TritonReplicasUnavailable",
    "TritonTargetDown",
    "TritonGPUMemoryHigh",
    "TritonGPUUnderutilized",
]
"""The namespace-wide alerts, in the order the rule group lists them."""


def my_args(mode: str = "existing", *, scaling_enabled: bool = True) -> MonitoringArgs:
    """Prometheus in `observability`, selecting on `release: prom`, scraping every 30 s; criticals page."""
    return {
        "namespace": "ml",
        "latency_slo_ms": 250,
        "deployments": {"demo": MY_MODEL},
        "mode": mode,
        "prometheus_namespace": "observability",
        "selector_labels": {"release": "prom"},
        "scrape_interval": "30s",
        "grafana_folder": "ML",
        "receivers": {"oncall": {"pagerduty": {"routing_key": {"value": "pd-key"}}}},
        "routes": {"critical": "oncall"},
        "labels": {"team": "ml"},
        "scaling_enabled": scaling_enabled,
        "kube_version": "1.31.0",
    }


@pytest.fixture
def recorder() -> RecordingMocks:
    # Set per test: other tests of the same process install mocks of their own.
    return install()


def build(args: MonitoringArgs) -> dict[str, Any]:
    """Build `Monitoring("mon", args)` and return its outputs, resolved."""
    resolved: dict[str, Any] = {}

    @pulumi_test
    def program() -> pulumi.Output[None]:
        monitoring = Monitoring("mon", args)
        resolved["operator"] = monitoring.operator

        def keep(values: list[str]) -> None:
            resolved["prometheus_url"], resolved["metrics_namespace"] = values

        return pulumi.Output.all(monitoring.prometheus_url, monitoring.metrics_namespace).apply(keep)

    program()
    return resolved


def test_existing_mode_watches_one_deployment_of_ones_own(recorder: RecordingMocks) -> None:
    outputs = build(my_args())

    assert outputs == {
        "operator": [],
        "prometheus_url": "http://prometheus-operated.observability.svc:9090",
        "metrics_namespace": "observability",
    }
    assert set(recorder.inputs) == {
        (MONITORING, "mon"),
        (SERVICE_MONITOR, "mon-service-monitor"),
        (PROMETHEUS_RULE, "mon-rules"),
        (ALERTMANAGER_CONFIG, "mon-alert-routing"),
        (SECRET, "mon-alertmanager-oncall"),
        (CONFIG_MAP, "mon-demo-dashboard"),
    }
    assert recorder.calls == []


def test_the_service_monitor_scrapes_the_namespace(recorder: RecordingMocks) -> None:
    build(my_args())

    monitor = recorder.inputs[SERVICE_MONITOR, "mon-service-monitor"]
    assert monitor["metadata"] == {"name": "triton", "namespace": "ml", "labels": {"team": "ml", "release": "prom"}}
    assert monitor["spec"] == {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "triton-inference-server"}},
        "namespaceSelector": {"matchNames": ["ml"]},
        "endpoints": [
            {
                "port": "metrics",
                "path": "/metrics",
                "interval": "30s",
                "relabelings": [
                    {"sourceLabels": ["__meta_kubernetes_endpoint_ready"], "regex": "false", "action": "drop"},
                    {
                        "sourceLabels": ["__meta_kubernetes_endpointslice_endpoint_conditions_ready"],
                        "regex": "false",
                        "action": "drop",
                    },
                    {"sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace"},
                    {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod"},
                    {"sourceLabels": ["__meta_kubernetes_service_name"], "targetLabel": "service"},
                    {
                        "sourceLabels": ["__meta_kubernetes_service_label_app_kubernetes_io_instance"],
                        "targetLabel": "deployment",
                    },
                ],
            }
        ],
    }


def test_the_rules_record_and_alert_on_the_deployment(recorder: RecordingMocks) -> None:
    build(my_args())

    rule = recorder.inputs[PROMETHEUS_RULE, "mon-rules"]
    assert rule["metadata"] == {
        "name": "triton-platform",
        "namespace": "ml",
        "labels": {"team": "ml", "release": "prom"},
    }
    recording, alerting = rule["spec"]["groups"]
    assert (recording["name"], recording["interval"]) == ("triton-platform.recording", "30s")
    # Rates over four 30 s scrapes; the queue-depth signal records nothing of its own.
    assert [r["record"] for r in recording["rules"]] == [
        "namespace_deployment_model:nv_inference_request_success:rate2m",
        "namespace_deployment:nv_inference_request_success:rate2m",
        "namespace_deployment_model:nv_inference_batch_size:avg2m",
        "namespace_deployment_model:nv_inference_queue_seconds_per_request:avg2m",
        "namespace_deployment_model:nv_inference_request_seconds:p95",
        "namespace_deployment_model:nv_inference_request_seconds:p99",
        "namespace_deployment:nv_inference_pending_request_count:avg_per_replica",
        "namespace_deployment_pod:nv_gpu_utilization:avg",
        "namespace_deployment:nv_gpu_utilization:avg",
        "namespace_deployment_pod:nv_gpu_memory_used:ratio",
    ]
    assert alerting["name"] == "triton-platform.alerts"
    assert "interval" not in alerting
    assert [(r["alert"], r["labels"]["severity"]) for r in alerting["rules"]] == [
        ("TritonLatencyAboveSLO", "critical"),
        ("TritonQueueTimeHigh", "warning"),
        ("TritonInferenceFailures", "critical"),
        ("TritonReplicasUnavailable", "critical"),
        ("TritonTargetDown", "critical"),
        ("TritonGPUMemoryHigh", "warning"),
        ("TritonGPUUnderutilized", "info"),
        ("KedaScalerErrors", "warning"),
        ("TritonQueueBacklogAtMaxReplicas", "critical"),
        ("TritonModelNotLoaded", "critical"),
    ]
    latency, *_, backlog, not_loaded = alerting["rules"]
    assert latency == {
        "alert": "TritonLatencyAboveSLO",
        "expr": 'namespace_deployment_model:nv_inference_request_seconds:p95{namespace="ml"} > 0.25',
        "for": "5m",
        "labels": {"severity": "critical", "platform": "triton-platform"},
        "annotations": {
            "summary": "p95 latency of {{ $labels.model }} is above the SLO",
            "description": "p95 latency of {{ $labels.model }} in {{ $labels.deployment }} is above the 250 ms SLO.",
            "runbook_url": f"{RUNBOOKS}#tritonlatencyaboveslo",
        },
    }
    assert backlog["expr"] == (
        'namespace_deployment:nv_inference_pending_request_count:avg_per_replica{namespace="ml", deployment="my-model"}'
        ' > 5 and on (namespace, deployment) kube_deployment_spec_replicas{namespace="ml", deployment="my-model"} >= 3'
    )
    assert (backlog["for"], backlog["labels"]) == (
        "10m",
        {"severity": "critical", "platform": "triton-platform", "deployment": "my-model"},
    )
    assert not_loaded["labels"] == {
        "severity": "critical",
        "platform": "triton-platform",
        "deployment": "my-model",
        "model": "resnet",
    }
    assert not_loaded["expr"] == (
        'up{namespace="ml", service="my-model"} == 1 unless on (namespace, pod)'
        ' nv_inference_count{namespace="ml", deployment="my-model", model="resnet"}'
    )


def test_without_keda_no_scaling_alerts() -> None:
    names = [a.name for a in alerts(monitoring_settings("mon", my_args(scaling_enabled=False)))]
    assert names == [*ALERT_NAMES, "TritonModelNotLoaded"]


def test_alerts_route_by_severity_with_the_credential_in_a_secret(recorder: RecordingMocks) -> None:
    build(my_args())

    routing = recorder.inputs[ALERTMANAGER_CONFIG, "mon-alert-routing"]
    assert routing["metadata"] == {
        "name": "triton-platform",
        "namespace": "ml",
        "labels": {"team": "ml", "release": "prom"},
    }
    assert routing["spec"]["route"]["routes"] == [
        {
            "receiver": "oncall",
            "matchers": [
                {"name": "severity", "value": "critical", "matchType": "="},
                {"name": "namespace", "value": "ml", "matchType": "="},
            ],
        }
    ]
    assert routing["spec"]["receivers"] == [
        {"name": "null"},
        {
            "name": "oncall",
            "pagerdutyConfigs": [
                {"routingKey": {"name": "alertmanager-oncall", "key": "routing-key"}, "sendResolved": True}
            ],
        },
    ]
    secret = recorder.inputs[SECRET, "mon-alertmanager-oncall"]
    assert secret["metadata"] == {"name": "alertmanager-oncall", "namespace": "ml", "labels": {"team": "ml"}}
    assert secret["type"] == "Opaque"
    # Pulumi's wire form of a secret value (its signature key and secret signature): never stored in plain text.
    assert secret["stringData"] == {
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        "value": {"routing-key": "pd-key"},
    }


def test_the_dashboard_config_map(recorder: RecordingMocks) -> None:
    build(my_args())

    config_map = recorder.inputs[CONFIG_MAP, "mon-demo-dashboard"]
    assert config_map["metadata"] == {
        "name": "my-model-dashboard",
        "namespace": "ml",
        "labels": {"team": "ml", "grafana_dashboard": "1"},
        "annotations": {"grafana_folder": "ML"},
    }
    assert list(config_map["data"]) == ["my-model.json"]
    board = json.loads(config_map["data"]["my-model.json"])
    assert (board["uid"], board["title"], board["tags"]) == (
        "ml-my-model",
        "Triton my-model (ml)",
        ["triton", "triton-platform"],
    )
    assert board["templating"]["list"][1]["query"] == (
        'label_values(nv_inference_count{namespace="ml", deployment="my-model"}, model)'
    )
    panels: dict[str, list[tuple[str, str]]] = {
        p["title"]: [(t["expr"], t["legendFormat"]) for t in p["targets"]] for p in board["panels"]
    }
    assert list(panels) == [
        "Requests per second",
        "Request latency p95 / p99",
        "Queue time per request",
        "Average batch size",
        "Scaling signal: queue-depth per replica",
        "Pending requests per replica",
        "GPU utilization",
        "GPU memory used",
        "Replicas",
        "Failures by reason",
    ]
    assert panels["Scaling signal: queue-depth per replica"] == [(PER_REPLICA, "per replica"), ("5", "target")]
    assert panels["Replicas"] == [
        ('kube_deployment_status_replicas_available{namespace="ml", deployment="my-model"}', "available"),
        ('kube_deployment_spec_replicas{namespace="ml", deployment="my-model"}', "desired"),
        ("3", "max"),
    ]


def test_install_mode_brings_the_operator_first(recorder: RecordingMocks) -> None:
    outputs = build(my_args("install"))

    [chart] = outputs["operator"]
    assert isinstance(chart, pulumi.ComponentResource)
    created = set(recorder.inputs)
    assert {
        ("kubernetes:core/v1:Namespace", "mon-namespace"),
        ("random:index/randomPassword:RandomPassword", "mon-grafana-admin"),
        (SECRET, "mon-grafana-admin"),
        ("triton-platform:helm:InstalledChart", "mon-kube-prometheus-stack"),
    } <= created
    namespace = recorder.inputs["kubernetes:core/v1:Namespace", "mon-namespace"]["metadata"]
    assert (namespace["name"], namespace["labels"]) == (
        "observability",
        {
            "team": "ml",
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/warn": "restricted",
        },
    )
    grafana = recorder.inputs[SECRET, "mon-grafana-admin"]
    assert grafana["metadata"] == {"name": "grafana-admin", "namespace": "observability", "labels": {"team": "ml"}}
    [template] = [c for c in recorder.calls if c.token == HELM_TEMPLATE]
    options = json.loads(template.args["jsonOpts"])
    assert (options["namespace"], options["chart"], options["kube_version"]) == (
        "observability",
        "kube-prometheus-stack",
        "1.31.0",
    )
    spec = options["values"]["prometheus"]["prometheusSpec"]
    assert spec["ruleSelector"] == {"matchLabels": {"release": "prom"}}
    assert options["values"]["alertmanager"]["alertmanagerSpec"]["alertmanagerConfigSelector"] == {
        "matchLabels": {"release": "prom"}
    }


def test_outputs_name_the_prometheus_of_mode_install_too(recorder: RecordingMocks) -> None:
    outputs = build(my_args("install"))
    assert (outputs["prometheus_url"], outputs["metrics_namespace"]) == (
        "http://prometheus-operated.observability.svc:9090",
        "observability",
    )


# --- what a user can get wrong: each rule's message, naming the Arg ------------------------------------------

BUSY: dict[str, Any] = {"kind": "busy-ratio", "target": 0.75, "instances_per_pod": {"resnet": 2}}
"""A busy-ratio signal: two resnet instances per pod."""
PAGE_KEY: dict[str, Any] = {"value": "pd-key"}


DELETE = object()


def changed(path: str, value: Any) -> dict[str, Any]:
    """`my_args()` with the key at dotted `path` set to `value` (deleted when it is DELETE)."""
    args: dict[str, Any] = copy.deepcopy(dict(my_args()))
    *parents, last = path.split(".")
    node = args
    for key in parents:
        node = node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return args


DEMO = "deployments.demo"
ONCALL = "receivers.oncall"


@pytest.mark.parametrize(
    ("path", "value", "problems"),
    [
        ("namespace", DELETE, ["args.namespace: missing (required)"]),
        ("latency_slo_ms", 0, ["args.latency_slo_ms: 0 is below the minimum 1"]),
        (
            "latency_slo",
            250,
            [
                "args.latency_slo: unknown key; known keys: alerts, chart, dashboard_tags, dcgm_metrics, deployments, "
                "grafana_folder, kube_version, labels, latency_slo_ms, mode, namespace, prometheus_namespace, "
                "prometheus_pod_labels, receivers, routes, runbook_base_url, scaling_enabled, scrape_interval, "
                "selector_labels"
            ],
        ),
        ("mode", "replace", ["args.mode: 'replace' is not one of existing, install"]),
        ("scrape_interval", "5m", ["args.scrape_interval: '5m' is not between 1s and 2m"]),
        (
            "scrape_interval",
            "15",
            ["args.scrape_interval: '15' is not a Prometheus duration from 1s to 2m, such as 15s"],
        ),
        (
            "alerts",
            {"failure_for": "5 minutes"},
            ["args.alerts.failure_for: '5 minutes' is not a Prometheus duration such as 30s, 5m or 1h30m"],
        ),
        ("alerts", {"failure_ratio": 1}, ["args.alerts.failure_ratio: 1 is not above 0 and below 1"]),
        ("alerts", {"gpu_memory_ratio": 1.5}, ["args.alerts.gpu_memory_ratio: 1.5 is not above 0 and at most 1"]),
        ("alerts", {"queue_time_ms": "20ms"}, ["args.alerts.queue_time_ms: '20ms' is not a number"]),
        (
            f"{DEMO}.replicas",
            3,
            [f"args.{DEMO}.replicas: unknown key; known keys: max_replicas, models, object_name, signal"],
        ),
        (f"{DEMO}.max_replicas", 2.5, [f"args.{DEMO}.max_replicas: 2.5 is not a whole number"]),
        (f"{DEMO}.signal", DELETE, [f"args.{DEMO}.signal: missing (required)"]),
        (
            f"{DEMO}.signal.kind",
            "queue-time",
            [f"args.{DEMO}.signal.kind: 'queue-time' is not one of busy-ratio, queue-depth"],
        ),
        (f"{DEMO}.signal.target", 0, [f"args.{DEMO}.signal.target: 0 is not above 0"]),
        (f"{DEMO}.signal", {**BUSY, "target": 1.5}, [f"args.{DEMO}.signal.target: 1.5 is not above 0 and at most 1"]),
        (
            f"{DEMO}.signal",
            {"kind": "busy-ratio", "target": 0.75},
            [
                f"args.{DEMO}.signal.instances_per_pod: missing (required for kind busy-ratio: what its ratio divides by)"
            ],
        ),
        (
            f"{DEMO}.signal",
            {**BUSY, "instances_per_pod": {"bert": 1, "resnet": 0}},
            [
                f"args.{DEMO}.signal.instances_per_pod.bert: is not one of the deployment's models (resnet)",
                f"args.{DEMO}.signal.instances_per_pod.resnet: 0 is below the minimum 1",
            ],
        ),
        (
            f"{DEMO}.signal.instances_per_pod",
            {"resnet": 2},
            [f"args.{DEMO}.signal.instances_per_pod: only kind busy-ratio reads it; this signal is 'queue-depth'"],
        ),
        ("routes", {"critical": "pager"}, ["args.routes.critical: 'pager' is not one of args.receivers (oncall)"]),
        (
            "routes",
            {"page": "oncall"},
            ["args.routes.page: 'page' is not a severity; they are critical, warning, info"],
        ),
        (ONCALL, {}, [f"args.{ONCALL}: names no integration; give one or more of slack, pagerduty, webhook"]),
        (
            "receivers.null",
            {"pagerduty": {"routing_key": PAGE_KEY}},
            ["args.receivers.null: the name 'null' is taken: it receives what no route claims"],
        ),
        (
            f"{ONCALL}.pagerduty.routing_key",
            {**PAGE_KEY, "secret": {"name": "pd", "key": "key"}},
            [f"args.{ONCALL}.pagerduty.routing_key: sets both value and secret; give exactly one"],
        ),
        (
            f"{ONCALL}.pagerduty.routing_key",
            {},
            [f"args.{ONCALL}.pagerduty.routing_key: sets neither value nor secret; give exactly one"],
        ),
        (
            f"{ONCALL}.pagerduty.routing_key",
            {"secret": {"name": "pd"}},
            [f"args.{ONCALL}.pagerduty.routing_key.secret.key: missing (required)"],
        ),
        (
            f"{ONCALL}.slack",
            {"webhook_url": {"value": "https://hooks.slack.com/x"}},
            [f"args.{ONCALL}.slack.channel: missing (required)"],
        ),
    ],
)
def test_each_mistake_is_named_with_its_arg(path: str, value: Any, problems: list[str]) -> None:
    with pytest.raises(ArgsError) as raised:
        monitoring_settings("mon", cast(MonitoringArgs, changed(path, value)))
    assert str(raised.value).splitlines() == [f"Monitoring mon: {problem}" for problem in problems]


def test_every_mistake_is_raised_at_once_before_anything_is_registered(recorder: RecordingMocks) -> None:
    args = changed("mode", "replace")
    args["routes"] = {"critical": "pager"}
    with pytest.raises(ArgsError) as raised:
        build(cast(MonitoringArgs, args))
    assert str(raised.value).splitlines() == [
        "Monitoring mon: args.mode: 'replace' is not one of existing, install",
        "Monitoring mon: args.routes.critical: 'pager' is not one of args.receivers (oncall)",
    ]
    assert recorder.inputs == {}


def test_whole_numbers_may_arrive_as_floats() -> None:
    """Through the component provider, JSON numbers reach the component as floats."""
    args = changed(f"{DEMO}.max_replicas", 3.0)
    args["latency_slo_ms"] = 250.0
    args["deployments"]["demo"]["signal"] = {**BUSY, "instances_per_pod": {"resnet": 2.0}}
    as_floats = monitoring_settings("mon", cast(MonitoringArgs, args))
    args = changed(f"{DEMO}.signal", BUSY)
    assert rule_groups(as_floats) == rule_groups(monitoring_settings("mon", cast(MonitoringArgs, args)))
    assert (as_floats.latency_slo_ms, as_floats.deployments["demo"].max_replicas) == (250, 3)


def test_a_busy_ratio_signal_brings_its_recording_rule_panel_and_ceiling_alert() -> None:
    """The signal says what the deployment scales on; Monitoring derives the PromQL (triton_platform/scaling_signal.py)."""
    settings = monitoring_settings("mon", cast(MonitoringArgs, changed(f"{DEMO}.signal", BUSY)))
    recording, alerting = rule_groups(settings)
    busy = 'namespace="ml", deployment="my-model", model="resnet"'
    by = "sum by (namespace, deployment, pod, model)"
    assert recording["rules"][-1] == {
        "record": "namespace_deployment:nv_inference_instance_busy:ratio",
        "expr": "avg by (namespace, deployment) (max by (namespace, deployment, pod) ("
        f"({by} (rate(nv_inference_compute_input_duration_us{{{busy}}}[2m]))"
        f" + {by} (rate(nv_inference_compute_infer_duration_us{{{busy}}}[2m]))"
        f" + {by} (rate(nv_inference_compute_output_duration_us{{{busy}}}[2m])))"
        f" * {by} (rate(nv_inference_exec_count{{{busy}}}[2m]))"
        f" / clamp_min({by} (rate(nv_inference_count{{{busy}}}[2m])), 1e-9) / 2000000))",
        "labels": {"deployment": "my-model"},
    }
    backlog = next(r for r in alerting["rules"] if r["alert"] == "TritonQueueBacklogAtMaxReplicas")
    assert backlog["expr"].startswith(f"namespace_deployment:nv_inference_instance_busy:ratio{{{SELECTOR}}} > 0.75 and")
    [(title, _, targets)] = [p for p in panel_queries(settings, settings.deployments["demo"]) if "signal" in p[0]]
    assert (title, targets) == (
        "Scaling signal: busy-ratio per replica",
        [(f"namespace_deployment:nv_inference_instance_busy:ratio{{{SELECTOR}}}", "per replica"), ("0.75", "target")],
    )


def test_the_defaults() -> None:
    settings = monitoring_settings("mon", {"namespace": "ml", "latency_slo_ms": 250})
    assert (settings.mode, settings.prometheus_namespace, settings.scrape_interval, settings.grafana_folder) == (
        "existing",
        "monitoring",
        "15s",
        "Triton",
    )
    assert settings.chart == {"version": "79.7.1", "repository": "https://prometheus-community.github.io/helm-charts"}
    assert (settings.prometheus_pod_labels, settings.selector_labels) == (
        {"app.kubernetes.io/name": "prometheus"},
        {"release": "kube-prometheus-stack"},
    )
    assert (settings.deployments, settings.receivers, settings.routes, settings.labels) == ({}, {}, {}, {})
    assert (settings.scaling_enabled, settings.dashboard_tags, settings.kube_version) == (
        False,
        ("triton", "triton-platform"),
        None,
    )
    assert settings.runbook_base_url == RUNBOOKS


def test_each_thresholds_documented_default_is_its_default() -> None:
    """The Args' docstrings are the schema's descriptions: each says the default the component applies."""
    analyzer = Analyzer("triton-platform")
    for field in dataclasses.fields(Thresholds):
        default = field.default
        shown = f"{default:g}" if isinstance(default, float) else default
        description = analyzer.get_docstring(AlertThresholds, field.name)
        assert description is not None, field.name
        assert description.endswith(f"Default: {shown}."), field.name


def test_the_prometheus_peer_is_handed_on() -> None:
    resolved: dict[str, Any] = {}

    @pulumi_test
    def program() -> pulumi.Output[None]:
        monitoring = Monitoring("mon", my_args())

        def keep(labels: dict[str, str]) -> None:
            resolved["labels"] = labels

        return monitoring.metrics_pod_labels.apply(keep)

    install()
    program()
    assert resolved == {"labels": {"app.kubernetes.io/name": "prometheus"}}
