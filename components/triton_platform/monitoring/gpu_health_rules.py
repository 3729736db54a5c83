"""Recording rules and alerts on the DCGM exporter's per-GPU series: hardware faults and slowdowns Triton's own
`nv_gpu_*` gauges cannot show. Rendered only with `dcgm_metrics` (a DCGM exporter's metrics reach Prometheus).

Every metric is one NVIDIA/dcgm-exporter 4.6.0-4.8.3 exports: on in its `etc/default-counters.csv`, or one of the
three the GPU pool's exporter turns on besides (gpu_pool/dcgm_counters.py HEALTH_COUNTERS; a GPU Operator
must enable the same, docs/runbooks.md). The exporter labels each series `gpu`, `UUID`, `pci_bus_id`, `device`,
`modelName` and `hostname` (internal/pkg/rendermetrics/render_metrics.go; `Hostname` before 4.6.0-4.8.3, #655);
with Kubernetes mapping also the `namespace`, `pod` and `container` of the pod the GPU is allocated to
(internal/pkg/transformation/kubernetes.go), which a ServiceMonitor without `honorLabels` (the
pool's own, and the GPU Operator's by default) stores as `exported_namespace`, `exported_pod`, `exported_container`.
No rule aggregates: each keeps every label, so an alert names the GPU and node whichever labels a version adds.

The alerts are about GPUs, not the stack's namespace: they carry `namespace` set to it so that the stack's
AlertmanagerConfig, which matches on namespace (triton_platform/monitoring/alert_routing.py), routes them.
"""

from __future__ import annotations

from typing import Any

from triton_platform.monitoring.monitoring_args import MonitoringArgs
from triton_platform.monitoring.monitoring_settings import scraped_service
from triton_platform.monitoring.prometheus_alert import Alert, alert_rule
from triton_platform.promql import any_of, label_value
from triton_platform.recorded_series import DCGM_FRAMEBUFFER_USED, DCGM_GPU_UTILIZATION

ERROR_WINDOW = "10m"
"""How far back a counter's increase counts: the exporter samples every 30 s (`--collect-interval`), so a single
error shows in 20 samples; the alert resolves once the window has passed without another."""
SLOWDOWN_REASONS = ("hw_slowdown", "hw_thermal", "hw_power_brake", "sw_thermal")
"""Clock events that cut clocks for heat or power (the exporter's names,
internal/pkg/collector/clock_events_collector.go): the board, its cooling or its power supply is at fault.
`power_cap` (software power capping under load) and `gpu_idle` are normal."""
SLOWDOWN_FOR = "15m"
"""A slowdown must last this long to alert: short thermal excursions under a burst are expected."""
GPU_LABELS = "{{ or $labels.hostname $labels.Hostname }} GPU {{ $labels.gpu }} ({{ $labels.UUID }})"
"""The node, whichever exporter release named it: a GPU Operator's may be older than the pool's own."""


def recording_rules() -> list[dict[str, str]]:
    return [
        {"record": DCGM_GPU_UTILIZATION, "expr": "DCGM_FI_DEV_GPU_UTIL / 100"},
        # FB_TOTAL is off in the default counters; used + free is the framebuffer less the driver's reserve.
        {
            "record": DCGM_FRAMEBUFFER_USED,
            "expr": "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)",
        },
    ]


def gpu_alerts(namespace: str) -> list[Alert]:
    route = (("namespace", namespace),)
    return [
        Alert(
            "GPUXidError",
            # A count per XID code within the exporter's window; 0, without an `xid` label, when there was none.
            "DCGM_EXP_XID_ERRORS_COUNT > 0",
            "0m",
            "warning",
            f"XID {{{{ $labels.xid }}}} on {GPU_LABELS}",
            f"{GPU_LABELS} reported XID {{{{ $labels.xid }}}} {{{{ $value }}}} times in the exporter's window: a "
            "driver-reported GPU error (NVIDIA's XID catalog says whether the application or the hardware caused "
            "it; `exported_pod` names the pod the GPU serves).",
            route,
        ),
        Alert(
            "GPUDoubleBitECCErrors",
            f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[{ERROR_WINDOW}]) > 0",
            "0m",
            "critical",
            f"Uncorrectable ECC errors on {GPU_LABELS}",
            f"{GPU_LABELS} had double-bit (uncorrectable) ECC errors in the last {ERROR_WINDOW}: work on it may "
            "have read corrupt memory and the driver has likely stopped it.",
            route,
        ),
        Alert(
            "GPURowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "0m",
            "critical",
            f"Row remapping failed on {GPU_LABELS}",
            f"{GPU_LABELS} could not remap a faulty memory row: it has no spare rows left and needs replacing.",
            route,
        ),
        Alert(
            "GPUUncorrectableRowRemap",
            f"increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[{ERROR_WINDOW}]) > 0",
            "0m",
            "warning",
            f"A memory row was remapped after an uncorrectable error on {GPU_LABELS}",
            f"{GPU_LABELS} remapped a memory row after an uncorrectable error in the last {ERROR_WINDOW}; the remap "
            "takes effect only after a GPU reset.",
            route,
        ),
        Alert(
            "GPUHardwareSlowdown",
            f'DCGM_EXP_CLOCK_EVENTS_COUNT{{clock_event=~"{"|".join(SLOWDOWN_REASONS)}"}} > 0',
            SLOWDOWN_FOR,
            "warning",
            f"{{{{ $labels.clock_event }}}} slows {GPU_LABELS}",
            f"{GPU_LABELS} has had its clocks cut ({{{{ $labels.clock_event }}}}) in every exporter window for "
            f"{SLOWDOWN_FOR}: inference on it runs slower; cooling or power is at fault.",
            route,
        ),
    ]


DCGM_SERIES = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_EXP_XID_ERRORS_COUNT",
    "DCGM_EXP_CLOCK_EVENTS_COUNT",
)
"""The exporter's series the rules and dashboards read that every GPU reports: the two counters' collectors
report 0 for a GPU without events (internal/pkg/collector/expcollector.go), the fields are on every GPU."""
HARDWARE_DEPENDENT = (
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
)
"""Read too, but blank on a GPU without ECC or row remapping, and the exporter skips blank values: their absence
says nothing of a renamed field, so no alert watches for it."""
TRITON_GPU_SERIES = ("nv_gpu_memory_used_bytes", "nv_gpu_memory_total_bytes", "nv_gpu_utilization")
"""Triton's own GPU gauges (core src/metrics.cc), by the stack's namespace."""
MISSING_FOR = "10m"
"""How long a series may be missing while Triton's pods are up: an exporter restart or a short scrape outage
passes without an alert."""


def missing_series_alerts(settings: MonitoringArgs, names: tuple[str, ...], *, namespaced: bool) -> list[Alert]:
    """`GPUSeriesMissing` for each series of `names` Prometheus holds none of while a Triton pod of the stack is
    scraped: a renamed field, a changed counter set, or an exporter that is down would otherwise leave every rule
    and panel reading it silent. `namespaced`: the stack's own series (Triton's), else any (the exporter's labels
    vary by release and ServiceMonitor)."""
    ns = settings["namespace"]
    services = any_of(scraped_service(d) for d in settings["deployments"].values())
    serving = f"count(up{{namespace={label_value(ns)}, service=~{services}}} == 1)"
    scope = f"{{namespace={label_value(ns)}}}" if namespaced else ""
    return [
        Alert(
            "GPUSeriesMissing",
            f"{serving} unless on () count({name}{scope})",
            MISSING_FOR,
            "warning",
            f"{name} is missing while Triton's GPU pods run",
            f"Prometheus holds no {name} series while Triton pods of the stack are scraped: "
            "what reads it (alerts, dashboards, a scaling trigger) sees nothing, so its alerts cannot fire. An "
            "exporter release that renamed the field or changed its units or counters, an exporter that is down, "
            "or a ServiceMonitor that no longer selects it.",
            (("namespace", ns), ("series", name)),
        )
        for name in names
    ]


def gpu_health_groups(settings: MonitoringArgs) -> list[dict[str, Any]]:
    """The GPU health rule groups, or none without `dcgm_metrics`."""
    if not settings["dcgm_metrics"]:
        return []
    return [
        {"name": "triton-platform.gpu-health.recording", "rules": recording_rules()},
        {
            "name": "triton-platform.gpu-health.alerts",
            "rules": [
                alert_rule(a, settings["runbook_base_url"])
                for a in [
                    *gpu_alerts(settings["namespace"]),
                    *missing_series_alerts(settings, DCGM_SERIES, namespaced=False),
                ]
            ],
        },
    ]
