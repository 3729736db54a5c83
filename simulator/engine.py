"""The discrete-event simulation of one Triton deployment under KEDA and the HPA, second by second.

Each second: Poisson arrivals at the trace's rate, spread at random over the ready
replicas (kube-proxy picks a backend at random); each replica's batcher runs
(simulator.batcher). The measurement pipeline follows the real one: Prometheus
scrapes each pod's pending-request gauge, counters (and GPU memory) every scrape
interval; at each 15 s HPA sync KEDA's adapter (simulator.keda) answers each
trigger's query (simulator.signals: the gauge at the latest scrape, counters as
`rate()` over the window), or fails while Prometheus is out (`outages`) and
falls back after `failureThreshold` failures; the HPA (simulator.hpa) decides.
KEDA's own polling loop only moves 0 <-> 1 (simulator.scale_to_zero). Pods need a free GPU: without one the
pool adds a node (provisioning delay); then image pull and model load; only a
ready pod gets traffic. Scale-down removes the newest pods: they leave the
endpoints at once, drain their queue, and free their GPU.

The parts: the pods and, with several models, their GPU sharing (simulator.pods); the control plane's reads and
its pods (simulator.control_plane); each second's arrivals and batches (simulator.data_plane); scale to zero
(simulator.scale_to_zero); what a run records (simulator.timeline) and sums up to (simulator.summaries).

Deterministic for a given seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import Outcome
from simulator.control_plane import (
    drained,
    floor_reads,
    hpa_metrics,
    in_outage,
    rate_window_seconds,
    rescale,
    scrape,
    starting,
)
from simulator.data_plane import data_plane, model_columns
from simulator.hpa import SYNC_SECONDS, Hpa
from simulator.keda import KedaAdapter
from simulator.pods import Pod, new_pod
from simulator.scale_to_zero import Held
from simulator.scenario import Scenario
from simulator.signals import Scrapes
from simulator.timeline import ModelCounts, Timeline

PROGRESS_SECONDS = 300
"""How often, in simulated seconds, `simulate` reports its progress."""


def simulate(  # noqa: PLR0915 - one second's control plane, then its data plane, in order
    s: Scenario,
    rate: NDArray[np.float64],
    seed: int = 0,
    outages: Sequence[tuple[float, float]] = (),
    progress: Callable[[int], None] | None = None,
) -> Timeline:
    """Run `rate` (req/s of each second) through the scenario; `outages` are (start, seconds) of Prometheus outages;
    `progress` is told the seconds simulated so far, every PROGRESS_SECONDS.

    With Scenario.others, `rate` has a column per model (Scenario.models), each model's req/s."""
    rng = np.random.default_rng(seed)
    n = len(rate)
    columns = model_columns(s, rate)
    timeline = Timeline.empty(n)
    outcomes = [Outcome() for _ in s.models]
    if s.others:
        timeline.per_model = {m: ModelCounts() for m in s.models}
    metrics = hpa_metrics(s)
    # At `min_replicas` 0 the HPA's floor is 1: KEDA's own loop moves 0 <-> 1 (simulator.scale_to_zero).
    hpa = Hpa(max(s.min_replicas, 1), s.max_replicas, tuple(metrics), s.behavior)
    keda = KedaAdapter(tuple(m.target for m in metrics), s.fallback)
    scrapes = Scrapes(rate_window_seconds(s.scrape_seconds), [])
    signal = np.nan
    wake = Held(s) if s.scales_to_zero else None
    first_pods, warm_nodes = starting(s)
    pods: list[Pod] = [new_pod(s, seed + i, 0.0, 0.0) for i in range(first_pods)]
    nodes_ready: list[float] = [0.0] * warm_nodes
    scraped: list[float | None] = [0.0] * (len(metrics) - bool(s.floor))
    desired = first_pods

    for second in range(n):
        if progress is not None and second % PROGRESS_SECONDS == 0:
            progress(second)
        now, end = float(second), float(second + 1)
        # Control plane: scrape, then the HPA sync reads the latest scrape through KEDA.
        if second % max(int(s.scrape_seconds), 1) == 0:
            scraped = scrape(s, pods, now, scrapes)
        outage = in_outage(outages, now)
        timeline.metrics_failing += outage
        timeline.fallback += keda.falling_back()
        timeline.falling_back[second] = keda.falling_back()
        # The HPA does nothing while its target has no replica (scale to zero).
        awake = wake is None or any(p.draining_since is None for p in pods)
        if second % int(SYNC_SECONDS) == 0 and second > 0 and awake:
            current = sum(1 for p in pods if p.draining_since is None)
            ready = sum(1 for p in pods if p.draining_since is None and p.ready_at <= now)
            # The cron triggers read the clock, not Prometheus: an outage leaves them answering.
            answers = keda.read([*([None] * len(scraped) if outage else scraped), *floor_reads(s, now)], current)
            value = answers[0]
            per_replica = s.signal.target_type == "AverageValue"
            signal = np.nan if value is None or outage else value / max(current, 1) if per_replica else value
            desired = hpa.desired(now, current, ready, answers)
            if desired != current:
                timeline.hpa_changes.append((now, desired))
            pods, nodes_ready = rescale(s, pods, nodes_ready, desired, now, seed=seed + second)
        if wake is not None:
            desired, pods, nodes_ready = wake.before(s, pods, nodes_ready, desired, second, rng, timeline, seed)
        # Data plane: this second's arrivals over the ready pods.
        count = data_plane(
            pods,
            rng,
            now,
            columns[second],
            outcomes=outcomes,
            timeline=timeline,
            held=None if wake is None else wake.held,
        )
        timeline.arrival_rps[second] = count
        timeline.arrived += count
        if wake is not None:
            desired, pods, nodes_ready = wake.after(s, pods, nodes_ready, desired, second, count, timeline, seed)
        pods = [p for p in pods if not drained(s, p, end)]
        timeline.desired[second] = desired
        timeline.signal[second] = signal
        timeline.ready[second] = sum(1 for p in pods if p.draining_since is None and p.ready_at <= end)
        timeline.pending[second] = sum(p.queued() for p in pods)
        timeline.gpus[second] = len(pods) * s.gpus_per_pod
    timeline.in_flight = sum(p.queued() for p in pods)
    return timeline
