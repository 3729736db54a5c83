"""Scale to zero (issue 41, point 4): the detailed engine and the fluid model idle at zero after KEDA's cooldown,
wake on the next request, hold requests at the interceptor during the wake and fail them at its timeout; the
planner tries a floor of 0 beside 1 or more for a deployment with a wake budget, and reports what zero gives."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from planner.candidates import Limits, grid
from planner.search import Bounds, _failures
from planner.settings import WAKE, current_settings, edits, locations, with_values
from platform_config.loader import load_stack
from platform_config.paths import PROJECT_ROOT
from simulator import fluid, fluid_reference
from simulator.engine import simulate
from simulator.scenario import Scenario, at_floor_one, scenario, shaped_trace
from simulator.summaries import summary
from stackctl.main import main

DEV = scenario(load_stack("dev"))
"""dev's general: replicas.min 0 with a wake budget of 120 s, KEDA's cooldown 600 s, polling every 30 s."""
WAKE_KEYS = ("wakes", "waited", "waited_p99_s", "waited_max_s", "wake_failed")


def num(run: dict[str, float | int | None], key: str) -> float:
    """A figure of a run's summary, measured."""
    value = run[key]
    assert value is not None, key
    return float(value)


def idle_gap(busy: int = 300, idle: int = 900, rps: float = 5.0) -> NDArray[np.float64]:
    """`busy` seconds at `rps`, `idle` at 0, then `busy` at `rps` again."""
    return np.concatenate([np.full(busy, rps), np.zeros(idle), np.full(busy, rps)])


def at_zero(pod_start_seconds: float = 20.0, wake_timeout_seconds: float | None = 120.0) -> Scenario:
    """dev at zero, with a 300 s cooldown, KEDA's check every 30 s and a 20 s pod start unless given."""
    return replace(
        DEV,
        cooldown_seconds=300.0,
        polling_seconds=30.0,
        pod_start_seconds=pod_start_seconds,
        wake_timeout_seconds=wake_timeout_seconds,
    )


def test_dev_reads_its_scale_to_zero_settings_from_the_stack() -> None:
    assert DEV.scales_to_zero
    assert (DEV.min_replicas, DEV.wake_timeout_seconds, DEV.cooldown_seconds, DEV.polling_seconds) == (
        0,
        120,
        600,
        30,
    )
    production = scenario(load_stack("production"))
    assert not production.scales_to_zero
    assert production.wake_timeout_seconds is None


def test_the_engine_goes_to_zero_after_the_cooldown_and_wakes_on_the_next_request() -> None:
    s = at_zero()
    timeline = simulate(s, idle_gap(), seed=1)
    result = summary(s, timeline)
    # Last request about t = 300; KEDA's check at 300 still sees it; 300 s later, at its check at 600, it scales
    # to zero: no GPU from then (the drain is 10 s) until the request at 1200 wakes it.
    assert timeline.gpus[610:1200].sum() == 0
    assert timeline.gpus[:600].min() == 1
    assert timeline.gpus[1300:].min() == 1
    assert (600.0, 0) in timeline.hpa_changes
    # The run starts awake (control_plane.starting): one wake, for the second busy spell.
    assert num(result, "wakes") == 1
    # The requests held during each wake waited for the pod to start (20 s), none longer.
    assert num(result, "waited") > 100
    assert 15 <= num(result, "waited_p99_s") <= 21
    assert num(result, "waited_max_s") <= 21
    assert num(result, "wake_failed") == 0
    assert num(result, "rejected") == 0
    assert num(result, "served") == result["arrived"]
    # Seconds at zero cost nothing: a third less than a replica held the whole run.
    assert num(result, "gpu_hours") < 0.7 * len(idle_gap()) / 3600


def test_the_engine_fails_requests_held_past_the_interceptors_timeout() -> None:
    s = at_zero(pod_start_seconds=60.0, wake_timeout_seconds=30.0)
    result = summary(s, simulate(s, idle_gap(), seed=1))
    # The wake takes 60 s: about its first 30 s of requests (5 req/s) wait past the 30 s timeout and fail (504).
    assert num(result, "wakes") == 1
    assert 100 < num(result, "wake_failed") < 200
    assert num(result, "rejected") == result["wake_failed"]
    # Those forwarded waited at most the timeout.
    assert num(result, "waited_max_s") <= 30
    assert num(result, "served") + num(result, "rejected") == result["arrived"]


def test_at_zero_an_autoscaled_pool_lets_its_node_go_and_the_wake_waits_for_one() -> None:
    # A pool that keeps no node at the floor of 0 (minNodes 0, no placeholders): the node goes with the last pod,
    # so the wake waits 40 s for a node, then 20 s for the pod. A pool that keeps one wakes in the pod's 20 s.
    autoscaled = replace(at_zero(), warm_nodes=0, node_provision_seconds=40.0)
    timeline = simulate(autoscaled, idle_gap(), seed=1)
    result = summary(autoscaled, timeline)
    assert num(result, "wakes") == 1
    assert 55 <= num(result, "waited_p99_s") <= 61
    assert num(result, "waited_max_s") <= 61
    kept = replace(autoscaled, warm_nodes=1)
    assert num(summary(kept, simulate(kept, idle_gap(), seed=1)), "waited_max_s") <= 21
    # The fluid model lets the node go the same way.
    model = fluid.evaluate(autoscaled, idle_gap(), 1)
    assert num(model, "waited_p99_s") == pytest.approx(num(result, "waited_p99_s"), abs=1.5)


def test_a_gap_shorter_than_the_cooldown_stays_awake() -> None:
    s = at_zero()
    timeline = simulate(s, idle_gap(idle=200), seed=1)
    assert summary(s, timeline)["wakes"] == 0
    assert timeline.gpus.min() == 1


def test_the_fluid_model_goes_to_zero_and_wakes_as_the_engine_does() -> None:
    for s in (at_zero(), at_zero(pod_start_seconds=60.0, wake_timeout_seconds=30.0)):
        rate = idle_gap()
        detailed, model = summary(s, simulate(s, rate, seed=1)), fluid.evaluate(s, rate, 1)
        assert num(model, "wakes") == num(detailed, "wakes") == 1
        assert num(model, "gpu_hours") == pytest.approx(num(detailed, "gpu_hours"), rel=0.02)
        assert num(model, "waited_p99_s") == pytest.approx(num(detailed, "waited_p99_s"), abs=1.5)
        assert num(model, "wake_failed") == pytest.approx(num(detailed, "wake_failed"), rel=0.15, abs=5)
        assert num(model, "rejected_pct") == pytest.approx(num(detailed, "rejected_pct"), abs=1.0)


def test_the_compiled_control_plane_gives_the_reference_results_at_zero() -> None:
    """evaluate against evaluate_reference, to the bit, on random scenarios at zero: cooldown, polling, timeout,
    pod start, node provisioning and pool, on loads with idle gaps."""
    rng = np.random.default_rng(41)
    for case in range(25):
        s = replace(
            DEV,
            cooldown_seconds=float(rng.choice([0.0, 60.0, 300.0])),
            polling_seconds=float(rng.choice([1.0, 15.0, 30.0])),
            wake_timeout_seconds=None if rng.random() < 0.2 else float(rng.uniform(5, 120)),
            pod_start_seconds=float(rng.uniform(1, 90)),
            node_provision_seconds=float(rng.choice([0.0, 45.0])),
            warm_nodes=int(rng.integers(0, 3)),
            max_replicas=int(rng.integers(1, 4)),
            drain_seconds=float(rng.choice([0.0, 10.0])),
        )
        busy = shaped_trace("diurnal", float(rng.uniform(0.5, 40)), 0.1)
        rate = np.concatenate([busy, np.zeros(int(rng.integers(0, 900))), busy[: int(rng.integers(60, 360))]])
        compiled, reference = fluid.evaluate(s, rate, case), fluid_reference.evaluate_reference(s, rate, case)
        differ = {k: (compiled[k], reference[k]) for k in reference if not _same(compiled[k], reference[k])}
        assert not differ, (case, s, differ)
        assert set(WAKE_KEYS) <= set(compiled)


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b))


def test_a_floor_of_one_reports_no_wakes_and_runs_as_before() -> None:
    s = at_floor_one(DEV)
    assert not s.scales_to_zero
    rate = idle_gap()
    assert not set(WAKE_KEYS) & set(summary(s, simulate(s, rate, seed=1)))
    result = fluid.evaluate(s, rate, 1)
    assert not set(WAKE_KEYS) & set(result)
    assert num(result, "gpu_hours") == len(rate) / 3600


def test_the_plan_tries_zero_only_for_a_deployment_with_a_wake_budget() -> None:
    stack = load_stack("dev")
    current = current_settings(stack, DEV)
    idle = grid(current, Limits(8, 500_000, "busy-ratio", may_idle=True))["min_replicas"]
    busy = grid(current, Limits(8, 500_000, "busy-ratio"))["min_replicas"]
    assert idle[0] == 0
    assert 1 in idle
    assert 0 not in busy[1:]


def test_raising_the_floor_from_zero_removes_the_wake() -> None:
    current = current_settings(load_stack("dev"), DEV)
    places = locations("general", DEV.model, DEV.signal.name)
    raised = edits(current, with_values(current, {"min_replicas": 1}), places)
    assert raised[places["min_replicas"]] == 1
    assert raised[places[WAKE]] is None
    kept = edits(current, with_values(current, {"max_replicas": 3}), places)
    assert places[WAKE] not in kept


def test_a_wait_over_the_budget_fails_the_candidate() -> None:
    run = {"p95_ms": 1.0, "p99_ms": 2.0, "rejected_pct": 0.0, "waited_p99_s": 130.0}
    assert [f.split(":")[0] for f in _failures([run], Bounds(500, 0.1, None, 120))] == ["wake"]
    assert _failures([{**run, "waited_p99_s": 60.0}], Bounds(500, 0.1, None, 120)) == ()
    assert _failures([{**run, "waited_p99_s": None}], Bounds(500, 0.1, None, 120)) == ()


def test_simulate_reports_wakes_waits_and_the_gpu_hours_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "idle.csv"
    # Five busy minutes, twenty idle (dev's cooldown is ten), five busy.
    trace.write_text("t_seconds,rps\n0,5\n300,0\n1500,5\n1799,5\n")
    out = tmp_path / "out"
    code = main(["simulate", "--stack", "dev", "--trace", str(trace), "--no-plot", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "  wakes: 1\n" in captured.out
    assert "  wake_failed: 0\n" in captured.out
    result = json.loads((out / "summary.json").read_text())
    # dev's pod starts in 60 s (scaling.simulation.podStartSeconds) on a node its static pool keeps up.
    assert 55 <= result["waited_p99_s"] <= 61
    # Asleep from KEDA's check at 900 (600 s after the last active one) to the request at 1500: about 10 minutes
    # of the 30 at a floor of 1.
    assert result["gpu_hours_at_min_1"] == pytest.approx(1800 / 3600)
    assert result["gpu_hours_saved"] == pytest.approx(600 / 3600, abs=0.02)


def test_simulate_reports_no_wake_figures_for_a_floor_of_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "flat.csv"
    trace.write_text("t_seconds,rps\n0,20\n119,20\n")
    out = tmp_path / "out"
    assert main(["simulate", "--stack", "staging", "--trace", str(trace), "--no-plot", "--out", str(out)]) == 0
    assert "wakes" not in capsys.readouterr().out
    assert "wakes" not in json.loads((out / "summary.json").read_text())


DEV_STACK = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
IDLE = "t_seconds,rps\n0,20\n600,0\n3000,20\n3599,20\n"
"""Ten busy minutes, forty idle (dev's cooldown is ten), ten busy."""
BUSY = "t_seconds,rps\n0,20\n3599,20\n"


def dev_plan(tmp_path: Path, trace: str, budget_seconds: int = 120) -> tuple[dict[str, Any], str]:
    """`stackctl plan` of a copy of dev (its wake budget `budget_seconds`) on `trace`: plan.json and plan.md."""
    stack = tmp_path / DEV_STACK.name
    text = DEV_STACK.read_text()
    assert "wake: {budgetSeconds: 120}" in text
    stack.write_text(text.replace("wake: {budgetSeconds: 120}", f"wake: {{budgetSeconds: {budget_seconds}}}"))
    (tmp_path / "trace.csv").write_text(trace)
    args = ["--config", str(stack), "--trace", str(tmp_path / "trace.csv"), "--budget", "12", "--seeds", "1"]
    assert main(["plan", *args, "--out", str(tmp_path / "out")]) == 0
    return json.loads((tmp_path / "out" / "plan.json").read_text()), (tmp_path / "out" / "plan.md").read_text()


def test_the_plan_chooses_zero_on_a_trace_with_idle_spells(tmp_path: Path) -> None:
    data, text = dev_plan(tmp_path, IDLE)
    chosen = data["candidates"][data["chosen"]]
    assert chosen["settings"]["min_replicas"] == 0
    assert data["scale_to_zero"] is True
    assert data["wake_budget_s"] == 120
    figures = data["chosen_at_zero"]
    assert figures["wakes"] == 1
    assert 55 <= figures["waited_p99_s"] <= 61
    # Asleep about 30 of the 60 minutes (the cooldown is ten): about half an hour of one GPU saved.
    assert figures["gpu_hours_saved"] == pytest.approx(0.5, abs=0.1)
    assert any(c["settings"]["min_replicas"] >= 1 for c in data["candidates"])
    assert "## Scale to zero" in text
    assert "Chosen: replicas min **0** (scale to zero)" in text


def test_the_plan_keeps_a_floor_on_a_trace_that_never_idles_and_drops_the_wake(tmp_path: Path) -> None:
    data, text = dev_plan(tmp_path, BUSY)
    chosen = data["candidates"][data["chosen"]]
    assert chosen["settings"]["min_replicas"] >= 1
    assert data["scale_to_zero"] is False
    at_zero = [c for c in data["candidates"] if c["settings"]["min_replicas"] == 0]
    assert at_zero
    assert all(any(f.startswith("wake: never idle") for f in c["failures"]) for c in at_zero)
    changes = {change["path"]: change["value"] for change in data["changes"]}
    assert changes["triton-platform:serving.deployments.general.wake"] is None
    assert "Chosen: replicas min **" in text


def test_the_plan_keeps_a_floor_when_the_wake_outlasts_its_budget(tmp_path: Path) -> None:
    # dev's pod starts in 60 s (scaling.simulation.podStartSeconds): a 30 s budget fails a wake's first 30 s.
    data, _ = dev_plan(tmp_path, IDLE, budget_seconds=30)
    assert data["candidates"][data["chosen"]]["settings"]["min_replicas"] >= 1
    at_zero = [c for c in data["candidates"] if c["settings"]["min_replicas"] == 0]
    assert at_zero
    assert all(any(f.startswith("rejected") for f in c["failures"]) for c in at_zero)
