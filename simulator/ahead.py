"""The simulator's loops compiled ahead of time, into the cache every copy of this source shares
(simulator/compiled.py): what `make venv` runs, so that a new machine's first `stackctl plan` or `simulate` loads them
instead of compiling them (about 15 s on two cores).

    python -m simulator.ahead

It runs the fluid model and the detailed engine for a few simulated minutes on scenarios of its own (one model; two
models on one pod; one that idles at zero, with a daily floor), which call every compiled function with the types
the planner's and the engine's calls do. Scenarios rather than numba signatures: the types of the generator, the
HPA's state and the read-only surfaces are the ones these calls make, and tests/simulator/test_ahead.py holds it to
every committed stack (nothing compiled after it).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numba
import numpy as np
from numpy.typing import NDArray

from simulator import engine, fluid
from simulator.batcher import BatcherConfig, LatencyProfile
from simulator.daily_floor import FloorWindow
from simulator.hpa import Behavior
from simulator.scenario import Scenario, Served
from simulator.signals import SignalSpec

SECONDS = 240
"""Simulated seconds per run: enough for scrapes, HPA syncs and a pod's start."""

PROFILE = LatencyProfile((1, 8), (0.004, 0.012), (0.0005, 0.001))
ONE_MODEL = Scenario(
    stack="ahead",
    deployment="ahead",
    model="first",
    batcher=BatcherConfig(max_batch_size=8, max_queue_delay_s=0.002, max_queue_size=64),
    tau=PROFILE,
    min_replicas=1,
    max_replicas=4,
    signal=SignalSpec("demand", 0.8),
    behavior=Behavior(),
    scrape_seconds=15.0,
    gpus_per_pod=1,
    gpus_per_node=1,
    max_nodes=4,
    warm_nodes=1,
    node_provision_seconds=30.0,
    pod_start_seconds=20.0,
    drain_seconds=5.0,
    slo_seconds=0.1,
    fallback=None,
    gpu_memory_target=0.8,
    gpu_memory_ratio=0.5,
)
TWO_MODELS = replace(
    ONE_MODEL,
    others=(Served("second", BatcherConfig(max_batch_size=1, max_queue_delay_s=0.0, dynamic=False), PROFILE, ""),),
    mix=(0.5, 0.5),
)
AT_ZERO = replace(ONE_MODEL, min_replicas=0, wake_timeout_seconds=30.0, floor=(FloorWindow(60, 120, 1),))


def scenarios() -> tuple[tuple[Scenario, NDArray[np.float64]], ...]:
    """Each built-in scenario with its load: a rise to well past one pod, a column per model."""
    rise = np.linspace(0.0, 3.0 * ONE_MODEL.capacities[0], SECONDS)
    return (
        (ONE_MODEL, rise),
        (TWO_MODELS, np.column_stack([rise / 2, rise / 2])),
        (AT_ZERO, rise),
    )


def compile_ahead() -> int:
    """Run every built-in scenario through the fluid model and the detailed engine; how many of the simulator's
    compiled functions were compiled (rather than loaded from the cache) on the way."""
    for s, rate in scenarios():
        fluid.evaluate_models(s, rate, 0)
        engine.simulate(s, rate, 0)
    simulator = [module for name, module in sys.modules.items() if name.startswith(f"{__package__}.")]
    return sum(
        sum(function.stats.cache_misses.values())
        for module in simulator
        for function in vars(module).values()
        if isinstance(function, numba.core.registry.CPUDispatcher)
    )


def main() -> None:
    start = time.perf_counter()
    compiled = compile_ahead()
    print(
        f"simulator: {compiled} functions compiled ahead of time in {time.perf_counter() - start:.1f} s "
        "(0: the cache already held them)"
    )


if __name__ == "__main__":
    main()
