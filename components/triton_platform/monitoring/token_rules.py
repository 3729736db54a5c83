"""Recording rules and alerts on a streaming (decoupled) model's tokens: its time to first token (TTFT) and the
time between the tokens after it (inter-token latency, ITL), against `token_objectives`.

Which series report them depends on what serves the model (`TokenObjectives.metrics`; the names are
triton_platform/token_signal.py's, which KEDA's token triggers read too):
- `triton` and `tensorrtllm` (whose backend reports gauges only): Triton's own first-response histogram,
  `nv_inference_first_response_histogram_ms` (milliseconds, per `model` and `version`; created for decoupled models
  only, with `--metrics-config histogram_latencies=true`; added in Triton 2.52, core r24.11
  `src/metric_model_reporter.cc`). Triton reports no inter-token latency in any release.
- `vllm`: the vLLM backend's histograms, `vllm:time_to_first_token_seconds` and
  `vllm:time_per_output_token_seconds` (seconds, per `model` and `version`; vllm_backend r24.10
  `src/utils/metrics.py`, reported when the model's config.pbtxt sets `REPORT_CUSTOM_METRICS` to `yes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from triton_platform.model_packaging.source import RepoModel
from triton_platform.monitoring.monitoring_args import MonitoringArgs, TokenObjectives
from triton_platform.monitoring.monitoring_settings import object_name
from triton_platform.monitoring.prometheus_alert import Alert, alert_rule
from triton_platform.promql import any_of, label_value
from triton_platform.recorded_series import BY_MODEL, ITL_P95, ITL_P99, TTFT_P95, TTFT_P99, rate_window
from triton_platform.scaling_signal import deployment_selector
from triton_platform.token_signal import (
    KV_CACHE_TRIGGER,
    SOURCES,
    TTFT_TRIGGER,
    kv_cache_query,
    quantile_expr,
    token_metrics_of,
    token_triggers,
    ttft_ratio_query,
)


def token_metrics(model: RepoModel) -> str:
    """The series that measure `model`'s tokens (TokenObjectives.metrics), by the backend that serves it."""
    return token_metrics_of(model.config.backend)


def _models_by_source(objectives: Mapping[str, TokenObjectives]) -> dict[str, list[str]]:
    by_source: dict[str, list[str]] = {}
    for model, objective in sorted(objectives.items()):
        by_source.setdefault(objective["metrics"], []).append(model)
    return by_source


def token_recording_rules(settings: MonitoringArgs) -> list[dict[str, str]]:
    """TTFT and, where reported, ITL p95 and p99 of each model with objectives, in seconds, by namespace,
    deployment and model."""
    sel = f"namespace={label_value(settings['namespace'])}"
    window = rate_window(settings["scrape_interval"])
    out = []
    for source, models in _models_by_source(settings["token_objectives"]).items():
        first, between = SOURCES[source]
        chosen = f"{sel}, model=~{any_of(models)}"
        for (record_p95, record_p99), buckets in (((TTFT_P95, TTFT_P99), first), ((ITL_P95, ITL_P99), between)):
            if buckets is None:
                continue
            metric, divisor = buckets
            scale = f" / {divisor:g}" if divisor != 1 else ""
            out += [
                {"record": record, "expr": quantile_expr(q, metric, chosen, window, BY_MODEL) + scale}
                for q, record in ((0.95, record_p95), (0.99, record_p99))
            ]
    return out


def token_alerts(settings: MonitoringArgs) -> list[Alert]:
    """One alert per model and objective: each model has thresholds of its own."""
    sel, duration = f"namespace={label_value(settings['namespace'])}", settings["alerts"]["latency_for"]
    out = []
    for model, objective in sorted(settings["token_objectives"].items()):
        where = f"{sel}, model={label_value(model)}"
        for key, record, name, what in (
            ("time_to_first_token_p95_ms", TTFT_P95, "TritonTimeToFirstTokenAboveSLO", "p95 time to first token"),
            ("time_to_first_token_p99_ms", TTFT_P99, "TritonTimeToFirstTokenP99AboveSLO", "p99 time to first token"),
            ("inter_token_p95_ms", ITL_P95, "TritonInterTokenLatencyAboveSLO", "p95 inter-token latency"),
            ("inter_token_p99_ms", ITL_P99, "TritonInterTokenLatencyP99AboveSLO", "p99 inter-token latency"),
        ):
            limit_ms = cast(Mapping[str, int], objective).get(key)
            if limit_ms is None:
                continue
            out.append(
                Alert(
                    name,
                    f"{record}{{{where}}} > {limit_ms / 1000:g}",
                    duration,
                    "critical",
                    f"{what} of {{{{ $labels.model }}}} is above its objective",
                    f"{what} of {{{{ $labels.model }}}} in {{{{ $labels.deployment }}}} is above its {limit_ms} ms "
                    "objective.",
                )
            )
    return [*out, _series_missing(settings, sel, duration)]


def _series_missing(settings: MonitoringArgs, sel: str, duration: str) -> Alert:
    """A model with objectives that serves requests while its time-to-first-token series is absent: its alerts
    and its `time-to-first-token` trigger (which reads no series as no pressure) would see nothing."""
    window = rate_window(settings["scrape_interval"])
    terms = []
    for source, models in _models_by_source(settings["token_objectives"]).items():
        chosen = f"{sel}, model=~{any_of(models)}"
        buckets = SOURCES[source][0][0]
        served = f"sum by ({BY_MODEL}) (rate(nv_inference_request_success{{{chosen}}}[{window}])) > 0"
        terms.append(f"({served} unless on ({BY_MODEL}) sum by ({BY_MODEL}) ({buckets}{{{chosen}}}))")
    return Alert(
        "TritonTokenSeriesMissing",
        " or ".join(terms),
        duration,
        "warning",
        "{{ $labels.model }} streams without its time-to-first-token series",
        "{{ $labels.model }} in {{ $labels.deployment }} serves requests but exports no time-to-first-token "
        "histogram: its token alerts and its time-to-first-token trigger read nothing.",
    )


def token_groups(settings: MonitoringArgs) -> list[dict[str, Any]]:
    """The token rule groups; none without objectives."""
    if not settings["token_objectives"]:
        return []
    runbooks = settings["runbook_base_url"]
    return [
        {
            "name": "triton-platform.tokens",
            "interval": settings["scrape_interval"],
            "rules": token_recording_rules(settings),
        },
        {"name": "triton-platform.token-alerts", "rules": [alert_rule(a, runbooks) for a in token_alerts(settings)]},
    ]


def token_queries(settings: MonitoringArgs) -> dict[str, dict[str, str]]:
    """KEDA's token triggers of each deployment, by deployment key then trigger name, as triton_platform/
    token_signal.py picks them: none where no model it serves has objectives. Read over the window the token
    recording rules read."""
    window = rate_window(settings["scrape_interval"])
    objectives = settings["token_objectives"]
    metrics = {model: objective["metrics"] for model, objective in objectives.items()}
    out: dict[str, dict[str, str]] = {}
    for key, deployment in sorted(settings["deployments"].items()):
        models = [model for model in cast(list[str], deployment["models"]) if model in objectives]
        selector = deployment_selector(settings["namespace"], object_name(deployment))
        queries: dict[str, str] = {}
        for trigger in token_triggers(metrics, models):
            if trigger == TTFT_TRIGGER:
                ratios = {model: (metrics[model], objectives[model]["time_to_first_token_p95_ms"]) for model in models}
                queries[trigger] = ttft_ratio_query(selector, window, ratios)
            if trigger == KV_CACHE_TRIGGER:
                queries[trigger] = kv_cache_query(selector, (m for m in models if metrics[m] == "tensorrtllm"))
        out[key] = queries
    return out
