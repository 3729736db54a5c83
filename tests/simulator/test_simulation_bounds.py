"""Simulation inputs that used to run quietly and wrongly, refused with the rule they break.

Issue 28, "Quiet acceptance": a trace that does not start at 0 (or whose rows cannot all take effect, or that
offers no load), a latency profile outside physical durations, a GPU-memory footprint at its trigger's target,
a profile outside the project, and a run the documented bounds allow but no 2-core machine finishes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import platform_config.types
from platform_config.errors import ConfigError
from platform_config.loader import load_stack_file
from platform_config.paths import PROJECT_ROOT
from simulator.scenario import shaped_trace
from simulator.shapes import MAX_REQUESTS
from simulator.timeline import EDGES, PERCENTILE_ROWS, Timeline, percentiles
from stackctl.run_inputs import within_request_budget
from tests.simulator.test_simulator_inputs import DEV, TRACE_RULES, _dev_with_profile, simulate

# --- 1. a trace runs exactly the load its rows give -------------------------------------------------------------


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        (
            "t_seconds,rps\n3600,100\n7200,100\n",
            "{path}:2: the first row is at t_seconds 3600; a trace starts at 0, or its first 3600 s would run at "
            "0 req/s unseen: add a row 0,RPS before it (0,0 for a load that starts later)",
        ),
        (
            "t_seconds,rps\n\n0.5,100\n120,100\n",
            "{path}:3: the first row is at t_seconds 0.5; a trace starts at 0, or its first 0.5 s would run at "
            "0 req/s unseen: add a row 0,RPS before it (0,0 for a load that starts later)",
        ),
        (
            "t_seconds,rps\n0,100\n30.2,900\n30.7,100\n120,100\n",
            "{path}:4: t_seconds 30.7 is in the same whole second as the row before (30.2), which would never take "
            "effect; the simulation steps by seconds: give each row its own second",
        ),
        (
            "t_seconds,rps\n0,0\n600,0\n",
            "{path}: every rate is 0, so the run would measure nothing; expected " + TRACE_RULES,
        ),
    ],
)
def test_a_trace_that_would_run_other_than_its_rows_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trace: str, expected: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(trace, encoding="utf-8")
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--trace", str(path))
    assert code == 2
    assert err.strip() == "stackctl simulate: " + expected.format(path=path)


# --- 2. a latency profile holds physical durations ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (
            {"tau_seconds": {"1": 1e300}},
            "tau_seconds['1'] = 1e+300 s is outside 1e-06 to 60 s; expected one batch's seconds on one model "
            "instance (is it in ms or us?)",
        ),
        (
            {"tau_seconds": {"1": 1e-9, "8": 2e-9}},
            "tau_seconds['1'] = 1e-09 s is outside 1e-06 to 60 s; expected one batch's seconds on one model "
            "instance (is it in ms or us?)",
        ),
        (
            {"tau_seconds": {"1": 0.001}, "request_overhead_percentiles_seconds": [0.001, 3600]},
            "request_overhead_percentiles_seconds[1] = 3600 s is above 60 s; expected one request's seconds "
            "outside the instance: transport, (de)serialization (is it in ms or us?)",
        ),
    ],
)
def test_a_latency_profile_outside_physical_durations_is_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    profile: dict[str, object],
    expected: str,
) -> None:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile), encoding="utf-8")
    stack = _dev_with_profile(tmp_path, path, monkeypatch)
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step")
    assert code == 2
    assert err.strip() == f"stackctl simulate: {path}: {expected}"


def test_a_profile_at_the_ends_of_the_bounds_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "profile.json"
    profile = {"tau_seconds": {"1": 1e-6, "8": 60}, "request_overhead_percentiles_seconds": [0, 60]}
    path.write_text(json.dumps(profile), encoding="utf-8")
    stack = _dev_with_profile(tmp_path, path, monkeypatch)
    # --peak-rps: the default, twice the rate that fires the trigger, is a fraction of a request a second with
    # minute-long batches, too few requests in 72 s for a p95 (stackctl.run_inputs.measurable); 1 req/s offers 58.
    code, err = simulate(
        capsys, tmp_path, "--config", str(stack), "--profile", "step", "--hours", "0.02", "--peak-rps", "1"
    )
    # Accepted and run to the end: minute-long batches miss the SLO (exit 1), where a refused profile exits 2.
    assert (code, err) == (1, "")


def test_a_profile_whose_slope_leaves_the_bound_at_the_max_batch_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Measured to batch size 2 only; the dev classifier batches up to 8, where the slope reaches 6 x 15 s.
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"tau_seconds": {"1": 0.001, "2": 15.001}}), encoding="utf-8")
    stack = _dev_with_profile(tmp_path, path, monkeypatch)
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step")
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: {path}: tau_seconds, extrapolated to model 'classifier''s max batch size 8, is 105.001 s, "
        "above 60 s; measure tau_seconds up to batch size 8 (stackctl profile --model classifier)"
    )


# --- 3 and 4. the simulation section agrees with the scaling it models, and stays in the project ------------------

SIM_ANCHOR = "    gpuMemoryRatioTarget: 0.9\n"


def _dev_with_simulation(tmp_path: Path, simulation: str) -> Path:
    """The dev stack (GPU-memory target 0.9) with `scaling.simulation` set to the flow mapping `simulation`."""
    text = DEV.read_text(encoding="utf-8")
    assert SIM_ANCHOR in text
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(text.replace(SIM_ANCHOR, f"{SIM_ANCHOR}    simulation: {simulation}\n"), encoding="utf-8")
    return stack


def _config_errors(stack: Path) -> list[str]:
    try:
        load_stack_file(stack, "dev")
    except ConfigError as err:
        return [f"{issue.path}: {issue.message}" for issue in err.issues]
    return []


GPU_MEMORY = (
    "triton-platform:scaling.simulation.gpuMemoryRatio: {ratio} is not below "
    "triton-platform:scaling.gpuMemoryRatioTarget (0.9): a pod's own footprint would hold the GPU-memory trigger "
    "at or above its target at any load, so the deployment never scales down (and beyond the HPA's 10% tolerance "
    "climbs to replicas.max); give the footprint the dashboard shows, below the target"
)


@pytest.mark.parametrize(
    ("ratio", "expected"), [("1.0", GPU_MEMORY.format(ratio=1)), ("0.9", GPU_MEMORY.format(ratio=0.9)), ("0.89", None)]
)
def test_a_gpu_memory_footprint_at_its_target_is_refused_naming_both_keys(
    tmp_path: Path, ratio: str, expected: str | None
) -> None:
    errors = _config_errors(_dev_with_simulation(tmp_path, f"{{gpuMemoryRatio: {ratio}}}"))
    assert errors == ([expected] if expected else [])


OUTSIDE = "triton-platform:scaling.simulation.profile: {shown} leads outside the project (to {to}); give a file inside the project root, e.g. bench/results/profiles/classifier.json"


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("../profile.json", OUTSIDE.format(shown="'../profile.json'", to=PROJECT_ROOT.parent / "profile.json")),
        (
            "bench/../../x.json",
            OUTSIDE.format(shown="'bench/../../x.json'", to=PROJECT_ROOT.parent / "x.json"),
        ),
        (
            "/etc/profile.json",
            "triton-platform:scaling.simulation.profile: '/etc/profile.json' is an absolute path; give a file "
            "relative to the project root, inside it, e.g. bench/results/profiles/classifier.json",
        ),
        ("bench/results/profiles/classifier.json", None),
    ],
)
def test_a_profile_outside_the_project_is_refused(tmp_path: Path, profile: str, expected: str | None) -> None:
    errors = _config_errors(_dev_with_simulation(tmp_path, f"{{profile: {json.dumps(profile)}}}"))
    assert errors == ([expected] if expected else [])


def test_a_profile_linked_out_of_the_project_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A link committed in the project that leads out is as unreproducible as the path itself.
    project, outside = tmp_path / "project", tmp_path / "elsewhere.json"
    project.mkdir()
    (project / "profile.json").symlink_to(outside)
    monkeypatch.setattr(platform_config.types, "PROJECT_ROOT", project)
    errors = _config_errors(_dev_with_simulation(tmp_path, "{profile: profile.json}"))
    assert errors == [OUTSIDE.format(shown="'profile.json'", to=outside)]


# --- 5. what the documented bounds allow, one run finishes -------------------------------------------------------


def test_the_documented_maxima_are_refused_before_running(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    offered = shaped_trace("spike", 1_000_000, 48).sum()
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--profile", "spike", "--hours", "48", "--peak-rps", "1e6")
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: --profile spike --peak-rps 1000000 --hours 48 offers {offered:,.0f} requests, above the "
        "200,000,000 one simulation runs (each request goes through the batcher: about a minute on 2 cores); lower "
        "--peak-rps or --hours, or search it with `stackctl plan`, whose cost does not grow with the rate"
    )


def test_the_old_maxima_are_argparses_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # The issue's run: 48 h at 10 M req/s ran past 600 s at 6.9 GB.
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--profile", "spike", "--hours", "48", "--peak-rps", "1e7")
    assert code == 2
    assert err.splitlines()[-1] == (
        "stackctl simulate: error: argument --peak-rps: expected PEAK_RPS with 0 < PEAK_RPS <= 1000000, got '1e7'"
    )


def test_a_trace_over_the_request_budget_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("t_seconds,rps\n0,5000\n86399,5000\n", encoding="utf-8")
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--trace", str(path))
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: {path} offers 432,000,000 requests, above the 200,000,000 one simulation runs (each "
        "request goes through the batcher: about a minute on 2 cores); lower its rates or its length, or search it "
        "with `stackctl plan`, whose cost does not grow with the rate"
    )


def test_the_request_budget_counts_both_runs_of_compare_and_holds_at_its_bound() -> None:
    shape = {"shape": "step", "peak_rps": 1.0, "hours": 1.0}
    at_bound = np.full(1000, MAX_REQUESTS / 1000)
    within_request_budget(at_bound, shape, 1)
    with pytest.raises(ValueError, match=r"offers 400,000,000 requests over the two runs of --compare, above"):
        within_request_budget(at_bound, shape, 2)
    with pytest.raises(ValueError, match=r"offers 200,000,001 requests, above"):
        within_request_budget(np.append(at_bound, 1.0), shape, 1)


def test_percentiles_in_row_blocks_equal_the_whole_histogram_at_once() -> None:
    # The blocks bound a long run's memory; a row on either side of a block's edge must not change.
    rng = np.random.default_rng(3)
    rows = PERCENTILE_ROWS + 5
    timeline = Timeline.empty(rows)
    assert timeline.histogram.dtype == np.int32  # a row per second: half the memory of int64
    timeline.histogram[:] = rng.integers(0, 50, timeline.histogram.shape)
    timeline.histogram[PERCENTILE_ROWS - 1] = 0  # a second without arrivals: NaN
    counts = timeline.histogram.astype(np.int64)
    totals = counts.sum(axis=1)
    index = np.minimum((np.cumsum(counts, axis=1) < 0.95 * totals[:, None]).sum(axis=1), len(EDGES) - 2)
    whole = np.where(totals > 0, np.sqrt(EDGES[index] * EDGES[index + 1]), np.nan)
    np.testing.assert_array_equal(percentiles(timeline.histogram, 95), whole)
