"""What `stackctl simulate` hands an SRE (issue 17, point 4): a plot that says what ran and why it scaled,
summary.json that records its inputs, a reaction time that is null when there was nothing to react to beside the
floor the pipeline allows (issue 39, point 4), and timeline.csv with the signal and KEDA's fallback."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import platform_config.types
import simulator.report
import simulator.scenario
from platform_config.loader import load_stack
from platform_config.paths import PROJECT_ROOT
from simulator.engine import simulate
from simulator.oracle import Oracle
from simulator.reaction import reaction_floor, warm_slots
from simulator.report import COLUMNS, deltas, plot_title, runs, timeline_csv
from simulator.scenario import Scenario, at_floor_one, capacity_rps, scenario, shaped_trace, trigger_rps
from simulator.summaries import reaction_seconds, summary
from simulator.timeline import Timeline
from stackctl.main import main

STAGING = PROJECT_ROOT / "stacks" / "Pulumi.staging.yaml"
CLASSIFIER_PROFILE = PROJECT_ROOT / "bench" / "results" / "profiles" / "classifier.json"


def test_reaction_is_the_longest_shortfall_and_none_without_one() -> None:
    # 200 req/s from second 30 against 100 of capacity until second 50, then 300. The 10 s mean over
    # seconds t-5..t+4 passes 100 once six of them carry 200, at t = 31: short from 31 to 49.
    demand = np.where(np.arange(120) < 30, 0.0, 200.0)
    capacity = np.where(np.arange(120) < 50, 100.0, 300.0)
    assert reaction_seconds(demand, capacity) == 19.0
    # Never short: nothing to react to, not a reaction of 0 s.
    assert reaction_seconds(demand, np.full(120, 300.0)) is None


def test_a_4x_step_past_the_floor_takes_a_node_and_a_pod_start_to_catch_up() -> None:
    s = scenario(load_stack("staging"))
    # 12 minutes: the cluster-autoscaler's node (270 s) and a pod (60 s) fit after the step.
    rate = shaped_trace("step", 2 * trigger_rps(s), hours=0.2)
    step_at = int(np.argmax(rate > rate[0]))
    # The built-in step: a quarter of the peak under the floor's estimated capacity, then the peak above it.
    floor = capacity_rps(s) * s.min_replicas
    assert (rate[-1] / rate[0], step_at) == (4.0, 180)
    assert rate[0] < floor < rate[-1]
    result = summary(s, simulate(s, rate, seed=0))
    reaction = result["reaction_seconds"]
    assert isinstance(reaction, float)
    # Staging's one warm GPU node is taken, so capacity catches up only once a new node and a pod on it are up,
    # and it does before the run ends.
    assert s.node_provision_seconds + s.pod_start_seconds <= reaction < len(rate) - step_at
    # The floor of that rise: the 15 s scrape, the 15 s sync, the 270 s node (the cluster-autoscaler's stated node
    # time) and the 60 s pod start.
    assert result["reaction_floor_seconds"] == 15 + 15 + 270 + 60


def test_productions_reaction_floor_is_scrape_sync_and_pod_start_and_past_its_warm_nodes_a_node() -> None:
    # stacks/Pulumi.production.yaml: monitoring.scrapeInterval 15s; the HPA syncs every 15 s; scaling.simulation
    # leaves podStartSeconds (60) and nodeProvisionSeconds (Karpenter's 110) at their defaults; replicas.min 2 and
    # gpuPool.overprovisioningReplicas 1 keep 3 one-GPU nodes (gpusPerNode 1) warm, gpuPool.maxNodes 14.
    # pollingIntervalSeconds (10) never enters: KEDA's loop only moves 0 <-> 1, and replicas.min is 2.
    s = scenario(load_stack("production"))
    cap = capacity_rps(s)
    assert warm_slots(s) == 3
    first = reaction_floor(s)
    assert (first.scrape_seconds, first.sync_seconds, first.pod_start_seconds, first.node_seconds) == (15, 15, 60, 0)
    assert first.seconds == 15 + 15 + 60
    # A rise that 3 replicas carry finds the spare's GPU; one that needs a 4th waits for a node too.
    assert reaction_floor(s, np.full(60, 2.9 * cap)).seconds == 15 + 15 + 60
    assert reaction_floor(s, np.full(60, 3.5 * cap)).seconds == 15 + 15 + 60 + 110
    # The built-in step at the default peak (twice the trigger's load, 2 x 0.9 x 2 replicas' worth) needs 4.
    assert reaction_floor(s, shaped_trace("step", 2 * trigger_rps(s))).seconds == 200


def test_devs_reaction_floor_never_waits_for_a_node() -> None:
    # stacks/Pulumi.dev.yaml: scrapeInterval 30s, pod start 60 s (the default); gpuPool minNodes 2 = maxNodes 2 and
    # replicas.max 2: both replicas always find a GPU. pollingIntervalSeconds (30) never enters: replicas.min 1.
    s = scenario(load_stack("dev"))
    assert (warm_slots(s), s.max_replicas) == (2, 2)
    assert reaction_floor(s).seconds == 30 + 15 + 60
    assert reaction_floor(s, np.full(60, 10 * capacity_rps(s))).seconds == 30 + 15 + 60


def test_a_flat_trace_far_below_one_replica_has_nothing_to_react_to() -> None:
    # dev idles at zero (its first minute is a wake, demand above no capacity): here its floor of 1 before.
    s = at_floor_one(scenario(load_stack("dev")))
    rate = np.full(300, capacity_rps(s) / 100)
    assert summary(s, simulate(s, rate, seed=0))["reaction_seconds"] is None


def test_timeline_csv_carries_the_signal_and_the_fallback() -> None:
    timeline = Timeline.empty(3)
    timeline.signal[:] = [np.nan, 2.5, 0.125]
    timeline.falling_back[:] = [False, True, False]
    rows = list(csv.DictReader(io.StringIO(timeline_csv(timeline))))
    assert COLUMNS[-2:] == ("signal", "fallback")
    assert tuple(rows[0]) == COLUMNS
    assert [(r["signal"], r["fallback"]) for r in rows] == [("", "0"), ("2.5", "1"), ("0.125", "0")]


def test_runs_are_the_shaded_spans() -> None:
    mask = np.array([False, True, True, False, True])
    assert runs(mask) == [(1, 3), (4, 5)]
    assert runs(np.zeros(4, np.bool_)) == []


def test_the_plot_title_names_what_ran() -> None:
    s = scenario(load_stack("staging"))
    assert s.profile == "bench/results/profiles/classifier.json"
    assert (
        plot_title(s, 15000.0, 3) == "staging: general/classifier, profile classifier.json, peak demand 15,000 req/s, "
        "seed 3"
    )


def test_a_missing_reaction_reads_none_in_the_deltas() -> None:
    base = {"reaction_seconds": None, "p95_ms": 10.0}
    head = {"reaction_seconds": 12.0, "p95_ms": 12.5}
    rows = {label: row for label, *row in deltas(base, head)}
    assert rows["reaction s"] == ["none", "12.0", "—"]
    assert rows["p95 ms"] == ["10.0", "12.5", "+25%"]


def _staging_with_profile(tmp_path: Path, profile: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Staging's stack file, its simulation reading `profile`, a file in `tmp_path`, which stands for the project
    root (a profile must be inside the project) where the stack's paths are resolved."""
    monkeypatch.setattr(platform_config.types, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(simulator.scenario, "PROJECT_ROOT", tmp_path)
    stack = tmp_path / "Pulumi.staging.yaml"
    text = STAGING.read_text(encoding="utf-8")
    anchor = "  triton-platform:scaling:\n"
    assert anchor in text
    relative = json.dumps(str(profile.relative_to(tmp_path)))
    stack.write_text(text.replace(anchor, f"{anchor}    simulation: {{profile: {relative}}}\n"))
    return stack


def test_simulate_records_a_trace_file_and_titles_the_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "classifier-h100.json"
    shutil.copy(CLASSIFIER_PROFILE, profile)
    stack = _staging_with_profile(tmp_path, profile, monkeypatch)
    trace = tmp_path / "trace.csv"
    trace.write_text("t_seconds,rps\n0,2000\n60,12000\n179,12000\n")
    titles: list[str] = []
    drawn: list[Oracle] = []
    plot = simulator.report.plot_png

    def recording(s: Scenario, timeline: Timeline, bound: Oracle, result: dict[str, Any], title: str) -> bytes:
        titles.append(title)
        drawn.append(bound)
        return plot(s, timeline, bound, result, title)

    monkeypatch.setattr(simulator.report, "plot_png", recording)
    out = tmp_path / "out"
    code = main(["simulate", "--config", str(stack), "--trace", str(trace), "--seed", "5", "--out", str(out)])
    # The step to 12,000 req/s outruns the one replica it starts with: the SLO is missed (exit 1), outputs written.
    assert code == 1, capsys.readouterr().err
    assert titles == ["staging: general/classifier, profile classifier-h100.json, peak demand 12,000 req/s, seed 5"]
    # The oracle's line on the replicas panel: a staging replica carries 8,741 req/s, so 1 for 2,000, 2 for 12,000.
    assert [bound.replicas.tolist() for bound in drawn] == [[1] * 60 + [2] * 120]
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = json.loads((out / "summary.json").read_text())
    assert result["inputs"] == {
        "stack": "staging",
        "stack_file": str(stack),
        "stack_sha256": hashlib.sha256(stack.read_bytes()).hexdigest(),
        "deployment": "general",
        "model": "classifier",
        "profile": str(profile),
        "profile_sha256": hashlib.sha256(profile.read_bytes()).hexdigest(),
        "trace": {"file": str(trace), "sha256": hashlib.sha256(trace.read_bytes()).hexdigest()},
        "seed": 5,
        "metrics_outages": [],
        "node_provision_seconds": 270,  # staging's cluster-autoscaler, its stated default
    }
    # The earlier keys stay beside the inputs.
    assert {"p95_ms", "rejected_pct", "gpu_hours", "reaction_seconds", "replica_capacity_rps"} <= set(result)


def test_simulate_records_a_built_in_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["simulate", "--stack", "staging", "--profile", "step", "--hours", "0.1", "--no-plot", "--out", str(out)]
    code = main([*argv, "--metrics-outage", "200:30"])
    captured = capsys.readouterr()
    # staging's default step (twice its trigger's load) rejects while it scales: the SLO is missed (exit 1).
    assert code == 1, captured.err
    result = json.loads((out / "summary.json").read_text())
    s = scenario(load_stack("staging"))
    assert result["inputs"] == {
        "stack": "staging",
        "stack_file": "stacks/Pulumi.staging.yaml",
        "stack_sha256": hashlib.sha256(STAGING.read_bytes()).hexdigest(),
        "deployment": "general",
        "model": "classifier",
        "profile": "bench/results/profiles/classifier.json",
        "profile_sha256": hashlib.sha256(CLASSIFIER_PROFILE.read_bytes()).hexdigest(),
        # The default peak: twice the load that fires the trigger on the floor.
        "trace": {"shape": "step", "peak_rps": 2 * trigger_rps(s), "hours": 0.1},
        "seed": 0,
        "metrics_outages": [[200.0, 30.0]],
        "node_provision_seconds": 270,
    }
    assert result["reaction_seconds"] > 0
    assert f"reaction_seconds: {result['reaction_seconds']:.1f}" in captured.out
    # Next to it the floor, as summary.json records it: the step needs a second replica, past staging's one warm
    # GPU node.
    assert result["reaction_floor_seconds"] == 15 + 15 + 60 + 270
    assert f"reaction_seconds: {result['reaction_seconds']:.1f}\n  reaction_floor_seconds: 360.0\n" in captured.out
    assert not (out / "timeline.png").exists()


def test_simulate_prints_none_when_demand_never_exceeded_capacity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "flat.csv"
    trace.write_text("t_seconds,rps\n0,20\n119,20\n")
    out = tmp_path / "out"
    # staging keeps a warm replica (dev idles at zero: its first minute is a wake to react to).
    code = main(["simulate", "--stack", "staging", "--trace", str(trace), "--no-plot", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "  reaction_seconds: none (demand never exceeded ready capacity)\n" in captured.out
    assert json.loads((out / "summary.json").read_text())["reaction_seconds"] is None
