"""The tail in a plan: a p99 bound that refuses candidates, each candidate's p99 beside its p95 in plan.md, the
chosen one's tail change in plan.md's first lines, and pareto.png's axis spanning what could be chosen."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from planner.pareto import SPAN_MARGIN, span
from planner.pareto_plot import pareto_figure
from planner.plan import Plan, make_plan
from planner.search import Bounds, Result, _failures
from planner.settings import current_settings
from platform_config.loader import load_stack
from platform_config.paths import PROJECT_ROOT, stack_file
from simulator.scenario import scenario, shaped_trace
from stackctl.commands.simulate import slo_failures
from stackctl.main import main
from tests.support.profile_warnings import without_profile_warnings

SEEDS = ({"p95_ms": 8.0, "p99_ms": 40.0, "rejected_pct": 0.0}, {"p95_ms": 9.0, "p99_ms": 120.0, "rejected_pct": 0.0})
"""Two seeds' figures: within a 200 ms p95, and a p99 of 40 ms on one seed and 120 ms on the other."""


def test_a_p99_bound_fails_the_seeds_over_it_and_none_leaves_p99_free() -> None:
    assert _failures(SEEDS, Bounds(200, 0.1)) == ()
    assert _failures(SEEDS, Bounds(200, 0.1, 100)) == ("p99: 120 ms > 100 ms in 1 of 2 seeds",)
    assert _failures(SEEDS, Bounds(200, 0.1, 120)) == ()
    # Every bound is named, in the order p95, p99, rejected.
    broken = ({"p95_ms": 300.0, "p99_ms": 400.0, "rejected_pct": 1.0},)
    assert _failures(broken, Bounds(200, 0.1, 250)) == (
        "p95: 300 ms > 200 ms in 1 of 1 seeds",
        "p99: 400 ms > 250 ms in 1 of 1 seeds",
        "rejected: 1% > 0.1% in 1 of 1 seeds",
    )


def test_simulate_holds_a_run_to_the_p99_bound_when_one_is_set() -> None:
    run = {"p95_ms": 20.0, "p99_ms": 60.0, "slo_ms": 200.0, "rejected_pct": 0.0}
    assert slo_failures(run, 0.1) == []
    assert slo_failures(run, 0.1, 50) == ["p99 60 ms > 50 ms"]
    assert slo_failures(run, 0.1, 60) == []


# --- pareto.png's axis ---------------------------------------------------------------------------------------------

PRODUCTION = load_stack("production")
SETTINGS = current_settings(PRODUCTION, scenario(PRODUCTION))
"""Any settings: the axis reads only the figures."""


def candidate(index: int, p95_ms: float, *failures: str) -> Result:
    return Result(index, "sweep", SETTINGS, {"gpu_hours": 1.0, "p95_ms": p95_ms}, (), failures, (), 1.0)


def test_the_axis_spans_the_passed_and_the_slo_and_counts_the_failed_beyond() -> None:
    results = [candidate(0, 5.0), candidate(1, 12.0), candidate(2, 1_000_000.0, "p95: 1e+06 ms > 200 ms")]
    limits = span(results, 200)
    assert (limits.low, limits.high) == (5.0 / SPAN_MARGIN, 200 * SPAN_MARGIN)
    assert limits.outside([1_000_000.0, 12.0, 1.0]) == 2
    assert (limits.clip(1_000_000.0), limits.clip(12.0), limits.clip(1.0)) == (320.0, 12.0, 5.0 / SPAN_MARGIN)
    # With none passed, the SLO alone sets the range.
    assert span(results[2:], 200) == span([], 200)
    assert (span([], 200).low, span([], 200).high) == (200 / SPAN_MARGIN, 200 * SPAN_MARGIN)


# --- a plan with and without a p99 bound ---------------------------------------------------------------------------

STEP = ["--stack", "staging", "--profile", "step", "--hours", "0.25", "--budget", "12", "--seeds", "1"]


def run_plan(out: Path, *extra: str) -> dict[str, Any]:
    assert main(["plan", *STEP, "--out", str(out), *extra]) in (0, 1)
    data: dict[str, Any] = json.loads((out / "plan.json").read_text())
    return data


@pytest.fixture(scope="module")
def free(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("tail") / "free"
    return out, run_plan(out)


def figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def test_without_a_bound_plan_md_shows_every_candidates_p99_and_the_chosen_tail(
    free: tuple[Path, dict[str, Any]],
) -> None:
    out, data = free
    assert data["p99_slo_ms"] is None
    md = (out / "plan.md").read_text()
    candidates = data["candidates"]
    chosen, current = candidates[data["chosen"]], candidates[0]
    before, after = current["mean"]["p99_ms"], chosen["mean"]["p99_ms"]
    head = md.split("## Chosen")[0]
    assert (
        f"Tail: the chosen #{chosen['index']} moves p99 on the trace from {before:.1f} ms to {after:.1f} ms "
        f"({after / before:.2f}× the current) and p95 from {current['mean']['p95_ms']:.1f} ms to "
        f"{chosen['mean']['p95_ms']:.1f} ms, with no p99 bound set (serving.p99LatencySloMs or --p99-slo-ms would "
        "hold it)." in head
    )
    rows = [line for line in md.splitlines() if line.startswith("| ") and line.split(" | ")[0][2:].isdigit()]
    # Every candidate once, passed or failed, each with its p99 beside its p95.
    passed = [c for c in candidates if c["passed"]]
    failed = [c for c in candidates if not c["passed"]]
    for c in passed:
        assert any(
            f"| {c['index']} | {c['origin']} |" in row
            and f"| {figure(c['mean']['p95_ms'])} | {figure(c['mean']['p99_ms'])} |" in row
            for row in rows
        ), c["index"]
    for c in failed:
        assert f"| {figure(c['mean']['p95_ms'])} | {figure(c['mean']['p99_ms'])} |" in md
    assert "| rank | # | origin | cost | shapes held | GPU-hours | p95 ms | p99 ms | rejected % |" in md


def test_a_p99_bound_refuses_the_candidates_over_it(tmp_path: Path, free: tuple[Path, dict[str, Any]]) -> None:
    _, unbounded = free
    # The candidates that passed without a bound run p95 6.7 ms and p99 7.7 ms on this step: bounds of 7 ms keep
    # their p95 and break their p99.
    data = run_plan(tmp_path / "bounded", "--slo-ms", "7", "--p99-slo-ms", "7")
    assert data["p99_slo_ms"] == 7
    same = [
        (before, after)
        for before, after in zip(unbounded["candidates"], data["candidates"], strict=False)
        if before["settings"] == after["settings"]
    ]
    tail_only = [
        (before, after)
        for before, after in same
        if before["passed"] and before["mean"]["p95_ms"] <= 7 < before["mean"]["p99_ms"]
    ]
    assert tail_only, "no candidate with its p95 within 7 ms and its p99 above"
    for before, after in tail_only:
        assert after["failures"] == [f"p99: {before['mean']['p99_ms']:.4g} ms > 7 ms in 1 of 1 seeds"]
    for c in data["candidates"]:
        if c["passed"]:
            assert all(seed["p99_ms"] <= 7 for seed in c["per_seed"])
    md = (tmp_path / "bounded" / "plan.md").read_text()
    assert "A candidate holds a shape when p95 <= 7 ms, p99 <= 7 ms and rejected <= 0.1%" in md.splitlines()[2]
    assert "p99 over its bound: " in md


def test_a_p99_bound_below_the_p95_one_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["plan", *STEP, "--p99-slo-ms", "299", "--out", str(tmp_path / "a")]) == 2
    assert without_profile_warnings(capsys.readouterr().err).strip() == (
        "stackctl plan: --p99-slo-ms = 299 is below the p95 bound of 300 ms: a p99 is never below the p95; give at "
        "least 300"
    )
    # production states a p99 bound of 200 ms: a p95 bound above it needs a p99 bound too.
    argv = ["plan", "--stack", "production", "--profile", "step", "--slo-ms", "250", "--out", str(tmp_path / "b")]
    assert main(argv) == 2
    production = PROJECT_ROOT / "stacks" / "Pulumi.production.yaml"
    assert capsys.readouterr().err.strip() == (
        f"stackctl plan: {production.relative_to(PROJECT_ROOT)}: serving.p99LatencySloMs = 200 is below the p95 "
        "bound of 250 ms: a p99 is never below the p95; give --p99-slo-ms of at least 250 too"
    )


@pytest.fixture(scope="module")
def step_plan() -> Plan:
    """staging's plan of eight candidates on a quarter-hour step, one seed: what the plot tests draw."""
    loaded = load_stack("staging")
    return make_plan(
        stack_file("staging"),
        loaded,
        scenario(loaded),
        shaped_trace("step", 14_000, 0.25),
        trace="step",
        bounds=Bounds(300, 0.1),
        budget=8,
        seeds=1,
        seed=0,
        progress=lambda done, total, best: None,
    )


def test_pareto_png_keeps_every_label_off_the_points_and_its_axis_on_the_passed(step_plan: Plan) -> None:
    plan = step_plan
    figure = pareto_figure(plan)
    [axes] = figure.axes
    limits = span(plan.results, 300)
    assert axes.get_ylim() == pytest.approx((limits.low, limits.high))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    inside = axes.get_window_extent(renderer)
    # No word inside the axes: the legend and the caption are outside, so none can cover a point.
    assert len(axes.texts) == 0
    words = [t for t in figure.texts if t.get_text()] + [
        text for legend in figure.legends for text in legend.get_texts()
    ]
    assert len(words) >= 5
    for word in words:
        assert not word.get_window_extent(renderer).overlaps(inside), word.get_text()
    # Every point drawn lies within the axis range: a failed outlier sits on the edge.
    for collection in axes.collections:
        offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
        assert all(limits.low <= y <= limits.high for y in offsets[:, 1])


def test_a_current_setting_beyond_the_axis_is_said_so_in_the_legend(step_plan: Plan) -> None:
    plan = step_plan
    current = plan.results[0]
    slow = replace(current, mean={**current.mean, "p95_ms": 1_000_000.0}, failures=("p95: 1e+06 ms > 300 ms",))
    figure = pareto_figure(replace(plan, results=[slow, *plan.results[1:]]))
    labels = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
    assert "current (#0) beyond the axis, on its edge" in labels
    plain = pareto_figure(plan)
    assert "current (#0)" in [text.get_text() for legend in plain.legends for text in legend.get_texts()]
