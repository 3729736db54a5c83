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
