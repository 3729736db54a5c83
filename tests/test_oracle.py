"""The oracle: each second's fewest replicas at the SLO, held to hand-computed cases; summary.json and plan.md
carry its GPU-hours and the run's multiple of them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from platform_config.loader import load_stack
from simulator.fluid import surface
from simulator.oracle import Oracle, oracle, replicas
from simulator.scenario import Scenario, capacity_rps, scenario
from stackctl.main import main


def test_the_oracle_of_ten_seconds_by_hand() -> None:
    # 100 req/s a replica, floor 1, ceiling 5, 2 GPUs a pod. Per second: 0 -> 1 (the floor), 50 -> 1, 100 -> 1
    # (exactly one replica's worth), 101 -> 2, 250 -> 3, 300 -> 3, 1000 -> 5 (10 needed, the ceiling), 40 -> 1,
    # 0 -> 1, 199 -> 2: 20 replica-seconds, 40 GPU-seconds, 40 / 3600 GPU-hours.
    load = np.array([0, 50, 100, 101, 250, 300, 1000, 40, 0, 199], dtype=np.float64)
    counts = replicas(load, 100.0, 1, 5)
    assert counts.tolist() == [1, 1, 1, 2, 3, 3, 5, 1, 1, 2]
    bound = Oracle(100.0, counts, 2)
    assert bound.gpu_hours == pytest.approx(40 / 3600)
    # A run that used 0.02 GPU-hours over the same ten seconds: 72 GPU-seconds, 1.8x the oracle's 40.
    assert bound.figures(0.02) == {
        "oracle_gpu_hours": pytest.approx(40 / 3600),
        "oracle_ratio": pytest.approx(1.8),
        "oracle_replica_rps": 100.0,
    }


def test_with_no_rate_held_the_oracle_runs_the_ceiling_wherever_there_is_load() -> None:
    assert replicas(np.array([0.0, 1.0, 0.0]), 0.0, 2, 6).tolist() == [2, 6, 2]


def production() -> Scenario:
    return scenario(load_stack("production"))


def test_a_replica_carries_its_full_batch_capacity_where_the_slo_holds_at_saturation() -> None:
    s = production()
    sf = surface(s.batcher, s.tau)
    # Production's batching keeps p95 under 20 ms up to saturation, far inside its 200 ms SLO.
    assert sf.saturated_p95 < 0.02
    assert float(sf.p95.max()) < 0.02
    assert sf.slo_rate(s.slo_seconds) == capacity_rps(s)
    # Floor 2, ceiling 10: idle -> 2, 2.5 replicas' worth -> 3, 100 replicas' worth -> 10.
    cap = capacity_rps(s)
    bound = oracle(s, np.array([0.0, 2.5 * cap, 100 * cap]))
    assert (s.min_replicas, s.max_replicas) == (2, 10)
    assert bound.replicas.tolist() == [2, 3, 10]
    assert bound.gpu_hours == pytest.approx(15 * s.gpus_per_pod / 3600)


def test_a_tighter_slo_caps_a_replica_below_the_first_rate_that_breaks_it() -> None:
    s = production()
    sf = surface(s.batcher, s.tau)
    p95 = np.full(len(sf.rates), 0.005)
    p95[5], p95[9] = 0.050, 0.050
    broken = replace(sf, p95=p95)
    # The first rate over the SLO is the sixth measured: a replica carries the fifth, whatever follows.
    assert broken.slo_rate(0.010) == float(sf.rates[4])
    assert broken.slo_rate(0.100) == sf.capacity
    # Every measured rate holds it, saturation does not: the last measured rate.
    assert replace(sf, p95=np.full(len(sf.rates), 0.005), saturated_p95=0.050).slo_rate(0.010) == float(sf.rates[-1])
    # Not even the lightest measured rate holds it.
    assert replace(sf, p95=np.full(len(sf.rates), 0.050)).slo_rate(0.010) == 0.0


def test_simulate_writes_the_oracle_beside_the_runs_gpu_hours(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Staging: floor 1, ceiling 4, one GPU a pod; a replica carries 8,741 req/s (2 instances x 16 / tau(16)), its
    # p95 within the 300 ms SLO up to saturation. Seconds 0-59 at 1,000 req/s: 1 replica; 60-89 at 20,000: 3
    # (2.29 needed); 90-118 at 40,000: 4 (4.58 needed, the ceiling); 119 at 0: the floor, 1.
    # 60 + 90 + 116 + 1 = 267 GPU-seconds.
    s = scenario(load_stack("staging"))
    assert (s.min_replicas, s.max_replicas, s.gpus_per_pod) == (1, 4, 1)
    assert round(capacity_rps(s)) == 8741
    trace = tmp_path / "trace.csv"
    trace.write_text("t_seconds,rps\n0,1000\n60,20000\n90,40000\n119,0\n")
    out = tmp_path / "out"
    # The rise to 40,000 req/s outruns staging's scale-out: the run misses its SLO (exit 1), its figures written.
    assert main(["simulate", "--stack", "staging", "--trace", str(trace), "--no-plot", "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    result = json.loads((out / "summary.json").read_text())
    assert result["oracle_gpu_hours"] == pytest.approx(267 / 3600)
    assert result["oracle_ratio"] == pytest.approx(result["gpu_hours"] / (267 / 3600))
    assert result["oracle_replica_rps"] == capacity_rps(s)
    assert f"oracle_gpu_hours: {267 / 3600:.1f}" in printed
    assert "oracle_ratio: " in printed


def test_plan_reports_the_oracle_per_candidate_and_for_the_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two minutes at 20 then 40 req/s: any candidate's oracle is its floor throughout, min x 120 GPU-seconds.
    trace = tmp_path / "light.csv"
    trace.write_text("t_seconds,rps\n0,20\n60,40\n119,40\n")
    out = tmp_path / "plan"
    argv = ["plan", "--stack", "production", "--trace", str(trace), "--budget", "4", "--seeds", "1"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    data = json.loads((out / "plan.json").read_text())
    for candidate in data["candidates"]:
        floor, mean = candidate["settings"]["min_replicas"], candidate["mean"]
        assert mean["oracle_gpu_hours"] == pytest.approx(floor * 120 / 3600)
        assert mean["oracle_ratio"] == pytest.approx(mean["gpu_hours"] / mean["oracle_gpu_hours"])
        assert candidate["per_seed"][0]["oracle_gpu_hours"] == mean["oracle_gpu_hours"]
    chosen = data["candidates"][data["chosen"]]["mean"]
    rows = {
        cells[0]: cells[1:]
        for line in (out / "plan.md").read_text().splitlines()
        if line.startswith("| ")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    # The results table: label | current #0 | chosen | (runner-up).
    oracle_row = rows["GPU-hours of the oracle (each second's fewest replicas, no start delay)"]
    assert oracle_row[1] == f"{chosen['oracle_gpu_hours']:.3f}"
    assert rows["GPU-hours as a multiple of the oracle's"][1] == f"{chosen['oracle_ratio']:.2f}"
