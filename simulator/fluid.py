"""A fast evaluator of one scenario on a long trace: a measured per-pod response surface under a fluid queue.

The detailed engine (simulator.engine) runs every request through every pod's batcher, about
4 million requests per wall second: a day of production traffic takes minutes to hours. This
model keeps the engine's control plane and replaces its data plane:

- Per pod, a response surface (`surface`) measured once per batching config with the real
  batcher (simulator.batcher.Replica) under Poisson arrivals at a grid of rates up to just
  below saturation: the latency histogram (engine.EDGES bins, request overheads included),
  the pending gauge at random instants, and per served request the queue, busy and
  execution seconds Triton's counters add, and the fraction rejected.
- Per second of the trace, Poisson arrivals from `seed` split evenly over the ready pods;
  each pod's share reads the surface (linear in the rate between grid points). Beyond what
  the ready pods serve at full batches the excess waits in a fluid backlog, which adds its
  drain time to the latency and is capped by `max_queue_size` and the queue timeout (the
  rest is rejected); with no ready pod every arrival is rejected.
- The control plane is the engine's, in two implementations. `evaluate_reference` runs the engine's own
  objects: pods are engine.Pod (their replicas never run; at each scrape their pending gauge is drawn
  from the surface and their counters set from it), scraped by engine.scrape, read through
  simulator.keda and simulator.hpa, rescaled and drained by engine.rescale and engine.drained.
  `evaluate`, what the planner runs, compiles the same steps with numba over plain arrays (`_control`,
  its HPA `_desired`), drawing the same random numbers in the same order: the Python path took about 95%
  of a run in per-scrape interpreter work. Kept apart rather than the engine using the compiled HPA
  (whose per-pod replicas, outages and KEDA fallback the fluid model does not need), and held to the
  Python path instead: tests/test_fluid.py checks that both give the same summary, to the bit, on random
  scenarios (signals, HPA behaviors with every policy kind, the GPU-memory trigger, queue bounds, node
  pools, scrape and drain times), loads and seeds, and `_desired` against hpa.Hpa sync after sync on
  random behaviors and the legacy path (no behavior). engine.summary does the arithmetic for both.

Several models on one pod (Scenario.others, a rate column each): each model reads its own surface; contention is
the engine's (a model's tau(b) stretched by 1 / (1 - the other models' GPU share in the second before)), applied
as time scaling: a pod whose service times are k x longer behaves as the unstretched pod at k x the rate, k x
slower, so the surface is read at rate x k and its latencies and busy and queue seconds multiplied by k (the
batching delay is stretched with them: an approximation). The signal is the deployment's, as the engine reads it:
pending summed over the models, or per pod the busiest model's busy ratio (signals.busiest). Held to the reference,
to the bit, on random scenarios of two and three models, and to the detailed engine on two models of production
(tests/test_fluid.py: measured GPU-hours within 2.8%, rejected within 0.5 points, p95 within 22% away from the queue
timeout's cliff; asserted: GPU-hours within 5%, rejected within 0.5 points or 15%, p95 within 30%). One model is
never stretched: its results are unchanged, to the bit.

Scale to zero (Scenario.scales_to_zero), as simulator.engine models it (KEDA's own loop scales 1 -> 0 after the
cooldown; the KEDA HTTP add-on's interceptor holds requests while no pod is ready, wakes the deployment on the
first, forwards them when a pod is ready, fails them at its timeout): the control plane then runs second by second
(KEDA activates on a request's second), and `_interceptor`, one compiled function both paths call, holds each
second's arrivals without a ready pod, forwards them (their wait: from the middle of their second) into the first
second with one, or fails them once they would wait past the timeout. With `min_replicas` >= 1 none of this runs:
results are unchanged, to the bit. Held to the reference, to the bit, and to the detailed engine (wakes, GPU-hours,
waits, failures) by tests/test_scale_to_zero.py. Second by second costs time: dev's 24 h day in about 0.04 s at
zero against 0.016 s at a floor of 1.

Measured against the detailed engine on 15-minute step, diurnal and spike traces at 0.6x-2.7x of
the trigger load, production, staging and dev, all four signals (tests/test_fluid.py): GPU-hours
within 1% and rejected within 0.3 points where the HPA's decisions agree; p95 within 11%, except
an unbounded queue's backlog of minutes (dev at 2.7x), 30-40% low: the model pools the backlog
over the pods, where the detailed engine leaves it on the pod that built it. A signal within a few
percent of a whole number of pods (or queue-depth's noisy gauge) can tip the HPA's ceil() the other
way, a pod more or less for minutes: up to 11-22% of a 15-minute run's GPU-hours, less over a day.
Speed (bench/results/fluid_speed.md): a day of production in 0.04 s on one core (1.6 s with the control plane in
Python, `evaluate_reference`), the surface 0.25-0.4 s.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import (
    COUNTER_BUSY_SECONDS,
    COUNTER_EXECUTIONS,
    COUNTER_QUEUE_SECONDS,
    COUNTER_REQUESTS,
    COUNTER_SUCCESS,
    COUNTERS,
    BatcherConfig,
    LatencyProfile,
    Outcome,
    Replica,
)
from simulator.compiled import compiled
from simulator.daily_floor import DAY, floor_array
from simulator.engine import (
    EDGES,
    MAX_OTHERS_SHARE,
    ModelCounts,
    Pod,
    Timeline,
    drained,
    floor_reads,
    hpa_metrics,
    model_columns,
    model_summaries,
    new_pod,
    percentiles,
    rate_window_seconds,
    rescale,
    scrape,
    starting,
    summary,
)
from simulator.hpa import LEGACY_DOWNSCALE_WINDOW, SYNC_SECONDS, TOLERANCE, Behavior, Hpa, Metric, Rules
from simulator.keda import KedaAdapter
from simulator.scenario import Scenario, model_capacity_rps
from simulator.signals import Scrapes

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


Floats = NDArray[np.float64]
SurfaceArrays = tuple[Floats, Floats, Floats, Floats, Floats, Floats, Floats]
"""The models' surfaces, stacked by model (_surface_arrays): rates, rejected shares, counters per request and p95 at
each rate; at saturation counters per request, p95; capacity."""
RunArrays = tuple[Floats, Floats, Floats, Floats, Floats]
"""What the data plane writes (_Run): per-pod counter increments, rejected per second and model; p95 per second;
weights, waits."""
BIN_RATIO = float(EDGES[1] / EDGES[0])
STRETCH_BINS = math.ceil(math.log(1 / (1 - MAX_OTHERS_SHARE)) / math.log(BIN_RATIO)) + 1
"""EDGES bins a latency moves up at the most stretch (engine.MAX_OTHERS_SHARE), and 1 for none."""


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
def _left(edges: NDArray[np.float64], value: float) -> int:
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
def _bracket(rates: NDArray[np.float64], rate: float) -> tuple[int, float]:
    """The grid point at or below `rate` and the weight of the one above; clamped to the grid's ends."""
    if rate <= rates[0]:
        return 0, 0.0
    if rate >= rates[-1]:
        return len(rates) - 2, 1.0
    j = _left(rates, rate) - 1
    return j, (rate - rates[j]) / (rates[j + 1] - rates[j])


@compiled
def _stretch_bin(factor: float) -> int:
    """How many EDGES bins a latency stretched by `factor` moves up (bins are a constant ratio wide)."""
    return min(int(np.rint(math.log(factor) / math.log(BIN_RATIO))), STRETCH_BINS - 1)


@compiled
def _data_plane(  # noqa: PLR0915, PLR0917 - compiled: plain positional arrays and numbers
    first: int,
    end: int,
    arrivals: NDArray[np.float64],
    serving: NDArray[np.int64],
    pod: SurfaceArrays,
    models: NDArray[np.float64],
    state: NDArray[np.float64],
    out: RunArrays,
) -> None:
    """Seconds `first` to `end` of each model's arrivals (a column each) over `serving` pods. `pod`: the models'
    surfaces (_surface_arrays); `models`: per model its max queue size (0: unbounded), queue timeout (0: none) and
    instances; `state`: per model its backlog over the pods, its GPU share and its stretch in the last second run,
    updated; `out`: _Run.arrays.

    Writes per second and model: each serving pod's counter increments (`per_pod`) and the arrivals rejected; per
    second the p95 of its arrivals (the slowest model's); adds to `weights` the served requests per stretch and grid
    point whose latency histogram they follow, and to `waits` those that also waited in the backlog, by stretch and
    EDGES bin of the wait (their latency: the wait plus a full batch's).

    Contention, as simulator.engine states it: each model's tau(b) is stretched by 1 / (1 - u), u the other models'
    GPU share in the second before (at most engine.MAX_OTHERS_SHARE). A pod whose service times are all k x longer
    behaves as the unstretched pod at k x the rate, k x slower: so the surface is read at rate x k, its latencies
    and its busy and queue seconds multiplied by k. One model alone is never stretched (k = 1: the one-model run).
    """
    rates, rejected_share, per_request, p95, saturated_counters, saturated_p95, capacity = pod
    per_pod, rejected, p95_at, weights, waits = out
    backlog, share, stretch = state[0], state[1], state[2]
    count_models = len(capacity)
    for t in range(first, end):
        pods = serving[t]
        if pods == 0:
            for m in range(count_models):
                rejected[t, m] = arrivals[t, m]
                backlog[m], share[m], stretch[m] = 0.0, 0.0, 1.0
            continue
        if count_models > 1:
            total = share.sum()
            for m in range(count_models):
                stretch[m] = 1 / (1 - min(total - share[m], MAX_OTHERS_SHARE))
        slowest = np.nan
        for m in range(count_models):
            k = stretch[m]
            shift = _stretch_bin(k)
            count = arrivals[t, m]
            rate, queued = count / pods, backlog[m] / pods
            full = capacity[m] / k
            cap = models[m, 0] if models[m, 0] > 0 else math.inf
            if models[m, 1] > 0:
                cap = min(cap, full * models[m, 1])
            served = min(queued + rate, full)
            left = queued + rate - served
            if queued <= 0.0 and left <= 0.0:
                # Below saturation: the pod's stationary behaviour at this rate.
                j, w = _bracket(rates[m], rate * k)
                lost = (1 - w) * rejected_share[m, j] + w * rejected_share[m, j + 1]
                rejected[t, m] = count * lost
                weights[m, shift, j] += count * (1 - lost) * (1 - w)
                weights[m, shift, j + 1] += count * (1 - lost) * w
                for c in range(MEASURED):
                    scale = k if c >= COUNTER_BUSY_SECONDS else 1.0
                    per_pod[t, m, c] = (
                        rate * (1 - lost) * ((1 - w) * per_request[m, j, c] + w * per_request[m, j + 1, c]) * scale
                    )
                # Every arrival ends in the second: served, or rejected (Triton counts both).
                per_pod[t, m, COUNTER_REQUESTS] = rate
                latency = ((1 - w) * p95[m, j] + w * p95[m, j + 1]) * k
                backlog[m] = 0.0
            else:
                # Saturated: full batches at capacity, the excess queues up to the cap, the rest is rejected.
                dropped = max(left - cap, 0.0)
                left -= dropped
                wait = 0.5 * (queued + left) / full
                rejected[t, m] = dropped * pods
                waits[m, shift, max(_left(CENTRES, wait) - 1, 0)] += count - dropped * pods
                for c in range(MEASURED):
                    scale = k if c >= COUNTER_BUSY_SECONDS else 1.0
                    per_pod[t, m, c] = served * saturated_counters[m, c] * scale
                per_pod[t, m, COUNTER_REQUESTS] = served + dropped
                per_pod[t, m, COUNTER_QUEUE_SECONDS] += served * wait
                latency = wait + saturated_p95[m] * k
                backlog[m] = left * pods
            share[m] = per_pod[t, m, COUNTER_BUSY_SECONDS] / k / models[m, 2]
            # The second's p95: with several models, the slowest of those that had arrivals.
            if count_models == 1 or (count > 0 and not latency <= slowest):
                slowest = latency
        p95_at[t] = slowest


@compiled
def _interceptor(  # noqa: PLR0917 - compiled: plain positional arrays and numbers
    t: int,
    serving: int,
    arrivals: NDArray[np.float64],
    held: NDArray[np.float64],
    rejected: NDArray[np.float64],
    wake: NDArray[np.float64],
    wait_histogram: NDArray[np.float64],
    timeout: float,
) -> None:
    """Second `t` at the KEDA HTTP add-on's interceptor (scale to zero), before the data plane runs it: with a pod
    serving, every held request is forwarded into `t`'s arrivals, having waited from the middle of its second;
    without one, `t`'s arrivals are held, and those that could be forwarded only after waiting past `timeout` (at
    `t` + 1 at the earliest) fail (rejected in their second). `held`, `wake` and `wait_histogram`: _Run's."""
    first = int(wake[5])
    models = arrivals.shape[1]
    if serving > 0:
        if wake[4] > 0:
            for h in range(first, t):
                for m in range(models):
                    count = held[h, m]
                    if count > 0:
                        wait = t - h - 0.5
                        arrivals[t, m] += count
                        wait_histogram[min(max(_left(EDGES, wait) - 1, 0), BINS - 1)] += count
                        wake[1] += count
                        wake[2] = max(wake[2], wait)
                        held[h, m] = 0.0
            wake[4], wake[5] = 0.0, len(arrivals)
        return
    for m in range(models):
        count = arrivals[t, m]
        if count > 0:
            held[t, m], arrivals[t, m] = count, 0.0
            wake[4] += count
            first = min(first, t)
    while first <= t and (t + 1) - (first + 0.5) > timeout:
        for m in range(models):
            count = held[first, m]
            if count > 0:
                rejected[first, m] += count
                wake[3] += count
                wake[4] -= count
                held[first, m] = 0.0
        first += 1
    while first <= t and wake[4] > 0 and not held[first].any():
        first += 1
    wake[5] = first if wake[4] > 0 else len(arrivals)


def _gauge(sf: Surface, rate: float, backlog: float, pods: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Each pod's pending gauge of one model at a scrape: a draw from its surface at `rate`, plus its share of the
    backlog."""
    j, w = _bracket(sf.rates, rate)
    point = j + (rng.random(pods) < w)
    pending = sf.pending[point, rng.integers(0, sf.pending.shape[1], pods)]
    # Below the grid the gauge is mostly 0: draw from the lowest point as often as the rate reaches it.
    pending[rng.random(pods) * sf.rates[0] > rate] = 0
    return np.asarray(pending + round(backlog / max(pods, 1)), np.int64)


def _in_flight_busy(per_second: NDArray[np.float64]) -> float:
    """Busy seconds Triton has counted for the batches running now: it adds a batch's compute time as the batch
    starts, so at any instant the counter is ahead of the time spent by half a batch per busy instance.

    A pod's first `rate()` interval starts from 0 with nothing running, so this tips a saturated busy-ratio
    just over the value that a whole number of pods would give, as the detailed engine does.
    """
    busy, batches = per_second[COUNTER_BUSY_SECONDS], per_second[COUNTER_EXECUTIONS]
    return float(busy * busy / batches / 2) if batches > 0 else 0.0


def _model_limits(s: Scenario) -> NDArray[np.float64]:
    """Per model (Scenario.models): its max queue size (0: unbounded), queue timeout seconds (0: none), instances."""
    return np.array([[b.max_queue_size, b.timeout_s, b.instances] for b, _ in s.batchers], np.float64)


def _surface_arrays(surfaces: Sequence[Surface]) -> SurfaceArrays:
    """What the compiled data plane reads of each model's surface, stacked by model."""
    return (
        np.stack([sf.rates for sf in surfaces]),
        np.stack([sf.rejected for sf in surfaces]),
        np.stack([sf.counters for sf in surfaces]),
        np.stack([sf.p95 for sf in surfaces]),
        np.stack([sf.saturated_counters for sf in surfaces]),
        np.array([sf.saturated_p95 for sf in surfaces]),
        np.array([sf.capacity for sf in surfaces]),
    )


@dataclass
class _Run:
    """The fluid data plane's state and per-second results over one trace, per model (Scenario.models)."""

    surfaces: list[Surface]
    pod: SurfaceArrays
    models: NDArray[np.float64]
    """_model_limits."""
    arrivals: NDArray[np.float64]
    """(second, model)."""
    serving: NDArray[np.int64]
    """Pods taking traffic in each second."""
    per_pod: NDArray[np.float64]
    """(second, model, COUNTER_*): each serving pod's counter increments."""
    counters: NDArray[np.float64]
    """(second, model, COUNTER_*): a pod's counters from the start, serving throughout, at the start of each second."""
    rejected: NDArray[np.float64]
    """(second, model)."""
    p95_at: NDArray[np.float64]
    weights: NDArray[np.float64]
    """(model, stretch bin, grid point)."""
    waits: NDArray[np.float64]
    """(model, stretch bin, EDGES bin of the wait)."""
    state: NDArray[np.float64]
    """Per model: the backlog over the pods, the GPU share and the stretch of the last second run (_data_plane)."""
    offered: NDArray[np.float64]
    """(second, model): the arrivals drawn, before the interceptor moves held ones (scale to zero)."""
    held: NDArray[np.float64]
    """(second, model): scale to zero, the requests of each second the interceptor holds (_interceptor)."""
    wake: NDArray[np.float64]
    """Scale to zero: wakes, requests forwarded after a wait, the longest wait, requests failed at the timeout,
    requests held now, the first second holding any (the run's length: none) (_interceptor)."""
    wait_histogram: NDArray[np.float64]
    """Scale to zero: the forwarded requests by their wait, over EDGES."""

    @classmethod
    def start(cls, s: Scenario, surfaces: list[Surface], arrivals: NDArray[np.float64]) -> _Run:
        n, count = arrivals.shape
        return cls(
            surfaces,
            _surface_arrays(surfaces),
            _model_limits(s),
            arrivals,
            np.zeros(n, np.int64),
            np.zeros((n, count, COUNTERS)),
            np.zeros((n + 1, count, COUNTERS)),
            np.zeros((n, count)),
            np.full(n, np.nan),
            np.zeros((count, STRETCH_BINS, len(GRID))),
            np.zeros((count, STRETCH_BINS, BINS)),
            np.array([np.zeros(count), np.zeros(count), np.ones(count)]),
            arrivals.copy(),
            np.zeros((n, count) if s.scales_to_zero else (0, count)),
            np.array([0.0, 0.0, 0.0, 0.0, 0.0, float(n)]),
            np.zeros(BINS),
        )

    @property
    def arrays(self) -> RunArrays:
        return self.per_pod, self.rejected, self.p95_at, self.weights, self.waits

    @property
    def backlog(self) -> float:
        return float(self.state[0].sum())

    def interceptor(self, second: int, timeout: float) -> None:
        """Scale to zero: _interceptor for `second` (`serving` set for it)."""
        _interceptor(
            second,
            self.serving[second],
            self.arrivals,
            self.held,
            self.rejected,
            self.wake,
            self.wait_histogram,
            timeout,
        )

    def advance(self, first: int, end: int) -> None:
        """Run seconds `first` to `end` (`serving` set for them)."""
        _data_plane(first, end, self.arrivals, self.serving, self.pod, self.models, self.state, self.arrays)
        self.counters[first + 1 : end + 1] = self.counters[first] + np.cumsum(self.per_pod[first:end], axis=0)


def _scrape(
    s: Scenario, run: _Run, pods: list[Pod], second: int, *, scrapes: Scrapes, rng: np.random.Generator
) -> list[float | None]:
    """engine.scrape, with each serving pod's gauges drawn from the surfaces and its counters from the run."""
    now = float(second)
    live = [p for p in pods if p.draining_since is None and p.ready_at <= now]
    gauges = [np.zeros(len(live), np.int64) for _ in run.surfaces]
    if second:
        last = second - 1
        for m, sf in enumerate(run.surfaces):
            # The rate the model's surface was read at in that second: stretched by the others' share.
            rate = run.arrivals[last, m] / max(run.serving[last], 1) * run.state[2, m]
            gauges[m] = _gauge(sf, rate, run.state[0, m], len(live), rng)
            if run.models[m, 0]:
                gauges[m] = np.minimum(gauges[m], int(run.models[m, 0]))
    for i, pod in enumerate(live):
        start = min(max(math.ceil(pod.ready_at), 0), second)
        for m, replica in enumerate(pod.replicas):
            replica.queue = np.empty(int(gauges[m][i]))
            replica.counters = run.counters[second, m] - run.counters[start, m]
            if start < second:
                replica.counters[COUNTER_BUSY_SECONDS] += _in_flight_busy(run.per_pod[second - 1, m])
    scraped = scrape(s, pods, now, scrapes)
    # Empty again, so that engine.drained sees an idle pod once its preStop sleep is over.
    for pod in live:
        for replica in pod.replicas:
            replica.queue = np.empty(0)
    return scraped


def _place(s: Scenario, pods: list[Pod], run: _Run, timeline: Timeline, *, first: int, end: int) -> list[Pod]:
    """Which pods serve and hold a GPU in seconds `first` to `end` (no sync between); the pods left after."""
    seconds = np.arange(first, end)
    up = np.sort([p.ready_at for p in pods if p.draining_since is None])
    run.serving[first:end] = np.searchsorted(up, seconds, side="right")
    timeline.ready[first:end] = np.searchsorted(up, seconds + 1, side="right")
    timeline.gpus[first:end] = len(pods) * s.gpus_per_pod
    for pod in pods:
        if pod.draining_since is not None:
            gone = next((int(t) for t in seconds if drained(s, pod, float(t + 1))), end)
            timeline.gpus[gone:end] -= s.gpus_per_pod
    return [p for p in pods if not drained(s, p, float(end))]


def _start(s: Scenario, rate: NDArray[np.float64], seed: int) -> tuple[np.random.Generator, Timeline, _Run]:
    """A run's random numbers, timeline and data plane, its arrivals drawn: with several models (Scenario.others),
    `rate` has a column per model (Scenario.models), as engine.simulate reads it."""
    surfaces = [surface(b, tau) for b, tau in s.batchers]
    rng = np.random.default_rng(seed)
    # The run's histogram summed into one row: a day's by second would be half a gigabyte.
    timeline = Timeline.empty(len(rate), histogram_rows=1)
    arrivals = rng.poisson(model_columns(s, rate)).astype(np.float64)
    timeline.arrival_rps = arrivals.sum(axis=1)
    return rng, timeline, _Run.start(s, surfaces, arrivals)


def evaluate_reference(s: Scenario, rate: NDArray[np.float64], seed: int = 0) -> dict[str, float | int | None]:
    """`evaluate` with the engine's own control-plane objects (engine.Pod, engine.scrape, keda, hpa, rescale,
    drained) run in Python at each scrape: what the compiled `_control` is held to, result for result
    (tests/test_fluid.py)."""
    rng, timeline, run = _start(s, rate, seed)
    n = len(rate)
    # The control plane as engine.simulate sets it up and runs it (without Prometheus outages).
    metrics = hpa_metrics(s)
    # At `min_replicas` 0 the HPA's floor is 1 (engine.simulate).
    hpa = Hpa(max(s.min_replicas, 1), s.max_replicas, tuple(metrics), s.behavior)
    keda = KedaAdapter(tuple(m.target for m in metrics), s.fallback)
    scrapes = Scrapes(rate_window_seconds(s.scrape_seconds), [])
    first_pods, warm_nodes = starting(s)
    pods = [new_pod(s, seed + i, 0.0, 0.0) for i in range(first_pods)]
    nodes_ready = [0.0] * warm_nodes
    scraped: list[float | None] = [0.0] * (len(metrics) - bool(s.floor))
    desired, signal = first_pods, np.nan
    every, sync = max(int(s.scrape_seconds), 1), int(SYNC_SECONDS)
    zero, _, timeout = _zero_inputs(s)
    last_poll, last_active = 0, 0.0
    for first, end in zip(*_events(s, n), strict=True):
        now = float(first)
        if first % every == 0:
            scraped = _scrape(s, run, pods, first, scrapes=scrapes, rng=rng)
        falling_back = keda.falling_back()
        timeline.fallback += falling_back * (end - first)
        timeline.falling_back[first:end] = falling_back
        rescaling = False
        active = sum(1 for p in pods if p.draining_since is None)
        # The HPA does nothing while its target has no replica (scale to zero).
        if first % sync == 0 and first > 0 and (not zero or active):
            current = active
            ready = sum(1 for p in pods if p.draining_since is None and p.ready_at <= now)
            answers = keda.read([*scraped, *floor_reads(s, now)], current)
            value = answers[0]
            per_replica = s.signal.target_type == "AverageValue"
            signal = np.nan if value is None else value / max(current, 1) if per_replica else value
            desired = hpa.desired(now, current, ready, answers)
            if desired != current:
                timeline.hpa_changes.append((now, desired))
            rescaling = True
        if zero:
            keda_state = _keda_loop(s, run, first, desired, active, last_poll, last_active)
            desired, last_poll, last_active, scaled = keda_state
            rescaling = rescaling or scaled
            timeline.hpa_changes += [(now, desired)] if scaled else []
        if rescaling:
            pods, nodes_ready = rescale(s, pods, nodes_ready, desired, now, seed=seed + first)
        pods = _place(s, pods, run, timeline, first=first, end=end)
        timeline.desired[first:end] = desired
        timeline.signal[first:end] = signal
        if zero:
            run.interceptor(first, timeout)
        run.advance(first, end)
    return _summary(s, run, timeline)


def _keda_loop(  # noqa: PLR0917 - evaluate_reference's state, passed through
    s: Scenario, run: _Run, first: int, desired: int, active: int, last_poll: int, last_active: float
) -> tuple[int, int, float, bool]:
    """Scale to zero, at second `first` with `active` pods: KEDA's check every polling interval (any request since
    the last, or one queued or held, keeps the triggers active; none for the cooldown: 1 -> 0), and a wake on a
    request at zero (the interceptor's scaler pushes it at once: 0 -> 1). The desired replicas, the last check,
    the last active check, and whether KEDA changed the replicas."""
    now, changed = float(first), False
    if first % max(int(s.polling_seconds), 1) == 0 and first > 0:
        busy = run.offered[last_poll:first].sum() > 0 or run.wake[4] > 0 or run.backlog > 0
        last_poll = first
        if busy:
            last_active = now
        elif active and now - last_active >= s.cooldown_seconds:
            desired, changed = 0, True
    if desired == 0 and run.offered[first].sum() > 0:
        desired, changed, last_active = 1, True, now
        run.wake[0] += 1
    return desired, last_poll, last_active, changed


def _events(s: Scenario, n: int) -> tuple[list[int], list[int]]:
    """Where each stretch of seconds without a scrape or sync starts and ends: the data plane runs from one to the
    next. Scale to zero: every second, KEDA's loop may activate on any."""
    every, sync = max(int(s.scrape_seconds), 1), int(SYNC_SECONDS)
    events = list(range(n)) if s.scales_to_zero else sorted({*range(0, n, every), *range(sync, n, sync)})
    return events, [*events[1:], n]


def _zero_inputs(s: Scenario) -> tuple[bool, int, float]:
    """Scale to zero: whether the scenario does, KEDA's polling seconds, the interceptor's timeout (inf: none)."""
    timeout = math.inf if s.wake_timeout_seconds is None else float(s.wake_timeout_seconds)
    return s.scales_to_zero, max(int(s.polling_seconds), 1), timeout


# The control plane compiled (`_control`): what evaluate_reference does with the engine's objects at each scrape and
# sync, over plain arrays. Without Prometheus outages no read fails, so KEDA passes every value through (its failure
# counts stay 0 and its fallback never answers) and only the HPA decides.
SIGNAL_CODES = {"queue-depth": 0, "queue-excess": 1, "queue-time": 2, "busy-ratio": 3, "demand": 4}
TARGET_CODES = {"AverageValue": 0, "Value": 1}
SELECT_CODES = {"Max": 0, "Min": 1, "Disabled": 2}
POLICY_CODES = {"Pods": 0, "Percent": 1}


Ints = NDArray[np.int64]
HpaInputs = tuple[Ints, Floats, bool, Floats, Ints, Floats, Floats]
HpaState = tuple[Floats, Ints, Floats, Ints, Ints]


@compiled
def _hpa_state(syncs: int) -> HpaState:
    """Room for `syncs` syncs' recommendations and scale events, none kept yet."""
    return np.zeros(syncs), np.zeros(syncs, np.int64), np.zeros(syncs), np.zeros(syncs, np.int64), np.zeros(4, np.int64)


def _hpa_inputs(metrics: Sequence[Metric], behavior: Behavior | None) -> HpaInputs:
    """What `_desired` reads of an HPA: its metrics' target types and targets; whether it takes the legacy path (no
    behavior); per direction, up then down, the stabilization window and select policy; each direction's policies,
    (type, value, period) rows."""
    rules = (behavior or Behavior()).scale_up, (behavior or Behavior()).scale_down

    def policies(direction: Rules) -> NDArray[np.float64]:
        table = [(POLICY_CODES[p.type], p.value, p.period_seconds) for p in direction.policies]
        return np.array(table, np.float64).reshape(-1, 3)

    return (
        np.array([TARGET_CODES[m.target_type] for m in metrics], np.int64),
        np.array([m.target for m in metrics], np.float64),
        behavior is None,
        np.array([r.stabilization_window_seconds for r in rules], np.float64),
        np.array([SELECT_CODES[r.select_policy] for r in rules], np.int64),
        policies(rules[0]),
        policies(rules[1]),
    )


@compiled
def _proposal(target_type: int, target: float, value: float, current: int, ready: int) -> int:
    """hpa.proposal."""
    if target_type == 0:
        ratio = value / (target * current) if current else np.inf
        return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(value / target)
    ratio = value / target
    return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(ratio * ready)


@compiled
def _changed_within(  # noqa: PLR0917 - compiled: plain positional arrays and numbers
    events_t: NDArray[np.float64], events_d: NDArray[np.int64], lo: int, hi: int, now: float, period: float, sign: int
) -> int:
    """Hpa._changed_within over the events kept, `lo` to `hi`."""
    total = 0
    for i in range(lo, hi):
        if events_t[i] > now - period and events_d[i] * sign > 0:
            total += abs(events_d[i])
    return total


@compiled
def _limit(policies: NDArray[np.float64], select: int, current: int, changed: NDArray[np.int64], up: bool) -> int:
    """Hpa._up_limit (`up`) or Hpa._down_limit, with each policy's `changed` replicas within its period."""
    if select == 2:
        return current
    result = 0
    for k in range(len(policies)):
        value = policies[k, 1]
        if up:
            start = current - changed[k]
            limit = start + int(value) if policies[k, 0] == 0 else math.ceil(start * (1 + value / 100))
        else:
            start = current + changed[k]
            limit = start - int(value) if policies[k, 0] == 0 else math.floor(start * (1 - value / 100))
        # Max allows the largest change: upwards the highest count, downwards the lowest.
        if k == 0 or (limit > result) == (up == (select == 0)):
            result = limit
    return result


@compiled
def _desired(  # noqa: PLR0912, PLR0917 - compiled: plain positional arrays and numbers
    now: float,
    current: int,
    ready: int,
    values: NDArray[np.float64],
    min_replicas: int,
    max_replicas: int,
    hpa: HpaInputs,
    state: HpaState,
) -> int:
    """Hpa.desired with every value read; `hpa`: _hpa_inputs; `state`: the recommendations (times, counts) and scale
    events (times, changes) kept, kept[0]:kept[1] and kept[2]:kept[3] of their arrays, oldest first, then `kept`."""
    target_types, targets, legacy, windows, selects, up_policies, down_policies = hpa
    recommendations_t, recommendations_r, events_t, events_d, kept = state
    raw = _proposal(target_types[0], targets[0], values[0], current, ready)
    for m in range(1, len(values)):
        raw = max(raw, _proposal(target_types[m], targets[m], values[m], current, ready))
    recommendations_t[kept[1]], recommendations_r[kept[1]] = now, raw
    kept[1] += 1
    window = LEGACY_DOWNSCALE_WINDOW if legacy else max(windows[0], windows[1])
    # Hpa._forget: 1800 s, the longest policy period and stabilization window the API allows.
    horizon = now - max(window, 1800.0)
    while kept[0] < kept[1] and recommendations_t[kept[0]] <= horizon:
        kept[0] += 1
    while kept[2] < kept[3] and events_t[kept[2]] <= horizon:
        kept[2] += 1
    # The recommendations within the windows, newest first: the older ones kept count for neither.
    if legacy:
        stabilized = raw
        for i in range(kept[1] - 1, kept[0] - 1, -1):
            if not recommendations_t[i] > now - LEGACY_DOWNSCALE_WINDOW:
                break
            stabilized = max(stabilized, recommendations_r[i])
        result = max(min_replicas, min(stabilized, max(2 * current, 4), max_replicas))
    else:
        up, down = raw, raw
        for i in range(kept[1] - 1, kept[0] - 1, -1):
            t, r = recommendations_t[i], recommendations_r[i]
            if not (t > now - window or t == now):
                break
            if t > now - windows[0] or t == now:
                up = min(up, r)
            if t > now - windows[1] or t == now:
                down = max(down, r)
        stabilized = min(max(current, up), down)
        if stabilized != current:
            rising = stabilized > current
            policies = up_policies if rising else down_policies
            changed = np.empty(len(policies), np.int64)
            for k in range(len(policies)):
                changed[k] = _changed_within(
                    events_t, events_d, kept[2], kept[3], now, policies[k, 2], 1 if rising else -1
                )
            limit = _limit(policies, selects[0 if rising else 1], current, changed, rising)
            if rising:
                result = max(min_replicas, min(stabilized, max(current, limit), max_replicas))
            else:
                result = min(max_replicas, max(stabilized, min(current, limit), min_replicas))
        else:
            result = max(min_replicas, min(current, max_replicas))
    if result != current:
        events_t[kept[3]], events_d[kept[3]] = now, result - current
        kept[3] += 1
    return result


@compiled
def _floor_at(floor: NDArray[np.float64], now: float) -> float:
    """daily_floor.floor_at over `floor`'s (start, end, replicas) rows."""
    second = int(now) % DAY
    most = 0.0
    for k in range(len(floor)):
        start, end = floor[k, 0], floor[k, 1]
        inside = start <= second < end if start < end else (second >= start or second < end)
        if inside:
            most = max(most, floor[k, 2])
    return most


@compiled
def _grow(values: NDArray[Any]) -> NDArray[Any]:
    """`values` in an array twice as long, the rest zero (read only once a pod is placed there)."""
    grown = np.zeros(2 * len(values), values.dtype)
    for i in range(len(values)):  # a loop: a slice assignment compiles numpy's broadcasting and its messages
        grown[i] = values[i]
    return grown


@compiled
def _ascending(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """The indices of `values` in ascending, stable order (np.argsort's mergesort), by insertion: a few pods or
    nodes, and far less for numba to compile than np.sort's and np.argsort's kinds."""
    order = np.empty(len(values), np.int64)
    for i in range(len(values)):
        k = i
        while k > 0 and values[order[k - 1]] > values[i]:
            order[k] = order[k - 1]
            k -= 1
        order[k] = i
    return order


@compiled
def _control(  # noqa: PLR0912, PLR0915, PLR0917 - compiled: plain positional arrays and numbers
    events: NDArray[np.int64],
    every: int,
    sync: int,
    rng: np.random.Generator,
    scenario: NDArray[np.float64],
    signal: NDArray[np.float64],
    hpa: HpaInputs,
    gauges: NDArray[np.int64],
    pod: SurfaceArrays,
    models: NDArray[np.float64],
    arrivals: NDArray[np.float64],
    serving: NDArray[np.int64],
    ready_at_second: NDArray[np.int64],
    gpus: NDArray[np.int64],
    counters: NDArray[np.float64],
    state: NDArray[np.float64],
    out: RunArrays,
    zero: NDArray[np.float64],
    offered: NDArray[np.float64],
    holding: NDArray[np.float64],
    wake: NDArray[np.float64],
    wait_histogram: NDArray[np.float64],
    floor: NDArray[np.float64],
) -> None:
    """evaluate_reference's loop over `events`, the scrapes and syncs (every second at scale to zero), with the data
    plane between; `zero`: scale to zero or not (1, 0), KEDA's polling and cooldown seconds, the interceptor's
    timeout, the nodes the pool keeps at zero; `offered`: arrivals per second, all models; `holding` (_Run.held),
    `wake`, `wait_histogram`: _Run's. `scenario`: min and max replicas, scrape seconds, GPUs per pod and per node,
    max and warm nodes, node provision, pod start and drain seconds; `signal`: SIGNAL_CODES' code, the batching
    delay and the GPU-memory ratio (NaN: no GPU-memory trigger); the HPA's as `_hpa_inputs`; per model its gauge
    samples (model, grid point, sample); the surfaces (_surface_arrays) and _model_limits; then
    evaluate_reference's run arrays, which it fills (_Run); `floor`: the daily floor's windows
    (daily_floor.floor_array), its metric the HPA's last."""
    n = len(arrivals)
    count_models = len(models)
    rates, capacity, per_pod = pod[0], pod[6], out[0]
    backlog, stretch = state[0], state[2]
    min_replicas, max_replicas, scrape_seconds = int(scenario[0]), int(scenario[1]), scenario[2]
    gpus_per_pod, gpus_per_node, max_nodes, warm_nodes = (
        int(scenario[3]),
        int(scenario[4]),
        int(scenario[5]),
        int(scenario[6]),
    )
    provision, pod_start, drain = scenario[7], scenario[8], scenario[9]
    kind, delay, memory_ratio = int(signal[0]), signal[1], signal[2]
    # Pods, in engine.rescale's order: when each is ready, since when it drains (NaN: it does not), its series.
    size = max(2 * max_replicas, 4)
    pod_ready, pod_draining, pod_serial = np.zeros(size), np.zeros(size), np.arange(size)
    for p in range(size):
        pod_draining[p] = np.nan
    # A run at zero starts awake, as at a floor of 1 (engine.starting; its warm nodes come in `scenario`).
    pods = serials = max(min_replicas, 1) if zero[0] > 0 else min_replicas
    nodes = np.zeros(max(max_nodes, warm_nodes) + 1)
    node_count = warm_nodes
    per_node = max(gpus_per_node // gpus_per_pod, 1)
    # Prometheus' scrapes within the rate window (signals.Scrapes): a ring of (time, live pods' series, counters),
    # a series per pod and model.
    window = max(4 * scrape_seconds, 60.0)
    depth = int(window // every) + 3
    scrape_t = np.zeros(depth)
    scrape_n = np.zeros(depth, np.int64)
    scrape_serial = np.zeros((depth, max(max_replicas, min_replicas)), np.int64)
    scrape_counters = np.zeros((depth, max(max_replicas, min_replicas), count_models, COUNTERS))
    oldest, held = 0, 0
    values = np.zeros(len(hpa[1]))
    hpa_state = _hpa_state(len(events) + 1)
    up = np.zeros(max(max_replicas, min_replicas))
    desired = pods
    scale_to_zero, poll, cooldown, timeout, floor_nodes = zero[0] > 0, int(zero[1]), zero[2], zero[3], int(zero[4])
    last_poll, last_active = 0, 0.0
    for e in range(len(events)):
        first = events[e]
        end = events[e + 1] if e + 1 < len(events) else n
        now = float(first)
        if first % every == 0:
            # _scrape: the live pods' gauges drawn from the surfaces, their counters from the run; engine.scrape.
            live = np.empty(pods, np.int64)
            count = 0
            for p in range(pods):
                if np.isnan(pod_draining[p]) and pod_ready[p] <= now:
                    live[count] = p
                    count += 1
            gauge = np.zeros(count, np.int64)
            if first:
                last = first - 1
                for m in range(count_models):
                    rate = arrivals[last, m] / max(serving[last], 1) * stretch[m]
                    j, w = _bracket(rates[m], rate)
                    above = rng.random(count)
                    column = rng.integers(0, gauges.shape[2], count)
                    low = rng.random(count)
                    share = int(np.rint(backlog[m] / max(count, 1)))
                    limit = int(models[m, 0])
                    for i in range(count):
                        value = gauges[m, j + 1 if above[i] < w else j, column[i]]
                        if low[i] * rates[m, 0] > rate:
                            value = 0
                        value += share
                        gauge[i] += min(value, limit) if limit else value
            if held == depth:
                raise ValueError("more scrapes in the rate window than the ring holds")
            slot = (oldest + held) % depth
            held += 1
            scrape_t[slot], scrape_n[slot] = now, count
            for i in range(count):
                p = live[i]
                start = min(max(math.ceil(pod_ready[p]), 0), first)
                scrape_serial[slot, i] = pod_serial[p]
                for m in range(count_models):
                    for c in range(COUNTERS):
                        scrape_counters[slot, i, m, c] = counters[first, m, c] - counters[start, m, c]
                    if start < first:
                        busy, batches = (
                            per_pod[first - 1, m, COUNTER_BUSY_SECONDS],
                            per_pod[first - 1, m, COUNTER_EXECUTIONS],
                        )
                        scrape_counters[slot, i, m, COUNTER_BUSY_SECONDS] += (
                            busy * busy / batches / 2 if batches > 0 else 0.0
                        )
            while scrape_t[oldest] < now - window:
                oldest, held = (oldest + 1) % depth, held - 1
            # Scrapes.rates: per live pod's series, from its oldest sample in the window; signals.busiest and
            # signals.demand.
            total = np.zeros(COUNTERS)
            busiest, demand = 0.0, 0.0
            if held >= 2:
                for i in range(count):
                    for h in range(held - 1):
                        past = (oldest + h) % depth
                        found = -1
                        for k in range(scrape_n[past]):
                            if scrape_serial[past, k] == scrape_serial[slot, i]:
                                found = k
                                break
                        if found >= 0 and scrape_t[past] < now:
                            most = 0.0
                            for m in range(count_models):
                                for c in range(COUNTERS):
                                    since = scrape_counters[slot, i, m, c] - scrape_counters[past, found, m, c]
                                    total[c] += since / (now - scrape_t[past])
                                since = (
                                    scrape_counters[slot, i, m, COUNTER_REQUESTS]
                                    - scrape_counters[past, found, m, COUNTER_REQUESTS]
                                )
                                demand += since / (now - scrape_t[past]) / capacity[m]
                                since = (
                                    scrape_counters[slot, i, m, COUNTER_BUSY_SECONDS]
                                    - scrape_counters[past, found, m, COUNTER_BUSY_SECONDS]
                                )
                                most = max(most, since / (now - scrape_t[past]) / models[m, 2])
                            busiest += most
                            break
            # signals.read, and with several models engine.scrape's busiest.
            pending = float(gauge.sum())
            if kind == 0:
                values[0] = pending
            elif kind == 1:
                values[0] = max(pending - total[COUNTER_SUCCESS] * delay, 0.0)
            elif kind == 4:
                values[0] = demand
            elif kind == 3 and count_models > 1:
                values[0] = busiest
            elif total[COUNTER_SUCCESS] <= 0:
                values[0] = 0.0
            elif kind == 2:
                values[0] = total[COUNTER_QUEUE_SECONDS] / total[COUNTER_SUCCESS]
            else:
                values[0] = total[COUNTER_BUSY_SECONDS] / models[0, 2]
            if not math.isnan(memory_ratio):
                values[1] = count * memory_ratio
        current, ready = 0, 0
        for p in range(pods):
            if np.isnan(pod_draining[p]):
                current += 1
                ready += 1 if pod_ready[p] <= now else 0
        rescaling = False
        if first % sync == 0 and first > 0 and (not scale_to_zero or current > 0):
            if len(floor):
                values[len(values) - 1] = _floor_at(floor, now)
            # int(): int64, not Literal[int](0), so that _desired compiles once
            desired = _desired(
                now, int(current), int(ready), values, max(min_replicas, 1), max_replicas, hpa, hpa_state
            )
            rescaling = True
        if scale_to_zero and first % poll == 0 and first > 0:
            busy = wake[4] > 0
            for t in range(last_poll, first):
                busy = busy or offered[t] > 0
            for m in range(count_models):
                busy = busy or backlog[m] > 0
            last_poll = first
            if busy:
                last_active = now
            elif current > 0 and now - last_active >= cooldown:
                desired, rescaling = 0, True
        if scale_to_zero and desired == 0 and offered[first] > 0:
            desired, rescaling, last_active = 1, True, now
            wake[0] += 1
        if rescaling:
            # engine.rescale
            if desired < current:
                # The ReplicaSet removes the newest pods first.
                active, active_ready = np.empty(current, np.int64), np.empty(current)
                count = 0
                for p in range(pods):
                    if np.isnan(pod_draining[p]):
                        active[count], active_ready[count] = p, pod_ready[p]
                        count += 1
                order = _ascending(active_ready)
                for i in range(desired, current):
                    pod_draining[active[order[i]]] = now
                if desired == 0:
                    node_count = min(node_count, floor_nodes)
            else:
                for _ in range(desired - current):
                    # The pods-th earliest GPU slot: every node's start time repeated per_node times, sorted.
                    if pods < node_count * per_node:
                        node_at = max(nodes[_ascending(nodes[:node_count])[pods // per_node]], now)
                    elif node_count < max_nodes:
                        node_at = now + provision
                        nodes[node_count] = node_at
                        node_count += 1
                    else:
                        break  # the pool is at its maximum: the pod stays Pending
                    if pods == len(pod_ready):
                        pod_ready, pod_draining, pod_serial = _grow(pod_ready), _grow(pod_draining), _grow(pod_serial)
                    pod_ready[pods], pod_draining[pods], pod_serial[pods] = node_at + pod_start, np.nan, serials
                    pods, serials = pods + 1, serials + 1
        # _place: who serves and holds a GPU until the next event; then the pods drained by its end leave.
        # The active pods' ready times, sorted (insertion: a few pods).
        active_count = 0
        for p in range(pods):
            if np.isnan(pod_draining[p]):
                k = active_count
                while k > 0 and up[k - 1] > pod_ready[p]:
                    up[k] = up[k - 1]
                    k -= 1
                up[k] = pod_ready[p]
                active_count += 1
        serves, soon = 0, 0
        for t in range(first, end):
            while serves < active_count and up[serves] <= t:
                serves += 1
            while soon < active_count and up[soon] <= t + 1:
                soon += 1
            serving[t], ready_at_second[t], gpus[t] = serves, soon, pods * gpus_per_pod
        staying = 0
        for p in range(pods):
            if not np.isnan(pod_draining[p]):
                gone = first
                while gone < end and not gone + 1.0 >= pod_draining[p] + drain:
                    gone += 1
                for t in range(gone, end):
                    gpus[t] -= gpus_per_pod
                if end >= pod_draining[p] + drain:
                    continue
            pod_ready[staying], pod_draining[staying], pod_serial[staying] = (
                pod_ready[p],
                pod_draining[p],
                pod_serial[p],
            )
            staying += 1
        pods = staying
        if scale_to_zero:
            _interceptor(first, serving[first], arrivals, holding, out[1], wake, wait_histogram, timeout)
        _data_plane(first, end, arrivals, serving, pod, models, state, out)
        # As np.cumsum from `first`, added to the counters there.
        running = np.zeros((count_models, COUNTERS))
        for t in range(first, end):
            for m in range(count_models):
                for c in range(COUNTERS):
                    running[m, c] += per_pod[t, m, c]
                    counters[t + 1, m, c] = counters[first, m, c] + running[m, c]


def evaluate(s: Scenario, rate: NDArray[np.float64], seed: int = 0) -> dict[str, float | int | None]:
    """What engine.summary reports for `simulate(s, rate, seed)`, from the fluid model: evaluate_reference's
    results, its control plane compiled. With several models (Scenario.others) `rate` has a column per model."""
    return evaluate_models(s, rate, seed)[0]


def evaluate_models(
    s: Scenario, rate: NDArray[np.float64], seed: int = 0
) -> tuple[dict[str, float | int | None], dict[str, dict[str, float | int]]]:
    """`evaluate`'s summary, and with several models each one's (engine.model_summaries; empty with one)."""
    rng, timeline, run = _start(s, rate, seed)
    n = len(rate)
    every, sync = max(int(s.scrape_seconds), 1), int(SYNC_SECONDS)
    events = np.array(_events(s, n)[0], np.int64)
    zero, poll, timeout = _zero_inputs(s)
    b = s.batcher
    _control(
        events,
        every,
        sync,
        rng,
        np.array(
            [
                s.min_replicas,
                s.max_replicas,
                s.scrape_seconds,
                s.gpus_per_pod,
                s.gpus_per_node,
                s.max_nodes,
                starting(s)[1],
                s.node_provision_seconds,
                s.pod_start_seconds,
                s.drain_seconds,
            ],
            np.float64,
        ),
        np.array(
            [
                SIGNAL_CODES[s.signal.name],
                b.max_queue_delay_s if b.dynamic else 0.0,
                np.nan if s.gpu_memory_ratio is None else s.gpu_memory_ratio,
            ]
        ),
        _hpa_inputs(hpa_metrics(s), s.behavior),
        np.stack([sf.pending for sf in run.surfaces]),
        run.pod,
        run.models,
        run.arrivals,
        run.serving,
        timeline.ready,
        timeline.gpus,
        run.counters,
        run.state,
        run.arrays,
        np.array([float(zero), poll, s.cooldown_seconds, timeout, s.warm_nodes]),
        timeline.arrival_rps,
        run.held,
        run.wake,
        run.wait_histogram,
        floor_array(s.floor),
    )
    return _summary(s, run, timeline), model_summaries(timeline)


def _shifted(histogram: NDArray[np.float64], bins: int) -> NDArray[np.float64]:
    """`histogram` moved up `bins` EDGES bins, what passes the last bin kept in it."""
    if not bins:
        return histogram
    moved = np.zeros_like(histogram)
    moved[bins:] = histogram[: BINS - bins]
    moved[-1] += histogram[BINS - bins :].sum()
    return moved


def _histogram(sf: Surface, weights: NDArray[np.float64], waits: NDArray[np.float64]) -> NDArray[np.float64]:
    """One model's latency counts over EDGES: its `weights` and `waits` (by stretch bin, _Run) over its surface."""
    total = weights[0] @ sf.histogram
    stretched = np.flatnonzero(weights[1:].any(axis=1)) + 1
    for shift, row in zip(stretched, weights[stretched] @ sf.histogram, strict=True):
        total += _shifted(row, int(shift))
    # Backlogged requests: a full batch's latency, later by the wait; unstretched one wait bin at a time (the one-model
    # run's order of sums), stretched all in one count (a run of several models has hundreds of them).
    for wait_bin in np.flatnonzero(waits[0]):
        shifted = np.clip(np.searchsorted(EDGES, CENTRES + CENTRES[wait_bin]) - 1, 0, BINS - 1)
        total += np.bincount(shifted, sf.saturated * waits[0, wait_bin], minlength=BINS)
    shifts, wait_bins = np.nonzero(waits[1:])
    if shifts.size:
        service = CENTRES[None, :] * BIN_RATIO ** (shifts[:, None] + 1.0)
        index = np.clip(np.searchsorted(EDGES, service + CENTRES[wait_bins][:, None]) - 1, 0, BINS - 1)
        counts = sf.saturated[None, :] * waits[1:][shifts, wait_bins][:, None]
        total += np.bincount(index.ravel(), counts.ravel(), minlength=BINS)
    return np.asarray(total, np.float64)


def _summary(s: Scenario, run: _Run, timeline: Timeline) -> dict[str, float | int | None]:
    """engine.summary over the fluid run, with the one figure it would read from per-second histograms; with several
    models, each one's counts in timeline.per_model."""
    totals = [_histogram(sf, run.weights[m], run.waits[m]) for m, sf in enumerate(run.surfaces)]
    rejected = run.rejected.sum(axis=1)
    timeline.histogram[0] = np.rint(sum(totals[1:], totals[0])).astype(np.int64)
    timeline.rejected[:] = np.rint(rejected).astype(np.int64)
    timeline.arrived = int(timeline.arrival_rps.sum())
    timeline.dropped = round(float(rejected.sum()))
    timeline.in_flight = round(run.backlog + run.wake[4])
    timeline.served = timeline.arrived - timeline.dropped - timeline.in_flight
    timeline.wakes, timeline.wait_max, timeline.wake_failed = int(run.wake[0]), float(run.wake[2]), int(run.wake[3])
    timeline.wait_histogram = np.rint(run.wait_histogram).astype(np.int64)
    if s.others:
        for m, model in enumerate(s.models):
            counts = ModelCounts(np.rint(totals[m]).astype(np.int64), int(run.offered[:, m].sum()))
            counts.dropped = round(float(run.rejected[:, m].sum()))
            counts.served = int(counts.histogram.sum())
            timeline.per_model[model] = counts
    result = summary(s, timeline)
    result["slo_violation_seconds"] = int(np.nansum(run.p95_at > s.slo_seconds))
    return result
