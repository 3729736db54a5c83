"""Prometheus recording and alert rules for the monitored Triton deployments.

Only metrics that exist: Triton's (triton-inference-server/core src/metrics.cc, checked
against a real tritonserver's /metrics), kube-state-metrics' and KEDA's (checked against the
KEDA 2.20 source). Series carry `namespace`, `pod`, `service` and `deployment`
labels because the ServiceMonitor's relabelings put them there.
"""

from __future__ import annotations

from typing import Any

from triton_platform.http_add_on import wake_over_budget_expr
from triton_platform.monitoring.gpu_health_rules import TRITON_GPU_SERIES, gpu_health_groups, missing_series_alerts
from triton_platform.monitoring.monitoring_args import MonitoredDeployment, MonitoringArgs
from triton_platform.monitoring.monitoring_settings import object_name, scraped_service, served_models, signal_divisors
from triton_platform.monitoring.prometheus_alert import Alert, alert_rule
from triton_platform.monitoring.token_rules import token_groups
from triton_platform.promql import any_of, label_value
from triton_platform.recorded_series import (
    BATCH_SIZE,
    BY_DEPLOYMENT,
    BY_MODEL,
    BY_POD,
    DEPLOYMENT_REQUESTS_RATE,
    GPU_MEMORY_RATIO_POD,
    GPU_UTILIZATION,
    GPU_UTILIZATION_POD,
    LATENCY_P95,
    LATENCY_P99,
    PENDING_PER_REPLICA,
    QUEUE_SECONDS,
    REQUESTS_RATE,
    rate_window,
)
from triton_platform.scaling_signal import deployment_selector, per_replica_series, signal_record, trigger_query


def _selector(namespace: str) -> str:
    return f"namespace={label_value(namespace)}"


def recording_rules(settings: MonitoringArgs) -> list[dict[str, Any]]:
    sel = _selector(settings["namespace"])
    window = rate_window(settings["scrape_interval"])

    def rate(metric: str, by: str) -> str:
        return f"sum by ({by}) (rate({metric}{{{sel}}}[{window}]))"

    rules = [
        (f"{REQUESTS_RATE}{window}", rate("nv_inference_request_success", BY_MODEL)),
        (f"{DEPLOYMENT_REQUESTS_RATE}{window}", rate("nv_inference_request_success", BY_DEPLOYMENT)),
        # Average batch = inferences / executions: nv_inference_count counts inferences,
        # nv_inference_exec_count batches (server docs/user_guide/metrics.md).
        (
            f"{BATCH_SIZE}{window}",
            f"{rate('nv_inference_count', BY_MODEL)} / {rate('nv_inference_exec_count', BY_MODEL)}",
        ),
        (
            f"{QUEUE_SECONDS}{window}",
            f"{rate('nv_inference_queue_duration_us', BY_MODEL)} / {rate('nv_inference_request_success', BY_MODEL)}"
            " / 1e6",
        ),
        # Summary quantiles cannot be averaged across pods; the worst pod is the honest aggregate.
        (LATENCY_P95, f'max by ({BY_MODEL}) (nv_inference_request_summary_us{{{sel}, quantile="0.95"}}) / 1e6'),
        (LATENCY_P99, f'max by ({BY_MODEL}) (nv_inference_request_summary_us{{{sel}, quantile="0.99"}}) / 1e6'),
        (
            PENDING_PER_REPLICA,
            f"avg by ({BY_DEPLOYMENT}) (sum by ({BY_POD}) (nv_inference_pending_request_count{{{sel}}}))",
        ),
        (GPU_UTILIZATION_POD, f"avg by ({BY_POD}) (nv_gpu_utilization{{{sel}}})"),
        (GPU_UTILIZATION, f"avg by ({BY_DEPLOYMENT}) (nv_gpu_utilization{{{sel}}})"),
        (
            GPU_MEMORY_RATIO_POD,
            f"sum by ({BY_POD}) (nv_gpu_memory_used_bytes{{{sel}}})"
            f" / sum by ({BY_POD}) (nv_gpu_memory_total_bytes{{{sel}}})",
        ),
    ]
    # The deployments' own scaling-signal rules (busy ratio: its instance counts are per deployment).
    own = [
        signal_record(
            d["signal"]["kind"],
            settings["namespace"],
            object_name(d),
            window,
            signal_divisors(d),
        )
        for _, d in sorted(settings["deployments"].items())
    ]
    return [{"record": record, "expr": expr} for record, expr in rules] + [r for r in own if r is not None]


def load_queries(settings: MonitoringArgs) -> dict[str, str]:
    """What KEDA scales each deployment on, by deployment key: its signal summed over its pods, read over the rate
    window its recording rule reads (triton_platform/scaling_signal.py `trigger_query`)."""
    window = rate_window(settings["scrape_interval"])
    return {
        key: trigger_query(
            d["signal"]["kind"],
            settings["namespace"],
            object_name(d),
            window,
            signal_divisors(d),
        )
        for key, d in sorted(settings["deployments"].items())
    }


def alerts(settings: MonitoringArgs) -> list[Alert]:
    """Every alert, thresholds and `for:` from the settings."""
    sel, ns = _selector(settings["namespace"]), settings["namespace"]
    thresholds = settings["alerts"]
    queue_time_ms, failure_ratio = thresholds["queue_time_ms"], thresholds["failure_ratio"]
    gpu_memory_ratio, utilization_low = thresholds["gpu_memory_ratio"], thresholds["gpu_utilization_low"]
    window = rate_window(settings["scrape_interval"])
    slo_s = settings["latency_slo_ms"] / 1000
    # The objects TritonServing and KedaScaling made for these deployments, by name: never another's of a prefix.
    served = settings["deployments"].values()
    deployments, services = any_of(object_name(d) for d in served), any_of(scraped_service(d) for d in served)
    out = [
        Alert(
            "TritonLatencyAboveSLO",
            f"{LATENCY_P95}{{{sel}}} > {slo_s:g}",
            thresholds["latency_for"],
            "critical",
            "p95 latency of {{ $labels.model }} is above the SLO",
            f"p95 latency of {{{{ $labels.model }}}} in {{{{ $labels.deployment }}}} is above the "
            f"{settings['latency_slo_ms']} ms SLO.",
        ),
        Alert(
            "TritonQueueTimeHigh",
            f"{QUEUE_SECONDS}{window}{{{sel}}} > {queue_time_ms / 1000:g}",
            thresholds["queue_time_for"],
            "warning",
            "Requests to {{ $labels.model }} wait too long in Triton's queue",
            f"Average queue time per request of {{{{ $labels.model }}}} is above {queue_time_ms:g} ms: "
            "replicas or instances are short.",
        ),
        Alert(
            "TritonInferenceFailures",
            f"sum by ({BY_MODEL}, reason) (rate(nv_inference_request_failure{{{sel}}}[{window}]))"
            f" / on ({BY_MODEL}) group_left ()"
            f" (sum by ({BY_MODEL}) (rate(nv_inference_request_success{{{sel}}}[{window}]))"
            f" + sum by ({BY_MODEL}) (rate(nv_inference_request_failure{{{sel}}}[{window}])))"
            f" > {failure_ratio:g}",
            thresholds["failure_for"],
            "critical",
            "Inference requests to {{ $labels.model }} fail ({{ $labels.reason }})",
            f"More than {failure_ratio:.2%} of requests to {{{{ $labels.model }}}} fail with reason "
            "{{ $labels.reason }}.",
        ),
        Alert(
            "TritonReplicasUnavailable",
            f"kube_deployment_status_replicas_available{{{sel}, deployment=~{deployments}}}"
            f" < kube_deployment_spec_replicas{{{sel}, deployment=~{deployments}}}",
            thresholds["replicas_unavailable_for"],
            "critical",
            "{{ $labels.deployment }} has fewer available replicas than desired",
            "Fewer replicas of {{ $labels.deployment }} are available than desired: pods are not scheduling, "
            "not ready or crash-looping.",
        ),
        Alert(
            "TritonTargetDown",
            f"up{{{sel}, service=~{services}}} == 0",
            thresholds["target_down_for"],
            "critical",
            "Prometheus cannot scrape Triton pod {{ $labels.pod }}",
            "The metrics endpoint of {{ $labels.pod }} ({{ $labels.service }}) is down: the autoscaler and "
            "these alerts are blind to it.",
        ),
        Alert(
            "TritonGPUMemoryHigh",
            f"{GPU_MEMORY_RATIO_POD}{{{sel}}} > {gpu_memory_ratio:g}",
            thresholds["gpu_memory_for"],
            "warning",
            "GPU memory of {{ $labels.pod }} is nearly full",
            f"{{{{ $labels.pod }}}} uses more than {gpu_memory_ratio:.0%} of its GPU memory; another "
            "model instance or a larger batch will not fit.",
        ),
        Alert(
            "TritonGPUUnderutilized",
            f"{GPU_UTILIZATION}{{{sel}}} < {utilization_low:g}",
            thresholds["gpu_utilization_low_for"],
            "info",
            "GPUs of {{ $labels.deployment }} are mostly idle",
            f"Average GPU utilization of {{{{ $labels.deployment }}}} is below {utilization_low:.0%}: "
            "the warm floor or maxNodes may be oversized.",
        ),
    ]
    p99_slo_ms = settings.get("latency_p99_slo_ms")
    if p99_slo_ms is not None:
        out.append(
            Alert(
                "TritonLatencyP99AboveSLO",
                f"{LATENCY_P99}{{{sel}}} > {p99_slo_ms / 1000:g}",
                thresholds["latency_for"],
                "critical",
                "p99 latency of {{ $labels.model }} is above its objective",
                f"p99 latency of {{{{ $labels.model }}}} in {{{{ $labels.deployment }}}} is above the "
                f"{p99_slo_ms} ms p99 objective: the slowest requests wait, though the p95 may hold.",
            )
        )
    if settings["scaling_enabled"]:
        out.append(
            Alert(
                "KedaScalerErrors",
                # KEDA labels its series with the ScaledObject's namespace; scraped without honorLabels
                # that label arrives as exported_namespace. Either way, one of the two matches.
                " or ".join(
                    f"sum by (scaledObject) (increase(keda_scaler_detail_errors_total{{{label}={label_value(ns)},"
                    f" scaledObject=~{deployments}}}[5m])) > 0"
                    for label in ("namespace", "exported_namespace")
                ),
                thresholds["keda_errors_for"],
                "warning",
                "KEDA cannot read the triggers of {{ $labels.scaledObject }}",
                "KEDA's queries for {{ $labels.scaledObject }} fail; after failureThreshold errors it holds the "
                "fallback replica count instead of following load.",
            )
        )
    for _, deployment in sorted(settings["deployments"].items()):
        out += _per_deployment_alerts(settings, deployment)
    # Triton's GPU gauges: the GPU-memory trigger, its recording rule and the dashboards read them.
    return out + missing_series_alerts(settings, TRITON_GPU_SERIES, namespaced=True)


def _per_deployment_alerts(settings: MonitoringArgs, deployment: MonitoredDeployment) -> list[Alert]:
    thresholds = settings["alerts"]
    ns, target, signal = settings["namespace"], object_name(deployment), deployment["signal"]
    per_replica = per_replica_series(signal["kind"], ns, target)
    max_replicas = deployment["max_replicas"]
    sel = deployment_selector(ns, target)
    out = []
    if settings["scaling_enabled"]:
        out.append(
            Alert(
                "TritonQueueBacklogAtMaxReplicas",
                f"{per_replica} > {signal['target']:g}"
                f" and on (namespace, deployment) kube_deployment_spec_replicas{{{sel}}} >= {max_replicas}",
                thresholds["backlog_at_max_for"],
                "critical",
                f"{target} is at its {max_replicas}-replica ceiling and requests still queue",
                f"The scaling signal ({signal['kind']}) of {target} is above its target of {signal['target']:g} per "
                f"replica while it already runs replicas.max ({max_replicas}): raise replicas.max and the GPU "
                "pool, or shed load.",
                (("deployment", target),),
            )
        )
    budget = deployment.get("wake_budget_seconds")
    if budget is not None:
        out.append(
            Alert(
                "TritonWakeOverBudget",
                wake_over_budget_expr(ns, target),
                f"{budget}s",
                "warning",
                f"Requests to {target} have waited longer than its {budget} s wake budget",
                f"Requests to {target} are held by the KEDA HTTP add-on's interceptor while none of its pods is "
                f"available, for longer than its wake budget of {budget} s: the wake is slower than the stack "
                "states (a node, the image pull or the model load), or the Deployment cannot start. Past the "
                "budget the interceptor answers them 504.",
                (("deployment", target),),
            )
        )
    service = scraped_service(deployment)
    for model in sorted(served_models(deployment)):
        out.append(
            Alert(
                "TritonModelNotLoaded",
                # Per pod: a model missing on one replica of several is caught too.
                f"up{{namespace={label_value(ns)}, service={label_value(service)}}} == 1"
                f" unless on (namespace, pod) nv_inference_count{{{sel}, model={label_value(model)}}}",
                thresholds["model_missing_for"],
                "critical",
                f"Model {model} reports no metrics in {target}",
                f"{{{{ $labels.pod }}}} of {target} is scraped but exports no series for model {model}: "
                "it is not loaded.",
                (("deployment", target), ("model", model)),
            )
        )
    return out


def rule_groups(settings: MonitoringArgs) -> list[dict[str, Any]]:
    """The rule file's groups, exactly as the PrometheusRule carries them."""
    runbooks = settings["runbook_base_url"]
    return [
        {
            "name": "triton-platform.recording",
            "interval": settings["scrape_interval"],
            "rules": recording_rules(settings),
        },
        {"name": "triton-platform.alerts", "rules": [alert_rule(a, runbooks) for a in alerts(settings)]},
        *gpu_health_groups(settings),
        *token_groups(settings),
    ]
