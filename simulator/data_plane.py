"""The detailed engine's data plane (simulator.engine), one second at a time: each model's Poisson arrivals over
the ready pods (kube-proxy picks a backend at random), or held by the interceptor at zero (simulator.scale_to_zero),
then every pod's replicas advanced, sharing its GPU (simulator.pods)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from simulator.batcher import Outcome
from simulator.pods import Pod, Shared, share_gpu
from simulator.scenario import Scenario
from simulator.timeline import Timeline


def model_columns(s: Scenario, rate: NDArray[np.float64]) -> NDArray[np.float64]:
    """`rate` as a column of req/s per model of the scenario (one model: its one column)."""
    columns = rate.reshape(len(rate), -1)
    if columns.shape[1] != len(s.models):
        raise ValueError(f"{columns.shape[1]} columns of rates for the {len(s.models)} models {', '.join(s.models)}")
    return columns


def data_plane(
    pods: list[Pod],
    rng: np.random.Generator,
    now: float,
    rates: NDArray[np.float64],
    *,
    outcomes: list[Outcome],
    timeline: Timeline,
    held: list[list[NDArray[np.float64]]] | None = None,
) -> int:
    """One second: each model's arrivals (`rates`, req/s per model) over the ready pods, with several models each
    pod's GPU shared (simulator.pods' contention model), every replica advanced; returns the requests that arrived.
    `held`: at scale to zero, per model the requests the interceptor holds, to which arrivals without a ready pod
    are added (else rejected)."""
    if len(outcomes) == 1:
        [outcome] = outcomes
        count = arrive(pods, rng, now, rates[0], outcome, held=held)
        for pod in pods:
            pod.replica.advance(now + 1, outcome)
        timeline.record(outcome)
        return count
    count = 0
    counts = list(timeline.per_model.values())
    for model, (rps, outcome) in enumerate(zip(rates, outcomes, strict=True)):
        arrived = arrive(pods, rng, now, rps, outcome, model=model, held=held)
        counts[model].arrived += arrived
        count += arrived
    for pod in pods:
        replicas = pod.replicas
        share_gpu([r for r in replicas if isinstance(r, Shared)])
        for replica, outcome in zip(replicas, outcomes, strict=True):
            replica.advance(now + 1, outcome)
    for model_counts, outcome in zip(counts, outcomes, strict=True):
        model_counts.record(outcome)
        timeline.record(outcome)
    return count


def arrive(
    pods: list[Pod],
    rng: np.random.Generator,
    now: float,
    rps: float,
    outcome: Outcome,
    *,
    model: int = 0,
    held: list[list[NDArray[np.float64]]] | None = None,
) -> int:
    """One second of Poisson arrivals from `now`, each to a ready pod at random; none ready: rejected, or held by
    the interceptor (`held`, per model, at scale to zero). `model`: which of the pods' replicas (Pod.replicas) they
    go to."""
    count = int(rng.poisson(rps))
    arrivals = np.sort(now + rng.random(count))
    serving = [p for p in pods if p.draining_since is None and p.ready_at <= now]
    if serving:
        choice = rng.integers(0, len(serving), count)
        for i, pod in enumerate(serving):
            (pod.replica if model == 0 else pod.others[model - 1]).offer(arrivals[choice == i])
    elif count and held is not None:
        held[model].append(arrivals)
    elif count:
        outcome.rejected_at.append(arrivals)
    return count
