"""Grafana dashboards, one per Triton deployment, built as JSON in code.

Panels read the recorded series (triton_platform/recorded_series.py) and
kube-state-metrics, and with `dcgm_metrics` the DCGM exporter's; a `model`
variable filters the per-model panels.
"""

from __future__ import annotations

import json
from typing import Any

from triton_platform import recorded_series as series
from triton_platform.monitoring.monitoring_args import DASHBOARD_LABEL, MonitoredDeployment, MonitoringArgs
from triton_platform.monitoring.monitoring_settings import object_name, served_models
from triton_platform.promql import label_value, regex_literal
from triton_platform.scaling_signal import deployment_selector, per_replica_series

FOLDER_ANNOTATION = "grafana_folder"
"""What RE2, Prometheus' regular expressions, reads as syntax outside a character class."""


def _panel(panel_id: int, title: str, unit: str, targets: list[tuple[str, str]]) -> dict[str, Any]:
    """A time-series panel; two per row, eight units high."""
    x, y = 12 * ((panel_id - 1) % 2), 8 * ((panel_id - 1) // 2)
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def panel_queries(
    settings: MonitoringArgs, deployment: MonitoredDeployment
) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(title, unit, [(expr, legend)]) of every panel: also what the metric-name test reads."""
    ns, target, signal = settings["namespace"], object_name(deployment), deployment["signal"]
    window = series.rate_window(settings["scrape_interval"])
    dep = deployment_selector(ns, target)
    model = f'{dep}, model=~"$model"'
    gpu_panels = _dcgm_panels(ns, target) if settings["dcgm_metrics"] else []
    token_panels = _token_panels(settings, deployment, model)
    return [
        ("Requests per second", "reqps", [(f"{series.REQUESTS_RATE}{window}{{{model}}}", "{{model}}")]),
        (
            "Request latency p95 / p99",
            "s",
            [
                (f"{series.LATENCY_P95}{{{model}}}", "p95 {{model}}"),
                (f"{series.LATENCY_P99}{{{model}}}", "p99 {{model}}"),
            ],
        ),
        ("Queue time per request", "s", [(f"{series.QUEUE_SECONDS}{window}{{{model}}}", "{{model}}")]),
        ("Average batch size", "short", [(f"{series.BATCH_SIZE}{window}{{{model}}}", "{{model}}")]),
        (
            f"Scaling signal: {signal['kind']} per replica",
            "short",
            [(per_replica_series(signal["kind"], ns, target), "per replica"), (f"{signal['target']:g}", "target")],
        ),
        ("Pending requests per replica", "short", [(f"{series.PENDING_PER_REPLICA}{{{dep}}}", "per replica")]),
        ("GPU utilization", "percentunit", [(f"{series.GPU_UTILIZATION_POD}{{{dep}}}", "{{pod}}")]),
        ("GPU memory used", "percentunit", [(f"{series.GPU_MEMORY_RATIO_POD}{{{dep}}}", "{{pod}}")]),
        (
            "Replicas",
            "short",
            [
                (f"kube_deployment_status_replicas_available{{{dep}}}", "available"),
                (f"kube_deployment_spec_replicas{{{dep}}}", "desired"),
                (f"{deployment['max_replicas']}", "max"),
            ],
        ),
        (
            "Failures by reason",
            "reqps",
            [
                (
                    f"sum by (model, reason) (rate(nv_inference_request_failure{{{model}}}[{window}]))",
                    "{{model}} {{reason}}",
                )
            ],
        ),
        *token_panels,
        *gpu_panels,
    ]


def _token_panels(
    settings: MonitoringArgs, deployment: MonitoredDeployment, model: str
) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Time to first token and, where the series report it, inter-token latency of the deployment's models with
    token objectives (monitoring/token_rules.py)."""
    objectives = {m: o for m, o in settings["token_objectives"].items() if m in served_models(deployment)}
    if not objectives:
        return []
    panels = [
        (
            "Time to first token p95 / p99",
            "s",
            [(f"{series.TTFT_P95}{{{model}}}", "p95 {{model}}"), (f"{series.TTFT_P99}{{{model}}}", "p99 {{model}}")],
        )
    ]
    if any(o["metrics"] == "vllm" for o in objectives.values()):
        panels.append(
            (
                "Inter-token latency p95 / p99",
                "s",
                [(f"{series.ITL_P95}{{{model}}}", "p95 {{model}}"), (f"{series.ITL_P99}{{{model}}}", "p99 {{model}}")],
            )
        )
    return panels


def _dcgm_panels(namespace: str, target: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The DCGM exporter's view of the GPUs allocated to the deployment's pods (gpu_health_rules.py
    on its labels: the pod a GPU serves is `exported_pod` behind a ServiceMonitor without honorLabels)."""
    # A Deployment's pods are <name>-<ReplicaSet hash>-<suffix>: another deployment named <name>-x never matches.
    pods = label_value(f"{regex_literal(target)}-[a-z0-9]+-[a-z0-9]+")
    gpus = f"exported_namespace={label_value(namespace)}, exported_pod=~{pods}"
    per_gpu = "{{exported_pod}} GPU {{gpu}}"
    return [
        ("GPU utilization (DCGM)", "percentunit", [(f"{series.DCGM_GPU_UTILIZATION}{{{gpus}}}", per_gpu)]),
        (
            "GPU framebuffer used / total (DCGM)",
            "mbytes",
            [
                (f"DCGM_FI_DEV_FB_USED{{{gpus}}}", f"used {per_gpu}"),
                (f"DCGM_FI_DEV_FB_USED{{{gpus}}} + DCGM_FI_DEV_FB_FREE{{{gpus}}}", f"total {per_gpu}"),
            ],
        ),
        ("GPU temperature (DCGM)", "celsius", [(f"DCGM_FI_DEV_GPU_TEMP{{{gpus}}}", per_gpu)]),
        ("GPU power (DCGM)", "watt", [(f"DCGM_FI_DEV_POWER_USAGE{{{gpus}}}", per_gpu)]),
        (
            "Clock throttle events by reason (DCGM, per exporter window)",
            "short",
            [(f'DCGM_EXP_CLOCK_EVENTS_COUNT{{{gpus}, clock_event!=""}}', per_gpu + " {{clock_event}}")],
        ),
        (
            "XID errors by code (DCGM, per exporter window)",
            "short",
            [(f'DCGM_EXP_XID_ERRORS_COUNT{{{gpus}, xid!=""}}', per_gpu + " XID {{xid}}")],
        ),
    ]


def dashboard(settings: MonitoringArgs, deployment: MonitoredDeployment) -> dict[str, Any]:
    ns, target = settings["namespace"], object_name(deployment)
    panels = [
        _panel(i + 1, title, unit, targets)
        for i, (title, unit, targets) in enumerate(panel_queries(settings, deployment))
    ]
    return {
        "uid": f"{ns}-{target}"[:40],
        "title": f"Triton {target} ({ns})",
        "tags": list(settings["dashboard_tags"]),
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
                {
                    "name": "model",
                    "type": "query",
                    "label": "Model",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "query": f"label_values(nv_inference_count{{{deployment_selector(ns, target)}}}, model)",
                    "includeAll": True,
                    "multi": True,
                    "refresh": 2,
                },
            ]
        },
        "panels": panels,
    }


def dashboard_manifest(settings: MonitoringArgs, deployment: MonitoredDeployment) -> dict[str, Any]:
    target = object_name(deployment)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{target}-dashboard",
            "namespace": settings["namespace"],
            "labels": {**settings["labels"], **DASHBOARD_LABEL},
            "annotations": {FOLDER_ANNOTATION: settings["grafana_folder"]},
        },
        "data": {f"{target}.json": json.dumps(dashboard(settings, deployment), indent=2, sort_keys=True)},
    }
