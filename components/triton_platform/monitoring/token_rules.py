"""Recording rules and alerts on a streaming (decoupled) model's tokens: its time to first token (TTFT) and the
time between the tokens after it (inter-token latency, ITL), against `token_objectives`.

Which series report them depends on what serves the model (`TokenObjectives.metrics`):
- `triton`: Triton's own first-response histogram, `nv_inference_first_response_histogram_ms` (milliseconds, per
  `model` and `version`; created for decoupled models only, with `--metrics-config histogram_latencies=true`; added
  in Triton 2.52, core r24.11 `src/metric_model_reporter.cc`). Triton reports no inter-token latency in any release.
- `vllm`: the vLLM backend's histograms, `vllm:time_to_first_token_seconds` and
  `vllm:time_per_output_token_seconds` (seconds, per `model` and `version`; vllm_backend r24.10
  `src/utils/metrics.py`, reported when the model's config.pbtxt sets `REPORT_CUSTOM_METRICS` to `yes`).

A histogram's quantile is read over every pod's buckets together (`histogram_quantile` of the summed rates), which,
unlike summary quantiles, is the deployment's own percentile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from triton_platform.model_packaging.source import RepoModel
from triton_platform.monitoring.monitoring_args import MonitoringArgs, TokenObjectives
from triton_platform.monitoring.prometheus_alert import Alert, alert_rule
from triton_platform.promql import any_of, label_value
from triton_platform.recorded_series import BY_MODEL, ITL_P95, ITL_P99, TTFT_P95, TTFT_P99, rate_window

FIRST_RESPONSE_BUCKETS = "nv_inference_first_response_histogram_ms_bucket"
VLLM_FIRST_TOKEN_BUCKETS = "vllm:time_to_first_token_seconds_bucket"
VLLM_OUTPUT_TOKEN_BUCKETS = "vllm:time_per_output_token_seconds_bucket"

SOURCES: Mapping[str, tuple[tuple[str, float], tuple[str, float] | None]] = {
    "triton": ((FIRST_RESPONSE_BUCKETS, 1000.0), None),
    "vllm": ((VLLM_FIRST_TOKEN_BUCKETS, 1.0), (VLLM_OUTPUT_TOKEN_BUCKETS, 1.0)),
}
"""Per `metrics`: the TTFT buckets and the divisor to seconds, and the ITL buckets (None: not reported)."""


def token_metrics(model: RepoModel) -> str:
    """The series that measure `model`'s tokens (TokenObjectives.metrics): the vLLM backend's own where it serves
    the model (they give inter-token latency too), else Triton's first-response histogram."""
    return "vllm" if model.config.backend == "vllm" else "triton"


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
            summed = f"sum by ({BY_MODEL}, le) (rate({metric}{{{chosen}}}[{window}]))"
            scale = f" / {divisor:g}" if divisor != 1 else ""
            out += [
                {"record": record_p95, "expr": f"histogram_quantile(0.95, {summed}){scale}"},
                {"record": record_p99, "expr": f"histogram_quantile(0.99, {summed}){scale}"},
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
    return out


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
