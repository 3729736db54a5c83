"""The bounds a run's GPU-hours are read against: an autoscaler that knows each second's load, in two forms.

**Instant** (`replicas`, `gpu_hours`): each second of the trace (the simulator's step: rates are per second) the
oracle runs the fewest replicas that carry that second's rate at the SLO, never below the stack's floor
(`replicas.min`) and never above its ceiling (`replicas.max`: the run is held to it too, so the oracle is the best
this stack's fleet could do, not a larger one), and its pods start at once. A replica carries what the
simulator's own response surface (simulator.surface.surface: the batcher under Poisson load, with the run's batching
settings and latency profile) serves with p95 within the SLO; with several models on a pod, what it serves of the
run's mix (`replica_rps`: R = 1 / Σ(share ÷ each model's rate at the SLO)), counted in the models' summed req/s
(their work: an ensemble's request counts once on each step). It reads the trace's rates, the means the Poisson
arrivals are drawn at, so every seed of a trace shares one oracle.

**Hindsight** (`hindsight`, `hindsight_gpu_hours`): the same replicas ready each second, but each pod pays what the
run's pods pay to become ready: it is started, and costs its GPUs, one start delay before the first second it is
needed. The delay is the one control_plane.rescale charges a pod: a node holds `gpusPerNode // gpusPerPod` pods (at
least one); a pod created while a node up or provisioning has a free slot takes it and waits what remains of that node's
provisioning, max(0, node ready - created), then `podStartSeconds`; where none has, it adds a node and waits
`nodeProvisionSeconds`, then its start, and later pods take the node's other slots. So every pod pays the pod start,
and of the pods the warm nodes (reaction.warm_slots: the floor's, the overprovisioning spares', `gpuPool.minNodes`)
cannot hold, one that opens a node (counts warm + 1, warm + 1 + a node's slots, ...) pays the node too, the first
time its count is reached only: a node costs it nothing, so it keeps every node it adds (the simulator's stay while
the deployment runs, and go only when it reaches zero). A pod in a later slot of that node pays the pod start only:
its count is first reached no earlier than the one that opened the node, whose node is up one pod start before that,
so created one pod start before its own first second it finds the node up (max(0, node ready - created) is 0). The
replicas it pays for at second u are the most the next pod start's seconds need (a pod started ahead is already paid
for), plus one for each pod then waiting on the node it opens. Starts before the trace's first second, and the drain
of a pod no longer needed, cost it nothing (as the instant form). It waits for no scrape or sync, knowing the load:
what it cannot skip is the time a pod, and a node, take to come up, so a run's ratio to it is what the control loop
costs beyond that (reaction.py: the floor a loop that does not know the load adds).

The hindsight form holds the SLO by construction: at every second it has, ready, the fewest replicas that carry
that second's rate at the SLO. The one exception is a second whose rate needs more than the ceiling
(`beyond_ceiling_seconds`): there neither form, nor any fleet of this stack, carries the load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.reaction import warm_slots
from simulator.scenario import Scenario
from simulator.surface import surface

STEP_SECONDS = 1
"""The simulator's step: the trace gives a rate per second (scenario.read_trace, shaped_trace)."""


def replicas(load: NDArray[np.float64], per_replica: float, floor: int, ceiling: int) -> NDArray[np.int64]:
    """The fewest replicas of `per_replica` req/s that carry each step's `load`, clipped to [floor, ceiling];
    with no rate held (`per_replica` 0), the ceiling wherever there is load."""
    needed = np.ceil(load / per_replica) if per_replica > 0 else np.where(load > 0, ceiling, floor)
    return np.clip(needed, floor, ceiling).astype(np.int64)


def ahead_max(values: NDArray[np.int64], seconds: int) -> NDArray[np.int64]:
    """Each step's maximum of `values` over it and the `seconds` steps after it (fewer at the end), by doubling
    the span: log2(seconds) passes over the array."""
    result, span = values.copy(), 1
    while span <= seconds:
        step = min(span, seconds + 1 - span)
        later = result[step:].copy()
        result[: len(later)] = np.maximum(result[: len(later)], later)
        span += step
    return result


def hindsight(
    need: NDArray[np.int64], start_seconds: int, node_seconds: int, warm: int, per_node: int = 1
) -> NDArray[np.int64]:
    """The pods paid for each step to have `need` ready at every step, each pod started `start_seconds` ahead and,
    the first time a count that opens a node is reached (above `warm`, the first of each `per_node` slots: warm + 1,
    warm + 1 + per_node, ...), `node_seconds` earlier still for its node. The node's other slots' counts are first
    reached no earlier, when the node has been up for a pod start: their pods pay the start only."""
    paid = ahead_max(need, start_seconds)
    waiting = np.zeros(len(need) + 1, np.int64)
    if node_seconds > 0 and len(need):
        for level in range(warm + 1, int(need.max()) + 1, max(per_node, 1)):
            first = int(np.argmax(need >= level))
            # Started at first - start - node, ready at first: waiting on its node until first - start, from which
            # ahead_max counts it. The node's later slots' counts are first needed at first or later, and so
            # started at first - start or later, when the node is up: they wait on nothing.
            waiting[max(first - start_seconds - node_seconds, 0)] += 1
            waiting[max(first - start_seconds, 0)] -= 1
    result: NDArray[np.int64] = paid + np.cumsum(waiting[:-1])
    return result


@dataclass(frozen=True)
class Oracle:
    replica_rps: float
    """What one replica carries at the SLO."""
    replicas: NDArray[np.int64]
    """Per step, the instant form."""
    gpus_per_pod: int
    hindsight: NDArray[np.int64]
    """Per step, the pods the hindsight form pays for (ready or starting)."""
    beyond_ceiling_seconds: int = 0
    """Steps whose rate needs more replicas than the ceiling: the SLO is out of reach for both forms there."""

    @property
    def gpu_hours(self) -> float:
        return float(self.replicas.sum()) * self.gpus_per_pod * STEP_SECONDS / 3600

    @property
    def hindsight_gpu_hours(self) -> float:
        return float(self.hindsight.sum()) * self.gpus_per_pod * STEP_SECONDS / 3600

    def figures(self, gpu_hours: float) -> dict[str, float]:
        """Each form's GPU-hours and a run's `gpu_hours` as a multiple of them, the capacity they assumed, and the
        seconds beyond the ceiling."""
        return {
            "oracle_gpu_hours": self.gpu_hours,
            "oracle_ratio": gpu_hours / self.gpu_hours,
            "oracle_replica_rps": self.replica_rps,
            "oracle_hindsight_gpu_hours": self.hindsight_gpu_hours,
            "oracle_hindsight_ratio": gpu_hours / self.hindsight_gpu_hours,
            "oracle_beyond_ceiling_seconds": self.beyond_ceiling_seconds,
        }


def replica_rps(s: Scenario, slo_seconds: float, p99_seconds: float | None = None) -> float:
    """What one replica carries with p95 within `slo_seconds` (and p99 within `p99_seconds`): its surface's rate at
    the SLO. With several models (Scenario.others), of the run's mix (Scenario.mix): the models share the pod's GPU
    time (simulator.pods' contention), so a replica carries R req/s of the mix where each model's share of the
    time at its own rate at the SLO adds up to 1, R = 1 / sum(share / rate at the SLO), as capacity_rps counts
    full-batch capacity."""
    at_slo = [surface(b, tau).slo_rate(slo_seconds, p99_seconds) for b, tau in s.batchers]
    if not s.others:
        return at_slo[0]
    if min(at_slo) <= 0:
        return 0.0
    return 1 / sum(share / rps for share, rps in zip(s.mix, at_slo, strict=True))


def oracle(
    s: Scenario, rate: NDArray[np.float64], slo_seconds: float | None = None, p99_seconds: float | None = None
) -> Oracle:
    """The oracle of `s` on the trace `rate`, at the SLO `slo_seconds` (default: the stack's p95 bound) and the p99
    bound `p99_seconds` (None: none). With several models `rate` is their summed req/s, carried at the run's mix
    (replica_rps); a column per model is summed."""
    if rate.ndim > 1:
        rate = np.asarray(rate.sum(axis=1), np.float64)
    slo = s.slo_seconds if slo_seconds is None else slo_seconds
    per_replica = replica_rps(s, slo, p99_seconds)
    need = replicas(rate, per_replica, s.min_replicas, s.max_replicas)
    beyond = int(np.count_nonzero(rate > per_replica * s.max_replicas))
    start, node = math.ceil(s.pod_start_seconds), math.ceil(s.node_provision_seconds)
    # A pool that cannot add a node has none to wait for; like the instant form, the oracle is not held to the
    # pool's bound (the run's pods past it stay Pending, control_plane.rescale).
    per_node = max(s.gpus_per_node // s.gpus_per_pod, 1)  # a node's pod slots, as control_plane.rescale counts them
    paid = hindsight(need, start, node if s.warm_nodes < s.max_nodes else 0, warm_slots(s), per_node)
    return Oracle(per_replica, need, s.gpus_per_pod, paid, beyond)
