"""The stream simulator against the real tritonserver streaming tokens, one replica at three load levels.

bench/stream_fidelity.py measured the real server (tests/fixtures/streaming_repo/tokens, which batches continuously
at a stated cost; open-loop Poisson arrivals from fixed seeds over HTTP generate_stream) and committed the figures;
here the simulator runs the same arrivals and token counts with the stream profile the benchmark measured on the
same server first (as `stackctl profile` does) and must land within ±20% of
the time to first token's p95 and the inter-token latency (mean and p95) at each level. Changing the simulator's
step rules, or the fixture's cost without re-running the benchmark, shows up here. (Measuring in the test would make
it a timed assertion on a shared, noisy machine.)
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from bench.simulator_fidelity import TOLERANCE, error
from bench.stream_fidelity import RESULTS, fixture_profile, recorded_profile, simulated

MEASURED: dict[str, Any] = json.loads(RESULTS.read_text())
LEVELS = MEASURED["levels"]
HELD = ("ttft_p95_ms", "itl_mean_ms", "itl_p95_ms")


def test_three_load_levels_were_measured_from_idle_to_near_saturation() -> None:
    assert len({level["rate"] for level in LEVELS}) >= 3
    lowest, busiest = (min(LEVELS, key=lambda level: level["rate"]), max(LEVELS, key=lambda level: level["rate"]))
    # Near saturation the batch is deep: a token waits about twice as long as with the engine mostly idle.
    assert busiest["real"]["itl_mean_ms"] >= 1.5 * lowest["real"]["itl_mean_ms"]


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: f"{level['rate']:g}rps")
def test_simulated_ttft_and_itl_are_within_tolerance(level: dict[str, Any]) -> None:
    real = level["real"]
    sim = simulated(recorded_profile(MEASURED), level["rate"], MEASURED["seconds"], MEASURED["seeds"])
    for key in HELD:
        assert abs(error(sim[key], real[key])) <= TOLERANCE, (key, sim[key], real[key])


def test_the_recorded_profile_is_near_the_models_stated_cost() -> None:
    measured, stated = recorded_profile(MEASURED), fixture_profile()
    assert measured.prefill_seconds == pytest.approx(stated.prefill_seconds, rel=0.2)
    for count, seconds in zip(measured.concurrencies, measured.step_seconds, strict=True):
        assert seconds == pytest.approx(stated.step(count), rel=0.2), count


def test_the_comparison_catches_a_wrong_prefill_or_step_time() -> None:
    busiest = max(LEVELS, key=lambda level: level["rate"])
    profile = recorded_profile(MEASURED)
    slow_prefill = replace(profile, prefill_seconds=2 * profile.prefill_seconds)
    sim = simulated(slow_prefill, busiest["rate"], MEASURED["seconds"], MEASURED["seeds"])
    assert abs(error(sim["ttft_p95_ms"], busiest["real"]["ttft_p95_ms"])) > TOLERANCE
    slow_steps = replace(profile, step_seconds=tuple(1.5 * s for s in profile.step_seconds))
    sim = simulated(slow_steps, busiest["rate"], MEASURED["seconds"], MEASURED["seeds"])
    assert abs(error(sim["itl_mean_ms"], busiest["real"]["itl_mean_ms"])) > TOLERANCE
