"""The simulator's batcher against the real tritonserver, one replica at three load levels.

bench/simulator_fidelity.py measured the real server (the stack's config and flags,
open-loop Poisson load from fixed seeds, bench/loadgen) and committed the figures;
here the simulator runs the same seeds with the committed latency profile and must
land within ±20% of each. Re-measuring a profile without re-running the benchmark,
or changing the batcher's rules, shows up here. (Measuring in the test would make it
a timed assertion on a shared, noisy machine.)
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from bench.simulator_fidelity import RESULTS, TOLERANCE, error, simulated
from simulator import scenario as scenario_module
from simulator.batcher import LatencyProfile

MEASURED: dict[str, Any] = json.loads(RESULTS.read_text())
LEVELS = MEASURED["levels"]


def test_three_load_levels_were_measured() -> None:
    rates = [level["rate"] for level in LEVELS]
    assert len(set(rates)) >= 3
    # Low to high: from batches of about 2 to about 13 at production's 5 ms delay.
    assert max(rates) >= 10 * min(rates)


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: f"{level['rate']:g}rps")
def test_simulated_throughput_and_p95_are_within_tolerance(level: dict[str, Any]) -> None:
    real = level["real"]
    sim = simulated(MEASURED["stack"], MEASURED["model"], level["rate"], MEASURED["seconds"], MEASURED["seeds"])
    for key in ("throughput", "client_p95_ms", "server_p95_ms"):
        assert abs(error(sim[key], real[key])) <= TOLERANCE, (key, sim[key], real[key])


# Busy ratios are small at these levels (0.02-0.2), where a relative bound means little; the simulator's runs
# higher than the real one above 1,000 req/s (0.20 against 0.13 at 2,500), the side that scales out earlier.
BUSY_RATIO_POINTS = 0.1


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: f"{level['rate']:g}rps")
def test_the_counter_signals_match_the_real_servers(level: dict[str, Any]) -> None:
    """Queue time per request within the tolerance; the busy ratio within 0.1 of the real server's."""
    real = level["real"]
    sim = simulated(MEASURED["stack"], MEASURED["model"], level["rate"], MEASURED["seconds"], MEASURED["seeds"])
    assert abs(error(sim["queue_ms"], real["queue_ms"])) <= TOLERANCE, (sim["queue_ms"], real["queue_ms"])
    assert abs(sim["busy_ratio"] - real["busy_ratio"]) <= BUSY_RATIO_POINTS, (sim["busy_ratio"], real["busy_ratio"])


def test_the_comparison_catches_a_wrong_service_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same check with tau(b) tripled: the busiest level's p95 falls outside the tolerance.
    load_profile = scenario_module.load_profile

    def slower(path: Any) -> LatencyProfile:
        profile = load_profile(path)
        return replace(profile, seconds=tuple(3 * t for t in profile.seconds))

    monkeypatch.setattr(scenario_module, "load_profile", slower)
    busiest = max(LEVELS, key=lambda level: level["rate"])
    sim = simulated(MEASURED["stack"], MEASURED["model"], busiest["rate"], MEASURED["seconds"], MEASURED["seeds"])
    assert abs(error(sim["server_p95_ms"], busiest["real"]["server_p95_ms"])) > TOLERANCE
    # And the busy ratio, tripled with it, falls outside its bound.
    assert abs(sim["busy_ratio"] - busiest["real"]["busy_ratio"]) > BUSY_RATIO_POINTS
