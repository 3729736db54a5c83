"""The detailed engine's pods (simulator.engine), and how several models on one pod share its GPU.

Several models (Scenario.others, `stackctl simulate` with a load per model): a pod holds a Replica of each
model, with the model's own batcher, instances and latency profile; each model's arrivals are Poisson at its own
rate, spread at random over the ready pods. Contention: the models share the pod's GPU time. A model's share of
it in a second is its instances' busy ratio at its profile's speed (the tau(b) of the batches it started, over its
instance count: 1 when its instances alone keep the GPU as busy as when it was profiled); each second, every
model's tau(b) is stretched by 1 / (1 - u), u the other models' share in the second before, at most
MAX_OTHERS_SHARE (a model never runs slower than 10x its profile). Two models each at a quarter of the GPU run
at 1 / 0.75 = 1.33x their tau(b); each at a half, 2x, and the pod is full. One model alone is never stretched:
the one-model run is unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from simulator.batcher import COUNTER_BUSY_SECONDS, BatcherConfig, LatencyProfile, Outcome, Replica
from simulator.scenario import Scenario

MAX_OTHERS_SHARE = 0.9
"""The most of a pod's GPU time the other models take from one (the contention model above): its tau(b) is
stretched 10x at most, as a GPU's time-slicing still gives each context a turn."""


class Shared(Replica):
    """A model's replica on a pod whose GPU other models share: its tau(b) stretched by their share."""

    def __init__(self, config: BatcherConfig, tau: LatencyProfile, seed: int = 0) -> None:
        super().__init__(config, tau, seed)
        self._alone = self._tau.copy()
        self.stretch = 1.0
        self.share = 0.0
        """The pod's GPU time this model took in the last second it advanced, at its profile's speed."""
        self._busy = 0.0

    def stretch_to(self, factor: float) -> None:
        """Run the next batches at `factor` x the profile's tau(b)."""
        if factor != self.stretch:
            self.stretch = factor
            self._tau = self._alone * factor

    def advance(self, until: float, out: Outcome) -> None:
        super().advance(until, out)
        busy = float(self.counters[COUNTER_BUSY_SECONDS])
        self.share = (busy - self._busy) / self.stretch / self.config.instances
        self._busy = busy


def share_gpu(replicas: Sequence[Shared]) -> None:
    """Stretch each model's tau(b) by 1 / (1 - the other models' share of the GPU in the second before)."""
    total = sum(r.share for r in replicas)
    for replica in replicas:
        replica.stretch_to(1 / (1 - min(total - replica.share, MAX_OTHERS_SHARE)))


@dataclass
class Pod:
    replica: Replica
    ready_at: float
    node_ready_at: float
    draining_since: float | None = None
    serial: int = field(default_factory=itertools.count().__next__)
    """Names the pod's series in Prometheus, as its pod name does."""
    others: list[Shared] = field(default_factory=list)
    """The replicas of the scenario's other models (Scenario.others), in their order; `replica` is then Shared."""

    @property
    def replicas(self) -> list[Replica]:
        """Every model's replica, the scenario's own model first."""
        return [self.replica, *self.others]

    def queued(self) -> int:
        return sum(r.queued for r in self.replicas)


def new_pod(s: Scenario, seed: int, ready_at: float, node_ready_at: float) -> Pod:
    """A pod of the scenario: a Replica of its model, and with other models a Shared replica of each."""
    if not s.others:
        return Pod(Replica(s.batcher, s.tau, seed), ready_at, node_ready_at)
    # Each model's request overheads from a seed of its own: a model's arrivals do not move another's draws.
    others = [Shared(m.batcher, m.tau, seed + MODEL_SEEDS * (k + 1)) for k, m in enumerate(s.others)]
    return Pod(Shared(s.batcher, s.tau, seed), ready_at, node_ready_at, others=others)


MODEL_SEEDS = 1_000_003
"""Apart between two models' overhead seeds on a pod (pods' seeds differ by 1 to a few per second of a run)."""
