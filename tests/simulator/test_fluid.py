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
from typing import Literal

import numpy as np
import pytest

from platform_config.loader import load_stack
from simulator.engine import simulate
from simulator.fluid import evaluate, evaluate_models
from simulator.fluid_reference import evaluate_reference
from simulator.hpa import Behavior, Hpa, Metric, Policy, Rules
from simulator.hpa_compiled import hpa_desired, hpa_inputs, new_hpa_state
from simulator.scenario import Scenario, at_floor_one, scenario, shaped_trace, trigger_rps
from simulator.signals import SIGNALS, Signal, SignalSpec, derived_target
from simulator.summaries import model_summaries, summary
from simulator.surface import surface

HOURS = 0.25
SEED = 3
TARGETS = {"queue-depth": 10.0, "busy-ratio": 0.75, "demand": 0.75}
"""The targets of the signals a stack sets, as the stacks' defaults give them."""
MULTIPLES = (0.6, 1.3, 2.7)


def with_signal(s: Scenario, name: Signal | None) -> Scenario:
    if name is None:
        return s
    return replace(s, signal=SignalSpec(name, derived_target(name, s.batcher, TARGETS)))


Summary = dict[str, float | int | None]


FORMER_SCALE_UP = Rules(30, (Policy("Percent", 50, 60), Policy("Pods", 1, 60)), "Max")
"""Production's scale-up before it scaled on demand."""


def runs(
    stack: str, signal: Signal | None, shape: str, multiple: float, scale_up: Rules | None = None
) -> tuple[Summary, Summary]:
    """The detailed engine's summary and the fluid model's, on the same trace and seed; `scale_up` in place of the
    stack's."""
    s = with_signal(scenario(load_stack(stack)), signal)
    if scale_up is not None:
        s = replace(s, behavior=Behavior(scale_up, s.behavior.scale_down))
    # dev idles at zero (replicas.min 0, issue 41): the bounds above are measured at a floor of 1 or more, where
    # dev was before; the two models at zero against each other: tests/simulator/test_simulate_zero.py.
    s = at_floor_one(s) if s.scales_to_zero else s
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
@pytest.mark.parametrize("shape", ["step", "diurnal", "spike"])
@pytest.mark.parametrize("stack", ["production", "staging"])
def test_demand_matches_the_detailed_engine(stack: str, shape: str) -> None:
    """The demand signal reads every request that ends, served or rejected: at 2.7x the trigger load, where the
    floor rejects until new pods start, the two models still agree."""
    assert disagreements(*runs(stack, "demand", shape, 2.7)) == []


@pytest.mark.slow
@pytest.mark.parametrize("multiple", [1.3, 2.7])
@pytest.mark.parametrize("signal", ["queue-excess", "queue-time"])
def test_queue_signals_match_the_detailed_engine(signal: Signal, multiple: float) -> None:
    """Under production's former scale-up (50% or a pod a minute, after 30 s), which the bounds were measured on: under
    its demand-era scale-up (100% per 15 s) queue-excess at 1.3x tips the HPA's ceil() a pod apart for minutes, fluid
    1.154 against detailed 1.273 GPU-hours (the module's docstring: up to 11-22% of a 15-minute run)."""
    assert disagreements(*runs("production", signal, "spike", multiple, FORMER_SCALE_UP)) == []


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


POLICY_TYPES: tuple[Literal["Pods", "Percent"], ...] = ("Pods", "Percent")
SELECT_POLICIES: tuple[Literal["Max", "Min", "Disabled"], ...] = ("Max", "Min", "Disabled")


def random_behavior(rng: np.random.Generator) -> Behavior:
    """A behavior with random windows, policies and select policies."""

    def rules() -> Rules:
        policies = tuple(
            Policy(POLICY_TYPES[int(rng.integers(2))], int(rng.integers(1, 200)), int(rng.integers(1, 120)) * 15)
            for _ in range(int(rng.integers(1, 4)))
        )
        select = SELECT_POLICIES[int(rng.choice(3, p=[0.6, 0.3, 0.1]))]
        return Rules(float(rng.choice([0, 15, 60, 300, 600])), policies, select)

    return Behavior(rules(), rules())


def random_scenario(rng: np.random.Generator) -> Scenario:
    """A stack's scenario with its signal, HPA behavior, triggers, queue bound, pool, scrape and drain drawn at random
    (its batching config kept: one surface per stack)."""
    s = with_signal(scenario(load_stack(str(rng.choice(["dev", "staging", "production"])))), rng.choice(SIGNALS))
    low = int(rng.integers(1, 4))
    per_node = int(rng.integers(1, 5))
    return replace(
        s,
        min_replicas=low,
        max_replicas=low + int(rng.integers(0, 8)),
        behavior=random_behavior(rng),
        gpu_memory_ratio=float(rng.uniform(0.1, 0.9)) if rng.random() < 0.4 else None,
        gpu_memory_target=float(rng.uniform(0.3, 0.9)),
        batcher=replace(s.batcher, max_queue_size=int(rng.choice([0, 0, 8, 64, 500]))),
        scrape_seconds=float(rng.choice([5.0, 10.0, 15.0, 30.0])),
        gpus_per_pod=int(rng.integers(1, 3)),
        gpus_per_node=per_node,
        max_nodes=int(rng.integers(1, 12)),
        warm_nodes=int(rng.integers(0, 4)),
        node_provision_seconds=float(rng.choice([0.0, 45.0, 240.0])),
        pod_start_seconds=float(rng.uniform(0, 120)),
        drain_seconds=float(rng.choice([0.0, 10.0, 30.0, 95.5])),
    )


def test_the_compiled_control_plane_gives_the_reference_results() -> None:
    """evaluate's compiled scrape, HPA and rescale against evaluate_reference's engine objects (pods.Pod,
    control_plane.scrape, simulator.keda, simulator.hpa, control_plane.rescale and drained): the same summary, to the
    bit, on random scenarios, loads and seeds."""
    rng = np.random.default_rng(39)
    for case in range(100):
        s = random_scenario(rng)
        shape = str(rng.choice(["step", "spike", "diurnal"]))
        rate = shaped_trace(shape, float(rng.uniform(0.3, 3.0)) * trigger_rps(s), float(rng.choice([0.25, 0.5])))
        compiled, reference = evaluate(s, rate, case), evaluate_reference(s, rate, case)
        differ = {k: (compiled[k], reference[k]) for k in reference if not _same(compiled[k], reference[k])}
        assert not differ, (case, shape, s, differ)


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b))


def test_the_compiled_hpa_decides_as_simulator_hpa() -> None:
    """hpa_compiled.hpa_desired against hpa.Hpa.desired, sync after sync, on random behaviors, metrics and values."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        # None: the HPA's legacy path, which Hpa takes without a behavior.
        behavior = random_behavior(rng) if rng.random() < 0.8 else None
        metrics = tuple(
            Metric(("AverageValue", "Value")[int(rng.integers(2))], float(rng.uniform(0.2, 20)))
            for _ in range(int(rng.integers(1, 3)))
        )
        low = int(rng.integers(1, 4))
        hpa = Hpa(low, low + int(rng.integers(0, 12)), metrics, behavior)
        inputs, state = hpa_inputs(metrics, behavior), new_hpa_state(200)
        current = low
        for sync in range(1, 200):
            now, ready = sync * 15.0, int(rng.integers(0, current + 1))
            values: list[float | None] = [float(rng.uniform(0, 3) * m.target * max(current, 1)) for m in metrics]
            expected = hpa.desired(now, current, ready, values)
            got = hpa_desired(now, current, ready, np.array(values), hpa.min_replicas, hpa.max_replicas, inputs, state)
            assert got == expected, (behavior, metrics, sync)
            current = expected


# Several models on one pod (Scenario.others): the fluid model's contention (fluid_run.data_plane) against the detailed
# engine's (pods.Shared), two models of production's `general`, 40% and 60% of the load, 15-minute traces at
# 0.6x, 1.3x and 2.7x of the trigger load. Measured (2 cores, seed 3) with production on the demand signal and queues
# bounded by time: GPU-hours equal in all 9 cases; rejected within 0.06 points, in total and per model; p95 within 30%
# in 8 cases. Where a second's load sits at production's queue timeout the p95 lands on either side of the timeout's
# cliff (the detailed engine's at about 160 ms, a request timed out at preprocess's 150 ms queue timeout plus its
# batch; the fluid model's below it): spike 0.6x 89.9 vs 159.7 ms.
AT_THE_TIMEOUT_CLIFF = pytest.mark.xfail(strict=True, reason="p95 on the other side of the queue timeout's cliff")
CLIFF = {("spike", 0.6)}
MIX = (0.4, 0.6)


def two_models() -> Scenario:
    return scenario(load_stack("production"), "general", "classifier", others=["preprocess"], mix=MIX)


def shared_disagreements(detailed: Summary, fluid: Summary) -> list[str]:
    """`disagreements`, with p95 within 30% (the module's bound is 20%)."""
    found = [f for f in disagreements(detailed, fluid) if not f.startswith("p95_ms")]
    p95 = float(fluid["p95_ms"] or 0), float(detailed["p95_ms"] or 0)
    if abs(p95[0] - p95[1]) > 0.3 * p95[1]:
        found.append(f"p95_ms: fluid {p95[0]:.4g}, detailed {p95[1]:.4g}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("shape", "multiple"),
    [
        pytest.param(shape, multiple, marks=AT_THE_TIMEOUT_CLIFF if (shape, multiple) in CLIFF else ())
        for shape in ("step", "diurnal", "spike")
        for multiple in MULTIPLES
    ],
)
def test_two_models_sharing_a_gpu_match_the_detailed_engine(shape: str, multiple: float) -> None:
    s = two_models()
    base = shaped_trace(shape, multiple * trigger_rps(s), HOURS)
    rate = np.stack([base * share for share in MIX], axis=1)
    timeline = simulate(s, rate, SEED)
    detailed, per_model = summary(s, timeline), model_summaries(timeline)
    fluid, fluid_models = evaluate_models(s, rate, SEED)
    found = shared_disagreements(detailed, fluid)
    for model in s.models:
        ours, theirs = fluid_models[model]["rejected_pct"], per_model[model]["rejected_pct"]
        if abs(ours - theirs) > max(0.5, 0.15 * theirs):
            found.append(f"{model} rejected_pct: fluid {ours:.4g}, detailed {theirs:.4g}")
    assert found == []


def random_models(rng: np.random.Generator) -> Scenario:
    """random_scenario's control plane with two or three models of staging's or production's `general`, at a
    random mix."""
    stack = str(rng.choice(["staging", "production"]))
    served = [m for m in ("classifier", "preprocess", "ranker") if stack == "staging" or m != "ranker"]
    count = int(rng.integers(2, len(served) + 1))
    chosen = list(rng.permutation(served)[:count])
    mix = rng.dirichlet(np.ones(count))
    models = scenario(load_stack(stack), "general", chosen[0], others=chosen[1:], mix=tuple(mix))
    s = random_scenario(rng)
    # The control plane drawn; the models', their batchers (a random queue bound each) and the mix from `models`.
    others = tuple(
        replace(m, batcher=replace(m.batcher, max_queue_size=int(rng.choice([0, 0, 8, 64, 500]))))
        for m in models.others
    )
    return replace(
        s,
        model=models.model,
        batcher=replace(models.batcher, max_queue_size=s.batcher.max_queue_size),
        tau=models.tau,
        others=others,
        mix=models.mix,
        signal=SignalSpec(s.signal.name, derived_target(s.signal.name, models.batcher, TARGETS)),
    )


def test_the_compiled_control_plane_gives_the_reference_results_with_several_models() -> None:
    """As the one-model test: with several models the reference's pods are the engine's (pods.new_pod: a Shared
    replica per model), scraped by control_plane.scrape (a series per pod and model, signals.busiest)."""
    rng = np.random.default_rng(41)
    for case in range(40):
        s = random_models(rng)
        shape = str(rng.choice(["step", "spike", "diurnal"]))
        base = shaped_trace(shape, float(rng.uniform(0.3, 3.0)) * trigger_rps(s), 0.25)
        rate = np.stack([base * share for share in s.mix], axis=1)
        compiled, reference = evaluate(s, rate, case), evaluate_reference(s, rate, case)
        differ = {k: (compiled[k], reference[k]) for k in reference if not _same(compiled[k], reference[k])}
        assert not differ, (case, shape, s.models, differ)


def test_a_model_runs_slower_beside_a_busy_one() -> None:
    """Contention: the classifier's own load, with and without preprocess busy beside it on the same pods."""
    s = two_models()
    base = shaped_trace("diurnal", 0.6 * trigger_rps(s), HOURS)
    rate = np.stack([base * MIX[0], base * MIX[1]], axis=1)
    idle = np.stack([base * MIX[0], np.zeros_like(base)], axis=1)
    _, busy = evaluate_models(s, rate, SEED)
    _, alone = evaluate_models(s, idle, SEED)
    assert busy["classifier"]["p95_ms"] > 1.1 * alone["classifier"]["p95_ms"]


def test_several_models_need_a_column_each() -> None:
    with pytest.raises(ValueError, match="1 columns of rates for the 2 models classifier, preprocess"):
        evaluate(two_models(), shaped_trace("step", 100.0, HOURS), SEED)
