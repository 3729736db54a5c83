"""The GPU health rules, alerts and dashboard panels on the DCGM exporter's series (triton_platform/monitoring/gpu_health_rules.py):
rendered only with `dcgm_metrics`, reading only counters the exporter turns on, and checked by promtool's own
rule unit tests."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from program.platform import dcgm_metrics
from tests.conftest import CLUSTER, POOL, setting, synth_stack, validate
from tests.program.test_gpu_node_pool import objects
from tests.program.test_monitoring import metric_names
from tests.support.promtool import promtool_test
from triton_platform.gpu_pool.dcgm_counters import (
    COUNTERS_FILE,
    HEALTH_COUNTERS,
    counters_csv,
    enabled_counters,
    exporter_defaults,
)
from triton_platform.monitoring.dashboards import panel_queries
from triton_platform.monitoring.gpu_health_rules import DCGM_SERIES, HARDWARE_DEPENDENT, TRITON_GPU_SERIES, gpu_alerts
from triton_platform.monitoring.monitoring_args import MonitoredDeployment, MonitoringArgs
from triton_platform.monitoring.monitoring_rules import rule_groups
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.recorded_series import DCGM_FRAMEBUFFER_USED, DCGM_GPU_UTILIZATION

NVIDIA_DEFAULTS_SHA256 = "422a4b07f3415b8667055962869b5149b06e6b70e7c66de0618f120b0ef67531"
"""`git show 4.6.0-4.8.3:etc/default-counters.csv | sha256sum` in github.com/NVIDIA/dcgm-exporter (commit 7ad58324)."""

GPU_ALERTS = {
    "GPUSeriesMissing",
    "GPUXidError",
    "GPUDoubleBitECCErrors",
    "GPURowRemapFailure",
    "GPUUncorrectableRowRemap",
    "GPUHardwareSlowdown",
}
GPU_RECORDS = {DCGM_GPU_UTILIZATION, DCGM_FRAMEBUFFER_USED}
DEPLOYMENT: MonitoredDeployment = {
    "object_name": "triton-general",
    "max_replicas": 2,
    "models": ["classifier"],
    "signal": {"kind": "queue-depth", "target": 4},
}


def settings(*, dcgm: bool) -> MonitoringArgs:
    args: MonitoringArgs = {
        "namespace": "ml",
        "latency_slo_ms": 250,
        "deployments": {"general": DEPLOYMENT},
        "dcgm_metrics": dcgm,
    }
    return monitoring_settings("mon", args)


def gpu_rules(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [rule for group in groups for rule in group["rules"] if "DCGM_" in rule["expr"]]


def panel_exprs(args: MonitoringArgs) -> list[str]:
    return [
        expr
        for deployment in args["deployments"].values()
        for _, _, t in panel_queries(args, deployment)
        for expr, _ in t
    ]


# --- rendered only where a DCGM exporter is ------------------------------------


def test_without_dcgm_metrics_nothing_reads_dcgm() -> None:
    off = settings(dcgm=False)
    assert gpu_rules(rule_groups(off)) == []
    assert [group["name"] for group in rule_groups(off)] == ["triton-platform.recording", "triton-platform.alerts"]
    assert not [expr for expr in panel_exprs(off) if "DCGM_" in expr]


def test_with_dcgm_metrics_the_gpu_rules_and_panels_render() -> None:
    on = settings(dcgm=True)
    groups = rule_groups(on)
    assert [group["name"] for group in groups][2:] == [
        "triton-platform.gpu-health.recording",
        "triton-platform.gpu-health.alerts",
    ]
    assert {r.get("alert") or r["record"] for r in gpu_rules(groups)} == GPU_ALERTS | GPU_RECORDS
    titles = [title for title, _, _ in panel_queries(on, on["deployments"]["general"])]
    assert [t for t in titles if "DCGM" in t] == [
        "GPU utilization (DCGM)",
        "GPU framebuffer used / total (DCGM)",
        "GPU temperature (DCGM)",
        "GPU power (DCGM)",
        "Clock throttle events by reason (DCGM, per exporter window)",
        "XID errors by code (DCGM, per exporter window)",
    ]


def test_gpu_alerts_carry_the_stacks_namespace_so_its_routes_deliver_them() -> None:
    # The stack's AlertmanagerConfig matches namespace="<its namespace>"; the exporter's own is gpu-system.
    assert {dict(alert.labels)["namespace"] for alert in gpu_alerts("ml")} == {"ml"}


def test_the_stack_that_runs_the_exporter_renders_the_gpu_rules() -> None:
    assert dcgm_metrics(validate("production"))
    assert not dcgm_metrics(validate("staging"))  # no DCGM exporter
    # A stack that uses a pool another stack manages runs no exporter: the owner's rules already cover its GPUs.
    assert not dcgm_metrics(validate("production", setting(POOL, "manage", value=False)))
    assert dcgm_metrics(validate("staging", setting(POOL, "dcgmExporter", value=True)))
    # The GPU Operator's exporter, which the pool's ServiceMonitor scrapes, feeds the same rules.
    assert dcgm_metrics(validate("staging", setting(CLUSTER, "gpuOperator", value={})))


def test_production_deploys_the_gpu_rules() -> None:
    [rule] = [m for m in synth_stack("production").manifests() if m["kind"] == "PrometheusRule"]
    assert {r.get("alert") or r["record"] for r in gpu_rules(rule["spec"]["groups"])} == GPU_ALERTS | GPU_RECORDS
    [dev_rule] = [m for m in synth_stack("dev").manifests() if m["kind"] == "PrometheusRule"]
    assert gpu_rules(dev_rule["spec"]["groups"]) == []


# --- every DCGM series read is one the exporter turns on -----------------------


def test_the_defaults_file_is_nvidias_verbatim() -> None:
    assert hashlib.sha256(exporter_defaults().encode()).hexdigest() == NVIDIA_DEFAULTS_SHA256


def test_the_exporters_counters_are_nvidias_defaults_plus_the_health_counters() -> None:
    defaults, platform = enabled_counters(exporter_defaults()), enabled_counters(counters_csv())
    assert not set(HEALTH_COUNTERS) & set(defaults)
    assert sorted(platform) == sorted([*defaults, *HEALTH_COUNTERS])
    # Each added row is one NVIDIA's file lists, commented out: turned on, not invented.
    for name in HEALTH_COUNTERS:
        assert re.search(rf"^# {name},", exporter_defaults(), re.MULTILINE), name


def test_every_dcgm_series_the_platform_reads_is_turned_on() -> None:
    on = settings(dcgm=True)
    exprs = [rule["expr"] for rule in gpu_rules(rule_groups(on))] + panel_exprs(on)
    read = {name for expr in exprs for name in metric_names(expr) if name.startswith("DCGM_")}
    assert read
    assert read <= set(enabled_counters(counters_csv()))
    assert not read <= set(enabled_counters(exporter_defaults())), "the health counters are read"


def test_every_dcgm_series_read_is_watched_for_absence_or_said_to_depend_on_the_hardware() -> None:
    on = settings(dcgm=True)
    watched = [r for r in gpu_rules(rule_groups(on)) if r.get("alert") == "GPUSeriesMissing"]
    exprs = [rule["expr"] for rule in gpu_rules(rule_groups(on)) if rule not in watched] + panel_exprs(on)
    read = {name for expr in exprs for name in metric_names(expr) if name.startswith("DCGM_")}
    assert read == set(DCGM_SERIES) | set(HARDWARE_DEPENDENT)
    assert {r["labels"]["series"] for r in watched} == set(DCGM_SERIES)


def test_the_exporter_loads_the_platforms_counters() -> None:
    production = synth_stack("production")
    [config_map] = [
        m
        for m in production.manifests()
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "dcgm-exporter-counters"
    ]
    assert config_map["data"] == {COUNTERS_FILE: counters_csv()}
    pod = objects(production, "DaemonSet")["dcgm-exporter"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "counters"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "counters"]
    assert volume["configMap"]["name"] == "dcgm-exporter-counters"
    # dcgm-exporter 4.6.0-4.8.3 pkg/cmd/app.go: --collectors, DCGM_EXPORTER_KUBERNETES, DISABLE_STARTUP_VALIDATE;
    # NODE_NAME (internal/pkg/hostname/hostname.go).
    assert container["args"] == [f"--collectors={mount['mountPath']}/{COUNTERS_FILE}"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env == {
        "DCGM_EXPORTER_KUBERNETES": "true",
        "NODE_NAME": {"fieldRef": {"fieldPath": "spec.nodeName"}},
        "DISABLE_STARTUP_VALIDATE": "true",
    }


# --- promtool unit tests: each alert fires, and stays silent when it should ----

GPU = {
    # The exporter's labels (internal/pkg/rendermetrics/render_metrics.go), the pod mapping's as a ServiceMonitor
    # without honorLabels stores them, and the Prometheus Operator's target labels.
    "gpu": "0",
    "UUID": "GPU-3f2a9c1e-7b4d-4e8a-9c21-5d6e7f8a9b0c",
    "pci_bus_id": "00000000:00:1E.0",
    "device": "nvidia0",
    "modelName": "NVIDIA A10G",
    "hostname": "ip-10-0-1-23.ec2.internal",
    "DCGM_FI_DRIVER_VERSION": "550.127.05",
    "exported_namespace": "ml",
    "exported_pod": "triton-general-5d8f7c9b6-abcde",
    "exported_container": "triton",
    "namespace": "gpu-system",
    "pod": "dcgm-exporter-x7k2p",
    "container": "dcgm-exporter",
    "service": "dcgm-exporter",
    "endpoint": "metrics",
    "job": "dcgm-exporter",
    "instance": "10.0.1.23:9400",
}
OLD_EXPORTER = {("Hostname" if k == "hostname" else k): v for k, v in GPU.items()}
"""An exporter before 4.6.0-4.8.3 (NVIDIA/dcgm-exporter#655), as a GPU Operator may run: the node as `Hostname`."""
WINDOW = {"window_size_in_ms": "300000"}


def series(name: str, values: str, base: dict[str, str] = GPU, /, **extra: str) -> dict[str, str]:
    labels = {**base, **extra}
    return {"series": name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}


def expected(alert: str, value: float, base: dict[str, str] = GPU, /, **extra: str) -> dict[str, Any]:
    rule = next(r for r in gpu_rules(rule_groups(settings(dcgm=True))) if r.get("alert") == alert)
    labels = {**base, **extra, **rule["labels"]}

    def fill(text: str) -> str:
        # Go's `or`: the first non-empty of its arguments.
        text = re.sub(
            r"\{\{ or \$labels\.(\w+) \$labels\.(\w+) \}\}",
            lambda m: labels.get(m.group(1)) or labels.get(m.group(2), ""),
            text,
        )
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
        return text.replace("{{ $value }}", f"{value:g}")

    return {"exp_labels": labels, "exp_annotations": {k: fill(v) for k, v in rule["annotations"].items()}}


@pytest.mark.parametrize("base", [GPU, OLD_EXPORTER], ids=["hostname", "Hostname"])
def test_an_alert_names_the_node_under_either_label(base: dict[str, str]) -> None:
    summary = expected("GPURowRemapFailure", 1, base)["exp_annotations"]["summary"]
    assert (
        summary == "Row remapping failed on ip-10-0-1-23.ec2.internal GPU 0 (GPU-3f2a9c1e-7b4d-4e8a-9c21-5d6e7f8a9b0c)"
    )


TRITON_UP = {
    "series": 'up{namespace="ml", service="triton-general", pod="triton-general-5d8f7c9b6-abcde", job="triton-general"}',
    "values": "1x40",
}
"""A Triton pod of the stack, scraped: its GPUs should be reported."""


def _named(record: str) -> str:
    return record + "{" + ", ".join(f'{k}="{v}"' for k, v in GPU.items()) + "}"


def check(name: str, evals: list[tuple[int, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return [{"eval_time": f"{minute}m", "alertname": name, "exp_alerts": alerts} for minute, alerts in evals]


def promtool_cases() -> list[dict[str, Any]]:
    """Each alert's and recording rule's series, minute by minute, and what promtool must see."""
    xid = expected("GPUXidError", 2, xid="79", **WINDOW)
    dbe = expected("GPUDoubleBitECCErrors", 0)
    remap_failed = expected("GPURowRemapFailure", 1)
    remapped = expected("GPUUncorrectableRowRemap", 0)
    thermal = expected("GPUHardwareSlowdown", 3, clock_event="hw_thermal", **WINDOW)
    missing = expected("GPUSeriesMissing", 1, {}, series="DCGM_FI_DEV_GPU_UTIL")
    return [
        {
            # No XID: the exporter reports 0 without an `xid` label. XID 79 twice: a count per code, which the
            # exporter drops once its window has passed.
            "input_series": [
                series("DCGM_EXP_XID_ERRORS_COUNT", "0x9 stale", **WINDOW),
                series("DCGM_EXP_XID_ERRORS_COUNT", "_x10 2x3 stale", xid="79", **WINDOW),
            ],
            "alert_rule_test": check("GPUXidError", [(9, []), (11, [xid]), (16, [])]),
        },
        {
            # Double-bit errors: silent while the count holds, firing on an increase, silent 10 minutes later.
            "input_series": [series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0x10 1x20")],
            "alert_rule_test": check("GPUDoubleBitECCErrors", [(9, []), (12, [dbe]), (25, [])]),
        },
        {
            # A driver reload resets the volatile count: not an error.
            "input_series": [series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3x10 0x10")],
            "alert_rule_test": check("GPUDoubleBitECCErrors", [(12, []), (18, [])]),
        },
        {
            "input_series": [series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x10 1x10")],
            "alert_rule_test": check("GPURowRemapFailure", [(9, []), (11, [remap_failed]), (20, [remap_failed])]),
        },
        {
            # An older exporter's series name the node `Hostname`: the alert names it all the same.
            "input_series": [series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x10 1x10", OLD_EXPORTER)],
            "alert_rule_test": check("GPURowRemapFailure", [(11, [expected("GPURowRemapFailure", 1, OLD_EXPORTER)])]),
        },
        {
            "input_series": [series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "2x10 3x20")],
            "alert_rule_test": check("GPUUncorrectableRowRemap", [(9, []), (12, [remapped]), (25, [])]),
        },
        {
            # Thermal slowdown in every window: pending for 15 minutes, then firing. Power capping never alerts.
            "input_series": [
                series("DCGM_EXP_CLOCK_EVENTS_COUNT", "0x9 stale", **WINDOW),
                series("DCGM_EXP_CLOCK_EVENTS_COUNT", "_x10 3x30", clock_event="hw_thermal", **WINDOW),
                series("DCGM_EXP_CLOCK_EVENTS_COUNT", "_x10 10x30", clock_event="power_cap", **WINDOW),
            ],
            "alert_rule_test": check("GPUHardwareSlowdown", [(9, []), (20, []), (27, [thermal])]),
        },
        {
            "input_series": [
                series("DCGM_FI_DEV_GPU_UTIL", "85x5"),
                series("DCGM_FI_DEV_FB_USED", "6000x5"),
                series("DCGM_FI_DEV_FB_FREE", "18000x5"),
            ],
            "promql_expr_test": [
                {
                    "expr": DCGM_GPU_UTILIZATION,
                    "eval_time": "2m",
                    "exp_samples": [{"labels": _named(DCGM_GPU_UTILIZATION), "value": 0.85}],
                },
                {
                    "expr": DCGM_FRAMEBUFFER_USED,
                    "eval_time": "2m",
                    "exp_samples": [{"labels": _named(DCGM_FRAMEBUFFER_USED), "value": 0.25}],
                },
            ],
        },
        {
            # The exporter's utilization goes missing (a release that renamed it) while Triton's pod is scraped:
            # pending through the lookback and the 10 minutes, then firing, naming it; the others stay silent.
            "input_series": [
                TRITON_UP,
                series("DCGM_FI_DEV_GPU_UTIL", "85x10"),
                *(series(name, "1x40") for name in DCGM_SERIES if name != "DCGM_FI_DEV_GPU_UTIL"),
                *({"series": f'{name}{{namespace="ml"}}', "values": "1x40"} for name in TRITON_GPU_SERIES),
            ],
            "alert_rule_test": check("GPUSeriesMissing", [(9, []), (20, []), (27, [missing])]),
        },
        {
            # No Triton pod scraped (a pool at zero): no GPU to read, nothing missing.
            "input_series": [series("DCGM_FI_DEV_FB_USED", "1x5")],
            "alert_rule_test": check("GPUSeriesMissing", [(30, [])]),
        },
        {
            # No exporter series, nothing recorded.
            "input_series": [series("up", "1x5")],
            "promql_expr_test": [
                {"expr": DCGM_GPU_UTILIZATION, "eval_time": "2m", "exp_samples": []},
                {"expr": DCGM_FRAMEBUFFER_USED, "eval_time": "2m", "exp_samples": []},
            ],
        },
    ]


def test_every_gpu_alert_and_record_has_a_promtool_case() -> None:
    cases = promtool_cases()
    tested = {t["alertname"] for case in cases for t in case.get("alert_rule_test", [])}
    tested |= {t["expr"] for case in cases for t in case.get("promql_expr_test", [])}
    assert tested == GPU_ALERTS | GPU_RECORDS
    for alert in GPU_ALERTS:
        outcomes = [
            bool(t["exp_alerts"]) for c in cases for t in c.get("alert_rule_test", []) if t["alertname"] == alert
        ]
        assert True in outcomes, f"{alert} needs a case where it fires"
        assert False in outcomes, f"{alert} needs a case where it stays silent"


def run_promtool(tmp_path: Path, cases: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return promtool_test(tmp_path, rule_groups(settings(dcgm=True)), [{"interval": "1m", **case} for case in cases])


@pytest.mark.real_tools
def test_promtool_gpu_alerts_fire_and_stay_silent_as_the_series_say(tmp_path: Path) -> None:
    run = run_promtool(tmp_path, promtool_cases())
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "SUCCESS" in run.stdout


@pytest.mark.real_tools
def test_promtool_catches_a_gpu_alert_that_does_not_fire(tmp_path: Path) -> None:
    # The same firing case, with no error in the series: promtool must fail it, so the passes above mean something.
    case = next(c for c in promtool_cases() if c["input_series"][0]["series"].startswith("DCGM_FI_DEV_ROW_REMAP"))
    case["input_series"][0]["values"] = "0x20"
    run = run_promtool(tmp_path, [case])
    assert run.returncode != 0
    assert "GPURowRemapFailure" in run.stdout + run.stderr
