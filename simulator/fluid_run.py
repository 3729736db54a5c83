"""One run of the fluid model (simulator.fluid): its arrays, its data plane and its summary.

Per second of the trace, Poisson arrivals from the seed split evenly over the ready pods; each pod's share reads
the model's surface (simulator.surface). Beyond what the ready pods serve at full batches the excess waits in a
fluid backlog, which adds its drain time to the latency and is capped by `max_queue_size` and the queue timeout (the
rest is rejected); with no ready pod every arrival is rejected. Several models on one pod contend as the engine's
(simulator.data_plane). At zero, `intercept` is the KEDA HTTP add-on's interceptor. The control plane that sets the
pods of each second is simulator.fluid's, compiled, or simulator.fluid_reference's, in Python; both call these."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import (
    COUNTER_BUSY_SECONDS,
    COUNTER_QUEUE_SECONDS,
    COUNTER_REQUESTS,
    COUNTERS,
)
from simulator.compiled import Floats, compiled
from simulator.data_plane import model_columns
from simulator.hpa import SYNC_SECONDS
from simulator.pods import MAX_OTHERS_SHARE
from simulator.scenario import Scenario
from simulator.summaries import summary
from simulator.surface import BINS, CENTRES, GRID, MEASURED, Surface, bracket, search_left, surface
from simulator.timeline import EDGES, ModelCounts, Timeline

SurfaceArrays = tuple[Floats, Floats, Floats, Floats, Floats, Floats, Floats]
"""The models' surfaces, stacked by model (surface_arrays): rates, rejected shares, counters per request and p95 at
each rate; at saturation counters per request, p95; capacity."""
RunArrays = tuple[Floats, Floats, Floats, Floats, Floats]
"""What the data plane writes (Run): per-pod counter increments, rejected per second and model; p95 per second;
weights, waits."""
BIN_RATIO = float(EDGES[1] / EDGES[0])
STRETCH_BINS = math.ceil(math.log(1 / (1 - MAX_OTHERS_SHARE)) / math.log(BIN_RATIO)) + 1
"""EDGES bins a latency moves up at the most stretch (pods.MAX_OTHERS_SHARE), and 1 for none."""


@compiled
def _stretch_bin(factor: float) -> int:
    """How many EDGES bins a latency stretched by `factor` moves up (bins are a constant ratio wide)."""
    return min(int(np.rint(math.log(factor) / math.log(BIN_RATIO))), STRETCH_BINS - 1)


@compiled
def data_plane(  # noqa: PLR0915, PLR0917 - compiled: plain positional arrays and numbers
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
    surfaces (surface_arrays); `models`: per model its max queue size (0: unbounded), queue timeout (0: none) and
    instances; `state`: per model its backlog over the pods, its GPU share and its stretch in the last second run,
    updated; `out`: Run.arrays.

    Writes per second and model: each serving pod's counter increments (`per_pod`) and the arrivals rejected; per
    second the p95 of its arrivals (the slowest model's); adds to `weights` the served requests per stretch and grid
    point whose latency histogram they follow, and to `waits` those that also waited in the backlog, by stretch and
    EDGES bin of the wait (their latency: the wait plus a full batch's).

    Contention, as simulator.pods states it: each model's tau(b) is stretched by 1 / (1 - u), u the other models'
    GPU share in the second before (at most pods.MAX_OTHERS_SHARE). A pod whose service times are all k x longer
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
                j, w = bracket(rates[m], rate * k)
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
                waits[m, shift, max(search_left(CENTRES, wait) - 1, 0)] += count - dropped * pods
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
def intercept(  # noqa: PLR0917 - compiled: plain positional arrays and numbers
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
    `t` + 1 at the earliest) fail (rejected in their second). `held`, `wake` and `wait_histogram`: Run's."""
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
                        wait_histogram[min(max(search_left(EDGES, wait) - 1, 0), BINS - 1)] += count
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


def model_limits(s: Scenario) -> NDArray[np.float64]:
    """Per model (Scenario.models): its max queue size (0: unbounded), queue timeout seconds (0: none), instances."""
    return np.array([[b.max_queue_size, b.timeout_s, b.instances] for b, _ in s.batchers], np.float64)


def surface_arrays(surfaces: Sequence[Surface]) -> SurfaceArrays:
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
class Run:
    """The fluid data plane's state and per-second results over one trace, per model (Scenario.models)."""

    surfaces: list[Surface]
    pod: SurfaceArrays
    models: NDArray[np.float64]
    """model_limits."""
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
    """Per model: the backlog over the pods, the GPU share and the stretch of the last second run (data_plane)."""
    offered: NDArray[np.float64]
    """(second, model): the arrivals drawn, before the interceptor moves held ones (scale to zero)."""
    held: NDArray[np.float64]
    """(second, model): scale to zero, the requests of each second the interceptor holds (intercept)."""
    wake: NDArray[np.float64]
    """Scale to zero: wakes, requests forwarded after a wait, the longest wait, requests failed at the timeout,
    requests held now, the first second holding any (the run's length: none) (intercept)."""
    wait_histogram: NDArray[np.float64]
    """Scale to zero: the forwarded requests by their wait, over EDGES."""

    @classmethod
    def start(cls, s: Scenario, surfaces: list[Surface], arrivals: NDArray[np.float64]) -> Run:
        n, count = arrivals.shape
        return cls(
            surfaces,
            surface_arrays(surfaces),
            model_limits(s),
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
        """Scale to zero: intercept for `second` (`serving` set for it)."""
        intercept(
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
        data_plane(first, end, self.arrivals, self.serving, self.pod, self.models, self.state, self.arrays)
        self.counters[first + 1 : end + 1] = self.counters[first] + np.cumsum(self.per_pod[first:end], axis=0)


def start_run(s: Scenario, rate: NDArray[np.float64], seed: int) -> tuple[np.random.Generator, Timeline, Run]:
    """A run's random numbers, timeline and data plane, its arrivals drawn: with several models (Scenario.others),
    `rate` has a column per model (Scenario.models), as engine.simulate reads it."""
    surfaces = [surface(b, tau) for b, tau in s.batchers]
    rng = np.random.default_rng(seed)
    # The run's histogram summed into one row: a day's by second would be half a gigabyte.
    timeline = Timeline.empty(len(rate), histogram_rows=1)
    arrivals = rng.poisson(model_columns(s, rate)).astype(np.float64)
    timeline.arrival_rps = arrivals.sum(axis=1)
    return rng, timeline, Run.start(s, surfaces, arrivals)


def events_of(s: Scenario, n: int) -> tuple[list[int], list[int]]:
    """Where each stretch of seconds without a scrape or sync starts and ends: the data plane runs from one to the
    next. Scale to zero: every second, KEDA's loop may activate on any."""
    every, sync = max(int(s.scrape_seconds), 1), int(SYNC_SECONDS)
    events = list(range(n)) if s.scales_to_zero else sorted({*range(0, n, every), *range(sync, n, sync)})
    return events, [*events[1:], n]


def zero_inputs(s: Scenario) -> tuple[bool, int, float]:
    """Scale to zero: whether the scenario does, KEDA's polling seconds, the interceptor's timeout (inf: none)."""
    timeout = math.inf if s.wake_timeout_seconds is None else float(s.wake_timeout_seconds)
    return s.scales_to_zero, max(int(s.polling_seconds), 1), timeout


def _shifted(histogram: NDArray[np.float64], bins: int) -> NDArray[np.float64]:
    """`histogram` moved up `bins` EDGES bins, what passes the last bin kept in it."""
    if not bins:
        return histogram
    moved = np.zeros_like(histogram)
    moved[bins:] = histogram[: BINS - bins]
    moved[-1] += histogram[BINS - bins :].sum()
    return moved


def _histogram(sf: Surface, weights: NDArray[np.float64], waits: NDArray[np.float64]) -> NDArray[np.float64]:
    """One model's latency counts over EDGES: its `weights` and `waits` (by stretch bin, Run) over its surface."""
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


def run_summary(s: Scenario, run: Run, timeline: Timeline) -> dict[str, float | int | None]:
    """summaries.summary over the fluid run, with the one figure it would read from per-second histograms; with several
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
