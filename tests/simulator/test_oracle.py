"""The oracle: each second's fewest replicas at the SLO, held to hand-computed cases, and its hindsight form, which
pays each pod from one start delay before it is needed; summary.json and plan.md carry their GPU-hours and the run's
multiple of them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from platform_config.loader import load_stack
from simulator.control_plane import rescale
from simulator.oracle import Oracle, ahead_max, hindsight, oracle, replica_rps, replicas
from simulator.scenario import Scenario, capacity_rps, scenario
from simulator.surface import surface
from stackctl.main import main


def test_the_oracle_of_ten_seconds_by_hand() -> None:
    # 100 req/s a replica, floor 1, ceiling 5, 2 GPUs a pod. Per second: 0 -> 1 (the floor), 50 -> 1, 100 -> 1
    # (exactly one replica's worth), 101 -> 2, 250 -> 3, 300 -> 3, 1000 -> 5 (10 needed, the ceiling), 40 -> 1,
    # 0 -> 1, 199 -> 2: 20 replica-seconds, 40 GPU-seconds, 40 / 3600 GPU-hours.
    load = np.array([0, 50, 100, 101, 250, 300, 1000, 40, 0, 199], dtype=np.float64)
    counts = replicas(load, 100.0, 1, 5)
    assert counts.tolist() == [1, 1, 1, 2, 3, 3, 5, 1, 1, 2]
    # Hindsight with a 2 s start and no node to wait for: each second the most it and the next two need (the
    # last seconds' windows end with the trace), 1 2 3 3 5 5 5 2 2 2: 30 replica-seconds, 60 GPU-seconds.
    ahead = hindsight(counts, 2, 0, 5)
    assert ahead.tolist() == [1, 2, 3, 3, 5, 5, 5, 2, 2, 2]
    bound = Oracle(100.0, counts, 2, ahead)
    assert bound.gpu_hours == pytest.approx(40 / 3600)
    assert bound.hindsight_gpu_hours == pytest.approx(60 / 3600)
    # A run that used 0.02 GPU-hours over the same ten seconds: 72 GPU-seconds, 1.8x the oracle's 40, 1.2x the
    # hindsight's 60.
    assert bound.figures(0.02) == {
        "oracle_gpu_hours": pytest.approx(40 / 3600),
        "oracle_ratio": pytest.approx(1.8),
        "oracle_replica_rps": 100.0,
        "oracle_hindsight_gpu_hours": pytest.approx(60 / 3600),
        "oracle_hindsight_ratio": pytest.approx(1.2),
        "oracle_beyond_ceiling_seconds": 0,
    }


def test_with_no_rate_held_the_oracle_runs_the_ceiling_wherever_there_is_load() -> None:
    assert replicas(np.array([0.0, 1.0, 0.0]), 0.0, 2, 6).tolist() == [2, 6, 2]


def test_the_hindsight_oracle_starts_a_pod_one_start_ahead_of_its_need() -> None:
    # 1 replica's need, then 3 from t=100, over 200 s; a pod takes 60 s to start and there is GPU enough (5 warm).
    # Pods started at t=40 are ready at t=100: 40 s of 1 pod, then 160 s of 3, 520 pod-seconds; the instant
    # oracle's 100 + 300 = 400.
    need = np.where(np.arange(200) < 100, 1, 3).astype(np.int64)
    paid = hindsight(need, 60, 120, 5)
    assert np.flatnonzero(np.diff(paid)).tolist() == [39]
    assert (paid[39], paid[40]) == (1, 3)
    bound = Oracle(1.0, need, 2, paid)
    assert bound.gpu_hours == pytest.approx(800 / 3600)
    assert bound.hindsight_gpu_hours == pytest.approx(1040 / 3600)


def test_a_pod_past_the_warm_nodes_waits_for_its_node_the_first_time_only() -> None:
    # 1 replica until t=300, 3 until 350, 1 until 500, 3 until 600; warm GPUs for 2, a 60 s pod start, a 120 s node.
    t = np.arange(600)
    need = np.where(((t >= 300) & (t < 350)) | (t >= 500), 3, 1).astype(np.int64)
    paid = hindsight(need, 60, 120, 2)
    # The third pod is started at 300 - 60 - 120 = 120 and waits on its node until 240; the second (warm) starts
    # at 240. Between the rises the need is 1 from 350; the second rise's pods start at 500 - 60 = 440, the node
    # already up: 120 s of 1, 120 of 2, 110 of 3 (240-349), 90 of 1 (350-439), 160 of 3 = 1,300 pod-seconds.
    expected = np.concatenate([np.full(120, 1), np.full(120, 2), np.full(110, 3), np.full(90, 1), np.full(160, 3)])
    assert paid.tolist() == expected.tolist()
    assert int(paid.sum()) == 120 + 240 + 330 + 90 + 480
    # A need that falls for less than a start keeps its pods: a pod let go could not be back in time.
    dip = np.where((t >= 300) & (t < 330), 1, 3).astype(np.int64)
    assert hindsight(dip, 60, 0, 5).tolist() == [3] * 600


def test_with_two_pods_a_node_only_the_pod_that_opens_a_node_waits_for_it() -> None:
    # Two pod slots a node (gpusPerNode 2, gpusPerPod 1), one warm node (2 slots), a 60 s pod start, a 120 s node.
    # Need 2 until t=300, 3 until 360, 4 until 500, 6 to 600.
    t = np.arange(600)
    need = np.select([t < 300, t < 360, t < 500], [2, 3, 4], 6).astype(np.int64)
    paid = hindsight(need, 60, 120, 2, per_node=2)
    # The third pod opens node A: started at 300 - 60 - 120 = 120, A up at 240, ready at 300. The fourth takes A's
    # second slot: needed at 360, started at 300, A long up: no wait. The fifth opens node B: started at
    # 500 - 180 = 320, B up at 440. The sixth, needed at 500 as well, takes B's second slot: started at 440, when B
    # is up (max(0, 440 - 440) = 0). 120 s of 2, 180 of 3 (120-299), 20 of 4 (300-319), 120 of 5 (320-439), 160 of 6.
    expected = np.concatenate([np.full(120, 2), np.full(180, 3), np.full(20, 4), np.full(120, 5), np.full(160, 6)])
    assert paid.tolist() == expected.tolist()
    assert int(paid.sum()) == 240 + 540 + 80 + 600 + 960 == 2420
    bound = Oracle(1.0, need, 1, paid)
    assert bound.gpu_hours == pytest.approx((600 + 180 + 560 + 600) / 3600)
    assert bound.hindsight_gpu_hours == pytest.approx(2420 / 3600)
    # Charging every pod past the warm slots a node, as if each brought only its own GPU, would start the fourth
    # at 180 and the sixth at 320: 120 of 2, 60 of 3, 140 of 4, 280 of 6 = 2,660 pod-seconds.
    assert int(hindsight(need, 60, 120, 2).sum()) == 240 + 180 + 560 + 1680 == 2660
    # Four slots a node: only the third pod (the first past the warm 2) opens one; the rest pay their start.
    assert hindsight(need, 60, 120, 2, per_node=4).tolist() == ([2] * 120 + [3] * 180 + [4] * 140 + [6] * 160)


def test_a_pod_in_a_later_slot_of_a_provisioning_node_waits_what_remains_of_it_in_the_simulator() -> None:
    # control_plane.rescale, which the oracle follows: with two slots a node and two warm nodes, the fifth pod, asked
    # for at t=100, adds a node up at 220 and is ready at 280; the sixth, asked for at 150, takes that node's second
    # slot and waits the 70 s left of it, ready at 280 too; the seventh, at 250, adds another node.
    s = replace(production(), gpus_per_node=2, warm_nodes=2, node_provision_seconds=120)
    pods, nodes = rescale(s, [], [0.0, 0.0], 5, 100.0)
    assert [p.ready_at for p in pods] == [160.0] * 4 + [280.0]
    assert nodes == [0.0, 0.0, 220.0]
    pods, nodes = rescale(s, pods, nodes, 6, 150.0)
    assert (pods[-1].node_ready_at, pods[-1].ready_at, nodes) == (220.0, 280.0, [0.0, 0.0, 220.0])
    pods, nodes = rescale(s, pods, nodes, 7, 250.0)
    assert (pods[-1].ready_at, nodes) == (430.0, [0.0, 0.0, 220.0, 370.0])


@pytest.mark.parametrize("seed", range(20))
def test_the_hindsight_oracle_pays_for_at_least_the_instant_ones_replicas(seed: int) -> None:
    rng = np.random.default_rng(seed)
    load = rng.choice([0.0, 50.0, 180.0, 420.0, 900.0], size=int(rng.integers(1, 400)))
    need = replicas(np.repeat(load, rng.integers(1, 40, len(load)))[:600], 100.0, 1, 8)
    start, node, warm = int(rng.integers(0, 90)), int(rng.integers(0, 200)), int(rng.integers(1, 9))
    paid = hindsight(need, start, node, warm)
    assert (paid >= need).all()
    # Every second, what is paid for covers what any second within the next start needs: a pod needed then is
    # already starting.
    for second in range(len(need)):
        assert paid[second] >= need[second : second + start + 1].max()
    # With no delay it is the instant oracle.
    assert hindsight(need, 0, 0, warm).tolist() == need.tolist()


def test_ahead_max_is_the_maximum_over_each_window() -> None:
    values = np.array([1, 1, 1, 1, 3, 1, 1, 2, 1, 1], dtype=np.int64)
    assert ahead_max(values, 0).tolist() == values.tolist()
    assert ahead_max(values, 2).tolist() == [1, 1, 3, 3, 3, 2, 2, 2, 1, 1]
    assert ahead_max(values, 3).tolist() == [1, 3, 3, 3, 3, 2, 2, 2, 1, 1]
    assert ahead_max(values, 50).tolist() == [3, 3, 3, 3, 3, 2, 2, 2, 1, 1]


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


def test_productions_hindsight_oracle_pays_the_pod_start_and_the_fourth_pods_node() -> None:
    # Production: floor 2, warm nodes for 3 pods (the floor and one overprovisioning spare, one GPU a node), a pod
    # starts in 60 s (podStartSeconds' default) and a node in 110 s (Karpenter's stated node time). 2 replicas'
    # need, then 4 from t=400 of 600: the third pod starts at 340 on the spare, the fourth is started at 230 and
    # waits on its node until 340. 230 s of 2, 110 of 3, 260 of 4 = 1,830 pod-seconds; the instant 800 + 800.
    s = production()
    assert (s.min_replicas, s.warm_nodes, s.gpus_per_node, s.gpus_per_pod) == (2, 3, 1, 1)
    assert (s.pod_start_seconds, s.node_provision_seconds) == (60, 110)
    cap = capacity_rps(s)
    bound = oracle(s, np.where(np.arange(600) < 400, 1.5 * cap, 3.5 * cap))
    assert bound.replicas.sum() == 1600
    assert bound.hindsight.tolist() == [2] * 230 + [3] * 110 + [4] * 260
    figures = bound.figures(2000 / 3600)
    assert figures["oracle_hindsight_gpu_hours"] == pytest.approx(1830 / 3600)
    assert figures["oracle_hindsight_ratio"] == pytest.approx(2000 / 1830)
    assert figures["oracle_ratio"] == pytest.approx(2000 / 1600)
    # Past the ceiling (10 replicas' worth) no fleet of the stack holds the SLO: the seconds are counted.
    assert oracle(s, np.array([cap, 10 * cap, 10.5 * cap])).beyond_ceiling_seconds == 1


def test_with_two_gpus_a_node_the_hindsight_oracle_pays_one_node_for_two_pods() -> None:
    # Production on nodes of 2 GPUs: its floor 2 and spare 1 take ceil(3 / 2) = 2 warm nodes, 4 slots. 2 replicas'
    # need, then 6 from t=400 of 600: the third and fourth pods start at 340 in the warm slots; the fifth opens a
    # node, started at 400 - 60 - 110 = 230 and up at 340; the sixth takes its second slot, started at 340 with the
    # node up. 230 s of 2, 110 of 3, 260 of 6 = 2,350 pod-seconds (a node each for the fifth and sixth: 2,460).
    s = replace(production(), gpus_per_node=2, warm_nodes=2)
    assert (s.min_replicas, s.gpus_per_pod, s.max_nodes > s.warm_nodes) == (2, 1, True)
    assert (s.pod_start_seconds, s.node_provision_seconds) == (60, 110)
    cap = capacity_rps(s)
    bound = oracle(s, np.where(np.arange(600) < 400, 1.5 * cap, 5.5 * cap))
    assert bound.replicas.sum() == 800 + 1200
    assert bound.hindsight.tolist() == [2] * 230 + [3] * 110 + [6] * 260
    assert bound.hindsight_gpu_hours == pytest.approx((460 + 330 + 1560) / 3600)


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


def test_a_p99_bound_caps_a_replica_where_the_tail_breaks_it_first() -> None:
    s = production()
    sf = surface(s.batcher, s.tau)
    calm = replace(sf, p95=np.full(len(sf.rates), 0.005), saturated_p95=0.005)
    p99 = np.full(len(sf.rates), 0.008)
    p99[7] = 0.040
    tail = replace(calm, p99=p99, saturated_p99=0.008)
    # p95 holds everywhere; p99 breaks a 20 ms bound at the eighth measured rate: a replica carries the seventh.
    assert tail.slo_rate(0.010) == sf.capacity
    assert tail.slo_rate(0.010, 0.020) == float(sf.rates[6])
    assert tail.slo_rate(0.010, 0.050) == sf.capacity
    # Saturation's tail alone over the bound: the last measured rate.
    assert replace(tail, p99=np.full(len(sf.rates), 0.008), saturated_p99=0.040).slo_rate(0.010, 0.020) == float(
        sf.rates[-1]
    )
    # The oracle reads the p99 bound through the same surface: a bound between the surface's own p99 at its
    # middle and at saturation caps a replica below its full-batch capacity, and more replicas follow.
    bound = float(sf.p99[len(sf.rates) // 2]) * 1.01
    capped = sf.slo_rate(s.slo_seconds, bound)
    assert capped < sf.capacity
    rate = np.full(60, 3 * sf.capacity)
    assert oracle(s, rate, None, bound).replica_rps == capped
    assert oracle(s, rate, None, bound).gpu_hours > oracle(s, rate).gpu_hours


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
    # Hindsight: a pod starts in 60 s, and past staging's one warm GPU a node takes 270 s more (the
    # cluster-autoscaler's stated node time). The second and third pods, needed at 60, start at 0 (the trace's first
    # second: what came before is not charged), the fourth, needed at 90 and the first past the warm nodes' GPUs, is
    # started at 90 - 330 < 0 too: 4 pods from 0 until
    # 118, the last second whose need a start covers, and the floor's 1 at 119. 119 x 4 + 1 = 477 GPU-seconds.
    assert (s.warm_nodes, s.pod_start_seconds, s.node_provision_seconds) == (1, 60, 270)
    assert result["oracle_hindsight_gpu_hours"] == pytest.approx(477 / 3600)
    assert result["oracle_hindsight_ratio"] == pytest.approx(result["gpu_hours"] / (477 / 3600))
    # 90-118 need 4.58 replicas against the ceiling's 4: no fleet of staging carries them at the SLO.
    assert result["oracle_beyond_ceiling_seconds"] == 29
    assert f"oracle_hindsight_gpu_hours: {477 / 3600:.1f}" in printed


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


def test_several_models_share_a_replica_at_their_mix() -> None:
    """Two models on a pod: a replica carries R req/s of the mix, each model's share of the pod's time at its own
    rate at the SLO adding up to 1; a column per model is the load summed."""
    s = scenario(load_stack("production"), "general", "classifier", others=["preprocess"], mix=(0.25, 0.75))
    alone = [surface(b, tau).slo_rate(s.slo_seconds) for b, tau in s.batchers]
    assert min(alone) > 0
    expected = 1 / (0.25 / alone[0] + 0.75 / alone[1])
    assert replica_rps(s, s.slo_seconds) == pytest.approx(expected, rel=1e-12)
    assert min(alone) < expected < max(alone)
    columns = np.stack([np.full(600, 0.25 * 4.5 * expected), np.full(600, 0.75 * 4.5 * expected)], axis=1)
    split, summed = oracle(s, columns), oracle(s, columns.sum(axis=1))
    assert split.replica_rps == summed.replica_rps == replica_rps(s, s.slo_seconds)
    assert np.array_equal(split.replicas, summed.replicas)
    assert set(split.replicas.tolist()) == {5}
    # A model that holds the SLO at no rate: no replica carries the mix.
    tight = replace(s, slo_seconds=1e-6)
    assert replica_rps(tight, tight.slo_seconds) == 0.0
