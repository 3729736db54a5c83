"""One pod's response surface: its stationary behaviour under Poisson arrivals at a grid of per-pod rates, measured
once per batching config with the real batcher (simulator.batcher.Replica): the latency histogram (timeline.EDGES bins,
request overheads included), the pending gauge at random instants, and per served request the queue, busy and
execution seconds Triton's counters add, and the share rejected. The fluid model (simulator.fluid) reads it second by
second, linear in the rate between grid points; the oracle (simulator.oracle) reads the rate each pod holds the SLO
to. `search_left` and `bracket` read the grid in compiled code."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import (
    COUNTER_REQUESTS,
    COUNTER_SUCCESS,
    BatcherConfig,
    LatencyProfile,
    Outcome,
    Replica,
)
from simulator.compiled import compiled
from simulator.scenario import model_capacity_rps
from simulator.timeline import (
    EDGES,
    percentiles,
)

BINS = len(EDGES) - 1
CENTRES = np.sqrt(EDGES[:-1] * EDGES[1:])
# Per-pod rates measured, as fractions of a pod's full-batch throughput: geometric where the batcher's
# behaviour changes slowly, denser towards saturation where queueing grows fast.
GRID = np.concatenate([np.geomspace(0.005, 0.8, 18), [0.86, 0.91, 0.95, 0.98]])
REQUESTS_PER_POINT = 30_000
"""Enough for a p99 within a few percent at each grid point, cheap enough for a planner's many configs."""
GAUGE_SAMPLES = 400
"""Instants per grid point at which the pending gauge is read: its distribution, not just its mean."""
WARMUP = 0.1
"""Share of each grid point's run left out of its statistics: the batcher starts empty."""
MEASURED = COUNTER_REQUESTS
"""The counters a surface holds per served request (COUNTER_* below COUNTER_REQUESTS); the requests ended are each
second's arrivals, set apart by the data plane."""


@dataclass(frozen=True)
class Surface:
    """One pod's stationary behaviour at each per-pod arrival rate of `rates`."""

    capacity: float
    """Requests per second the pod serves at full batches."""
    rates: NDArray[np.float64]
    histogram: NDArray[np.float64]
    """(rate, EDGES bin): share of the served requests' latencies."""
    p95: NDArray[np.float64]
    """Seconds."""
    p99: NDArray[np.float64]
    """Seconds."""
    pending: NDArray[np.int64]
    """(rate, sample): the pending-request gauge at random instants."""
    rejected: NDArray[np.float64]
    """Share of arrivals rejected (a full queue, the timeout)."""
    counters: NDArray[np.float64]
    """(rate, COUNTER_*): what Triton's counters add per served request."""
    saturated: NDArray[np.float64]
    """Per request at saturation, before its wait in the backlog: latency histogram (full batch plus overhead)."""
    saturated_p95: float
    saturated_p99: float
    saturated_counters: NDArray[np.float64]
    """Per request at saturation, COUNTER_*: full batches on every instance; queue seconds: the wait, added apart."""

    def slo_rate(self, slo_seconds: float, p99_seconds: float | None = None) -> float:
        """The highest per-pod rate up to which this pod keeps p95 within `slo_seconds`, and p99 within
        `p99_seconds` when given, no backlog building: its full-batch capacity where every measured rate and
        saturation hold them, else the last measured rate below the first that breaks one (latency is not monotone
        in the rate: fuller batches leave sooner); 0 where none holds them."""
        tail = math.inf if p99_seconds is None else p99_seconds
        over = np.flatnonzero((self.p95 > slo_seconds) | (self.p99 > tail))
        if not over.size:
            held = self.saturated_p95 <= slo_seconds and self.saturated_p99 <= tail
            return self.capacity if held else float(self.rates[-1])
        return float(self.rates[over[0] - 1]) if over[0] else 0.0


def _measure(batcher: BatcherConfig, tau: LatencyProfile, rate: float, seed: int) -> tuple[NDArray[np.float64], ...]:
    """One pod under Poisson arrivals at `rate`: its latency histogram, gauge samples, rejected share and counters."""
    rng = np.random.default_rng(seed)
    replica = Replica(batcher, tau, seed)
    end = REQUESTS_PER_POINT / rate
    start = WARMUP * end
    arrivals = np.sort(rng.random(rng.poisson(rate * end)) * end)
    # Read the gauge at random instants (uniform, as a scrape's instant is to the batcher's cycle).
    instants = np.sort(start + rng.random(GAUGE_SAMPLES) * (end - start))
    cuts = np.searchsorted(arrivals, instants)
    outcome = Outcome()
    replica.offer(arrivals[: cuts[0]])
    replica.advance(float(instants[0]), outcome)
    before = replica.counters.copy()
    pending = np.empty(GAUGE_SAMPLES)
    for i in range(GAUGE_SAMPLES):
        if i:
            replica.offer(arrivals[cuts[i - 1] : cuts[i]])
            replica.advance(float(instants[i]), outcome)
        pending[i] = replica.queued
    counters = replica.counters - before
    # Let what is still queued finish so that the slowest requests count too.
    replica.offer(arrivals[cuts[-1] :])
    replica.advance(end + 10.0, outcome)
    served_at, latencies = np.concatenate(outcome.arrivals), np.concatenate(outcome.latencies)
    window = (served_at >= instants[0]) & (served_at < instants[-1])
    histogram = np.bincount(np.clip(np.searchsorted(EDGES, latencies[window]) - 1, 0, BINS - 1), minlength=BINS)
    rejected_at = np.concatenate(outcome.rejected_at) if outcome.rejected_at else np.empty(0)
    dropped = np.count_nonzero((rejected_at >= instants[0]) & (rejected_at < instants[-1]))
    offered = np.count_nonzero((arrivals >= instants[0]) & (arrivals < instants[-1]))
    return (
        histogram / max(histogram.sum(), 1),
        pending,
        np.array([dropped / max(offered, 1)]),
        counters[:MEASURED] / max(counters[COUNTER_SUCCESS], 1.0),
    )


@functools.lru_cache(maxsize=64)
def surface(batcher: BatcherConfig, tau: LatencyProfile) -> Surface:
    """The response surface of one pod with this batching config and latency profile, measured once."""
    largest = batcher.max_batch_size if batcher.dynamic else 1
    capacity = model_capacity_rps(batcher, tau)
    rates = GRID * capacity
    points = [_measure(batcher, tau, float(rate), seed) for seed, rate in enumerate(rates)]
    histogram = np.array([p[0] for p in points])
    counts = np.rint(histogram * 1e9).astype(np.int64)
    full = tau(largest)
    service = full + tau.overhead((np.arange(1000) + 0.5) / 1000)
    saturated = np.bincount(np.searchsorted(EDGES, service) - 1, minlength=BINS) / len(service)
    return Surface(
        capacity=capacity,
        rates=rates,
        histogram=histogram,
        p95=percentiles(counts, 95),
        p99=percentiles(counts, 99),
        pending=np.array([p[1] for p in points]).astype(np.int64),
        rejected=np.array([p[2][0] for p in points]),
        counters=np.array([p[3] for p in points]),
        saturated=saturated,
        saturated_p95=float(np.quantile(service, 0.95)),
        saturated_p99=float(np.quantile(service, 0.99)),
        saturated_counters=np.array([1.0, 1 / largest, full / largest, 0.0]),
    )


@compiled
def search_left(edges: NDArray[np.float64], value: float) -> int:
    """np.searchsorted(edges, value) of a finite `value`: the first index whose edge is not below it. A bisection of
    its own: numba compiles np.searchsorted anew for each of its callers' types."""
    lo, hi = 0, len(edges)
    while lo < hi:
        mid = (lo + hi) // 2
        if edges[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@compiled
def bracket(rates: NDArray[np.float64], rate: float) -> tuple[int, float]:
    """The grid point at or below `rate` and the weight of the one above; clamped to the grid's ends."""
    if rate <= rates[0]:
        return 0, 0.0
    if rate >= rates[-1]:
        return len(rates) - 2, 1.0
    j = search_left(rates, rate) - 1
    return j, (rate - rates[j]) / (rates[j + 1] - rates[j])
