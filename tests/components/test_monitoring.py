"""`Monitoring` built alone under Pulumi's public mocks (tests/components/mocks.py).

No stack file: the Args are written by hand, for one Deployment `my-model` in namespace `ml`, as a
user of the component would, and what the component registered is compared with literal values.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components.monitoring import MonitoredDeployment, Monitoring, MonitoringArgs
from components.monitoring_config import MonitoringConfig
from components.monitoring_rules import alerts
from components.scaling_signal import ScalingSignal
from tests.components.mocks import HELM_TEMPLATE, RecordingMocks, install, pulumi_test

MONITORING = "triton-platform:monitoring:Monitoring"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
ALERTMANAGER_CONFIG = "kubernetes:monitoring.coreos.com/v1alpha1:AlertmanagerConfig"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SECRET = "kubernetes:core/v1:Secret"

SELECTOR = 'namespace="ml", deployment="my-model"'
PER_REPLICA = f"namespace_deployment:nv_inference_pending_request_count:avg_per_replica{{{SELECTOR}}}"
SIGNAL = ScalingSignal(
    name="queue-depth",
    query=f"sum(nv_inference_pending_request_count{{{SELECTOR}}})",
    per_replica=PER_REPLICA,
    record=None,
    target=5,
    models=("resnet",),
    activation=1,
)
"""A hand-written signal: pending requests, five per replica."""
MY_MODEL = MonitoredDeployment(object_name="my-model", max_replicas=3, models=("resnet",), signal=SIGNAL)
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


def settings(mode: str) -> MonitoringConfig:
    """Prometheus in `observability`, selecting on `release: prom`, scraping every 30 s; criticals page."""
    return MonitoringConfig.model_validate(
        {
            "mode": mode,
            "prometheus": {"namespace": "observability"},
            "selectorLabels": {"release": "prom"},
            "scrapeInterval": "30s",
            "grafanaFolder": "ML",
            "receivers": {"oncall": {"pagerduty": {"routingKey": {"value": "pd-key"}}}},
            "routes": {"critical": "oncall"},
        }
    )


def my_args(mode: str = "existing", *, scaling_enabled: bool = True) -> MonitoringArgs:
    return MonitoringArgs(
        namespace="ml",
        latency_slo_ms=250,
        deployments={"demo": MY_MODEL},
        monitoring=settings(mode),
        labels={"team": "ml"},
        scaling_enabled=scaling_enabled,
        kube_version="1.31.0",
    )


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
    names = [a.name for a in alerts(my_args(scaling_enabled=False))]
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
