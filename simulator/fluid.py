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
- The control plane is the engine's own: pods are engine.Pod (their replicas never run; at
  each scrape their pending gauge is drawn from the surface and their counters set from it),
  scraped by engine.scrape, read through simulator.keda and simulator.hpa, rescaled and
  drained by engine.rescale and engine.drained; engine.summary does the arithmetic.

Measured against the detailed engine on 15-minute step, diurnal and spike traces at 0.6x-2.7x of
the trigger load, production, staging and dev, all four signals (tests/test_fluid.py): GPU-hours
within 1% and rejected within 0.3 points where the HPA's decisions agree; p95 within 11%, except
an unbounded queue's backlog of minutes (dev at 2.7x), 30-40% low: the model pools the backlog
over the pods, where the detailed engine leaves it on the pod that built it. A signal within a few
percent of a whole number of pods (or queue-depth's noisy gauge) can tip the HPA's ceil() the other
way, a pod more or less for minutes: up to 11-22% of a 15-minute run's GPU-hours, less over a day.
Speed (bench/results/fluid_speed.md): a day of production in 0.7 s on one core, the surface 0.25 s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from simulator.batcher import (
    COUNTER_BUSY_SECONDS,
    COUNTER_EXECUTIONS,
    COUNTER_QUEUE_SECONDS,
    COUNTER_SUCCESS,
    BatcherConfig,
    LatencyProfile,
    Outcome,
    Replica,
)
from simulator.engine import EDGES, Pod, Timeline, drained, percentiles, rate_window_seconds, rescale, scrape, summary
from simulator.hpa import SYNC_SECONDS, Hpa, Metric
from simulator.keda import KedaAdapter
from simulator.scenario import Scenario
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
    pending: NDArray[np.int64]
    """(rate, sample): the pending-request gauge at random instants."""
    rejected: NDArray[np.float64]
    """Share of arrivals rejected (a full queue, the timeout)."""
    counters: NDArray[np.float64]
    """(rate, COUNTER_*): what Triton's counters add per served request."""
    saturated: NDArray[np.float64]
    """Per request at saturation, before its wait in the backlog: latency histogram (full batch plus overhead)."""
    saturated_p95: float
    saturated_counters: NDArray[np.float64]
    """Per request at saturation, COUNTER_*: full batches on every instance; queue seconds: the wait, added apart."""

    def slo_rate(self, slo_seconds: float) -> float:
        """The highest per-pod rate up to which this pod keeps p95 within `slo_seconds`, no backlog building: its
        full-batch capacity where every measured rate and saturation hold it, else the last measured rate below the
        first that breaks it (p95 is not monotone in the rate: fuller batches leave sooner); 0 where none holds it."""
        over = np.flatnonzero(self.p95 > slo_seconds)
        if not over.size:
            return self.capacity if self.saturated_p95 <= slo_seconds else float(self.rates[-1])
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
        counters / max(counters[COUNTER_SUCCESS], 1.0),
    )


@functools.lru_cache(maxsize=64)
def surface(batcher: BatcherConfig, tau: LatencyProfile) -> Surface:
    """The response surface of one pod with this batching config and latency profile, measured once."""
    largest = batcher.max_batch_size if batcher.dynamic else 1
    capacity = batcher.instances * largest / tau(largest)
    rates = GRID * capacity
    points = [_measure(batcher, tau, float(rate), seed) for seed, rate in enumerate(rates)]
    histogram = np.array([p[0] for p in points])
    full = tau(largest)
    service = full + tau.overhead((np.arange(1000) + 0.5) / 1000)
    saturated = np.bincount(np.searchsorted(EDGES, service) - 1, minlength=BINS) / len(service)
    return Surface(
        capacity=capacity,
        rates=rates,
        histogram=histogram,
        p95=percentiles(np.rint(histogram * 1e9).astype(np.int64), 95),
        pending=np.array([p[1] for p in points]).astype(np.int64),
        rejected=np.array([p[2][0] for p in points]),
        counters=np.array([p[3] for p in points]),
        saturated=saturated,
        saturated_p95=float(np.quantile(service, 0.95)),
        saturated_counters=np.array([1.0, 1 / largest, full / largest, 0.0]),
    )


@numba.njit(cache=True)
def _bracket(rates: NDArray[np.float64], rate: float) -> tuple[int, float]:
    """The grid point at or below `rate` and the weight of the one above; clamped to the grid's ends."""
    if rate <= rates[0]:
        return 0, 0.0
    if rate >= rates[-1]:
        return len(rates) - 2, 1.0
    j = int(np.searchsorted(rates, rate)) - 1
    return j, (rate - rates[j]) / (rates[j + 1] - rates[j])


@numba.njit(cache=True)
def _data_plane(  # noqa: PLR0917 - compiled: plain positional arrays and numbers
    first: int,
    end: int,
    arrivals: NDArray[np.float64],
    serving: NDArray[np.int64],
    backlog: float,
    rates: NDArray[np.float64],
    rejected_share: NDArray[np.float64],
    per_request: NDArray[np.float64],
    p95: NDArray[np.float64],
    saturated_counters: NDArray[np.float64],
    saturated_p95: float,
    capacity: float,
    queue_cap: float,
    per_pod: NDArray[np.float64],
    backlog_at: NDArray[np.float64],
    rejected: NDArray[np.float64],
    p95_at: NDArray[np.float64],
    weights: NDArray[np.float64],
    waits: NDArray[np.float64],
) -> float:
    """Seconds `first` to `end` of arrivals over `serving` pods from a total `backlog`; returns the backlog after.

    Writes per second: each serving pod's counter increments (`per_pod`), the backlog after the second,
    the arrivals rejected and the p95 of the second's arrivals; adds to `weights` the served requests
    per grid point whose latency histogram they follow, and to `waits` those that also waited in the
    backlog, by EDGES bin of the wait (their latency: the wait plus a full batch's).
    """
    for t in range(first, end):
        count, pods = arrivals[t], serving[t]
        if pods == 0:
            rejected[t] = count
            backlog = 0.0
            backlog_at[t] = 0.0
            continue
        rate, queued = count / pods, backlog / pods
        served = min(queued + rate, capacity)
        left = queued + rate - served
        if queued <= 0.0 and left <= 0.0:
            # Below saturation: the pod's stationary behaviour at this rate.
            j, w = _bracket(rates, rate)
            share = (1 - w) * rejected_share[j] + w * rejected_share[j + 1]
            rejected[t] = count * share
            weights[j] += count * (1 - share) * (1 - w)
            weights[j + 1] += count * (1 - share) * w
            per_pod[t] = rate * (1 - share) * ((1 - w) * per_request[j] + w * per_request[j + 1])
            p95_at[t] = (1 - w) * p95[j] + w * p95[j + 1]
            backlog_at[t] = 0.0
            continue
        # Saturated: full batches at `capacity`, the excess queues up to the cap, the rest is rejected.
        dropped = max(left - queue_cap, 0.0)
        left -= dropped
        wait = 0.5 * (queued + left) / capacity
        rejected[t] = dropped * pods
        waits[max(np.searchsorted(CENTRES, wait) - 1, 0)] += count - dropped * pods
        per_pod[t] = served * saturated_counters
        per_pod[t, COUNTER_QUEUE_SECONDS] += served * wait
        p95_at[t] = wait + saturated_p95
        backlog = left * pods
        backlog_at[t] = backlog
    return backlog


def _gauge(sf: Surface, rate: float, backlog: float, pods: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Each pod's pending gauge at a scrape: a draw from the surface at `rate`, plus its share of the backlog."""
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


def _queue_cap(s: Scenario, capacity: float) -> float:
    """Most requests one pod holds queued: `max_queue_size`, and what it serves within the timeout."""
    cap = float(s.batcher.max_queue_size or math.inf)
    return min(cap, capacity * s.batcher.timeout_s) if s.batcher.timeout_s > 0 else cap


@dataclass
class _Run:
    """The fluid data plane's state and per-second results over one trace."""

    sf: Surface
    arrivals: NDArray[np.float64]
    serving: NDArray[np.int64]
    """Pods taking traffic in each second."""
    per_pod: NDArray[np.float64]
    """Each serving pod's counter increments in each second."""
    counters: NDArray[np.float64]
    """A pod's counters from the start, serving throughout, at the start of each second."""
    backlog_at: NDArray[np.float64]
    rejected: NDArray[np.float64]
    p95_at: NDArray[np.float64]
    weights: NDArray[np.float64]
    waits: NDArray[np.float64]
    backlog: float = 0.0

    @classmethod
    def start(cls, sf: Surface, arrivals: NDArray[np.float64]) -> _Run:
        n = len(arrivals)
        return cls(
            sf,
            arrivals,
            np.zeros(n, np.int64),
            np.zeros((n, 4)),
            np.zeros((n + 1, 4)),
            np.zeros(n),
            np.zeros(n),
            np.full(n, np.nan),
            np.zeros(len(sf.rates)),
            np.zeros(BINS),
        )

    def advance(self, first: int, end: int, queue_cap: float) -> None:
        """Run seconds `first` to `end` (`serving` set for them)."""
        sf = self.sf
        self.backlog = _data_plane(
            first,
            end,
            self.arrivals,
            self.serving,
            self.backlog,
            sf.rates,
            sf.rejected,
            sf.counters,
            sf.p95,
            sf.saturated_counters,
            sf.saturated_p95,
            sf.capacity,
            queue_cap,
            self.per_pod,
            self.backlog_at,
            self.rejected,
            self.p95_at,
            self.weights,
            self.waits,
        )
        self.counters[first + 1 : end + 1] = self.counters[first] + np.cumsum(self.per_pod[first:end], axis=0)


def _scrape(
    s: Scenario, run: _Run, pods: list[Pod], second: int, *, scrapes: Scrapes, rng: np.random.Generator
) -> list[float | None]:
    """engine.scrape, with each serving pod's gauge drawn from the surface and its counters from the run."""
    now = float(second)
    live = [p for p in pods if p.draining_since is None and p.ready_at <= now]
    gauge = np.zeros(len(live), np.int64)
    if second:
        last = second - 1
        rate = run.arrivals[last] / max(run.serving[last], 1)
        gauge = _gauge(run.sf, rate, run.backlog, len(live), rng)
        if s.batcher.max_queue_size:
            gauge = np.minimum(gauge, s.batcher.max_queue_size)
    for pod, pending in zip(live, gauge, strict=True):
        pod.replica.queue = np.empty(int(pending))
        start = min(max(math.ceil(pod.ready_at), 0), second)
        pod.replica.counters = run.counters[second] - run.counters[start]
        if start < second:
            pod.replica.counters[COUNTER_BUSY_SECONDS] += _in_flight_busy(run.per_pod[second - 1])
    scraped = scrape(s, pods, now, scrapes)
    # Empty again, so that engine.drained sees an idle pod once its preStop sleep is over.
    for pod in live:
        pod.replica.queue = np.empty(0)
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


def evaluate(s: Scenario, rate: NDArray[np.float64], seed: int = 0) -> dict[str, float | int | None]:
    """What engine.summary reports for `simulate(s, rate, seed)`, from the fluid model."""
    sf = surface(s.batcher, s.tau)
    rng = np.random.default_rng(seed)
    n = len(rate)
    # The run's histogram summed into one row: a day's by second would be half a gigabyte.
    timeline = Timeline.empty(n, histogram_rows=1)
    timeline.arrival_rps = rng.poisson(rate).astype(np.float64)
    run = _Run.start(sf, timeline.arrival_rps)
    # The control plane as engine.simulate sets it up and runs it (without Prometheus outages).
    metrics = [Metric(s.signal.target_type, s.signal.target)]
    if s.gpu_memory_ratio is not None:
        metrics.append(Metric("AverageValue", s.gpu_memory_target))
    hpa = Hpa(s.min_replicas, s.max_replicas, tuple(metrics), s.behavior)
    keda = KedaAdapter(tuple(m.target for m in metrics), s.fallback)
    scrapes = Scrapes(rate_window_seconds(s.scrape_seconds), [])
    pods = [Pod(Replica(s.batcher, s.tau, seed + i), 0.0, 0.0) for i in range(s.min_replicas)]
    nodes_ready = [0.0] * s.warm_nodes
    scraped: list[float | None] = [0.0] * len(metrics)
    desired, signal = s.min_replicas, np.nan
    queue_cap = _queue_cap(s, sf.capacity)
    every, sync = max(int(s.scrape_seconds), 1), int(SYNC_SECONDS)
    # Only scrapes and syncs change what the pods do: the data plane runs from one to the next.
    events = sorted({*range(0, n, every), *range(sync, n, sync)})
    for first, end in zip(events, [*events[1:], n], strict=True):
        now = float(first)
        if first % every == 0:
            scraped = _scrape(s, run, pods, first, scrapes=scrapes, rng=rng)
        falling_back = keda.falling_back()
        timeline.fallback += falling_back * (end - first)
        timeline.falling_back[first:end] = falling_back
        if first % sync == 0 and first > 0:
            current = sum(1 for p in pods if p.draining_since is None)
            ready = sum(1 for p in pods if p.draining_since is None and p.ready_at <= now)
            answers = keda.read(scraped, current)
            value = answers[0]
            per_replica = s.signal.target_type == "AverageValue"
            signal = np.nan if value is None else value / max(current, 1) if per_replica else value
            desired = hpa.desired(now, current, ready, answers)
            if desired != current:
                timeline.hpa_changes.append((now, desired))
            pods, nodes_ready = rescale(s, pods, nodes_ready, desired, now, seed=seed + first)
        pods = _place(s, pods, run, timeline, first=first, end=end)
        timeline.desired[first:end] = desired
        timeline.signal[first:end] = signal
        run.advance(first, end, queue_cap)
    return _summary(s, run, timeline)


def _summary(s: Scenario, run: _Run, timeline: Timeline) -> dict[str, float | int | None]:
    """engine.summary over the fluid run, with the one figure it would read from per-second histograms."""
    sf = run.sf
    total = run.weights @ sf.histogram
    # Backlogged requests: a full batch's latency, later by the wait.
    for wait_bin in np.flatnonzero(run.waits):
        shifted = np.clip(np.searchsorted(EDGES, CENTRES + CENTRES[wait_bin]) - 1, 0, BINS - 1)
        total += np.bincount(shifted, sf.saturated * run.waits[wait_bin], minlength=BINS)
    timeline.histogram[0] = np.rint(total).astype(np.int64)
    timeline.rejected[:] = np.rint(run.rejected).astype(np.int64)
    timeline.arrived = int(timeline.arrival_rps.sum())
    timeline.dropped = round(float(run.rejected.sum()))
    timeline.in_flight = round(run.backlog)
    timeline.served = timeline.arrived - timeline.dropped - timeline.in_flight
    result = summary(s, timeline)
    result["slo_violation_seconds"] = int(np.nansum(run.p95_at > s.slo_seconds))
    return result
