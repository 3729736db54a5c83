"""What a streaming deployment scales on besides its load: one owner for the token series, read by Monitoring's
recording rules (monitoring/token_rules.py) and by KEDA's token triggers (Monitoring's `token_queries`).

A deployment serving models with token objectives (`TokenObjectives`) scales on what its backends report, picked
by `token_triggers`:
- `time-to-first-token`, for every such deployment: the worst of its models' p95 time to first token over the
  model's objective, from the series `metrics` names (Triton's first-response histogram, or the vLLM backend's
  `vllm:time_to_first_token_seconds`). The wait a user sees before the first token grows with the requests queued
  ahead of prefill, so it reads demand above the deployment's capacity where the instances' busy time cannot rise
  further. A latency is not shared among replicas: KEDA's `Value` metric, which the HPA scales by value / target.
- `kv-cache`, where a TensorRT-LLM model serves: the share of its KV-cache blocks in use per pod
  (`nv_trt_llm_kv_cache_block_metrics`, `kv_cache_block_type` `used` over `max`; tensorrtllm_backend v0.14.0
  inflight_batcher_llm/src/custom_metrics_reporter/custom_metrics_reporter.cc, labels `model` and `version`). A
  full cache leaves new sequences waiting for blocks however idle the GPU is. An `AverageValue` over replicas.

Not picked, with the reason: waiting requests. tensorrtllm_backend v0.14.0 (the 24.10 image) reports request
types `active`, `max`, `scheduled` and `context` only (a `waiting` type came later), and vllm_backend r24.10
(`src/utils/metrics.py`) exports token and latency histograms but no queue or KV-cache gauges.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from triton_platform.promql import any_of, label_value

FIRST_RESPONSE_BUCKETS = "nv_inference_first_response_histogram_ms_bucket"
"""Triton 2.52+ (core r24.11 src/metric_model_reporter.cc), for decoupled models under `histogram_latencies`."""
VLLM_FIRST_TOKEN_BUCKETS = "vllm:time_to_first_token_seconds_bucket"
VLLM_OUTPUT_TOKEN_BUCKETS = "vllm:time_per_output_token_seconds_bucket"
"""vllm_backend r24.10 src/utils/metrics.py, with the config's `REPORT_CUSTOM_METRICS` `yes`."""
KV_CACHE_BLOCKS = "nv_trt_llm_kv_cache_block_metrics"
"""A gauge per `kv_cache_block_type` (tensorrtllm_backend v0.14.0 custom_metrics_reporter.cc)."""

TOKEN_METRICS = ("triton", "vllm", "tensorrtllm")
"""What reports a streaming model's tokens (TokenObjectives.metrics): by its backend, `token_metrics_of`."""
SOURCES: Mapping[str, tuple[tuple[str, float], tuple[str, float] | None]] = {
    "triton": ((FIRST_RESPONSE_BUCKETS, 1000.0), None),
    "tensorrtllm": ((FIRST_RESPONSE_BUCKETS, 1000.0), None),
    "vllm": ((VLLM_FIRST_TOKEN_BUCKETS, 1.0), (VLLM_OUTPUT_TOKEN_BUCKETS, 1.0)),
}
"""Per `metrics`: the TTFT buckets and their divisor to seconds, and the ITL buckets (None: not reported).
TensorRT-LLM's backend reports gauges only, so its models' TTFT is Triton's histogram."""

TOP_BUCKET_MS: Mapping[str, tuple[float, float | None]] = {
    "triton": (5000.0, None),
    "tensorrtllm": (5000.0, None),
    "vllm": (10000.0, 2500.0),
}
"""Per `metrics`: the highest finite bucket of the TTFT and the ITL histograms, in ms. Triton's first-response
histogram's default buckets are 100, 500, 2000 and 5000 ms (core r24.11 src/metric_model_reporter.h); vllm_backend
r24.10 src/utils/metrics.py's reach 10 s for the first token and 2.5 s per output token. `histogram_quantile` reads a
percentile above the highest as that bound, so no objective at or above it could be seen broken."""

TTFT_TRIGGER = "time-to-first-token"
KV_CACHE_TRIGGER = "kv-cache"
TOKEN_TRIGGER_METRIC_TYPES = {TTFT_TRIGGER: "Value", KV_CACHE_TRIGGER: "AverageValue"}
"""KEDA's `metricType` of each token trigger: a latency ratio is not divided among replicas; a per-pod share is."""


WHY = {
    TTFT_TRIGGER: "its p95 time to first token over the objective, worst model first: the wait before the first "
    "token grows with the requests queued ahead of prefill, past what a busy ratio can show",
    KV_CACHE_TRIGGER: "TensorRT-LLM's KV-cache blocks in use per pod: a full cache keeps new sequences waiting "
    "however idle the GPU is",
}
"""Why each token trigger is picked, as `stackctl validate` prints it."""
NOT_PICKED = {
    "vllm": "waiting requests and KV-cache use, which the vLLM backend (r24.10) does not report",
    "tensorrtllm": "waiting requests, which TensorRT-LLM's backend (v0.14.0) does not report",
}
"""What a backend's models cannot scale on, and why."""


def token_metrics_of(backend: str) -> str:
    """The series that measure a model's tokens, by the backend that serves it."""
    return backend if backend in ("vllm", "tensorrtllm") else "triton"


def quantile_expr(q: float, buckets: str, matchers: str, window: str, by: str) -> str:
    """The `q` quantile of a histogram's buckets summed over every pod (`by` the labels kept), which unlike a
    summary's quantile is the deployment's own percentile."""
    return f"histogram_quantile({q:g}, sum by ({by}, le) (rate({buckets}{{{matchers}}}[{window}])))"


def token_triggers(metrics: Mapping[str, str], models: Iterable[str]) -> list[str]:
    """The token triggers of a deployment serving `models`, given the `metrics` of each model with objectives:
    none without objectives; `time-to-first-token` with any; `kv-cache` too where a TensorRT-LLM model has them."""
    chosen = [metrics[model] for model in models if model in metrics]
    if not chosen:
        return []
    return [TTFT_TRIGGER] + ([KV_CACHE_TRIGGER] if "tensorrtllm" in chosen else [])


def ttft_ratio_query(selector: str, window: str, objectives: Mapping[str, tuple[str, int]]) -> str:
    """The deployment's worst p95 time to first token over its objective, one series: `objectives`, per model,
    its `metrics` and p95 objective in ms. No traffic gives a NaN quantile, which `>= 0` drops; `or vector(0)`
    then reads it as no pressure: KEDA's Prometheus scaler makes NaN, like an infinite value, an error (kedacore/keda
    v2.20 pkg/scalers/prometheus_scaler.go), which would hold the fallback whenever the model is idle."""
    terms = []
    for model, (metrics, objective_ms) in sorted(objectives.items()):
        (buckets, divisor), _ = SOURCES[metrics]
        quantile = quantile_expr(0.95, buckets, f"{selector}, model={label_value(model)}", window, "model")
        # Seconds over seconds: the histogram's unit divided out with the objective's.
        terms.append(f"{quantile} / {divisor * objective_ms / 1000:g}")
    # `or`: each model keeps its own series (the model label differs); max picks the worst.
    return f"max((({' or '.join(terms)})) >= 0) or vector(0)"


def kv_cache_query(selector: str, models: Iterable[str]) -> str:
    """The deployment's KV-cache blocks in use over the blocks it has, summed over pods per pod (one series): KEDA
    divides it by the replicas (AverageValue). No series (no pod reporting yet) reads as 0."""
    chosen = f"{selector}, model=~{any_of(sorted(models))}"

    def blocks(kind: str) -> str:
        return f'sum by (pod) ({KV_CACHE_BLOCKS}{{{chosen}, kv_cache_block_type="{kind}"}})'

    return f"sum({blocks('used')} / ({blocks('max')} > 0)) or vector(0)"
