"""The fluid model's control plane in Python (`evaluate_reference`): the engine's own objects (pods.Pod,
control_plane.scrape, simulator.keda, simulator.hpa, control_plane.rescale and drained) run at each scrape over the
fluid data plane (simulator.fluid_run), each pod's pending gauge drawn from the surface and its counters set from the
run. What the compiled control plane (simulator.fluid) is held to, result for result (tests/simulator/test_fluid.py).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import (
    COUNTER_BUSY_SECONDS,
    COUNTER_EXECUTIONS,
)
from simulator.control_plane import (
    drained,
    floor_reads,
    hpa_metrics,
    rate_window_seconds,
    rescale,
    scrape,
    starting,
)
from simulator.fluid_run import Run, events_of, run_summary, start_run, zero_inputs
from simulator.hpa import SYNC_SECONDS, Hpa
from simulator.keda import KedaAdapter
from simulator.pods import Pod, new_pod
from simulator.scenario import Scenario
from simulator.signals import Scrapes
from simulator.surface import Surface, bracket
from simulator.timeline import Timeline


def _gauge(sf: Surface, rate: float, backlog: float, pods: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Each pod's pending gauge of one model at a scrape: a draw from its surface at `rate`, plus its share of the
    backlog."""
    j, w = bracket(sf.rates, rate)
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


def _scrape(
    s: Scenario, run: Run, pods: list[Pod], second: int, *, scrapes: Scrapes, rng: np.random.Generator
) -> list[float | None]:
    """control_plane.scrape, with each serving pod's gauges drawn from the surfaces and its counters from the run."""
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
    # Empty again, so that control_plane.drained sees an idle pod once its preStop sleep is over.
    for pod in live:
        for replica in pod.replicas:
            replica.queue = np.empty(0)
    return scraped


def _place(s: Scenario, pods: list[Pod], run: Run, timeline: Timeline, *, first: int, end: int) -> list[Pod]:
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


def evaluate_reference(s: Scenario, rate: NDArray[np.float64], seed: int = 0) -> dict[str, float | int | None]:
    """`evaluate` with the engine's own control-plane objects (pods.Pod, control_plane.scrape, keda, hpa, rescale,
    drained) run in Python at each scrape: what the compiled `control` is held to, result for result
    (tests/simulator/test_fluid.py)."""
    rng, timeline, run = start_run(s, rate, seed)
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
    zero, _, timeout = zero_inputs(s)
    last_poll, last_active = 0, 0.0
    for first, end in zip(*events_of(s, n), strict=True):
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
    return run_summary(s, run, timeline)


def _keda_loop(  # noqa: PLR0917 - evaluate_reference's state, passed through
    s: Scenario, run: Run, first: int, desired: int, active: int, last_poll: int, last_active: float
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
