"""Monitoring checked by its real consumers: promtool, amtool, and Triton's own metric names."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import promql_parser
import pytest
import yaml

from offline.synth import SynthResult
from platform_config.component_fields import section_args
from platform_config.errors import ConfigError
from platform_config.loader import StackConfig, load_stack_file, parse_config
from platform_config.monitoring import MonitoringConfig
from platform_config.paths import PROJECT_ROOT
from platform_config.schema import PlatformConfig
from stackctl.main import main
from stackctl.monitoring_files import stack_monitoring
from tests.components.triton_platform.monitoring.test_monitoring import ALERT_NAMES
from tests.conftest import STACKS, encode, errors_of, setting, stack_values, synth_stack
from tests.support.invented_names import INVENTED_METRIC
from tests.support.promtool import promtool_test, tool
from triton_platform.args.durations import duration_seconds
from triton_platform.monitoring.alert_routing import alertmanager_yaml, receiver_secrets
from triton_platform.monitoring.dashboards import dashboard, panel_queries
from triton_platform.monitoring.gpu_health_rules import DCGM_SERIES
from triton_platform.monitoring.monitoring_args import AlertReceiver, MonitoringArgs
from triton_platform.monitoring.monitoring_rules import alerts, load_queries, rule_groups
from triton_platform.monitoring.monitoring_settings import (
    monitoring_settings,
    object_name,
    served_models,
    signal_divisors,
)
from triton_platform.scaling.keda_scaling import gpu_memory_query


def stack_receivers(config: PlatformConfig) -> dict[str, AlertReceiver]:
    """The stack's receivers as its Monitoring component checks them."""
    args: MonitoringArgs = {
        "namespace": "ml",
        "latency_slo_ms": 1,
        "receivers": {k: cast("AlertReceiver", section_args(r)) for k, r in config.monitoring.receivers.items()},
    }
    return dict(monitoring_settings("test", args)["receivers"])


@pytest.fixture(scope="module", params=STACKS)
def rules_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp(f"rules-{request.param}")
    assert main(["rules", "--stack", request.param, "--out", str(out)]) == 0
    return request.param, out


@pytest.mark.real_tools
def test_promtool_accepts_every_rule(rules_dir: tuple[str, Path]) -> None:
    _, out = rules_dir
    run = subprocess.run(
        [tool("promtool"), "check", "rules", "--lint-fatal", str(out / "rules.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


@pytest.mark.real_tools
def test_amtool_accepts_the_alertmanager_config(rules_dir: tuple[str, Path]) -> None:
    _, out = rules_dir
    run = subprocess.run(
        [tool("amtool"), "check-config", str(out / "alertmanager.yml")], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout


def test_the_written_rules_are_the_deployed_rules(synth: SynthResult, tmp_path: Path) -> None:
    assert main(["rules", "--stack", synth.stack.stack, "--out", str(tmp_path)]) == 0
    written = yaml.safe_load((tmp_path / "rules.yaml").read_text())
    [deployed] = [m for m in synth.manifests() if m["kind"] == "PrometheusRule"]
    assert deployed["spec"]["groups"] == written["groups"]


def test_every_alert_is_documented_and_routed_by_severity(synth: SynthResult) -> None:
    runbooks = (PROJECT_ROOT / "docs" / "runbooks.md").read_text()
    headings = {line[3:].strip().lower() for line in runbooks.splitlines() if line.startswith("## ")}
    for group in rule_groups(stack_monitoring(synth.stack)):
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            assert rule["labels"]["severity"] in ("critical", "warning", "info")
            assert {"summary", "description", "runbook_url"} <= rule["annotations"].keys()
            anchor = rule["annotations"]["runbook_url"].rsplit("#", 1)[1]
            assert anchor in headings, f"docs/runbooks.md has no section for {rule['alert']}"


def test_the_components_defaults_are_the_stack_schemas() -> None:
    """A stack that sets nothing under `monitoring` gets what a Monitoring user who sets nothing gets."""
    component = monitoring_settings("mon", {"namespace": "ml", "latency_slo_ms": 250})
    schema = MonitoringConfig()
    chart = schema.chart.source()
    assert component["chart"] == {"version": chart["version"], "repository": chart.get("repository"), "values": {}}
    assert (component["mode"], component["prometheus_namespace"], component["prometheus_pod_labels"]) == (
        schema.mode,
        schema.prometheus.namespace,
        schema.prometheus.pod_labels,
    )
    assert (component["selector_labels"], component["runbook_base_url"], component["grafana_folder"]) == (
        schema.selector_labels,
        schema.runbook_base_url,
        schema.grafana_folder,
    )
    assert component["scrape_interval"] == schema.scrape_interval
    assert (dict(component["receivers"]), dict(component["routes"])) == ({}, {}) == (schema.receivers, schema.routes)
    assert component["alerts"] == schema.alerts.model_dump()


def test_routes_send_each_severity_to_its_receiver() -> None:
    production = stack_monitoring(synth_stack("production").stack)
    routing = alertmanager_yaml(production["receivers"], production["routes"], production["namespace"])
    routes = {r["matchers"][0]: r["receiver"] for r in routing["route"]["routes"]}
    assert routes == {
        'severity="critical"': "oncall",
        'severity="info"': "team-chat",
        'severity="warning"': "team-chat",
    }
    dev = stack_monitoring(synth_stack("dev").stack)
    assert alertmanager_yaml(dev["receivers"], dev["routes"], dev["namespace"])["route"]["routes"] == []
    [config] = [m for m in synth_stack("production").manifests() if m["kind"] == "AlertmanagerConfig"]
    oncall = next(r for r in config["spec"]["receivers"] if r["name"] == "oncall")
    assert oncall["pagerdutyConfigs"][0]["routingKey"] == {"key": "routing-key", "name": "alertmanager-pagerduty"}


# --- every PromQL names real metrics -------------------------------------------

TRITON_GPU_METRICS = {
    # Exported on GPU nodes only (core src/metrics.cc), so absent from a CPU server.
    "nv_gpu_utilization",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_power_usage",
    "nv_gpu_power_limit",
    "nv_energy_consumption",
}
KUBE_STATE_METRICS = {"kube_deployment_status_replicas_available", "kube_deployment_spec_replicas"}
"""kube-state-metrics deployment metrics (docs/metrics/workload/deployment-metrics.md), which the chart's default
`collectors` (`deployments`) export in kube-prometheus-stack 79.7.1 and 88.5.3 alike. No `kube_endpoint_*`: from
the kube-state-metrics chart 7.0.0 (kube-prometheus-stack 80.2.0) the defaults collect `endpointslices` instead,
so a rule or panel reading them would read nothing, and is refused here."""
KEDA_METRICS = {"keda_scaler_detail_errors_total"}
"""KEDA 2.20, pkg/metricscollector/prommetrics.go: namespace "keda", subsystem "scaler"."""
HTTP_ADD_ON_METRICS = {"interceptor_request_concurrency"}
"""The KEDA HTTP add-on's interceptor, v0.15.0: interceptor/metrics/instruments.go, and the names its own e2e tests
expect on :2223/metrics (test/helpers/constants.go)."""
PROMETHEUS_METRICS = {"up"}
DCGM_METRICS = {
    # On in NVIDIA/dcgm-exporter 4.6.0-4.8.3 etc/default-counters.csv.
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    # Commented out in that file; the GPU pool's exporter turns them on (triton_platform/gpu_pool/dcgm_counters.py).
    "DCGM_EXP_XID_ERRORS_COUNT",
    "DCGM_EXP_CLOCK_EVENTS_COUNT",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
}


def metric_names(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)  # matrix selectors hold a vector selector
    return names


def all_expressions(stack: StackConfig) -> list[str]:
    args = stack_monitoring(stack)
    exprs = [rule["expr"] for group in rule_groups(args) for rule in group["rules"]]
    exprs += load_queries(args).values()
    for deployment in args["deployments"].values():
        exprs += [gpu_memory_query(args["namespace"], object_name(deployment))]
        exprs += [expr for _, _, targets in panel_queries(args, deployment) for expr, _ in targets]
        query = dashboard(args, deployment)["templating"]["list"][1]["query"]
        exprs.append(re.fullmatch(r"label_values\((.*), model\)", query).group(1))  # type: ignore[union-attr]
    return exprs


@pytest.fixture(scope="module")
def triton_metric_names() -> set[str]:
    """Metric families a real tritonserver 2.51 exports (with summary latencies), read from its /metrics."""
    import urllib.request  # noqa: PLC0415

    from model_publishing.publish import write_model_repository  # noqa: PLC0415
    from platform_config.loader import load_stack  # noqa: PLC0415
    from platform_config.model_settings import render_stack  # noqa: PLC0415
    from platform_config.paths import DEFAULT_MODEL_REPO  # noqa: PLC0415
    from tests.support.local_triton.server import TritonServer, free_ports  # noqa: PLC0415
    from triton_platform.model_packaging.source import read_repository  # noqa: PLC0415
    from triton_platform.serving.triton_server_args import tritonserver_args  # noqa: PLC0415

    stack = load_stack("staging")
    out = PROJECT_ROOT / ".pytest-triton-metrics"
    rendered = render_stack("staging", stack.config.serving, stack.config.models, read_repository(DEFAULT_MODEL_REPO))
    write_model_repository(rendered, out, ["classifier"])
    ports = free_ports()
    args = tritonserver_args(
        "staging",
        ["classifier"],
        source=stack.config.serving.model_repository.source,
        exit_timeout_seconds=stack.config.serving.drain.exit_timeout_seconds,
        model_repository=str(out),
        ports=ports,
    )
    try:
        with TritonServer(args, ports) as server, urllib.request.urlopen(server.metrics_url, timeout=10) as response:
            text = response.read().decode()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


@pytest.mark.real_tools
def test_every_promql_names_a_real_metric(triton_metric_names: set[str]) -> None:
    assert {"nv_inference_pending_request_count", "nv_inference_request_summary_us"} <= triton_metric_names
    known = triton_metric_names | TRITON_GPU_METRICS | KUBE_STATE_METRICS | KEDA_METRICS | PROMETHEUS_METRICS
    known |= HTTP_ADD_ON_METRICS
    known |= DCGM_METRICS
    for stack in STACKS:
        loaded = synth_stack(stack).stack
        groups = rule_groups(stack_monitoring(loaded))
        recorded = {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}
        for expr in all_expressions(loaded):
            unknown = metric_names(expr) - known - recorded
            assert not unknown, f"{stack}: {expr} names metrics no exporter has: {unknown}"


@pytest.mark.real_tools
def test_the_metric_check_catches_invented_names(triton_metric_names: set[str]) -> None:
    invented = INVENTED_METRIC
    names = metric_names(f"sum(rate({invented}[1m])) / on() nv_inference_pending_request_count")
    assert names == {invented, "nv_inference_pending_request_count"}
    assert names - triton_metric_names == {invented}


# --- promtool unit tests for every alert ---------------------------------------

HEALTHY = 10  # minutes of healthy series before the condition starts


@dataclass
class Scenario:
    """Series shaped like real ones: healthy for HEALTHY minutes, then bad."""

    alert: str
    series: list[tuple[str, str, str]]
    """(series selector, healthy values, bad values) in promtool's expanding notation, per minute."""
    labels: dict[str, str]
    onset: int = 2
    """Minutes from the bad phase to the condition being true (rate windows, staleness)."""
    extra: dict[str, str] = field(default_factory=dict)


def _selector(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def scenarios(args: MonitoringArgs) -> list[Scenario]:
    ns = args["namespace"]
    deployment = args["deployments"][sorted(args["deployments"])[0]]
    dep = object_name(deployment)
    model = sorted(served_models(deployment))[0]
    pod = f"{dep}-5d8f7c9b6-abcde"
    triton = {"namespace": ns, "deployment": dep, "model": model, "version": "1", "pod": pod, "service": dep}
    by_model = {"namespace": ns, "deployment": dep, "model": model}
    a = args["alerts"]
    # A deployment woken on request is scraped through its pods' own Service.
    scraped = dep if "wake_budget_seconds" not in deployment else f"{dep}-pods"
    gpu = {"namespace": ns, "pod": pod, "gpu_uuid": "GPU-3f2a9c1e-7b4d-4e8a-9c21-5d6e7f8a9b0c"}

    def latency(alert: str, quantile: str, slo_ms: int) -> Scenario:
        """The quantile at half its objective, then at twice it."""
        series = _selector("nv_inference_request_summary_us", {**triton, "quantile": quantile})
        return Scenario(alert, [(series, f"{slo_ms * 500}", f"{slo_ms * 2000}")], by_model, onset=0)

    out = [
        latency("TritonLatencyAboveSLO", "0.95", args["latency_slo_ms"]),
        Scenario(
            "TritonQueueTimeHigh",
            [
                (_selector("nv_inference_request_success", triton), "+600", "+600"),
                # 600 requests a minute waiting half, then twice, the limit each.
                (
                    _selector("nv_inference_queue_duration_us", triton),
                    f"+{int(600 * a['queue_time_ms'] * 500)}",
                    f"+{int(600 * a['queue_time_ms'] * 2000)}",
                ),
            ],
            by_model,
        ),
        Scenario(
            "TritonInferenceFailures",
            [
                (_selector("nv_inference_request_success", triton), "+600", "+600"),
                (_selector("nv_inference_request_failure", {**triton, "reason": "BACKEND"}), "+0", "+600"),
            ],
            {**by_model, "reason": "BACKEND"},
        ),
        Scenario(
            "TritonReplicasUnavailable",
            [
                (
                    _selector("kube_deployment_status_replicas_available", {"namespace": ns, "deployment": dep}),
                    "2",
                    "1",
                ),
                (_selector("kube_deployment_spec_replicas", {"namespace": ns, "deployment": dep}), "2", "2"),
            ],
            {"namespace": ns, "deployment": dep},
            onset=0,
        ),
        Scenario(
            "TritonTargetDown",
            # Scraped through the Service the ServiceMonitor selects: the pods' own where the deployment wakes.
            [(_selector("up", {"namespace": ns, "service": scraped, "pod": pod, "job": scraped}), "1", "0")],
            {"namespace": ns, "service": scraped, "pod": pod, "job": scraped},
            onset=0,
        ),
        Scenario(
            "TritonGPUMemoryHigh",
            [
                (_selector("nv_gpu_memory_total_bytes", {**triton, "gpu_uuid": "GPU-1"}), "80e9", "80e9"),
                (
                    _selector("nv_gpu_memory_used_bytes", {**triton, "gpu_uuid": "GPU-1"}),
                    f"{80e9 * a['gpu_memory_ratio'] / 2:.0f}",
                    f"{80e9 * (1 + a['gpu_memory_ratio']) / 2:.0f}",
                ),
            ],
            {"namespace": ns, "deployment": dep, "pod": pod},
            onset=0,
        ),
        Scenario(
            "TritonGPUUnderutilized",
            [
                (
                    _selector("nv_gpu_utilization", {**triton, "gpu_uuid": "GPU-1"}),
                    "0.95",
                    f"{a['gpu_utilization_low'] / 2:g}",
                )
            ],
            {"namespace": ns, "deployment": dep},
            onset=0,
        ),
        Scenario(
            "TritonModelNotLoaded",
            [
                (_selector("up", {"namespace": ns, "service": scraped, "pod": pod, "job": scraped}), "1", "1"),
                (_selector("nv_inference_count", triton), "+1", "_"),
                # The deployment's other models keep reporting: only this one went missing.
                *(
                    (_selector("nv_inference_count", {**triton, "model": other}), "+1", "+1")
                    for other in served_models(deployment)
                    if other != model
                ),
            ],
            {"namespace": ns, "service": scraped, "pod": pod, "job": scraped},
            onset=6,  # the last sample goes stale after Prometheus' 5 m lookback
            extra={"deployment": dep, "model": model},
        ),
        Scenario(
            "GPUSeriesMissing",
            [
                (_selector("up", {"namespace": ns, "service": scraped, "pod": pod, "job": scraped}), "1", "1"),
                # Triton's GPU memory gauge goes missing (a release that renamed it): the trigger reads nothing.
                (_selector("nv_gpu_memory_used_bytes", gpu), "4e9", "_"),
                (_selector("nv_gpu_memory_total_bytes", gpu), "24e9", "24e9"),
                (_selector("nv_gpu_utilization", gpu), "0.5", "0.5"),
                # The exporter's, where the stack reads them, all there.
                *((_selector(name, {"gpu": "0"}), "1", "1") for name in DCGM_SERIES if args["dcgm_metrics"]),
            ],
            {},
            onset=6,
            extra={"series": "nv_gpu_memory_used_bytes"},
        ),
    ]
    p99_slo_ms = args.get("latency_p99_slo_ms")
    if p99_slo_ms is not None:
        out.append(latency("TritonLatencyP99AboveSLO", "0.99", p99_slo_ms))
    if "wake_budget_seconds" in deployment:
        interceptor = {"namespace": args["interceptor_namespace"], "pod": "keda-add-ons-http-interceptor-abcde"}
        held = _selector(
            "interceptor_request_concurrency", {**interceptor, "route_namespace": ns, "route_name": f"{dep}-grpc"}
        )
        out.append(
            Scenario(
                "TritonWakeOverBudget",
                [
                    # A request in flight all along: silent while a pod serves it, firing once none is available
                    # for longer than the budget.
                    (held, "1", "1"),
                    (
                        _selector("kube_deployment_status_replicas_available", {"namespace": ns, "deployment": dep}),
                        "1",
                        "0",
                    ),
                ],
                {},
                onset=0,
                extra={"deployment": dep},
            )
        )
    if args["scaling_enabled"]:
        max_replicas = deployment["max_replicas"]
        signal = deployment["signal"]
        if signal["kind"] == "busy-ratio":
            # Instances busy all along: a batch of 10 each second, each request charged 100 s of compute
            # (Triton charges the batch's time to each of its requests), far above any instance count.
            busy = {**triton, "model": sorted(signal_divisors(deployment))[0]}
            overload = [
                (_selector("nv_inference_count", busy), "+600", "+600"),
                (_selector("nv_inference_exec_count", busy), "+60", "+60"),
                (_selector("nv_inference_compute_input_duration_us", busy), "+0", "+0"),
                (_selector("nv_inference_compute_infer_duration_us", busy), "+60000000000", "+60000000000"),
                (_selector("nv_inference_compute_output_duration_us", busy), "+0", "+0"),
            ]
        elif signal["kind"] == "demand":
            # Twice the target of a pod's capacity arriving, every request served (the failure counter, which the
            # query adds, stays at 0).
            served = {**triton, "model": sorted(signal_divisors(deployment))[0]}
            per_minute = f"+{math.ceil(2 * signal['target'] * signal_divisors(deployment)[served['model']] * 60)}"
            overload = [
                (_selector("nv_inference_request_success", served), per_minute, per_minute),
                (_selector("nv_inference_request_failure", {**served, "reason": "REJECTED"}), "+0", "+0"),
            ]
        else:
            twice = f"{signal['target'] * 2:g}"
            overload = [(_selector("nv_inference_pending_request_count", triton), twice, twice)]
        out += [
            Scenario(
                "KedaScalerErrors",
                [
                    (
                        _selector(
                            "keda_scaler_detail_errors_total",
                            {
                                "namespace": ns,
                                "scaledObject": dep,
                                "scaler": "prometheusScaler",
                                "metric": "s0-prometheus",
                                "triggerIndex": "0",
                                "type": "scaledobject",
                            },
                        ),
                        "+0",
                        "+1",
                    )
                ],
                {"scaledObject": dep},
                onset=1,
            ),
            Scenario(
                "TritonQueueBacklogAtMaxReplicas",
                [
                    # Backlogged all along: silent while there is room to scale, firing once at the ceiling.
                    *overload,
                    (
                        _selector("kube_deployment_spec_replicas", {"namespace": ns, "deployment": dep}),
                        str(max_replicas - 1),
                        str(max_replicas),
                    ),
                ],
                {"namespace": ns, "deployment": dep},
                onset=0,
                extra={"deployment": dep},
            ),
        ]
    return out


def _values(healthy: str, bad: str, bad_minutes: int) -> str:
    """promtool values: counters step from where they are, gauges hold."""
    if healthy.startswith("+"):
        step_h, step_b = int(healthy[1:]), bad
        end = step_h * HEALTHY
        if step_b == "_":
            return f"0+{step_h}x{HEALTHY} _x{bad_minutes}"
        return f"0+{step_h}x{HEALTHY} {end + int(step_b[1:])}+{step_b[1:]}x{bad_minutes - 1}"
    return f"{healthy}x{HEALTHY} {bad}x{bad_minutes - 1}"


def _annotations(rule: dict[str, Any], labels: dict[str, str]) -> dict[str, str]:
    def fill(text: str) -> str:
        return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)

    return {k: fill(v) for k, v in rule["annotations"].items()}


def promtool_tests(args: MonitoringArgs) -> list[dict[str, Any]]:
    groups = rule_groups(args)
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    out = []
    for scenario in scenarios(args):
        candidates = [r for g in groups for r in g["rules"] if r.get("alert") == scenario.alert]
        rule = next(r for r in candidates if all(r["labels"].get(k) == v for k, v in scenario.extra.items()))
        assert rules[scenario.alert]
        wait = int(duration_seconds(rule["for"]) // 60)
        bad_minutes = scenario.onset + wait + 5
        labels = {**scenario.labels, **rule["labels"]}
        firing_at = HEALTHY + scenario.onset + wait + 3
        pending_at = HEALTHY + scenario.onset + max(1, wait // 2)
        out.append(
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": _values(h, b, bad_minutes)} for s, h, b in scenario.series],
                "alert_rule_test": [
                    {"eval_time": f"{HEALTHY - 1}m", "alertname": scenario.alert, "exp_alerts": []},
                    {"eval_time": f"{pending_at}m", "alertname": scenario.alert, "exp_alerts": []},
                    {
                        "eval_time": f"{firing_at}m",
                        "alertname": scenario.alert,
                        "exp_alerts": [{"exp_labels": labels, "exp_annotations": _annotations(rule, labels)}],
                    },
                ],
            }
        )
    return out


ALERTS = {
    *ALERT_NAMES,
    "TritonModelNotLoaded",
    "KedaScalerErrors",
    "TritonQueueBacklogAtMaxReplicas",
    "GPUSeriesMissing",
}
"""Every alert of a stack that KEDA scales (all three do); production also states a p99 objective, and dev's
deployment wakes from zero."""
TAIL_ALERTS = {"production": {"TritonLatencyP99AboveSLO"}, "dev": {"TritonWakeOverBudget"}}


def test_every_alert_has_a_promtool_unit_test() -> None:
    for stack in STACKS:
        args = stack_monitoring(synth_stack(stack).stack)
        expected = ALERTS | TAIL_ALERTS.get(stack, set())
        assert {a.name for a in alerts(args)} == expected, stack
        assert {s.alert for s in scenarios(args)} == expected, stack


def test_per_deployment_alerts_name_their_deployment_and_model() -> None:
    per_deployment = [
        (a.name, dict(a.labels)) for a in alerts(stack_monitoring(synth_stack("production").stack)) if a.labels
    ]
    assert per_deployment == [
        ("TritonQueueBacklogAtMaxReplicas", {"deployment": "triton-general"}),
        ("TritonModelNotLoaded", {"deployment": "triton-general", "model": "classifier"}),
        ("TritonModelNotLoaded", {"deployment": "triton-general", "model": "pipeline"}),
        ("TritonModelNotLoaded", {"deployment": "triton-general", "model": "preprocess"}),
        ("TritonQueueBacklogAtMaxReplicas", {"deployment": "triton-ranker"}),
        ("TritonModelNotLoaded", {"deployment": "triton-ranker", "model": "ranker"}),
        *(
            ("GPUSeriesMissing", {"namespace": "triton-production", "series": name})
            for name in ("nv_gpu_memory_used_bytes", "nv_gpu_memory_total_bytes", "nv_gpu_utilization")
        ),
    ]


@pytest.mark.real_tools
@pytest.mark.parametrize("stack", STACKS)
def test_alerts_stay_silent_when_healthy_and_within_for_then_fire(stack: str, tmp_path: Path) -> None:
    args = stack_monitoring(synth_stack(stack).stack)
    run = promtool_test(tmp_path, rule_groups(args), promtool_tests(args))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "SUCCESS" in run.stdout


# --- routing config rules --------------------------------------------------------


def test_routes_must_name_a_defined_receiver() -> None:
    [error] = errors_of("staging", setting("triton-platform:monitoring", "routes", "critical", value="pager"))
    assert error == (
        "triton-platform:monitoring.routes.critical: 'pager' names no receiver of receivers (staging-chat)"
    )


def test_plain_text_credentials_are_rejected_even_beside_secret_ones(tmp_path: Path) -> None:
    text = (PROJECT_ROOT / "stacks" / "Pulumi.staging.yaml").read_text()
    text = text.replace(
        "webhookUrl: {secret: {name: alertmanager-slack, key: webhook-url}}",
        "webhookUrl: {value: {secure: v1:h2CzGTGaSG2drvAI:lsooeBQAIE1WLIQ11d9bvlYEE4rVNt4ediSB066AIHDr}}",
    ).replace(
        '          channel: "#ml-platform-staging"\n',
        '          channel: "#ml-platform-staging"\n'
        "        webhook:\n          url: {value: https://hooks.example.com/plain-text-token}\n",
    )
    path = tmp_path / "Pulumi.staging.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    [issue] = caught.value.issues
    assert issue.path == "triton-platform:monitoring.receivers.staging-chat.webhook.url.value"
    assert issue.message.startswith(
        "a credential in plain text; store it as a Pulumi secret: pulumi config set --secret"
    )
    path.write_text(
        text.replace(
            "{value: https://hooks.example.com/plain-text-token}",
            "{value: {secure: v1:wcNz+Qta4A4xXb8m:rEokLkyDuNaMWcBbZY0zK4UkoDE=}}",
        )
    )
    config = load_stack_file(path).config
    assert [s.values for s in receiver_secrets(stack_receivers(config))] == [
        {"webhook-url": "[secret]", "url": "[secret]"}
    ]


def test_one_secret_per_receiver_holds_all_its_credentials() -> None:
    receiver = {"slack": {"webhookUrl": {"value": "s"}, "channel": "#a"}, "pagerduty": {"routingKey": {"value": "p"}}}
    values = stack_values("staging")
    setting("triton-platform:monitoring", "receivers", value={"both": receiver})(values)
    setting("triton-platform:monitoring", "routes", value={"critical": "both"})(values)
    config = parse_config(encode(values), "x", secret_keys={"triton-platform:monitoring"})
    [secret] = receiver_secrets(stack_receivers(config))
    assert (secret.secret_name, secret.values) == ("alertmanager-both", {"webhook-url": "s", "routing-key": "p"})
