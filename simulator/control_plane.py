"""The detailed engine's control plane (simulator.engine): what Prometheus scrapes and each trigger's query reads
(`scrape`, `rate_window_seconds`, `in_outage`), the HPA's metrics (`hpa_metrics`, `floor_reads`), and the pods the
ReplicaSet and the GPU pool start and remove (`starting`, `rescale`, `drained`).

The scaling signal is the deployment's, as KEDA's query computes it (triton_platform.scaling_signal): pending
requests summed over every model, the busy ratio of each pod's busiest model summed over the pods
(signals.busiest), or each model's requests over its capacity per pod, summed (signals.demand).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from simulator.daily_floor import FLOOR_TARGET, floor_at
from simulator.hpa import Metric
from simulator.pods import Pod, new_pod
from simulator.scenario import Scenario
from simulator.signals import Scrapes, busiest, demand, read


def rate_window_seconds(scrape_seconds: float) -> float:
    """The `rate()` window of the counter queries: four scrapes, and at least a minute (KEDA scaling)."""
    return max(4 * scrape_seconds, 60.0)


def in_outage(outages: Sequence[tuple[float, float]], t: float) -> bool:
    return any(start <= t < start + length for start, length in outages)


def starting(s: Scenario) -> tuple[int, int]:
    """The pods and the warm nodes a run starts with: the floor's; at zero (simulator.scale_to_zero), awake as at a
    floor of 1, with a node for its pod."""
    if not s.scales_to_zero:
        return s.min_replicas, s.warm_nodes
    return 1, max(s.warm_nodes, math.ceil(s.gpus_per_pod / s.gpus_per_node))


def hpa_metrics(s: Scenario) -> list[Metric]:
    """The HPA's metrics: the load trigger's, the GPU memory's where simulated, and the daily floor's (its cron
    windows as one metric: simulator.daily_floor)."""
    metrics = [Metric(s.signal.target_type, s.signal.target)]
    if s.gpu_memory_ratio is not None:
        metrics.append(Metric("AverageValue", s.gpu_memory_target))
    if s.floor:
        metrics.append(Metric("AverageValue", FLOOR_TARGET))
    return metrics


def floor_reads(s: Scenario, now: float) -> list[float | None]:
    """What the daily floor's metric reads at `now`, if the scenario has one."""
    return [float(floor_at(s.floor, now))] if s.floor else []


def scrape(s: Scenario, pods: list[Pod], now: float, scrapes: Scrapes) -> list[float | None]:
    """Prometheus scrapes the serving pods; each trigger's query value over what it holds now."""
    serving = [p for p in pods if p.draining_since is None and p.ready_at <= now]
    if not s.others:
        scrapes.add(now, [(p.serial, p.replica) for p in serving])
    else:
        # A series per pod and model, as Triton labels its counters.
        scrapes.add(now, [((p.serial, k), r) for p in serving for k, r in enumerate(p.replicas)])
    pending = float(sum(p.queued() for p in serving))
    if s.signal.name == "demand":
        values: list[float | None] = [demand(scrapes.by_series(), s.capacities)]
    elif s.others and s.signal.name == "busy-ratio":
        instances = [s.batcher.instances, *(m.batcher.instances for m in s.others)]
        values = [busiest(scrapes.by_series(), instances)]
    else:
        values = [read(s.signal, s.batcher, pending, scrapes.rates())]
    if s.gpu_memory_ratio is not None:
        values.append(len(serving) * s.gpu_memory_ratio)
    return values


def drained(s: Scenario, pod: Pod, now: float) -> bool:
    """A draining pod leaves once the preStop sleep is over and its queue is empty."""
    return (
        pod.draining_since is not None
        and now >= pod.draining_since + s.drain_seconds
        and all(r.idle_at(now) for r in pod.replicas)
    )


def rescale(
    s: Scenario, pods: list[Pod], nodes_ready: list[float], desired: int, now: float, *, seed: int = 0
) -> tuple[list[Pod], list[float]]:
    """Add or remove pods to reach `desired`; new pods wait for a GPU node, then start.

    `seed` seeds the new pods' request overheads.
    """
    active = [p for p in pods if p.draining_since is None]
    if desired < len(active):
        # The ReplicaSet removes the newest pods first.
        for pod in sorted(active, key=lambda p: p.ready_at)[desired:]:
            pod.draining_since = now
        if desired == 0:
            # At zero the pool keeps its floor's nodes only (simulator.scale_to_zero).
            nodes_ready = nodes_ready[: s.warm_nodes]
        return pods, nodes_ready
    per_node = max(s.gpus_per_node // s.gpus_per_pod, 1)
    for _ in range(desired - len(active)):
        slots = sorted(t for t in nodes_ready for _ in range(per_node))
        used = len(pods)
        if used < len(slots):
            node_at = max(slots[used], now)
        elif len(nodes_ready) < s.max_nodes:
            node_at = now + s.node_provision_seconds
            nodes_ready.append(node_at)
        else:
            break  # the pool is at its maximum: the pod stays Pending
        pods.append(new_pod(s, seed + len(pods), node_at + s.pod_start_seconds, node_at))
    return pods, nodes_ready
