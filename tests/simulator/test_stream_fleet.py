"""A streaming deployment over a trace as its time-to-first-token trigger scales it (simulator/stream_fleet.py),
against figures worked out by hand from a two-rate table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.stream_fleet import (
    SATURATED,
    FleetSettings,
    TtftTable,
    capacity,
    oracle_replicas,
    run_fleet,
    ttft_table,
    weighted_p95,
)
from simulator.streams import StreamProfile

TABLE = TtftTable((1.0, 2.0), (np.full(100, 0.1), np.full(100, 0.3)))
"""One replica: a 0.1 s p95 at up to 1 request a second, 0.3 s at up to 2, saturated above."""
SETTINGS = FleetSettings(min_replicas=1, max_replicas=4, objective_seconds=0.5, target=0.8, start_seconds=10)


def test_the_table_reads_the_conservative_neighbour_and_saturates_above() -> None:
    assert [TABLE.p95(r) for r in (0.2, 1.0, 1.01, 2.0, 2.01)] == [0.1, 0.1, 0.3, 0.3, SATURATED]


def test_a_load_one_replica_holds_stays_at_the_floor() -> None:
    run = run_fleet(np.full(300, 0.8), TABLE, SETTINGS)
    # p95 0.1 s over 0.5 s is 0.2, a quarter of the target: the HPA asks for ceil(1 x 0.25) = 1, the floor.
    assert set(run.replicas) == set(run.ready) == {1}
    assert (run.replica_seconds, run.ttft_p95) == (300, 0.1)


def test_the_trigger_scales_out_on_saturation_and_back_within_the_policies() -> None:
    run = run_fleet(np.full(600, 3.0), TABLE, SETTINGS)
    # t=15: 3 requests a second on one replica saturate it: the HPA asks for replicas.max, and the scale-up
    # policy (100% or 3 pods per 30 s from 1) allows 4; they serve from t=25.
    assert (run.replicas[15], run.ready[15], run.ready[24], run.ready[25]) == (4, 1, 1, 4)
    # Each share now 0.75 (p95 0.1 s, a ratio of 0.2): one replica is proposed, but the stabilization window
    # keeps t=15's 4 until t=315; then 25% fewer per 60 s from 4: 3, and from 3 at t=375: 2. At 2 the share is
    # 1.5 (p95 0.3 s, a ratio of 0.6 against 0.8): ceil(2 x 0.75) = 2 holds.
    assert (run.replicas[314], run.replicas[315], run.replicas[374], run.replicas[375]) == (4, 3, 3, 2)
    assert run.replicas[599] == 2
    # The 75 requests of the first 25 s met a saturated replica (4% of 1,800); the p95 of all is the 0.3 s share's.
    assert run.ttft_p95 == 0.3


def test_more_than_five_percent_saturated_reads_as_saturated() -> None:
    # replicas.max 1: every request meets a saturated replica.
    run = run_fleet(np.full(120, 3.0), TABLE, FleetSettings(1, 1, 0.5, 0.8, 10))
    assert run.ttft_p95 == SATURATED


def test_the_weighted_p95_mixes_each_seconds_requests() -> None:
    # 19 requests at 0.1 s and 1 at 0.3 s: the p95 is 0.1 s; one more at 0.3 s, and it is 0.3 s.
    assert weighted_p95(TABLE, np.array([19.0, 1.0]), np.array([19, 1])) == 0.1
    assert weighted_p95(TABLE, np.array([18.0, 2.0]), np.array([18, 1])) == 0.3
    assert weighted_p95(TABLE, np.zeros(3), np.ones(3, dtype=np.int64)) == 0.0


def test_the_oracle_takes_the_fewest_replicas_that_hold() -> None:
    assert list(oracle_replicas([0.5, 3.0, 5.0], TABLE, 0.5, 4)) == [1, 2, 3]


def test_a_profiled_replica_slows_towards_its_capacity() -> None:
    profile = StreamProfile(0.05, (1, 2, 4, 8), (0.04, 0.05, 0.07, 0.11), 8)
    # 8 sequences over 0.05 s + 15 steps of 0.11 s: 4.71 requests a second at most.
    assert capacity(profile, 16) == pytest.approx(8 / (0.05 + 15 * 0.11))
    table = ttft_table(profile, 16, points=6, seconds=300)
    assert table.rates == pytest.approx([capacity(profile, 16) * k / 6 for k in range(1, 7)])
    held = [p for p in table.p95s if math.isfinite(p)]
    # At a sixth of capacity, little more than a prefill (and a step it waits through); slower at each rate up.
    assert 0.05 <= held[0] < 0.2
    assert held == sorted(held)
