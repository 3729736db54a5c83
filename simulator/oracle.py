"""The bound a run's GPU-hours are read against: an autoscaler that knows each second's load and starts pods at once.

Each second of the trace (the simulator's step: rates are per second) the oracle runs the fewest replicas that
carry that second's rate at the SLO, never below the stack's floor (`replicas.min`) and never above its ceiling
(`replicas.max`: the run is held to it too, so the oracle is the best this stack's fleet could do, not a larger
one). A replica carries what the simulator's own response surface (simulator.fluid.surface: the batcher under
Poisson load, with the run's batching settings and latency profile) serves with p95 within the SLO. It reads the
trace's rates, the means the Poisson arrivals are drawn at, so every seed of a trace shares one oracle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.fluid import surface
from simulator.scenario import Scenario

STEP_SECONDS = 1
"""The simulator's step: the trace gives a rate per second (scenario.read_trace, shaped_trace)."""


def replicas(load: NDArray[np.float64], per_replica: float, floor: int, ceiling: int) -> NDArray[np.int64]:
    """The fewest replicas of `per_replica` req/s that carry each step's `load`, clipped to [floor, ceiling];
    with no rate held (`per_replica` 0), the ceiling wherever there is load."""
    needed = np.ceil(load / per_replica) if per_replica > 0 else np.where(load > 0, ceiling, floor)
    return np.clip(needed, floor, ceiling).astype(np.int64)


@dataclass(frozen=True)
class Oracle:
    replica_rps: float
    """What one replica carries at the SLO."""
    replicas: NDArray[np.int64]
    """Per step."""
    gpus_per_pod: int

    @property
    def gpu_hours(self) -> float:
        return float(self.replicas.sum()) * self.gpus_per_pod * STEP_SECONDS / 3600

    def figures(self, gpu_hours: float) -> dict[str, float]:
        """The oracle's GPU-hours, a run's `gpu_hours` as a multiple of them, and the capacity it assumed."""
        return {
            "oracle_gpu_hours": self.gpu_hours,
            "oracle_ratio": gpu_hours / self.gpu_hours,
            "oracle_replica_rps": self.replica_rps,
        }


def oracle(s: Scenario, rate: NDArray[np.float64], slo_seconds: float | None = None) -> Oracle:
    """The oracle of `s` on the trace `rate`, at the SLO `slo_seconds` (default: the stack's)."""
    slo = s.slo_seconds if slo_seconds is None else slo_seconds
    per_replica = surface(s.batcher, s.tau).slo_rate(slo)
    return Oracle(per_replica, replicas(rate, per_replica, s.min_replicas, s.max_replicas), s.gpus_per_pod)
