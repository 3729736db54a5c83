"""The series the platform's recording rules write, and the labels they keep: one owner for the names that the
rules (triton_platform/monitoring/monitoring_rules.py) record and the scaling signals, alerts and dashboards read.

Series carry `namespace`, `pod`, `service` and `deployment` labels because the ServiceMonitor's relabelings put
them there (triton_platform/monitoring/monitoring.py).
"""

from __future__ import annotations

from triton_platform.args.durations import duration_seconds

BY_MODEL = "namespace, deployment, model"
BY_DEPLOYMENT = "namespace, deployment"
BY_POD = "namespace, deployment, pod"

# The rate-based names end in their window (`rate_window`), e.g. `...:rate1m`.
REQUESTS_RATE = "namespace_deployment_model:nv_inference_request_success:rate"
DEPLOYMENT_REQUESTS_RATE = "namespace_deployment:nv_inference_request_success:rate"
BATCH_SIZE = "namespace_deployment_model:nv_inference_batch_size:avg"
QUEUE_SECONDS = "namespace_deployment_model:nv_inference_queue_seconds_per_request:avg"
LATENCY_P95 = "namespace_deployment_model:nv_inference_request_seconds:p95"
LATENCY_P99 = "namespace_deployment_model:nv_inference_request_seconds:p99"
PENDING_PER_REPLICA = "namespace_deployment:nv_inference_pending_request_count:avg_per_replica"
BUSY_RATIO = "namespace_deployment:nv_inference_instance_busy:ratio"
"""The mean over pods of each pod's busiest model's instance busy ratio (triton_platform/scaling_signal.py)."""
DEMAND = "namespace_deployment:nv_inference_request_demand:ratio"
"""The mean over pods of each pod's requests per second over its capacity, its models' shares added
(triton_platform/scaling_signal.py)."""
GPU_UTILIZATION_POD = "namespace_deployment_pod:nv_gpu_utilization:avg"
GPU_UTILIZATION = "namespace_deployment:nv_gpu_utilization:avg"
GPU_MEMORY_RATIO_POD = "namespace_deployment_pod:nv_gpu_memory_used:ratio"
TTFT_P95 = "namespace_deployment_model:time_to_first_token_seconds:p95"
TTFT_P99 = "namespace_deployment_model:time_to_first_token_seconds:p99"
ITL_P95 = "namespace_deployment_model:inter_token_latency_seconds:p95"
ITL_P99 = "namespace_deployment_model:inter_token_latency_seconds:p99"
"""A streaming model's token latencies, from Triton's or its backend's histograms (monitoring/token_rules.py)."""


def rate_window(scrape_interval: str) -> str:
    """rate() needs at least four samples to be stable: 1m, or four scrape intervals if longer."""
    seconds = max(60, int(4 * duration_seconds(scrape_interval)))
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


# Per GPU, from the DCGM exporter (monitoring/gpu_health_rules.py); every label of the exporter's series kept.
DCGM_GPU_UTILIZATION = "gpu:DCGM_FI_DEV_GPU_UTIL:ratio"
"""GPU utilization as a fraction (the exporter reports percent)."""
DCGM_FRAMEBUFFER_USED = "gpu:DCGM_FI_DEV_FB_USED:ratio"
"""Framebuffer memory used / (used + free)."""
