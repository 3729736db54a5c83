"""A fast evaluator of one scenario on a long trace: a measured per-pod response surface under a fluid queue, and the
engine's control plane compiled.

The detailed engine (simulator.engine) runs every request through every pod's batcher: a day of production traffic
takes minutes to hours. This model keeps the engine's control plane and replaces its data plane:

- Per pod, a response surface (simulator.surface) measured once per batching config with the real batcher.
- Per second, the fluid data plane (simulator.fluid_run): Poisson arrivals over the ready pods, each pod's share read
  from the surface, the excess in a fluid backlog capped by the queue bounds; several models on one pod contend as
  the engine's (a model's tau(b) stretched by 1 / (1 - the other models' GPU share), applied as time scaling); at
  zero, the KEDA HTTP add-on's interceptor holds, forwards and fails requests (`intercept`).
- The control plane, in two implementations. `evaluate_reference` (simulator.fluid_reference) runs the engine's own
  objects in Python at each scrape. `evaluate`, what the planner runs, is `control` here: the same steps compiled
  with numba over plain arrays, its HPA simulator.hpa_compiled, drawing the same random numbers in the same order
  (the Python path spent about 95% of a run in per-scrape interpreter work). Kept apart rather than the engine using
  the compiled HPA (whose per-pod replicas, outages and KEDA fallback the fluid model does not need), and held to the
  Python path instead: tests/simulator/test_fluid.py and tests/simulator/test_simulate_zero.py check that both give
  the same summary, to the bit, on random scenarios (signals, HPA behaviors with every policy kind, the GPU-memory
  trigger, queue bounds, node pools, scrape and drain times, two and three models, scale to zero), loads and seeds.
  summaries.summary does the arithmetic for both. One model is never stretched, and with `min_replicas` >= 1 the
  interceptor never runs: their results are unchanged, to the bit.

How close it comes to the detailed engine, and how fast it runs: docs/simulation.md ("The fluid model") and
bench/results/fluid_speed.md.
"""

from __future__ import annotations

import math
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
)
from simulator.compiled import compiled
from simulator.control_plane import hpa_metrics, starting
from simulator.daily_floor import DAY, floor_array
from simulator.fluid_run import (
    RunArrays,
    SurfaceArrays,
    data_plane,
    events_of,
    intercept,
    run_summary,
    start_run,
    zero_inputs,
)
from simulator.hpa import SYNC_SECONDS
from simulator.hpa_compiled import HpaInputs, hpa_desired, hpa_inputs, new_hpa_state
from simulator.scenario import Scenario
from simulator.summaries import model_summaries
from simulator.surface import bracket

# The control plane compiled (`control`): what evaluate_reference does with the engine's objects at each scrape and
# sync, over plain arrays. Without Prometheus outages no read fails, so KEDA passes every value through (its failure
# counts stay 0 and its fallback never answers) and only the HPA decides.
SIGNAL_CODES = {"queue-depth": 0, "queue-excess": 1, "queue-time": 2, "busy-ratio": 3, "demand": 4}


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
def control(  # noqa: PLR0912, PLR0915, PLR0917 - compiled: plain positional arrays and numbers
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
    timeout, the nodes the pool keeps at zero; `offered`: arrivals per second, all models; `holding` (Run.held),
    `wake`, `wait_histogram`: Run's. `scenario`: min and max replicas, scrape seconds, GPUs per pod and per node,
    max and warm nodes, node provision, pod start and drain seconds; `signal`: SIGNAL_CODES' code, the batching
    delay and the GPU-memory ratio (NaN: no GPU-memory trigger); the HPA's as `hpa_inputs`; per model its gauge
    samples (model, grid point, sample); the surfaces (surface_arrays) and model_limits; then
    evaluate_reference's run arrays, which it fills (Run); `floor`: the daily floor's windows
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
    # Pods, in control_plane.rescale's order: when each is ready, since when it drains (NaN: it does not), its series.
    size = max(2 * max_replicas, 4)
    pod_ready, pod_draining, pod_serial = np.zeros(size), np.zeros(size), np.arange(size)
    for p in range(size):
        pod_draining[p] = np.nan
    # A run at zero starts awake, as at a floor of 1 (control_plane.starting; its warm nodes come in `scenario`).
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
    hpa_state = new_hpa_state(len(events) + 1)
    up = np.zeros(max(max_replicas, min_replicas))
    desired = pods
    scale_to_zero, poll, cooldown, timeout, floor_nodes = zero[0] > 0, int(zero[1]), zero[2], zero[3], int(zero[4])
    last_poll, last_active = 0, 0.0
    for e in range(len(events)):
        first = events[e]
        end = events[e + 1] if e + 1 < len(events) else n
        now = float(first)
        if first % every == 0:
            # _scrape: the live pods' gauges drawn from the surfaces, their counters from the run; control_plane.scrape.
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
                    j, w = bracket(rates[m], rate)
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
            # signals.read, and with several models control_plane.scrape's busiest.
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
            # int(): int64, not Literal[int](0), so that hpa_desired compiles once
            desired = hpa_desired(
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
            # control_plane.rescale
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
            intercept(first, serving[first], arrivals, holding, out[1], wake, wait_histogram, timeout)
        data_plane(first, end, arrivals, serving, pod, models, state, out)
        # As np.cumsum from `first`, added to the counters there.
        running = np.zeros((count_models, COUNTERS))
        for t in range(first, end):
            for m in range(count_models):
                for c in range(COUNTERS):
                    running[m, c] += per_pod[t, m, c]
                    counters[t + 1, m, c] = counters[first, m, c] + running[m, c]


def evaluate(s: Scenario, rate: NDArray[np.float64], seed: int = 0) -> dict[str, float | int | None]:
    """What summaries.summary reports for `simulate(s, rate, seed)`, from the fluid model: evaluate_reference's
    results, its control plane compiled. With several models (Scenario.others) `rate` has a column per model."""
    return evaluate_models(s, rate, seed)[0]


def evaluate_models(
    s: Scenario, rate: NDArray[np.float64], seed: int = 0
) -> tuple[dict[str, float | int | None], dict[str, dict[str, float | int]]]:
    """`evaluate`'s summary, and with several models each one's (summaries.model_summaries; empty with one)."""
    rng, timeline, run = start_run(s, rate, seed)
    n = len(rate)
    every, sync = max(int(s.scrape_seconds), 1), int(SYNC_SECONDS)
    events = np.array(events_of(s, n)[0], np.int64)
    zero, poll, timeout = zero_inputs(s)
    b = s.batcher
    control(
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
        hpa_inputs(hpa_metrics(s), s.behavior),
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
    return run_summary(s, run, timeline), model_summaries(timeline)
