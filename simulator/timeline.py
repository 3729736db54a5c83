"""What a run of the detailed engine (simulator.engine) records: per second (Timeline), and with several models
per model (ModelCounts); latencies as counts over the bins of EDGES, read as `percentiles`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import Outcome

# Latency histogram bins: 0.1 ms to 1000 s, 2% wide.
EDGES = np.geomspace(1e-4, 1e3, 815)


@dataclass
class ModelCounts:
    """One model's requests over a run with several models: its latency histogram over EDGES and its counts."""

    histogram: NDArray[np.int64] = field(default_factory=lambda: np.zeros(len(EDGES) - 1, np.int64))
    arrived: int = 0
    served: int = 0
    dropped: int = 0

    def record(self, out: Outcome) -> None:
        """Count what `out` holds (before Timeline.record empties it)."""
        if out.latencies:
            latencies = np.concatenate(out.latencies)
            bins = len(EDGES) - 1
            index = np.clip(np.searchsorted(EDGES, latencies) - 1, 0, bins - 1)
            self.histogram += np.bincount(index, minlength=bins)
            self.served += len(latencies)
        self.dropped += sum(len(r) for r in out.rejected_at)

    def summary(self) -> dict[str, float | int]:
        """p50, p95 and p99 (ms), rejected % and requests offered."""
        p50, p95, p99 = (float(percentiles(self.histogram[None, :], q)[0] * 1000) for q in (50, 95, 99))
        return {
            "p50_ms": p50,
            "p95_ms": p95,
            "p99_ms": p99,
            "rejected_pct": 100 * self.dropped / max(self.arrived, 1),
            "requests": self.arrived,
        }


@dataclass
class Timeline:
    """Per second: what the simulation saw."""

    arrival_rps: NDArray[np.float64]
    desired: NDArray[np.int64]
    ready: NDArray[np.int64]
    pending: NDArray[np.int64]
    rejected: NDArray[np.int64]
    gpus: NDArray[np.int64]
    signal: NDArray[np.float64]
    """The scaling signal as the HPA last read it: per replica for an AverageValue target; NaN before the first read
    or while the read fails."""
    falling_back: NDArray[np.bool_]
    """Whether KEDA answered with its fallback in that second."""
    histogram: NDArray[np.signedinteger[Any]]
    """Latency counts per (arrival second, bin of EDGES)."""
    arrived: int = 0
    served: int = 0
    dropped: int = 0
    in_flight: int = 0
    metrics_failing: int = 0
    """Seconds during which KEDA could not read the triggers."""
    fallback: int = 0
    """Seconds during which KEDA answered with its fallback."""
    hpa_changes: list[tuple[float, int]] = field(default_factory=list)
    per_model: dict[str, ModelCounts] = field(default_factory=dict)
    """With several models: each one's requests (the other fields count them all together)."""
    wakes: int = 0
    """Scale to zero: times KEDA scaled the deployment 0 -> 1 on a request."""
    wait_histogram: NDArray[np.int64] = field(default_factory=lambda: np.zeros(len(EDGES) - 1, np.int64))
    """Scale to zero: the requests held by the interceptor and then forwarded, by their wait, over EDGES."""
    wait_max: float = 0.0
    """Scale to zero: the longest wait of a forwarded request (seconds)."""
    wake_failed: int = 0
    """Scale to zero: held requests that failed at the interceptor's timeout (504), also in `dropped`."""

    @classmethod
    def empty(cls, n: int, histogram_rows: int | None = None) -> Timeline:
        """A timeline of `n` seconds with nothing seen yet; `histogram_rows`: fewer latency rows than seconds."""
        return cls(
            arrival_rps=np.zeros(n),
            desired=np.zeros(n, np.int64),
            ready=np.zeros(n, np.int64),
            pending=np.zeros(n, np.int64),
            rejected=np.zeros(n, np.int64),
            gpus=np.zeros(n, np.int64),
            signal=np.full(n, np.nan),
            falling_back=np.zeros(n, np.bool_),
            # A row per second counts that second's arrivals, at most 3 x shapes.MAX_RPS (a spike), far below
            # 2**31: int32 halves the largest array of a long run (2 days: 0.56 GB instead of 1.1 GB). Fewer rows
            # sum many seconds each (fluid_run.py, start_run: one row for the whole run), which can pass 2**31.
            histogram=np.zeros(
                (n if histogram_rows is None else histogram_rows, len(EDGES) - 1),
                np.int32 if histogram_rows is None else np.int64,
            ),
        )

    def record(self, out: Outcome) -> None:
        """Count what `out` holds by arrival second, then empty it."""
        n, bins = len(self.arrival_rps), len(EDGES) - 1
        if out.arrivals:
            arrivals, latencies = np.concatenate(out.arrivals), np.concatenate(out.latencies)
            index = np.minimum(arrivals.astype(np.int64), n - 1) * bins
            index += np.clip(np.searchsorted(EDGES, latencies) - 1, 0, bins - 1)
            low = int(index.min())
            counts = np.bincount(index - low)
            self.histogram.reshape(-1)[low : low + len(counts)] += counts
            self.served += len(arrivals)
        for rejected in out.rejected_at:
            np.add.at(self.rejected, np.minimum(rejected.astype(np.int64), n - 1), 1)
            self.dropped += len(rejected)
        out.arrivals.clear()
        out.batch_sizes.clear()
        out.latencies.clear()
        out.rejected_at.clear()

    def percentiles(self, q: float) -> NDArray[np.float64]:
        """The q-th percentile latency (seconds) of each second's arrivals; NaN for a second without any."""
        return percentiles(self.histogram, q)


PERCENTILE_ROWS = 4096
"""Rows of the histogram whose cumulative counts are held at once: about 27 MB, where the whole of a long run's
would double its largest array."""


def percentiles(counts: NDArray[np.signedinteger[Any]], q: float) -> NDArray[np.float64]:
    """The q-th percentile of each row of latency-bin counts, at the bin's geometric centre."""
    result = np.empty(len(counts))
    for first in range(0, len(counts), PERCENTILE_ROWS):
        rows = counts[first : first + PERCENTILE_ROWS]
        totals = rows.sum(axis=1, dtype=np.int64)
        index = (np.cumsum(rows, axis=1, dtype=np.int64) < (q / 100) * totals[:, None]).sum(axis=1)
        index = np.minimum(index, len(EDGES) - 2)
        result[first : first + len(rows)] = np.where(totals > 0, np.sqrt(EDGES[index] * EDGES[index + 1]), np.nan)
    return result
