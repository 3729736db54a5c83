"""The scaling simulator: the HPA's arithmetic case by case, Triton's batcher rules, and invariants on random traces."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platform_config.loader import load_stack
from platform_config.paths import PROJECT_ROOT
from simulator.batcher import BatcherConfig, LatencyProfile, Outcome, Replica
from simulator.engine import simulate
from simulator.hpa import Behavior, Hpa, Metric, Policy, Rules
from simulator.keda import Fallback, FallbackBehavior, KedaAdapter
from simulator.report import COLUMNS
from simulator.scenario import read_trace, scenario, shaped_trace
from simulator.signals import SignalSpec
from simulator.summaries import summary
from tests.conftest import example_count

QUEUE = (Metric("AverageValue", 10),)


def run(hpa: Hpa, values: list[float], start: int = 2, ready: int | None = None) -> list[int]:
    """Replica counts after each 15 s sync, the metric reading `values` in turn."""
    current, out = start, []
    for i, value in enumerate(values, start=1):
        current = hpa.desired(15.0 * i, current, current if ready is None else ready, [value])
        out.append(current)
    return out


def test_inside_the_tolerance_band_nothing_changes() -> None:
    # AverageValue 10 on 2 replicas: 21 is a ratio of 1.05 (kept), 23 of 1.15 (ceil(23/10) = 3).
    assert run(Hpa(1, 10, QUEUE), [21]) == [2]
    assert run(Hpa(1, 10, QUEUE), [23]) == [3]
    # 18 is 0.90: still inside; 17 is 0.85: down to ceil(1.7) = 2... which is the current count.
    assert run(Hpa(1, 10, QUEUE, Behavior(scale_down=Rules(0, (Policy("Percent", 100, 15),)))), [18, 17]) == [2, 2]


def test_average_value_divides_the_total_value_divides_per_ready_pod() -> None:
    # 15 against AverageValue 10: ceil(15 / 10) = 2 replicas whatever the current count.
    # On 4 replicas the ratio is 15/40 = 0.375, outside the band; a new HPA has no history to stabilize with.
    assert run(Hpa(1, 10, QUEUE), [15], start=4) == [2]
    assert run(Hpa(1, 10, QUEUE, Behavior(scale_down=Rules(0, (Policy("Percent", 100, 15),)))), [15], start=4) == [2]
    # 15 against Value 10 on 2 ready pods: ratio 1.5 -> ceil(1.5 x 2) = 3.
    assert run(Hpa(1, 10, (Metric("Value", 10),)), [15], start=2) == [3]
    # Value uses ready pods, not the current count: 2 current, 1 ready -> ceil(1.5 x 1) = 2.
    assert run(Hpa(1, 10, (Metric("Value", 10),)), [15], start=2, ready=1) == [2]


def test_several_metrics_take_the_largest_proposal() -> None:
    hpa = Hpa(1, 10, (Metric("AverageValue", 10), Metric("Value", 0.8)))
    # Queue says ceil(35 / 10) = 4; memory 0.8 is on target (keep 2). Max: 4.
    assert hpa.desired(15, 2, 2, [35, 0.8]) == 4


UP_POLICIES = (Policy("Pods", 4, 60), Policy("Percent", 100, 60))


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        # Max: the larger of +4 pods and +100% per 60 s. From 2: 6 (2+4 > 2x2); the +4 counts
        # against the period until it is 60 s old (15 s sync: at 75 s); then 12 (6x2 > 6+4), then 20.
        ("Max", [6, 6, 6, 6, 12, 12, 12, 12, 20]),
        # Min: the smaller: 4 (2x2 < 2+4), then 8 once the period has passed, then 12 (8+4 < 16).
        ("Min", [4, 4, 4, 4, 8, 8, 8, 8, 12]),
    ],
)
def test_pods_and_percent_policies_with_max_and_min_select(select: str, expected: list[int]) -> None:
    behavior = Behavior(scale_up=Rules(0, UP_POLICIES, select))  # type: ignore[arg-type]
    assert run(Hpa(1, 20, QUEUE, behavior), [200.0] * 9) == expected


def test_disabled_select_policy_never_scales_that_way() -> None:
    behavior = Behavior(scale_up=Rules(0, UP_POLICIES, "Disabled"))
    assert run(Hpa(1, 20, QUEUE, behavior), [200.0] * 3) == [2, 2, 2]


def test_percent_down_rounds_down_and_pods_down_subtracts() -> None:
    # 50% per 15 s from 10: floor(10 x 0.5) = 5, then floor(5 x 0.5) = 2, then the metric's 1.
    behavior = Behavior(scale_down=Rules(0, (Policy("Percent", 50, 15),)))
    assert run(Hpa(1, 20, QUEUE, behavior), [1.0] * 3, start=10) == [5, 2, 1]
    # 3 pods per 15 s from 10: 7, 4, 1.
    behavior = Behavior(scale_down=Rules(0, (Policy("Pods", 3, 15),)))
    assert run(Hpa(1, 20, QUEUE, behavior), [1.0] * 3, start=10) == [7, 4, 1]


def test_stabilization_windows_in_both_directions() -> None:
    # Down: 60 s window, the max recommendation of the last 60 s wins. Readings 60 (-> 6) then 10 (-> 1):
    # the 6 at 15 s holds until it leaves the window (at 75 s), then 1.
    down = Behavior(scale_down=Rules(60, (Policy("Percent", 100, 15),)))
    assert run(Hpa(1, 20, QUEUE, down), [60, 10, 10, 10, 10, 10], start=6) == [6, 6, 6, 6, 1, 1]
    # Up: 30 s window, the min recommendation of the last 30 s wins: a one-sync burst does not scale.
    up = Behavior(scale_up=Rules(30, (Policy("Percent", 100, 15),)))
    assert run(Hpa(1, 20, QUEUE, up), [20, 80, 20, 80, 80, 80], start=2) == [2, 2, 2, 2, 4, 8]


def test_legacy_path_doubles_or_adds_up_to_four_and_stabilizes_down_for_300_s() -> None:
    # No behavior: per sync at most max(2 x current, 4): 1 -> 4 -> 8 -> 16 -> 20 (the max).
    assert run(Hpa(1, 20, QUEUE), [500.0] * 5, start=1) == [4, 8, 16, 20, 20]
    # Down: the highest recommendation of the last 300 s: 20 holds for 300 s after the last high reading.
    readings = [200.0] + [10.0] * 21
    counts = run(Hpa(1, 20, QUEUE), readings, start=20)
    assert counts[:20] == [20] * 20  # syncs at 15..300 s: the 200 at 15 s is inside the window
    assert counts[20] == 1  # at 315 s it has left


def test_an_unreadable_metric_never_scales_down() -> None:
    hpa = Hpa(1, 10, (Metric("AverageValue", 10), Metric("AverageValue", 0.8)))
    # Both unreadable: nothing changes.
    assert hpa.desired(15, 4, 4, [None, None]) == 4
    # One unreadable, the other proposes 1: kept at 4 (the controller does not scale down on partial metrics).
    assert hpa.desired(30, 4, 4, [None, 0.8]) == 4
    # One unreadable, the other proposes 6: scale-up goes ahead.
    assert hpa.desired(45, 4, 4, [60.0, None]) == 6


def test_keda_falls_back_after_the_failure_threshold() -> None:
    keda = KedaAdapter((10.0, 0.8), Fallback(failure_threshold=2, replicas=4))
    # Two failures are errors; the third exceeds the threshold: replicas x target, so the HPA proposes 4.
    assert keda.read([None, None], current=2) == [None, None]
    assert keda.read([None, None], current=2) == [None, None]
    assert keda.read([None, None], current=2) == [40.0, 3.2]
    assert keda.falling_back()
    # currentReplicasIfHigher: a deployment above the fallback count stays where it is.
    assert keda.read([None, None], current=7) == pytest.approx([70.0, 5.6])
    # One good read resets that trigger's count.
    assert keda.read([12.0, None], current=7) == pytest.approx([12.0, 5.6])
    queue, gpu = keda.read([None, None], current=7)
    assert queue is None
    assert gpu == pytest.approx(5.6)


@pytest.mark.parametrize(
    ("behavior", "current", "expected"),
    [("static", 7, 4), ("currentReplicas", 7, 7), ("currentReplicasIfHigher", 2, 4), ("currentReplicasIfHigher", 7, 7)],
)
def test_fallback_behaviors(behavior: FallbackBehavior, current: int, expected: int) -> None:
    assert Fallback(0, 4, behavior).replica_count(current) == expected


def test_without_a_fallback_failures_stay_errors() -> None:
    keda = KedaAdapter((10.0,))
    assert [keda.read([None], current=3) for _ in range(5)] == [[None]] * 5


TAU = LatencyProfile((1, 4), (0.001, 0.001))


def batches(config: BatcherConfig, arrivals: list[float], until: float = 10.0) -> tuple[list[list[float]], Outcome]:
    replica = Replica(config, TAU)
    replica.offer(np.array(arrivals))
    out = Outcome()
    replica.advance(until, out)
    return split(out), out


def split(out: Outcome) -> list[list[float]]:
    """Arrival times (ms) of each batch that ran."""
    arrivals = np.concatenate(out.arrivals) if out.arrivals else np.zeros(0)
    sizes = np.concatenate(out.batch_sizes) if out.batch_sizes else np.zeros(0, np.int64)
    return [list(np.round(b * 1000, 3)) for b in np.split(arrivals, np.cumsum(sizes)[:-1])] if len(sizes) else []


def test_a_batch_leaves_when_the_oldest_has_waited_the_delay() -> None:
    found, out = batches(BatcherConfig(4, 0.005), [0.0, 0.001, 0.002])
    assert found == [[0.0, 1.0, 2.0]]
    # Dispatched at 5 ms, done 1 ms later.
    assert list(np.round(out.latencies[0] * 1000, 3)) == [6.0, 5.0, 4.0]


def test_a_full_batch_leaves_at_once_and_the_rest_waits() -> None:
    found, out = batches(BatcherConfig(4, 0.005), [0.0, 0.001, 0.002, 0.003, 0.004])
    assert found == [[0.0, 1.0, 2.0, 3.0], [4.0]]
    latencies = np.round(out.latencies[0] * 1000, 3)
    assert latencies[0] == 4.0  # full at 3 ms, +1 ms
    assert latencies[4] == 6.0  # alone: leaves at 4 + 5 ms delay, done at 10 ms


def test_a_busy_instance_holds_the_queue_and_a_full_queue_rejects() -> None:
    config = BatcherConfig(2, 0.0, max_queue_size=2)
    slow = LatencyProfile((1, 2), (0.010, 0.010))
    replica = Replica(config, slow)
    replica.offer(np.array([0.0, 0.001, 0.002, 0.003, 0.004]))
    out = Outcome()
    replica.advance(1.0, out)
    # Delay 0: the first request goes alone at 0; while it runs (10 ms) the queue takes 2, rejects 2.
    assert list(np.concatenate(out.batch_sizes)) == [1, 2]
    assert list(np.round(np.concatenate(out.rejected_at) * 1000)) == [3.0, 4.0]


def test_requests_past_the_timeout_are_rejected() -> None:
    config = BatcherConfig(1, 0.0, timeout_s=0.005)
    slow = LatencyProfile((1, 2), (0.010, 0.010))
    replica = Replica(config, slow)
    replica.offer(np.array([0.0, 0.001, 0.002]))
    out = Outcome()
    replica.advance(1.0, out)
    # The instance frees at 10 ms: the two queued have waited 9 and 8 ms > 5 ms.
    assert list(np.concatenate(out.batch_sizes)) == [1]
    assert len(np.concatenate(out.rejected_at)) == 2


def test_a_queue_growing_under_overload_is_moved_once_per_doubling_and_served_in_order() -> None:
    """Twice the load one instance serves, for 2,000 steps of a second: the queue grows by 1,000 a step, and
    its buffer is replaced about once per doubling (log2 of 2,000,000 is 21), not on every step, which made a
    long overload quadratic. The requests still leave in arrival order, each after all before it."""
    config = BatcherConfig(1, 0.0)
    slow = LatencyProfile((1, 2), (0.001, 0.001))
    replica = Replica(config, slow)
    out = Outcome()
    moves, buffer = 0, replica.queue.base
    for second in range(2000):
        replica.offer(second + np.arange(2000) / 2000)
        replica.advance(second + 1.0, out)
        # The previous buffer is held, so a new one is a new object, never a reused id.
        moves, buffer = (moves, buffer) if replica.queue.base is buffer else (moves + 1, replica.queue.base)
    served = np.concatenate(out.arrivals)
    assert replica.queued == 2000 * 2000 - len(served) > 1_900_000
    assert moves <= 24
    assert np.all(np.diff(served) > 0)


def test_a_preferred_size_leaves_without_waiting_for_the_delay() -> None:
    # Preferred 2: the second arrival fills it at 1 ms; the third waits alone for the delay.
    found, out = batches(BatcherConfig(8, 0.005, preferred_sizes=(2,)), [0.0, 0.001, 0.002])
    assert found == [[0.0, 1.0], [2.0]]
    assert list(np.round(out.latencies[0] * 1000, 3)) == [2.0, 1.0, 6.0]


def test_a_free_instance_takes_the_largest_preferred_size_that_fits() -> None:
    # One slow instance (10 ms), a 50 ms delay: 2 (preferred) leave at once; 7 queue meanwhile.
    # At 10 ms: 4 of them (the largest preferred that fits); at 20 ms: 2; the last waits for the delay.
    slow = LatencyProfile((1, 8), (0.010, 0.010))
    replica = Replica(BatcherConfig(8, 0.050, preferred_sizes=(2, 4)), slow)
    replica.offer(np.array([0.0, 0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007]))
    out = Outcome()
    replica.advance(1.0, out)
    assert list(np.concatenate(out.batch_sizes)) == [2, 4, 2, 1]
    assert round(float(out.latencies[0][-1]) * 1000, 3) == 60.0  # left at 7 + 50 ms, done 10 ms later


def test_once_the_delay_has_run_out_the_queue_goes_as_it_is() -> None:
    # The same queue with a 5 ms delay: at 10 ms the oldest has waited 9 ms, so all 6 go, preferred or not.
    slow = LatencyProfile((1, 8), (0.010, 0.010))
    replica = Replica(BatcherConfig(8, 0.005, preferred_sizes=(2, 4)), slow)
    replica.offer(np.array([0.0, 0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006]))
    out = Outcome()
    replica.advance(1.0, out)
    assert list(np.concatenate(out.batch_sizes)) == [2, 6]


def test_the_request_overhead_follows_the_measured_distribution() -> None:
    # Overhead percentiles 0..100 from 1 to 3 ms: uniform, so the mean is 2 ms and every value is inside.
    profile = LatencyProfile((1, 4), (0.001, 0.001), overhead_percentiles=(0.001, 0.002, 0.003))
    replica = Replica(BatcherConfig(1, 0.0, dynamic=False), profile, seed=7)
    replica.offer(np.arange(2000) * 0.01)
    out = Outcome()
    replica.advance(100.0, out)
    overhead = np.concatenate(out.latencies) - 0.001
    assert overhead.min() >= 0.001
    assert overhead.max() <= 0.003
    assert abs(overhead.mean() - 0.002) < 0.0001


PRODUCTION = scenario(load_stack("production"))


def test_the_scenario_follows_the_stacks_rendered_config() -> None:
    s = PRODUCTION
    assert (s.deployment, s.model) == ("general", "classifier")
    assert s.batcher == BatcherConfig(32, 0.005, (8, 16), 3, 0, 0.1, True)
    assert (s.min_replicas, s.max_replicas, s.signal) == (2, 10, SignalSpec("demand", 0.82))
    assert s.slo_seconds == 0.2


def test_a_prometheus_outage_holds_the_fallback_count() -> None:
    # Production: floor 2, fallback {failureThreshold: 2, replicas: 4, currentReplicasIfHigher}; no load. Scaling
    # policies of its own (up: 100% or 4 pods per 15 s; down: 10% a minute after 600 s), not the planned ones.
    up = Rules(0, (Policy("Percent", 100, 15), Policy("Pods", 4, 15)))
    s = replace(PRODUCTION, pod_start_seconds=20, behavior=Behavior(up, Rules(600, (Policy("Percent", 10, 60),))))
    timeline = simulate(s, np.zeros(900), seed=1, outages=[(300, 300)])
    # Syncs at 300 and 315 fail (errors: nothing changes); at 330 the third failure exceeds the threshold.
    assert timeline.desired[329] == 2
    assert timeline.desired[330] == 4
    # After the outage the readings are 0 again, but the 600 s down-stabilization keeps 4 to the end.
    assert set(timeline.desired[330:]) == {4}
    assert timeline.metrics_failing == 300
    assert timeline.fallback == 270  # from the 330 s sync to the first good read at 600 s
    # No fallback configured: the outage only freezes the count.
    frozen = simulate(replace(s, fallback=None), np.zeros(900), seed=1, outages=[(300, 300)])
    assert set(frozen.desired) == {2}


def test_a_gpu_memory_footprint_above_the_target_drives_the_deployment_to_max() -> None:
    # Each pod's models fill 90% of its GPU against a target of 0.8: every sync proposes more pods, with no load.
    idle = np.zeros(1200)
    full = simulate(replace(PRODUCTION, gpu_memory_ratio=0.9, pod_start_seconds=20), idle, seed=1)
    assert full.desired[-1] == PRODUCTION.max_replicas
    # A 30% footprint leaves the queue trigger in charge: the floor holds.
    light = simulate(replace(PRODUCTION, gpu_memory_ratio=0.3, pod_start_seconds=20), idle, seed=1)
    assert set(light.desired) == {PRODUCTION.min_replicas}


@settings(max_examples=example_count(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    levels=st.lists(st.floats(min_value=0, max_value=30_000), min_size=2, max_size=5),
    seed=st.integers(0, 2**16),
)
def test_invariants_on_random_traces(levels: list[float], seed: int) -> None:
    s = replace(PRODUCTION, pod_start_seconds=20, node_provision_seconds=40)
    rate = np.repeat(np.array(levels), 60)
    timeline = simulate(s, rate, seed)
    # Replicas stay in [min, max].
    assert timeline.desired.min() >= s.min_replicas
    assert timeline.desired.max() <= s.max_replicas
    # Every request is served, rejected or still queued.
    assert timeline.arrived == timeline.served + timeline.dropped + timeline.in_flight
    # Nothing scales up before a scrape and then an HPA sync could have seen load.
    first_load = int(np.argmax(rate > 0)) if (rate > 0).any() else len(rate)
    ups = [t for t, d in timeline.hpa_changes if d > s.min_replicas]
    if ups:
        assert ups[0] >= first_load + 1
    # Nothing scales down within the down-stabilization window of the last higher recommendation.
    window = s.behavior.scale_down.stabilization_window_seconds
    for (t0, d0), (t1, d1) in zip(timeline.hpa_changes, timeline.hpa_changes[1:], strict=False):
        if d1 < d0:
            assert t1 - t0 >= min(window, 15)


def simulate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m stackctl simulate ARGS` from the project root, as a user runs it."""
    command = [sys.executable, "-m", "stackctl", "simulate", *args]
    return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False)


def test_simulate_writes_timeline_summary_and_plot(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("t_seconds,rps\n0,2000\n120,12000\n300,12000\n")
    assert len(read_trace(trace)) == 301
    result = simulate_cli(
        "--stack", "production", "--trace", str(trace), "--out", str(tmp_path / "out"), "--metrics-outage", "200:60"
    )
    assert result.returncode == 0, result.stderr
    assert "metrics_failing_seconds: 60" in result.stdout
    with (tmp_path / "out" / "timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 301
    summary_json = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "slo_violation_seconds",
        "rejected_pct",
        "gpu_hours",
        "reaction_seconds",
        "fallback_seconds",
    } <= set(summary_json)
    assert (tmp_path / "out" / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    # The step from 2000 to 12000 req/s scales the deployment up.
    assert max(int(r["desired_replicas"]) for r in rows) > 2


def test_same_seed_same_result() -> None:
    rate = shaped_trace("spike", 8000, hours=0.1)
    a, b = simulate(PRODUCTION, rate, 7), simulate(PRODUCTION, rate, 7)
    assert summary(PRODUCTION, a) == summary(PRODUCTION, b)
    assert np.array_equal(a.desired, b.desired)


def test_an_unknown_shape_and_a_missing_profile_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown profile 'sawtooth'; expected one of step, diurnal, spike"):
        shaped_trace("sawtooth", 10)
    with pytest.raises(ValueError, match="model 'nope' is not served by deployment 'general'"):
        scenario(load_stack("production"), "general", "nope")


@pytest.mark.parametrize("bad", ["600", "600:0", "-5:60", "a:b"])
def test_a_bad_metrics_outage_is_refused_with_the_expected_form(bad: str) -> None:
    result = simulate_cli("--stack", "dev", "--profile", "step", f"--metrics-outage={bad}")
    assert result.returncode == 2
    assert (
        f"argument --metrics-outage: expected START:SECONDS with START >= 0 and SECONDS > 0, got {bad!r}"
        in result.stderr
    )
    assert "Traceback" not in result.stderr
