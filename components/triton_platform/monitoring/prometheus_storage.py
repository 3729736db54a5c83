"""How much disk the Prometheus the platform installs needs: its series, its scrape interval, its retention.

Prometheus' own sizing rule (https://prometheus.io/docs/prometheus/latest/storage/, "Operational aspects"):
`needed_disk_space = retention_time_seconds * ingested_samples_per_second * bytes_per_sample`, with "an average
of only 1-2 bytes per sample". The series are an estimate, stated here so a reviewer can check it: the platform's
own from what Triton exports per model and per pod, and an allowance for what the chart scrapes of the cluster.
After a week in production, `prometheus_tsdb_head_series` gives the real count; set `storage.prometheus_size`
from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

BYTES_PER_SAMPLE = 2
"""The upper end of Prometheus' 1-2 bytes per sample."""
HEADROOM = 1.5
"""The write-ahead log, the head block and compaction's temporary copies, above the blocks themselves."""
RETENTION_SIZE_SHARE = 0.85
"""`retentionSize` as a share of the volume: past it Prometheus deletes its oldest blocks, so a series count
above the estimate shortens the history instead of filling the disk (and stopping every scrape)."""
MIN_SIZE_GI = 10
"""Below this a cloud's block volume is no cheaper, and the estimate's error dominates."""

SERIES_PER_MODEL = 43
"""What Triton exports per model version and pod (core src/metric_model_reporter.cc): request success 1, failure
4 (`reason` REJECTED, CANCELED, BACKEND, OTHER), inference and execution counts 2, the five duration counters,
the pending-request gauge 1, and with `summary_latencies` five summaries of 4 quantiles, `_sum` and `_count` (30)."""
SERIES_PER_POD = 16
"""Per Triton pod: CPU and pinned-memory gauges 5, one GPU's gauges and energy counter 6, Prometheus' own
per-target series (`up`, `scrape_*`) 5."""
CHART_SERIES = 100_000
"""kube-prometheus-stack's own scrapes of a small cluster (the API server's histograms, the kubelets and
cAdvisor, kube-state-metrics, CoreDNS): an allowance, not a measurement."""


def platform_series(deployments: Iterable[tuple[int, int]]) -> int:
    """The series the platform's Triton pods produce at their ceilings: (max replicas, models) per deployment."""
    return sum(replicas * (models * SERIES_PER_MODEL + SERIES_PER_POD) for replicas, models in deployments)


def volume_gi(series: int, scrape_interval_seconds: float, retention_seconds: float) -> int:
    """Gibibytes of volume for `series` scraped every `scrape_interval_seconds`, kept `retention_seconds`."""
    samples = series / scrape_interval_seconds * retention_seconds
    return max(MIN_SIZE_GI, math.ceil(samples * BYTES_PER_SAMPLE * HEADROOM / 2**30))


def retention_size(volume: int) -> str:
    """Prometheus' `--storage.tsdb.retention.size` (the Prometheus resource's `retentionSize`) for a volume of
    `volume` GiB: its units are powers of 2, `GB` is 2^30 bytes (the storage page above, "Operational aspects")."""
    return f"{math.floor(volume * RETENTION_SIZE_SHARE)}GB"
