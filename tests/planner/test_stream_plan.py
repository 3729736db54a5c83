"""`stackctl plan --stream-profile`'s search (planner/stream_plan.py): the cheapest target and floor that hold the
p95 time-to-first-token objective, its changes to the stack file, and its report."""

from __future__ import annotations

import json

import numpy as np

from planner.stream_plan import TARGETS, plan_stream, stream_plan_json, stream_plan_markdown
from simulator.stream_fleet import FleetSettings, TtftTable

TABLE = TtftTable((1.0, 2.0), (np.full(100, 0.1), np.full(100, 0.3)))
BASE = FleetSettings(min_replicas=1, max_replicas=4, objective_seconds=0.5, target=0.8, start_seconds=60)
STEP = np.concatenate([np.full(300, 0.8), np.full(900, 3.0)])
"""Light, then a step that saturates one replica: a pod started 60 s after the step is too late for a floor of 1."""


def test_the_cheapest_candidate_that_holds_is_chosen_and_patched() -> None:
    result = plan_stream(STEP, TABLE, BASE, deployment="chat", model="llm", objective_ms=500, gpus_per_pod=2)
    assert len(result.candidates) == len(TARGETS) * 4  # floors 1 to 4, replicas.max
    # A floor of 1 meets the step with one saturated replica for over a minute: more than 5% of the requests.
    assert not any(c.held for c in result.candidates if c.min_replicas == 1)
    assert not result.current.held
    chosen = result.chosen
    assert chosen is not None
    assert (chosen.held, chosen.min_replicas) == (True, 2)
    assert chosen.gpu_hours == min(c.gpu_hours for c in result.candidates if c.held)
    # Two GPUs a pod: the oracle's one replica before the step and two after, for 1,200 s.
    assert result.oracle_gpu_hours == (300 * 1 + 900 * 2) * 2 / 3600
    expected: dict[tuple[str, ...], object] = {("triton-platform:serving", "deployments", "chat", "replicas", "min"): 2}
    if chosen.target != 0.8:
        expected[("triton-platform:scaling", "timeToFirstTokenTarget")] = chosen.target
    assert result.changes == expected


def test_nothing_holds_without_the_replicas_the_peak_needs() -> None:
    result = plan_stream(
        STEP, TABLE, FleetSettings(1, 1, 0.5, 0.8, 60), deployment="chat", model="llm", objective_ms=500, gpus_per_pod=1
    )
    assert result.chosen is None
    assert result.changes == {}
    report = stream_plan_markdown(result, "step.csv")
    assert "No candidate holds the objective: raise replicas.max, or start pods sooner." in report
    assert "Even the oracle misses the objective (saturated): replicas.max is too few for the trace's peak." in report
    assert json.loads(stream_plan_json(result, "step.csv"))["chosen"] is None


def test_the_report_sets_the_chosen_beside_the_current_and_the_oracle() -> None:
    result = plan_stream(STEP, TABLE, BASE, deployment="chat", model="llm", objective_ms=500, gpus_per_pod=2)
    chosen = result.chosen
    assert chosen is not None
    lines = stream_plan_markdown(result, "step.csv").splitlines()
    assert lines[0] == "# Stream plan: chat/llm on step.csv"
    ratio = chosen.gpu_hours / result.oracle_gpu_hours
    assert (
        f"| chosen | {chosen.target:g} | 2 | {chosen.gpu_hours:.3f} | {ratio:.2f} | {chosen.ttft_p95_ms:.0f} ms | yes |"
        in lines
    )
    assert f"| oracle | | | {result.oracle_gpu_hours:.3f} | 1.00 | 300 ms | perfect foresight, instant pods |" in lines
    data = json.loads(stream_plan_json(result, "step.csv"))
    assert data["chosen"] == {
        "target": chosen.target,
        "min_replicas": 2,
        "gpu_hours": chosen.gpu_hours,
        "ttft_p95_ms": chosen.ttft_p95_ms,
    }
    assert data["current"]["ttft_p95_ms"] is None  # saturated: no figure


def test_the_floor_stays_within_what_the_stack_holds_the_range_to() -> None:
    # A fallback of 1 replica (or a wake from 0) keeps replicas.min at 1: under the step, nothing then holds.
    result = plan_stream(
        STEP, TABLE, BASE, deployment="chat", model="llm", objective_ms=500, gpus_per_pod=1, highest_floor=1
    )
    assert {c.min_replicas for c in result.candidates} == {1}
    assert result.chosen is None
