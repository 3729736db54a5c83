"""What a run of the detailed engine (simulator.engine) sums up to: its summary (`summary`), with scale to zero its
wakes (`wake_summary`), with several models each one's (`model_summaries`), and how long ready capacity took to
catch up with demand (`reaction_seconds`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from simulator.reaction import reaction_floor
from simulator.scenario import Scenario, capacity_rps
from simulator.timeline import Timeline, percentiles


def summary(s: Scenario, timeline: Timeline) -> dict[str, float | int | None]:
    p95 = timeline.percentiles(95)
    total = timeline.histogram.sum(axis=0)[None, :]
    per_replica = capacity_rps(s)
    capacity = timeline.ready * per_replica
    demand = timeline.arrival_rps
    busy = demand > 0
    return {
        "p50_ms": float(percentiles(total, 50)[0] * 1000),
        "p95_ms": float(percentiles(total, 95)[0] * 1000),
        "p99_ms": float(percentiles(total, 99)[0] * 1000),
        "slo_ms": s.slo_seconds * 1000,
        "slo_violation_seconds": int(np.nansum(p95 > s.slo_seconds)),
        "rejected_pct": 100 * timeline.dropped / max(timeline.arrived, 1),
        "gpu_hours": float(timeline.gpus.sum() / 3600),
        "reaction_seconds": reaction_seconds(demand, capacity),
        "reaction_floor_seconds": reaction_floor(s, demand).seconds,
        "peak_overprovisioning": float(np.max(np.where(busy, capacity / np.maximum(demand, 1), 0)) - 1)
        if busy.any()
        else None,
        "arrived": timeline.arrived,
        "served": timeline.served,
        "rejected": timeline.dropped,
        "in_flight": timeline.in_flight,
        "metrics_failing_seconds": timeline.metrics_failing,
        "fallback_seconds": timeline.fallback,
        "replica_capacity_rps": per_replica,
        **(wake_summary(timeline) if s.scales_to_zero else {}),
    }


def wake_summary(timeline: Timeline) -> dict[str, float | int | None]:
    """Scale to zero: the wakes, the requests held and forwarded with their wait's p99 and max (None: none waited),
    and those that failed at the interceptor's timeout."""
    waited = int(timeline.wait_histogram.sum())
    return {
        "wakes": timeline.wakes,
        "waited": waited,
        "waited_p99_s": float(percentiles(timeline.wait_histogram[None, :], 99)[0]) if waited else None,
        "waited_max_s": timeline.wait_max if waited else None,
        "wake_failed": timeline.wake_failed,
    }


def model_summaries(timeline: Timeline) -> dict[str, dict[str, float | int]]:
    """With several models: each one's p50, p95, p99 (ms), rejected % and requests; empty with one."""
    return {model: counts.summary() for model, counts in timeline.per_model.items()}


def reaction_seconds(demand: NDArray[np.float64], capacity: NDArray[np.float64]) -> float | None:
    """The longest time from demand exceeding ready capacity (a load step) to capacity catching up, or to the end
    of the run when it never does; None when demand never exceeded ready capacity (nothing to react to)."""
    # A 10 s moving average, centred as mode="same" would, but as long as `demand` for a run shorter than 10 s.
    smooth = np.convolve(demand, np.ones(10) / 10)[4 : 4 + len(demand)]
    short = np.concatenate([[False], smooth > capacity, [False]])
    # Each stretch of seconds short of capacity: from where it starts to where it ends (the run's end at the latest).
    edges = np.flatnonzero(short[1:] != short[:-1])
    longest = int((edges[1::2] - edges[::2]).max()) if len(edges) else 0
    return float(longest) if longest else None
