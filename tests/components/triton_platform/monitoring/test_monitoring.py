"""`Monitoring` built alone under Pulumi's public mocks (tests/support/mocks.py).

No stack file: the Args are written by hand, for one Deployment `my-model` in namespace `ml`, as a
user of the component would, and what the component registered is compared with literal values.
"""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import promql_parser
import pulumi
import pytest
from pulumi.provider.experimental.analyzer import Analyzer

from platform_config.arg_docs import default_sentence
from tests.support.mocks import HELM_TEMPLATE, RecordingMocks, install, pulumi_test
from triton_platform.args.arg_problems import ArgsError
from triton_platform.args.arg_schema import declared
from triton_platform.monitoring.dashboards import dashboard, panel_queries
from triton_platform.monitoring.monitoring import Monitoring, chart_values
from triton_platform.monitoring.monitoring_args import AlertThresholds, MonitoredDeployment, MonitoringArgs
from triton_platform.monitoring.monitoring_rules import alerts, rule_groups
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.scaling_signal import trigger_query

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


def test_without_a_monitored_deployment_nothing_is_scraped(recorder: RecordingMocks) -> None:
    build({**my_args(), "deployments": {}})

    assert (SERVICE_MONITOR, "mon-service-monitor") not in recorder.inputs
    assert (PROMETHEUS_RULE, "mon-rules") in recorder.inputs


def test_the_service_monitor_scrapes_the_monitored_deployments_services(recorder: RecordingMocks) -> None:
    other: MonitoredDeployment = {**MY_MODEL, "object_name": "another-model"}
    build({**my_args(), "deployments": {"demo": MY_MODEL, "other": other}})

    monitor = recorder.inputs[SERVICE_MONITOR, "mon-service-monitor"]
    assert monitor["metadata"] == {"name": "triton", "namespace": "ml", "labels": {"team": "ml", "release": "prom"}}
    assert monitor["spec"] == {
        "selector": {
            "matchExpressions": [
                {"key": "app.kubernetes.io/instance", "operator": "In", "values": ["another-model", "my-model"]}
            ]
        },
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
                    {"sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace", "action": "replace"},
                    {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod", "action": "replace"},
                    {"sourceLabels": ["__meta_kubernetes_service_name"], "targetLabel": "service", "action": "replace"},
                    {
                        "sourceLabels": ["__meta_kubernetes_service_label_app_kubernetes_io_instance"],
                        "targetLabel": "deployment",
                        "action": "replace",
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
        ("GPUSeriesMissing", "warning"),
        ("GPUSeriesMissing", "warning"),
        ("GPUSeriesMissing", "warning"),
    ]
    latency, *_, backlog, not_loaded, memory_missing, _, _ = alerting["rules"]
    by_name = {r["alert"]: r["expr"] for r in alerting["rules"]}
    # The objects TritonServing and KedaScaling made, by name, never a prefix another deployment's would share.
    assert by_name["TritonReplicasUnavailable"] == (
        'kube_deployment_status_replicas_available{namespace="ml", deployment=~"my-model"}'
        ' < kube_deployment_spec_replicas{namespace="ml", deployment=~"my-model"}'
    )
    assert by_name["TritonTargetDown"] == 'up{namespace="ml", service=~"my-model"} == 0'
    assert 'scaledObject=~"my-model"}[5m]' in by_name["KedaScalerErrors"]
    assert (memory_missing["expr"], memory_missing["for"], memory_missing["labels"]["series"]) == (
        'count(up{namespace="ml", service=~"my-model"} == 1) unless on () '
        'count(nv_gpu_memory_used_bytes{namespace="ml"})',
        "10m",
        "nv_gpu_memory_used_bytes",
    )
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


def test_a_p99_objective_adds_its_alert_after_the_p95_one() -> None:
    args = my_args()
    args["latency_p99_slo_ms"] = 400
    tail = [a for a in alerts(monitoring_settings("mon", args)) if a.name == "TritonLatencyP99AboveSLO"]
    [_, alerting, *_] = rule_groups(monitoring_settings("mon", args))
    names = [r["alert"] for r in alerting["rules"]]
    assert names.index("TritonLatencyP99AboveSLO") == names.index("TritonGPUUnderutilized") + 1
    [rule] = [r for r in alerting["rules"] if r["alert"] == "TritonLatencyP99AboveSLO"]
    assert len(tail) == 1
    assert rule == {
        "alert": "TritonLatencyP99AboveSLO",
        "expr": 'namespace_deployment_model:nv_inference_request_seconds:p99{namespace="ml"} > 0.4',
        "for": "5m",
        "labels": {"severity": "critical", "platform": "triton-platform"},
        "annotations": {
            "summary": "p99 latency of {{ $labels.model }} is above its objective",
            "description": "p99 latency of {{ $labels.model }} in {{ $labels.deployment }} is above the 400 ms p99 "
            "objective: the slowest requests wait, though the p95 may hold.",
            "runbook_url": f"{RUNBOOKS}#tritonlatencyp99aboveslo",
        },
    }
    # Without one, no p99 alert (my_args sets none).
    assert "TritonLatencyP99AboveSLO" not in [a.name for a in alerts(monitoring_settings("mon", my_args()))]


@pytest.mark.parametrize(
    ("p99", "problem"),
    [
        (
            249,
            "args.latency_p99_slo_ms: 249 is below the p95 objective (250 ms): a p99 is never below the p95; give "
            "at least 250",
        ),
        (0, "args.latency_p99_slo_ms: 0 is below the minimum 1"),
    ],
)
def test_a_p99_objective_below_the_p95_one_or_its_bounds_is_refused(p99: int, problem: str) -> None:
    args = my_args()
    args["latency_p99_slo_ms"] = p99
    with pytest.raises(ArgsError) as raised:
        monitoring_settings("mon", args)
    assert str(raised.value).splitlines() == [f"Monitoring mon: {problem}"]


def test_without_keda_no_scaling_alerts() -> None:
    names = [a.name for a in alerts(monitoring_settings("mon", my_args(scaling_enabled=False)))]
    assert names == [*ALERT_NAMES, "TritonModelNotLoaded", *["GPUSeriesMissing"] * 3]


def test_a_runbook_link_is_the_page_with_the_alerts_anchor_as_its_one_fragment() -> None:
    """Set with urllib.parse: a query in the base stays before the fragment, which is never doubled."""
    args = my_args()
    args["runbook_base_url"] = "https://wiki.example.com/ml/runbooks?space=ml&lang=en"
    [_, alerting, *_] = rule_groups(monitoring_settings("mon", args))
    links = {r["annotations"]["runbook_url"] for r in alerting["rules"]}
    assert "https://wiki.example.com/ml/runbooks?space=ml&lang=en#tritonlatencyaboveslo" in links
    assert all(link.count("#") == 1 for link in links)


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


def test_production_settings_persist_replicate_and_prioritise_prometheus_and_alertmanager(
    recorder: RecordingMocks,
) -> None:
    args: MonitoringArgs = {
        **my_args("install"),
        "replicas": 2,
        "retention": "30d",
        "storage": {"storage_class_name": "gp3"},
        "priority_class_name": "monitoring-critical",
        "managed_control_plane": True,
    }
    build(args)
    priority = recorder.inputs["kubernetes:scheduling.k8s.io/v1:PriorityClass", "mon-priority-class"]
    assert priority == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "monitoring-critical", "labels": {"team": "ml"}},
        "value": 200000,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "Prometheus and Alertmanager in observability: the scaling signal outranks Triton serving.",
    }
    [template] = [c for c in recorder.calls if c.token == HELM_TEMPLATE]
    values = json.loads(template.args["jsonOpts"])["values"]
    prometheus, alertmanager = values["prometheus"], values["alertmanager"]
    # 3 replicas x (1 model x 43 + 16) + 100,000 chart series = 100,177, every 30 s for 30 days, 2 bytes a
    # sample and half again: 25,965,878,400 bytes, 24.2 GiB, so 25Gi; Prometheus deletes past 85%, 21GB.
    assert prometheus["prometheusSpec"]["storageSpec"] == {
        "volumeClaimTemplate": {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "25Gi"}},
                "storageClassName": "gp3",
            }
        }
    }
    assert (prometheus["prometheusSpec"]["retention"], prometheus["prometheusSpec"]["retentionSize"]) == ("30d", "21GB")
    assert alertmanager["alertmanagerSpec"]["storage"] == {
        "volumeClaimTemplate": {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "gp3",
            }
        }
    }
    for part in (prometheus, alertmanager):
        spec = part.get("prometheusSpec") or part["alertmanagerSpec"]
        assert (spec["replicas"], spec["priorityClassName"]) == (2, "monitoring-critical")
        assert set(spec["resources"]) == {"requests", "limits"}
        assert part["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    assert values["prometheusOperator"]["priorityClassName"] == "monitoring-critical"
    assert values["kube-state-metrics"]["priorityClassName"] == "monitoring-critical"
    assert [values[part] for part in ("kubeControllerManager", "kubeScheduler", "kubeEtcd")] == [{"enabled": False}] * 3


def test_by_default_prometheus_keeps_15_days_on_an_emptydir_alone(recorder: RecordingMocks) -> None:
    build(my_args("install"))
    [template] = [c for c in recorder.calls if c.token == HELM_TEMPLATE]
    values = json.loads(template.args["jsonOpts"])["values"]
    spec = values["prometheus"]["prometheusSpec"]
    assert (spec["retention"], spec["replicas"], "storageSpec" in spec, "priorityClassName" in spec) == (
        "15d",
        1,
        False,
        False,
    )
    assert "podDisruptionBudget" not in values["prometheus"]
    assert not {"kubeControllerManager", "kubeScheduler", "kubeEtcd"} & set(values)
    assert ("kubernetes:scheduling.k8s.io/v1:PriorityClass", "mon-priority-class") not in recorder.inputs


def test_a_given_prometheus_volume_is_used_and_its_retention_size_follows() -> None:
    args: MonitoringArgs = {**my_args("install"), "storage": {"prometheus_size": "200Gi", "alertmanager_size": "2Gi"}}
    values = chart_values(monitoring_settings("mon", args))
    spec = values["prometheus"]["prometheusSpec"]
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert (claim["resources"]["requests"]["storage"], "storageClassName" in claim) == ("200Gi", False)
    assert spec["retentionSize"] == "170GB"
    alertmanager = values["alertmanager"]["alertmanagerSpec"]["storage"]["volumeClaimTemplate"]["spec"]
    assert alertmanager["resources"]["requests"]["storage"] == "2Gi"


def test_outputs_name_the_prometheus_of_mode_install_too(recorder: RecordingMocks) -> None:
    outputs = build(my_args("install"))
    assert (outputs["prometheus_url"], outputs["metrics_namespace"]) == (
        "http://prometheus-operated.observability.svc:9090",
        "observability",
    )


# --- what a user can get wrong: each rule's message, naming the Arg ------------------------------------------

BUSY: dict[str, Any] = {"kind": "busy-ratio", "target": 0.75, "instances_per_pod": {"resnet": 2}}
"""A busy-ratio signal: two resnet instances per pod."""
DEMAND: dict[str, Any] = {"kind": "demand", "target": 0.8, "capacity_per_pod": {"resnet": 1200.5}}
"""A demand signal: a pod serves 1,200.5 resnet requests per second."""
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


KNOWN_KEYS = (
    "alerts, chart, dashboard_tags, dcgm_metrics, deployments, grafana_folder, image_digests, interceptor_namespace, "
    "kube_version, labels, "
    "latency_p99_slo_ms, latency_slo_ms, managed_control_plane, mode, namespace, priority_class_name, prometheus_namespace, "
    "prometheus_pod_labels, receivers, replicas, retention, routes, runbook_base_url, scaling_enabled, "
    "scrape_interval, selector_labels, storage, token_objectives"
)
THRESHOLD_KEYS = (
    "backlog_at_max_for, failure_for, failure_ratio, gpu_memory_for, gpu_memory_ratio, gpu_utilization_low, "
    "gpu_utilization_low_for, keda_errors_for, latency_for, model_missing_for, queue_time_for, queue_time_ms, "
    "replicas_unavailable_for, target_down_for"
)
PROM_DURATION = "must be a Prometheus duration such as 30s, 5m or 1h30m"


@pytest.mark.parametrize(
    ("path", "value", "problems"),
    [
        ("namespace", DELETE, ["args.namespace: missing (required)"]),
        (
            "namespace",
            "ML Team",
            [
                "args.namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a "
                "letter or digit); got 'ML Team'"
            ],
        ),
        ("latency_slo_ms", 0, ["args.latency_slo_ms: 0 is below the minimum 1"]),
        ("latency_slo_ms", 3_600_001, ["args.latency_slo_ms: 3600001 is above the maximum 3600000"]),
        (
            "latency_slo",
            250,
            [f"args.latency_slo: unknown key; known keys: {KNOWN_KEYS} (did you mean 'latency_slo_ms'?)"],
        ),
        ("mode", "replace", ["args.mode: 'replace' is not one of existing, install"]),
        ("replicas", 0, ["args.replicas: 0 is below the minimum 1"]),
        ("retention", "30m", ["args.retention: '30m' is below 1h; a retention must be between 1h and 1y"]),
        (
            "storage",
            {"prometheus_size": "lots", "storage_class_name": "Fast SSD"},
            [
                "args.storage.storage_class_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', "
                "each starting and ending with a letter or digit, joined by single dots); got 'Fast SSD'",
                "args.storage.prometheus_size: must be a Kubernetes quantity such as 500m, 4, 8Gi; got 'lots'",
            ],
        ),
        (
            "image_digests",
            {"quay.io/prometheus/prometheus:v3.7.3": "v3.7.3"},
            [
                'args.image_digests["quay.io/prometheus/prometheus:v3.7.3"]: must be a sha256 digest: sha256: and '
                "64 lowercase hex digits; got 'v3.7.3'"
            ],
        ),
        (
            "scrape_interval",
            "5m",
            ["args.scrape_interval: '5m' is above 2m; a scrape interval must be between 1s and 2m"],
        ),
        ("scrape_interval", "15", [f"args.scrape_interval: {PROM_DURATION}; got '15'"]),
        (
            "scaling_enabled",
            "false",
            ["args.scaling_enabled: 'false' is a string; write the boolean true or false, unquoted"],
        ),
        (
            "dashboard_tags",
            "triton",
            ["args.dashboard_tags: 'triton' is a string, not a list; a list of one is ['triton']"],
        ),
        (
            "runbook_base_url",
            "http://wiki.example.com/runbooks",
            ["args.runbook_base_url: must be an https:// URL; got 'http://wiki.example.com/runbooks'"],
        ),
        (
            "runbook_base_url",
            "https://wiki example.com/runbooks",
            [
                "args.runbook_base_url: 'https://wiki example.com/runbooks' has host 'wiki example.com', which is "
                "neither a lowercase DNS name (RFC 1123: labels of 1-63 a-z, 0-9 and '-', each starting and ending "
                "with a letter or digit, joined by single dots) nor an IP address"
            ],
        ),
        (
            "runbook_base_url",
            "https://wiki.example.com/runbooks#top",
            [
                "args.runbook_base_url: 'https://wiki.example.com/runbooks#top' has a fragment, '#top'; each alert's "
                "runbook link sets its own (#<alert name in lower case>), so give the page without one, e.g. "
                "'https://wiki.example.com/runbooks'"
            ],
        ),
        (
            "runbook_base_url",
            "https://wiki.example.com/runbooks?space=ml#",
            [
                "args.runbook_base_url: 'https://wiki.example.com/runbooks?space=ml#' has a fragment, '#'; each "
                "alert's runbook link sets its own (#<alert name in lower case>), so give the page without one, e.g. "
                "'https://wiki.example.com/runbooks?space=ml'"
            ],
        ),
        ("grafana_folder", "", ["args.grafana_folder: is empty; give a value"]),
        (
            "prometheus_pod_labels",
            {"app": "prom etheus"},
            [
                "args.prometheus_pod_labels.app: must be a Kubernetes label value (up to 63 letters, digits, '-', "
                "'_', '.'); got 'prom etheus'"
            ],
        ),
        (
            "labels",
            {"grafana_dashboard": "0", "release": "other"},
            [
                "args.labels.grafana_dashboard: '0' differs from '1', which the component sets on its dashboards "
                "(Grafana's sidecar loads them by it); leave it out or give that value",
                "args.labels.release: 'other' differs from 'prom', which the component sets on the objects the "
                "operator selects (args.selector_labels); leave it out or give that value",
            ],
        ),
        ("alerts", "on", ["args.alerts: 'on' is not a mapping of AlertThresholds's keys"]),
        (
            "alerts",
            {"failure_ration": 0.1},
            [f"args.alerts.failure_ration: unknown key; known keys: {THRESHOLD_KEYS} (did you mean 'failure_ratio'?)"],
        ),
        ("alerts", {"failure_for": "5 minutes"}, [f"args.alerts.failure_for: {PROM_DURATION}; got '5 minutes'"]),
        (
            "alerts",
            {"keda_errors_for": "2d"},
            ["args.alerts.keda_errors_for: '2d' is above 1d; an alert's `for` must be between 0s and 1d"],
        ),
        (
            "alerts",
            {"failure_ratio": 1},
            ["args.alerts.failure_ratio: 1 is not below 1: a failure ratio of 1 would never fire"],
        ),
        (
            "alerts",
            {"gpu_utilization_low": 1.0},
            ["args.alerts.gpu_utilization_low: 1 is not below 1: a utilization mark of 1 would fire nearly always"],
        ),
        ("alerts", {"gpu_memory_ratio": 1.5}, ["args.alerts.gpu_memory_ratio: 1.5 is not above 0 and at most 1"]),
        ("alerts", {"queue_time_ms": "20ms"}, ["args.alerts.queue_time_ms: '20ms' is not a number"]),
        (
            "alerts",
            {"queue_time_ms": float("inf"), "failure_ratio": -0.1},
            [
                "args.alerts.queue_time_ms: inf is not a finite number",
                "args.alerts.failure_ratio: -0.1 is not above 0 and at most 1",
            ],
        ),
        (
            "deployments",
            [MY_MODEL],
            [
                "args.deployments: [{'object_name': 'my-model', 'max_replicas': 3, 'models': ['resnet'], 'signal': … "
                "is not a mapping"
            ],
        ),
        (
            f"{DEMO}.replicas",
            3,
            [
                f"args.{DEMO}.replicas: unknown key; known keys: max_replicas, models, object_name, signal, wake_budget_seconds "
                "(did you mean 'max_replicas'?)"
            ],
        ),
        (
            f"{DEMO}.object_name",
            "triton.general",
            [
                f"args.{DEMO}.object_name: must be a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a "
                "letter, ending with a letter or digit); got 'triton.general'"
            ],
        ),
        (f"{DEMO}.max_replicas", 2.5, [f"args.{DEMO}.max_replicas: 2.5 is not a whole number"]),
        (f"{DEMO}.max_replicas", 2**31, [f"args.{DEMO}.max_replicas: 2147483648 is above the maximum 2147483647"]),
        (
            f"{DEMO}.models",
            "ranker",
            [f"args.{DEMO}.models: 'ranker' is a string, not a list; a list of one is ['ranker']"],
        ),
        (
            f"{DEMO}.models",
            ['resnet"} or vector(1) #'],
            [
                f"args.{DEMO}.models[0]: must be a model folder name (letters, digits, '_', '.' and '-'); "
                "got 'resnet\"} or vector(1) #'"
            ],
        ),
        (
            "deployments",
            {"demo": MY_MODEL, "copy": {**MY_MODEL, "models": ["resnet", "resnet"]}},
            [
                "args.deployments.copy.models: 'resnet' is listed twice; list each once",
                "args.deployments.copy.object_name: 'my-model' is deployments.demo.object_name too; watch each "
                "Deployment once",
            ],
        ),
        (f"{DEMO}.signal", DELETE, [f"args.{DEMO}.signal: missing (required)"]),
        (
            f"{DEMO}.signal",
            "queue-depth",
            [f"args.{DEMO}.signal: 'queue-depth' is not a mapping of DeploymentSignal's keys"],
        ),
        (DEMO, "my-model", [f"args.{DEMO}: 'my-model' is not a mapping of MonitoredDeployment's keys"]),
        (
            f"{DEMO}.signal.kind",
            "queue-time",
            [f"args.{DEMO}.signal.kind: 'queue-time' is not one of busy-ratio, queue-depth, demand"],
        ),
        (f"{DEMO}.signal.target", 0, [f"args.{DEMO}.signal.target: 0 is not above 0"]),
        (
            f"{DEMO}.signal",
            {**BUSY, "target": 1.5},
            [
                f"args.{DEMO}.signal.target: 1.5 is above 1; a busy ratio never exceeds 1, so the target would "
                "never be met"
            ],
        ),
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
                f"args.{DEMO}.signal.instances_per_pod.resnet: 0 is below the minimum 1",
                f"args.{DEMO}.signal.instances_per_pod.bert: is not one of the deployment's models (resnet)",
            ],
        ),
        (
            f"{DEMO}.signal.instances_per_pod",
            {"resnet": 2},
            [f"args.{DEMO}.signal.instances_per_pod: only kind busy-ratio reads it; this signal is 'queue-depth'"],
        ),
        (
            f"{DEMO}.signal",
            {**DEMAND, "instances_per_pod": {"resnet": 2}},
            [f"args.{DEMO}.signal.instances_per_pod: only kind busy-ratio reads it; this signal is 'demand'"],
        ),
        (
            f"{DEMO}.signal",
            {**BUSY, "capacity_per_pod": {"resnet": 10.0}},
            [f"args.{DEMO}.signal.capacity_per_pod: only kind demand reads it; this signal is 'busy-ratio'"],
        ),
        (
            f"{DEMO}.signal",
            {"kind": "demand", "target": 0.8},
            [
                f"args.{DEMO}.signal.capacity_per_pod: missing (required for kind demand: what each model's requests "
                "are divided by)"
            ],
        ),
        (
            f"{DEMO}.signal",
            {**DEMAND, "target": 1.2},
            [
                f"args.{DEMO}.signal.target: 1.2 is above 1; each pod would have to carry more than it serves at full "
                "batches, so the target is met only once requests are already being rejected"
            ],
        ),
        (
            f"{DEMO}.signal",
            {**DEMAND, "capacity_per_pod": {"resnet": 0, "bert": 2e7}},
            [
                f"args.{DEMO}.signal.capacity_per_pod.resnet: 0 is not above 0 and at most 1e+07",
                f"args.{DEMO}.signal.capacity_per_pod.bert: 2e+07 is not above 0 and at most 1e+07",
                f"args.{DEMO}.signal.capacity_per_pod.bert: is not one of the deployment's models (resnet)",
            ],
        ),
        ("routes", {"critical": "pager"}, ["args.routes.critical: 'pager' names no receiver of receivers (oncall)"]),
        ("routes", {"page": "oncall"}, ["args.routes.page: key 'page' is not one of critical, warning, info"]),
        (ONCALL, {}, [f"args.{ONCALL}: names no integration; give one or more of slack, pagerduty, webhook"]),
        (
            ONCALL,
            {"pagerduty": {"routing_key": PAGE_KEY}, "slak": {}},
            [f"args.{ONCALL}.slak: unknown key; known keys: pagerduty, slack, webhook (did you mean 'slack'?)"],
        ),
        (
            "receivers.null",
            {"pagerduty": {"routing_key": PAGE_KEY}},
            ["args.receivers.null: the name 'null' is taken: it receives what no route claims"],
        ),
        (
            "receivers.OnCall",
            {"pagerduty": {"routing_key": PAGE_KEY}},
            [
                "args.receivers.OnCall: key must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and "
                "ending with a letter or digit); got 'OnCall'"
            ],
        ),
        (
            # Named once, by its key: the rules across keys skip it.
            'receivers.On "Call"',
            {},
            [
                'args.receivers["On \\"Call\\""]: key must be a lowercase RFC 1123 label (a-z, 0-9 and \'-\', starting '
                "and ending with a letter or digit); got 'On \"Call\"'"
            ],
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
            f"{ONCALL}.pagerduty.routing_key",
            {"secret": {"name": "PagerDuty", "key": "routing/key"}},
            [
                f"args.{ONCALL}.pagerduty.routing_key.secret.name: must be a lowercase RFC 1123 subdomain (labels of "
                "a-z, 0-9 and '-', each starting and ending with a letter or digit, joined by single dots); "
                "got 'PagerDuty'",
                f"args.{ONCALL}.pagerduty.routing_key.secret.key: must be a Secret key (letters, digits, '-', '_' "
                "and '.'; not '.' or '..'); got 'routing/key'",
            ],
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


def test_args_that_are_no_mapping_are_named() -> None:
    with pytest.raises(ArgsError) as raised:
        monitoring_settings("mon", cast(MonitoringArgs, None))
    assert str(raised.value) == "Monitoring mon: args: missing: give MonitoringArgs, a mapping of its keys"


def test_grafanas_image_renderer_needs_a_named_secret() -> None:
    """Grafana 13's renderer token: without existingSecret the chart would write a new random one each preview."""
    args = changed("mode", "install")
    renderer: dict[str, Any] = {"enabled": True, "token": "in-plain-text"}
    args["chart"] = {"version": "88.5.3", "path": "/charts/kps", "values": {"grafana": {"imageRenderer": renderer}}}
    with pytest.raises(ArgsError) as raised:
        monitoring_settings("mon", cast(MonitoringArgs, args))
    assert str(raised.value).splitlines() == [
        "Monitoring mon: args.chart.values.grafana.imageRenderer: enabled without existingSecret: the grafana chart "
        "would write a new random token on every preview (it is templated, so its lookup of the last one finds "
        "nothing), and a `token` value would be stored in plain text; create a Secret with the key `token` and name "
        "it in existingSecret"
    ]
    renderer["enabled"] = "yes"  # Helm's `if` takes any non-empty string as on
    with pytest.raises(ArgsError):
        monitoring_settings("mon", cast(MonitoringArgs, args))
    renderer["existingSecret"] = "grafana-renderer"
    assert (
        monitoring_settings("mon", cast(MonitoringArgs, args))["chart"]["values"]["grafana"]["imageRenderer"][
            "existingSecret"
        ]
        == "grafana-renderer"
    )


def test_install_mode_checks_the_chart_and_the_namespace_labels() -> None:
    args = changed("mode", "install")
    args["chart"] = {"version": "latest"}
    args["labels"] = {"pod-security.kubernetes.io/enforce": "privileged"}
    with pytest.raises(ArgsError) as raised:
        monitoring_settings("mon", cast(MonitoringArgs, args))
    assert str(raised.value).splitlines() == [
        "Monitoring mon: args.chart.version: must be an exact chart version such as 2.20.2; got 'latest'",
        "Monitoring mon: args.labels[\"pod-security.kubernetes.io/enforce\"]: 'privileged' differs from 'baseline', "
        "which the component sets on the namespace mode install creates; leave it out or give that value",
        "Monitoring mon: args.chart: neither repository nor path: say where the chart comes from",
    ]


def test_an_output_where_a_plain_string_is_needed_is_refused_by_name(recorder: RecordingMocks) -> None:
    """The namespace is written into names, queries and dashboards: an Output would become its placeholder text."""
    args = changed("namespace", pulumi.Output.from_input("ml"))
    with pytest.raises(ArgsError) as raised:
        build(cast(MonitoringArgs, args))
    assert str(raised.value) == (
        "Monitoring mon: args.namespace: is an Output, but this Arg must be a plain value known when the program "
        "runs (the component builds names, queries or files from it); pass the value itself"
    )
    assert recorder.inputs == {}


def test_every_mistake_is_raised_at_once_before_anything_is_registered(recorder: RecordingMocks) -> None:
    args = changed("mode", "replace")
    args["routes"] = {"critical": "pager"}
    with pytest.raises(ArgsError) as raised:
        build(cast(MonitoringArgs, args))
    assert str(raised.value).splitlines() == [
        "Monitoring mon: args.mode: 'replace' is not one of existing, install",
        "Monitoring mon: args.routes.critical: 'pager' names no receiver of receivers (oncall)",
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
    assert (as_floats["latency_slo_ms"], as_floats["deployments"]["demo"]["max_replicas"]) == (250, 3)


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
    [(title, _, targets)] = [p for p in panel_queries(settings, settings["deployments"]["demo"]) if "signal" in p[0]]
    assert (title, targets) == (
        "Scaling signal: busy-ratio per replica",
        [(f"namespace_deployment:nv_inference_instance_busy:ratio{{{SELECTOR}}}", "per replica"), ("0.75", "target")],
    )


def test_a_demand_signal_divides_each_models_requests_by_its_capacity() -> None:
    """Every request that ends, served or failed, over the capacity given, to the float's last digit; the load query
    is the deployment's total in pods, its recording rule the mean per pod."""
    args = changed(f"{DEMO}.signal", DEMAND)
    settings = monitoring_settings("mon", cast(MonitoringArgs, args))
    resnet = 'namespace="ml", deployment="my-model", model="resnet"'
    by = "sum by (namespace, deployment, pod, model)"
    per_pod = (
        f"sum by (namespace, deployment, pod) (({by} (rate(nv_inference_request_success{{{resnet}}}[2m]))"
        f" + {by} (rate(nv_inference_request_failure{{{resnet}}}[2m]))) / 1200.5)"
    )
    recording, _ = rule_groups(settings)
    assert recording["rules"][-1] == {
        "record": "namespace_deployment:nv_inference_request_demand:ratio",
        "expr": f"avg by (namespace, deployment) ({per_pod})",
        "labels": {"deployment": "my-model"},
    }
    _, queries = build_joined(cast(MonitoringArgs, args))
    assert queries == {"demo": f"sum({per_pod})"}
    [(title, _, targets)] = [p for p in panel_queries(settings, settings["deployments"]["demo"]) if "signal" in p[0]]
    assert (title, targets) == (
        "Scaling signal: demand per replica",
        [(f"namespace_deployment:nv_inference_request_demand:ratio{{{SELECTOR}}}", "per replica"), ("0.8", "target")],
    )


def test_the_defaults() -> None:
    settings = monitoring_settings("mon", {"namespace": "ml", "latency_slo_ms": 250})
    assert (
        settings["mode"],
        settings["prometheus_namespace"],
        settings["scrape_interval"],
        settings["grafana_folder"],
    ) == (
        "existing",
        "monitoring",
        "15s",
        "Triton",
    )
    assert settings["chart"] == {
        "version": "88.5.3",
        "repository": "https://prometheus-community.github.io/helm-charts",
        "values": {},
    }
    assert (settings["prometheus_pod_labels"], settings["selector_labels"]) == (
        {"app.kubernetes.io/name": "prometheus"},
        {"release": "kube-prometheus-stack"},
    )
    assert (settings["deployments"], settings["receivers"], settings["routes"], settings["labels"]) == ({}, {}, {}, {})
    assert (settings["scaling_enabled"], settings["dashboard_tags"], settings.get("kube_version")) == (
        False,
        ["triton", "triton-platform"],
        None,
    )
    assert settings["runbook_base_url"] == RUNBOOKS
    assert settings["alerts"] == {
        "latency_for": "5m",
        "queue_time_ms": 20,
        "queue_time_for": "5m",
        "failure_ratio": 0.01,
        "failure_for": "5m",
        "gpu_memory_ratio": 0.8,
        "gpu_memory_for": "10m",
        "gpu_utilization_low": 0.3,
        "gpu_utilization_low_for": "2h",
        "backlog_at_max_for": "10m",
        "replicas_unavailable_for": "10m",
        "model_missing_for": "10m",
        "target_down_for": "5m",
        "keda_errors_for": "5m",
    }


def test_each_thresholds_documented_default_is_its_default() -> None:
    """The Args' docstrings are the schema's descriptions: each says the default the component applies."""
    analyzer = Analyzer("triton-platform")
    settings = declared(AlertThresholds)
    assert set(settings) == set(AlertThresholds.__annotations__)
    for key in settings:
        description = analyzer.get_docstring(AlertThresholds, key)
        assert description is not None, key
        assert description.endswith(f" {default_sentence(AlertThresholds, key)}"), key


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


# --- names reach PromQL as escaped string literals ---------------------------------------------------------

HOSTILE = 'x"} or vector(1) or up{a="'
"""A name that would end its label matcher's literal and add a series of its own to every query it reached."""
NAMED = {"namespace", "deployment", "service", "model", "exported_namespace", "exported_pod"}
"""The labels the component matches on with the Args' names."""


def selectors(expr: str) -> list[dict[str, str]]:
    """The label matchers of each vector selector of `expr` (which must parse), as Prometheus reads them:
    `=value`, `=~regex`; a call of `vector` as the matcher `vector`."""
    found: list[dict[str, str]] = []

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(
                {m.name: ("=~" if m.op == promql_parser.MatchOp.Re else "=") + m.value for m in node.matchers.matchers}
            )
        if isinstance(node, promql_parser.Call) and node.func.name == "vector":
            found.append({"vector": "()"})

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def test_a_name_with_a_quote_cannot_rewrite_a_query() -> None:
    """The Args refuse such names (above); the builders escape whatever they are given all the same, as the
    stack's program hands them names too (scaling_signal.trigger_query)."""
    checked = monitoring_settings("mon", cast(MonitoringArgs, {**my_args(), "dcgm_metrics": True}))
    watched: MonitoredDeployment = {
        "object_name": HOSTILE,
        "max_replicas": 3,
        "models": [HOSTILE],
        "signal": {"kind": "busy-ratio", "target": 0.75, "instances_per_pod": {HOSTILE: 2}},
    }
    settings: MonitoringArgs = {**checked, "namespace": HOSTILE, "deployments": {"demo": watched}}
    exprs = [rule["expr"] for group in rule_groups(settings) for rule in group["rules"]]
    exprs += [expr for _, _, targets in panel_queries(settings, watched) for expr, _ in targets]
    exprs.append(dashboard(settings, watched)["templating"]["list"][1]["query"].removeprefix("label_values(")[:-8])
    exprs.append(trigger_query("busy-ratio", HOSTILE, HOSTILE, "2m", {HOSTILE: 2}))
    exprs.append(trigger_query("demand", HOSTILE, HOSTILE, "2m", {HOSTILE: 1000.0}))
    own = {"quantile", "clock_event", "xid", "scaledObject"}
    seen: set[str] = set()
    for expr in exprs:
        for matchers in selectors(expr):
            assert set(matchers) <= own | NAMED, expr
            for label in NAMED & set(matchers):
                # Grafana's variable, or the name, whole (a regex of the names matches each literally).
                assert matchers[label] in (
                    f"={HOSTILE}",
                    "=~$model",
                    # The pod regex: the name matched literally, then the ReplicaSet hash and the pod's suffix.
                    '=~x"\\} or vector\\(1\\) or up\\{a="-[a-z0-9]+-[a-z0-9]+',
                    # The deployments, their Services and ScaledObjects, each name matched literally.
                    '=~x"\\} or vector\\(1\\) or up\\{a="',
                ), (label, expr)
                seen.add(label)
    assert seen == NAMED
    [not_loaded] = [a for a in alerts(settings) if a.name == "TritonModelNotLoaded"]
    assert 'model="x\\"} or vector(1) or up{a=\\""' in not_loaded.expr


def build_joined(args: MonitoringArgs) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, str]]:
    """Build `Monitoring("mon", args)` under fresh mocks; what it registered and its `load_queries`, resolved."""
    mocks = install()
    queries: dict[str, str] = {}

    @pulumi_test
    def program() -> pulumi.Output[None]:
        return Monitoring("mon", args).load_queries.apply(queries.update)

    program()
    return mocks.inputs, queries


def test_tritons_outputs_are_taken_as_given_and_render_what_their_values_do() -> None:
    """`object_name`, `models` and `signal.instances_per_pod` as TritonServing outputs them: Outputs, from another
    resource. Every object is the one their plain values give, and the load query KEDA reads is the one the
    busy ratio's recording rule reads."""
    plain = changed(f"{DEMO}.signal", BUSY)
    joined = copy.deepcopy(plain)
    demo = joined["deployments"]["demo"]
    demo["object_name"] = pulumi.Output.from_input("my-model")
    demo["models"] = pulumi.Output.from_input(["resnet"])
    demo["signal"]["instances_per_pod"] = pulumi.Output.from_input({"resnet": 2})

    from_plain, plain_queries = build_joined(cast(MonitoringArgs, plain))
    from_outputs, queries = build_joined(cast(MonitoringArgs, joined))
    assert from_outputs == from_plain
    busy = 'namespace="ml", deployment="my-model", model="resnet"'
    by = "sum by (namespace, deployment, pod, model)"
    assert (
        queries
        == plain_queries
        == {
            "demo": "sum(max by (namespace, deployment, pod) ("
            f"({by} (rate(nv_inference_compute_input_duration_us{{{busy}}}[2m]))"
            f" + {by} (rate(nv_inference_compute_infer_duration_us{{{busy}}}[2m]))"
            f" + {by} (rate(nv_inference_compute_output_duration_us{{{busy}}}[2m])))"
            f" * {by} (rate(nv_inference_exec_count{{{busy}}}[2m]))"
            f" / clamp_min({by} (rate(nv_inference_count{{{busy}}}[2m])), 1e-9) / 2000000))"
        }
    )


def test_the_load_query_of_a_queue_depth_is_the_pending_count_summed() -> None:
    _, queries = build_joined(my_args())
    assert queries == {"demo": f"sum(nv_inference_pending_request_count{{{SELECTOR}}})"}


def test_a_joined_output_is_checked_once_its_value_is_known() -> None:
    """What the stand-in let pass is checked with the real value, named as a plain one would be."""
    args = changed(f"{DEMO}.object_name", pulumi.Output.from_input("My Model"))
    # Raised while the SDK serializes the first object that reads it, which names that object first.
    with pytest.raises(ValueError, match="object_name") as raised:
        build_joined(cast(MonitoringArgs, args))
    assert str(raised.value).splitlines()[-1] == (
        "ValueError has risen: Monitoring mon: args.deployments.demo.object_name: must be a lowercase RFC 1035 "
        "label (a-z, 0-9 and '-', starting with a letter, ending with a letter or digit); got 'My Model'"
    )


def test_an_output_for_a_deployment_key_that_is_not_joined_is_still_refused() -> None:
    args = changed(f"{DEMO}.max_replicas", pulumi.Output.from_input(3))
    with pytest.raises(ArgsError) as raised:
        build_joined(cast(MonitoringArgs, args))
    assert str(raised.value) == (
        "Monitoring mon: args.deployments.demo.max_replicas: is an Output, but this Arg must be a plain value "
        "known when the program runs (the component builds names, queries or files from it); pass the value itself"
    )
