"""The reaction floor: the least time from a rise in load to ready capacity for it that the pipeline allows.

A rise the autoscaler did not see coming reaches ready capacity through a fixed pipeline, whatever the scaling
settings: Prometheus scrapes it from the pods (`monitoring.scrapeInterval`), the HPA reads it at its next sync
(kube-controller-manager's 15 s; KEDA's metrics adapter answers each sync from the latest scrape), the new pods
start (`scaling.simulation.podStartSeconds`), and where they find no free GPU a node is provisioned first
(platform_config/node_provisioning.py: `scaling.simulation.nodeProvisionSeconds`, else the autoscaler's stated
default). The floor is the sum: a rise that lands just after a scrape whose
read just missed a sync waits out both intervals.

Which terms apply when:

- the scrape interval and the HPA sync always;
- KEDA's `pollingIntervalSeconds` never: with an HPA, KEDA's own loop only moves a deployment between 0 replicas
  and 1, and a deployment at zero wakes on a request the KEDA HTTP add-on pushes at once
  (simulator.scale_to_zero), so every scale-up past one goes through the adapter at the HPA's sync;
- the pod start always;
- node provisioning where the rise needs more replicas than the nodes up before it hold (the warm nodes: the
  floor's, the overprovisioning spares', `gpuPool.minNodes`; control_plane.rescale places pods on them first) and the
  pool may still add one (`gpuPool.maxNodes`). A node added stays while the deployment runs (control_plane.rescale
  lets nodes go only when it reaches zero), so only the first rise past the warm nodes pays it.

Not in the floor, because they are settings `stackctl plan` chooses, not physics: the scale-up stabilization
window; the scale-up policies' pace (Pods/Percent per period); the signal's target, which decides how soon a rise
crosses it, and with the busy ratio how far one sync can scale (a saturated pod reads 1.0, so a sync asks for at
most ready ÷ target replicas); and, for the counter signals (busy ratio, queue time), the part of their `rate()`
window a rise must fill before it crosses the target, which shrinks towards one scrape as the target's headroom
grows.

A run can come in under the floor: the simulator runs scrapes and syncs in phase from second 0 (a sync reads the
scrape of the same second), so it waits at most the longer of the two, not their sum; reaction_seconds reads a
10 s mean of the demand; and a shortfall that ends because the load falls (a spike's minute) ends before any pod
could start. The ratio of a run's reaction to the floor reads a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.hpa import SYNC_SECONDS
from simulator.scenario import Scenario, capacity_rps

MEAN_SECONDS = 10
"""The demand's peak is read as a 10 s mean, as summaries.reaction_seconds reads demand against capacity: one
second's Poisson count would decide the node term by noise where the peak sits at a replica's boundary."""


@dataclass(frozen=True)
class ReactionFloor:
    """The terms of the floor, in seconds; `seconds` is their sum."""

    scrape_seconds: float
    """Up to one scrape interval before the pods' series show the rise."""
    sync_seconds: float
    """Up to one HPA sync before the scrape is read."""
    pod_start_seconds: float
    """Image pull, model load and readiness of each new pod, started in parallel."""
    node_seconds: float
    """Node provisioning where the rise needs a GPU the warm nodes lack; else 0."""

    @property
    def seconds(self) -> float:
        return self.scrape_seconds + self.sync_seconds + self.pod_start_seconds + self.node_seconds


def warm_slots(s: Scenario) -> int:
    """Pods the nodes up at the start of a run hold, placed as control_plane.rescale places them."""
    return s.warm_nodes * max(s.gpus_per_node // s.gpus_per_pod, 1)


def peak_replicas(s: Scenario, demand: NDArray[np.float64]) -> int:
    """The replicas the peak of `demand` (req/s each second, as a MEAN_SECONDS mean) needs at a replica's
    full-batch capacity, the capacity summaries.reaction_seconds reads; within the stack's replica bounds."""
    window = min(MEAN_SECONDS, len(demand))
    peak = float(np.convolve(demand, np.ones(window) / window, mode="valid").max()) if window else 0.0
    return min(max(math.ceil(peak / capacity_rps(s)), s.min_replicas), s.max_replicas)


def reaction_floor(s: Scenario, demand: NDArray[np.float64] | None = None) -> ReactionFloor:
    """The floor of a rise to the peak of `demand` (req/s each second); with no demand, of the first pod a rise
    adds (the floor's plus one). See the module's docstring for which terms apply when."""
    wanted = min(s.min_replicas + 1, s.max_replicas) if demand is None else peak_replicas(s, demand)
    node = wanted > warm_slots(s) and s.warm_nodes < s.max_nodes
    return ReactionFloor(
        scrape_seconds=s.scrape_seconds,
        sync_seconds=SYNC_SECONDS,
        pod_start_seconds=s.pod_start_seconds,
        node_seconds=s.node_provision_seconds if node else 0.0,
    )
