"""The fluid evaluator (simulator.fluid) against the detailed engine on 15-minute built-in traces.

Each case runs `summary(s, simulate(s, rate, seed))` and `evaluate(s, rate, seed)` on the same trace
and seed; peaks are 0.6x, 1.3x and 2.7x of `trigger_rps(s)`. Bounds, with what was measured
(2 cores, seed 3) in brackets:

- GPU-hours within 5% [busy-ratio, the stacks' signal, all 27 cases: worst +0.8%; queue-excess and
  queue-time on production's spike: 0.0%];
- p95 within 20% [production, staging: worst +10.4%; dev's unbounded queue at 1.3x, where latency is
  the backlog's drain time of minutes: worst -11%; NOT met at 2.7x: -30% to -39%, see CASES];
- rejected within 0.5 points, or 15% of the detailed figure above 3.3% [worst 0.3 points with a queue
  bound; with production's planned timeout-only queue, heavy overload: busy-ratio spike 2.7x 23.1% vs
  23.7%, queue-excess 1.3x 18.7% vs 16.4% (-12%): the pooled backlog again, see below].

queue-depth reads one instant of a noisy gauge and the 600 s scale-down window keeps its highs:
the detailed engine's own GPU-hours range over 0.97-1.48 across seeds on production's spike at
2.7x, so that case compares means over seeds (within 10%; measured -2%).

Left out, as measured: a saturated signal within a few percent of a whole number of pods makes the
HPA's ceil() fall either way on noise (production queue-time spike 0.6x: +11% GPU-hours, one pod
more for 6 minutes; staging queue-excess spike 0.6x: the detailed engine adds the pod in 2 seeds of 6,
the fluid model in all; a step to exactly 3 pods' full-batch capacity under busy-ratio).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from platform_config.loader import load_stack
from simulator.engine import simulate, summary
from simulator.fluid import evaluate, surface
from simulator.scenario import Scenario, scenario, shaped_trace, trigger_rps
from simulator.signals import Signal, SignalSpec, derived_target

HOURS = 0.25
SEED = 3
MULTIPLES = (0.6, 1.3, 2.7)


def with_signal(s: Scenario, name: Signal | None) -> Scenario:
    if name is None:
        return s
    return replace(s, signal=SignalSpec(name, derived_target(name, s.batcher, 10.0, 0.75)))


Summary = dict[str, float | int | None]


def runs(stack: str, signal: Signal | None, shape: str, multiple: float) -> tuple[Summary, Summary]:
    """The detailed engine's summary and the fluid model's, on the same trace and seed."""
    s = with_signal(scenario(load_stack(stack)), signal)
    rate = shaped_trace(shape, multiple * trigger_rps(s), HOURS)
    return summary(s, simulate(s, rate, SEED)), evaluate(s, rate, SEED)


def disagreements(detailed: Summary, fluid: Summary) -> list[str]:
    """Each bound of the module docstring the fluid figures break, named with both values."""
    found = [f"missing keys {sorted(set(detailed) - set(fluid))}"] if not set(detailed) <= set(fluid) else []

    def number(run: Summary, key: str) -> float:
        return float(run[key] or 0)

    # Independent Poisson draws of the same trace: their totals differ by about sqrt(arrived).
    arrived = number(detailed, "arrived")
    bounds = {
        "arrived": 5 * np.sqrt(arrived),
        "gpu_hours": 0.05 * number(detailed, "gpu_hours"),
        "p95_ms": 0.2 * number(detailed, "p95_ms"),
        "rejected_pct": max(0.5, 0.15 * number(detailed, "rejected_pct")),
    }
    for key, bound in bounds.items():
        if abs(number(fluid, key) - number(detailed, key)) > bound:
            found.append(f"{key}: fluid {number(fluid, key):.4g}, detailed {number(detailed, key):.4g}")
    return found


# dev's queue is unbounded: at 2.7x (step, diurnal; the spike is too short) a backlog of minutes builds on
# the first pod. Arrivals are spread evenly, so that backlog stays on its pod and drains at capacity less
# its share; the fluid model pools it over all pods and drains it about twice as fast: p95 30-40% low.
# Tracking the backlog per pod would fix it.
BACKLOG_STAYS_ON_ITS_POD = pytest.mark.xfail(strict=True, reason="backlog pooled over pods: p95 low")
CASES = [
    pytest.param(
        stack,
        shape,
        multiple,
        marks=BACKLOG_STAYS_ON_ITS_POD if (stack, multiple) == ("dev", 2.7) and shape != "spike" else (),
    )
    for stack in ("production", "staging", "dev")
    for shape in ("step", "diurnal", "spike")
    for multiple in MULTIPLES
]


@pytest.mark.slow
@pytest.mark.parametrize(("stack", "shape", "multiple"), CASES)
def test_busy_ratio_matches_the_detailed_engine(stack: str, shape: str, multiple: float) -> None:
    assert disagreements(*runs(stack, "busy-ratio", shape, multiple)) == []


@pytest.mark.slow
@pytest.mark.parametrize("multiple", [1.3, 2.7])
@pytest.mark.parametrize("signal", ["queue-excess", "queue-time"])
def test_queue_signals_match_the_detailed_engine(signal: Signal, multiple: float) -> None:
    assert disagreements(*runs("production", signal, "spike", multiple)) == []


@pytest.mark.slow
def test_queue_depth_matches_the_detailed_engine_over_seeds() -> None:
    s = with_signal(scenario(load_stack("production")), "queue-depth")
    rate = shaped_trace("spike", 2.7 * trigger_rps(s), HOURS)
    detailed = [float(summary(s, simulate(s, rate, seed))["gpu_hours"] or 0) for seed in range(4)]
    fluid = [float(evaluate(s, rate, seed)["gpu_hours"] or 0) for seed in range(8)]
    assert np.mean(fluid) == pytest.approx(np.mean(detailed), rel=0.1), (detailed, fluid)


def test_the_surface_is_measured_once_per_config() -> None:
    s = scenario(load_stack("staging"))
    assert surface(s.batcher, s.tau) is surface(s.batcher, s.tau)
    busier = replace(s.batcher, max_queue_delay_s=2 * s.batcher.max_queue_delay_s)
    assert surface(busier, s.tau) is not surface(s.batcher, s.tau)


def test_evaluate_is_deterministic_for_a_seed() -> None:
    s = scenario(load_stack("staging"))
    rate = shaped_trace("spike", 2 * trigger_rps(s), HOURS)
    assert evaluate(s, rate, 5) == evaluate(s, rate, 5)


def test_the_comparison_names_a_figure_outside_its_bound() -> None:
    detailed, fluid = runs("production", "busy-ratio", "step", 1.3)
    assert disagreements(detailed, fluid) == []
    off = {
        **fluid,
        "gpu_hours": 1.06 * float(detailed["gpu_hours"] or 0),
        "p95_ms": 0.7 * float(detailed["p95_ms"] or 0),
    }
    assert [d.split(":")[0] for d in disagreements(detailed, off)] == ["gpu_hours", "p95_ms"]
