"""Steps the physics allows: per shape the reaction against its floor and both oracle ratios in plan.md, and for a
shape no candidate holds, the cheapest single reaction setting that would (planner.holding)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from planner.holding import variations
from planner.settings import current_settings
from platform_config.loader import load_stack
from simulator.scenario import scenario
from stackctl.main import main

STAGING = load_stack("staging")
CURRENT = current_settings(STAGING, scenario(STAGING))
"""staging: replicas 1 to 4, busy-ratio target 0.8, scale-up after 30 s, 50% or 3 pods per 30 s."""
OPTIONS = {
    "target": (0.8, 0.5, 0.6, 0.7, 0.9),
    "up_stabilization_s": (0, 30, 60),
    "up_percent": (100, 50, 200),
    "up_pods": (3, None, 1, 2, 4),
    "up_period_s": (30, 15, 60),
}


def test_only_changes_that_react_sooner_are_tried_one_field_at_a_time() -> None:
    assert (CURRENT.min_replicas, CURRENT.max_replicas, CURRENT.target) == (1, 4, 0.8)
    assert (CURRENT.up_stabilization_s, CURRENT.up_percent, CURRENT.up_pods, CURRENT.up_period_s) == (30, 50, 3, 30)
    tried = variations(CURRENT, OPTIONS)
    assert [(field, value) for field, value, _ in tried] == [
        # Every floor above the current up to the ceiling, beyond the grid's.
        ("min_replicas", 2),
        ("min_replicas", 3),
        ("min_replicas", 4),
        # Lower targets, a shorter stabilization, faster percents, more pods, a shorter period.
        ("target", 0.5),
        ("target", 0.6),
        ("target", 0.7),
        ("up_stabilization_s", 0),
        ("up_percent", 100),
        ("up_percent", 200),
        ("up_pods", 4),
        ("up_period_s", 15),
    ]
    assert tried[0][2] == replace(CURRENT, min_replicas=2)
    # A pods policy where there is none is faster; dropping one is not.
    without_pods = replace(CURRENT, up_pods=None)
    assert [v for f, v, _ in variations(without_pods, OPTIONS) if f == "up_pods"] == [3, 1, 2, 4]


STEP = ["--stack", "staging", "--profile", "step", "--hours", "0.25", "--seeds", "1"]


@pytest.fixture(scope="module")
def current_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plan of one candidate, the current settings, which do not hold the step."""
    out = tmp_path_factory.mktemp("reaction") / "plan"
    assert main(["plan", *STEP, "--budget", "1", "--out", str(out)]) == 1
    return out


def test_the_step_no_candidate_holds_names_the_cheapest_reaction_setting_that_does(current_only: Path) -> None:
    data: dict[str, Any] = json.loads((current_only / "plan.json").read_text())
    [current] = data["candidates"]
    step = next(run for run in current["shapes"] if run["shape"] == "step")
    assert not step["held"]
    holding = next(h for h in data["holdings"] if h["shape"] == "step")
    # The step goes from a quarter of the peak to the peak (13,986 req/s); a replica carries 8,741 at the SLO, so a
    # floor of 2 (17,482) carries the peak before it comes: 2 replicas x 900 s x 1 GPU = 0.5 GPU-hours at least, more
    # where the busy ratio above its target adds a pod at the peak.
    assert (holding["field"], holding["value"]) == ("min_replicas", 2)
    named = next(t for t in holding["tried"] if (t["field"], t["value"]) == ("min_replicas", 2))
    assert named["held"]
    assert named["mean"]["gpu_hours"] >= 2 * 900 / 3600
    # It is the cheapest of those that held.
    assert all(t["mean"]["gpu_hours"] >= named["mean"]["gpu_hours"] for t in holding["tried"] if t["held"])
    md = (current_only / "plan.md").read_text()
    line = next(line for line in md.splitlines() if line.startswith("- **step**"))
    assert (
        f"none of the 1 candidates holds it; the cheapest single reaction setting that holds it (of "
        f"{len(holding['tried'])} tried on the current settings) is **replicas min 2** (now 1): "
        f"{named['mean']['gpu_hours']:.3f} GPU-hours on "
        f"the shape, {named['multiple']:.3g}× the current settings' oracle, p95 {named['mean']['p95_ms']:.1f} ms, "
        f"rejected {named['mean']['rejected_pct']:.3f}%" in line
    )


def test_each_shape_shows_its_reaction_against_the_floor_and_both_oracle_ratios(current_only: Path) -> None:
    data: dict[str, Any] = json.loads((current_only / "plan.json").read_text())
    [current] = data["candidates"]
    md = (current_only / "plan.md").read_text()
    header = (
        "| shape | settings | GPU-hours | oracle GPU-hours | ÷ oracle | ÷ hindsight oracle | ÷ current's oracle "
        "| reaction s | reaction floor s | p95 ms (SLO 300) | p99 ms | rejected % (bound 0.1) | held |"
    )
    assert header in md
    runs = [("trace", current["mean"]), *((r["shape"], r["mean"]) for r in current["shapes"])]
    for name, mean in runs:
        row = next(line for line in md.splitlines() if line.startswith(f"| {name} | current #0 |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        reaction = "—" if mean["reaction_seconds"] is None else f"{mean['reaction_seconds']:.0f}"
        assert cells[5] == f"{mean['oracle_hindsight_ratio']:.2f}"
        assert (cells[7], cells[8]) == (reaction, f"{mean['reaction_floor_seconds']:.0f}")
        # The floor: 15 s scrape + 15 s HPA sync + 60 s pod start, + 270 s for a node past staging's warm one (the
        # cluster-autoscaler's stated node time).
        assert mean["reaction_floor_seconds"] in (15 + 15 + 60, 15 + 15 + 60 + 270)
        # The hindsight oracle pays each pod from its start: never below the instant oracle.
        assert mean["oracle_hindsight_gpu_hours"] >= mean["oracle_gpu_hours"]


def test_the_fallback_follows_the_replica_range() -> None:
    # staging's fallback holds 2 replicas: a floor of 3 takes it to 3, a ceiling of 1 (with the floor) to 1.
    assert CURRENT.fallback_replicas == 2
    assert replace(CURRENT, min_replicas=3).consistent().fallback_replicas == 3
    assert replace(CURRENT, max_replicas=1).consistent().fallback_replicas == 1
    assert replace(CURRENT, fallback_replicas=None, min_replicas=3).consistent().fallback_replicas is None


def test_a_step_no_single_setting_holds_names_the_nearest_and_what_validation_refuses(tmp_path: Path) -> None:
    # production's step at its trace's peak: 31,183 then 124,732 req/s, which 10 replicas of 13,554 carry; its
    # floor cannot pass 4, the shared fallback's bound for the ranker deployment (replicas 2-4).
    argv = ["plan", "--stack", "production", "--profile", "step", "--hours", "0.25", "--peak-rps", "124732"]
    assert main([*argv, "--budget", "1", "--seeds", "1", "--out", str(tmp_path / "plan")]) == 1
    data: dict[str, Any] = json.loads((tmp_path / "plan" / "plan.json").read_text())
    holding = next(h for h in data["holdings"] if h["shape"] == "step")
    assert holding["field"] is None
    assert not any(t["held"] for t in holding["tried"])
    assert [(r["field"], r["value"]) for r in holding["refused"]] == [("min_replicas", n) for n in range(5, 11)]
    assert holding["refused"][0]["why"] == (
        "triton-platform:scaling.fallback.replicas: 5 is outside deployment 'ranker''s replicas range 2-4"
    )
    nearest = min(holding["tried"], key=lambda t: t["mean"]["rejected_pct"])
    label = {"target": "signal target", "min_replicas": "replicas min"}.get(nearest["field"], nearest["field"])
    line = next(line for line in (tmp_path / "plan" / "plan.md").read_text().splitlines() if "**step**" in line)
    assert (
        f"the nearest, **{label} {nearest['value']:g}**, rejects {nearest['mean']['rejected_pct']:.3f}% at "
        f"{nearest['mean']['gpu_hours']:.3f} GPU-hours on the shape; refused by the stack's validation: replicas min "
        "5, 6, 7, 8, 9, 10 (5: triton-platform:scaling.fallback.replicas: 5 is outside deployment 'ranker''s "
        "replicas range 2-4)" in line
    )
