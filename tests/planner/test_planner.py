"""`stackctl plan`: the choice on hand-checkable traces, its reasons, determinism, the stack-file patch, bad inputs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import stackctl.progress
from planner.plan import capacity_pins
from planner.settings import (
    BATCHING,
    StackInputs,
    current_settings,
    edits,
    knob_value,
    knobs,
    locations,
    with_values,
)
from platform_config.loader import load_stack_file
from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT
from simulator.scenario import scenario
from simulator.signals import SignalSpec
from stackctl.main import main
from tests.support.profile_warnings import without_profile_warnings
from triton_platform.model_packaging.source import read_repository

PRODUCTION = PROJECT_ROOT / "stacks" / "Pulumi.production.yaml"
# Two minutes at 20 then 40 req/s: one production replica serves thousands per second in milliseconds.
LIGHT = "t_seconds,rps\n0,20\n60,40\n119,40\n"


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`stackctl plan ARGS` in-process: exit code, stdout, stderr."""
    try:
        code = main(["plan", *args])
    except SystemExit as exit_:  # argparse's usage errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, without_profile_warnings(err)


def stack_copy(folder: Path) -> Path:
    """production's stack file where --apply may write it."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(PRODUCTION, folder / PRODUCTION.name))


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A folder for the light trace's plans, and the trace."""
    root = tmp_path_factory.mktemp("light")
    trace = root / "light.csv"
    trace.write_text(LIGHT)
    return root, trace


def run_light(root: Path, trace: Path, out: str, *extra: str) -> Path:
    # A 4 ms SLO: the stack's 5 ms batching delay misses it, so the plan must change the stack file.
    args = ["--config", str(root / PRODUCTION.name), "--trace", str(trace), "--slo-ms", "4", "--budget", "30"]
    args += ["--seeds", "2"]
    assert main(["plan", *args, "--out", str(root / out), *extra]) == 0
    return root / out


@pytest.fixture(scope="module")
def light_runs(light: tuple[Path, Path]) -> tuple[Path, Path, Path]:
    """Two identical plans of the light trace on a copy of production, the second applying its choice to it."""
    root, trace = light
    stack_copy(root)
    first = run_light(root, trace, "first")
    second = run_light(root, trace, "second", "--apply")
    return first, second, root / PRODUCTION.name


def read_json(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "plan.json").read_text())
    return data


def test_a_light_trace_keeps_productions_floor_and_the_fewest_gpu_hours(light_runs: tuple[Path, Path, Path]) -> None:
    data = read_json(light_runs[0])
    chosen = data["candidates"][data["chosen"]]
    assert chosen["passed"]
    # One replica would serve 40 req/s, but production's floor of 2 is an availability decision: never lowered.
    assert data["options"]["min_replicas"][0] == 2
    assert min(data["options"]["min_replicas"]) == 2
    assert chosen["settings"]["min_replicas"] == 2
    # Two minutes on two GPUs: 240 / 3600 GPU-hours, the least any candidate used.
    assert chosen["mean"]["gpu_hours"] == pytest.approx(240 / 3600)
    assert chosen["mean"]["gpu_hours"] == min(c["mean"]["gpu_hours"] for c in data["candidates"])
    assert data["candidates"][0]["settings"]["min_replicas"] == 2  # candidate 0: the stack as it is
    assert len(data["candidates"]) == 30
    md = (light_runs[0] / "plan.md").read_text()
    assert "| replicas min | 2 | 2 | triton-platform:serving.deployments.general.replicas.min |" in md
    assert (light_runs[0] / "pareto.png").read_bytes().startswith(b"\x89PNG")


def test_the_plan_names_the_deployments_models_it_does_not_simulate(light_runs: tuple[Path, Path, Path]) -> None:
    # production's general serves three models; the plan runs classifier's batcher alone.
    assert read_json(light_runs[0])["models_not_simulated"] == ["preprocess", "pipeline"]
    md = (light_runs[0] / "plan.md").read_text()
    assert (
        "Models: this plan simulates classifier alone. Deployment general also serves preprocess, pipeline, "
        "whose load shares the same pods and GPUs and is not in these figures"
    ) in md


def test_same_inputs_and_seed_give_the_same_bytes(light_runs: tuple[Path, Path, Path]) -> None:
    first, second, _ = light_runs
    for name in ("plan.json", "Pulumi.production.yaml.patch"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def comments(text: str) -> list[str]:
    """Every comment of a YAML file as written, full-line or after a value."""
    return [line[line.index("#") :].strip() for line in text.splitlines() if re.search(r"(^|\s)#", line)]


def test_the_patch_keeps_every_comment_and_loads_back_as_the_chosen_settings(
    light_runs: tuple[Path, Path, Path],
) -> None:
    first, _, applied = light_runs
    before, after = PRODUCTION.read_text(), applied.read_text()
    kept = comments(after)
    assert all(comment in kept for comment in comments(before))
    patch = (first / "Pulumi.production.yaml.patch").read_text()
    added = [line for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    data = read_json(first)
    chosen = data["candidates"][data["chosen"]]["settings"]
    # The classifier's own settings gain the delay (production sets it only in modelDefaults).
    assert f"+        maxQueueDelayMicroseconds: {chosen['max_queue_delay_us']}  # stackctl plan: " in "\n".join(added)
    assert all(re.search(r"# stackctl plan: .*light\.csv, \d{4}-\d{2}-\d{2}$", line) for line in added if ":" in line)
    # The applied file is a valid stack whose settings are the chosen candidate's.
    loaded = load_stack_file(applied, "production")
    assert current_settings(loaded, scenario(loaded, "general")).as_json() == chosen


def test_a_config_over_the_slo_is_replaced_by_one_within_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stack's 5 ms batching delay puts p95 near 6 ms: a 4 ms SLO fails it, shorter delays pass.
    trace = tmp_path / "light.csv"
    trace.write_text(LIGHT)
    # As on a terminal: the progress bar, with the best so far.
    monkeypatch.setattr(stackctl.progress, "shown", lambda: True)
    code, out, err = plan(
        capsys, "--stack", "production", "--trace", str(trace), "--slo-ms", "4", "--budget", "30", "--seeds", "2",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 0, err
    assert "stackctl plan:   0%|" in err
    assert "| 1/30 [" in err
    assert "candidates/s, best #" in err
    data = read_json(tmp_path / "out")
    current, chosen = data["candidates"][0], data["candidates"][data["chosen"]]
    assert not current["passed"]
    assert current["failures"][0].startswith("p95: ")
    assert chosen["passed"]
    assert chosen["mean"]["p95_ms"] <= 4
    assert chosen["settings"]["max_queue_delay_us"] < 5000
    md = (tmp_path / "out" / "plan.md").read_text()
    assert "- The current settings (#0) fail (p95: " in md
    assert "> 4 ms in 2 of 2 seeds)" in md
    failed = [c for c in data["candidates"] if not c["passed"]]
    assert failed
    assert f"- {len(failed)} of 30 candidates failed (p95 over the SLO: " in md
    # Every failed candidate is listed with its reason.
    table = md.split("## Failed candidates")[1]
    for candidate in failed:
        assert f"| {candidate['index']} | {candidate['origin']} |" in table
        assert "; ".join(candidate["failures"]) in table
    assert "chosen #" in out


TRACE_RULES = (
    "a header t_seconds,rps, then at least two rows of finite numbers: times from 0 (the first row at 0), "
    "strictly increasing, each row in a later whole second, the last from 59 to 172800 s "
    "(a run of one minute to 2 days); rates from 0 to 1000000 req/s, not all 0"
)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--budget", "0"], "argument --budget: expected an integer BUDGET from 1 to 10000, got '0'"),
        (["--budget", "2.5"], "argument --budget: expected an integer BUDGET from 1 to 10000, got '2.5'"),
        (["--seeds", "21"], "argument --seeds: expected an integer SEEDS from 1 to 20, got '21'"),
        (["--slo-ms", "0"], "argument --slo-ms: expected an integer SLO_MS from 1 to 600000, got '0'"),
        (["--max-rejected-pct", "nan"], "argument --max-rejected-pct: expected a percentage from 0 to 100, got 'nan'"),
        (["--max-rejected-pct", "101"], "argument --max-rejected-pct: expected a percentage from 0 to 100, got '101'"),
        (["--seed", "-1"], "argument --seed: expected an integer SEED with 0 <= SEED <= 4294967295, got '-1'"),
        (["--hours", "0"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got '0'"),
        (["--peak-rps", "0"], "argument --peak-rps: expected PEAK_RPS with 0 < PEAK_RPS <= 1000000, got '0'"),
        (["--profile", "ramp"], "argument --profile: expected one of step, diurnal, spike, got 'ramp'"),
    ],
)
def test_an_option_out_of_range_is_argparses_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    load = [] if "--profile" in argv else ["--profile", "step"]
    code, _, err = plan(capsys, "--stack", "dev", *load, *argv, "--out", str(tmp_path / "out"))
    assert code == 2
    assert err.splitlines()[-1] == f"stackctl plan: error: {expected}"


def test_bad_inputs_name_what_where_and_what_is_allowed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "out")]
    bad = tmp_path / "bad.csv"
    bad.write_text("time,rate\n0,1\n60,1\n")
    code, _, err = plan(capsys, "--stack", "dev", "--trace", str(bad), *out)
    assert (code, err.strip()) == (2, f"stackctl plan: {bad}:1: the header is 'time,rate'; expected {TRACE_RULES}")
    good = tmp_path / "good.csv"
    good.write_text(LIGHT)
    code, _, err = plan(capsys, "--stack", "dev", "--trace", str(good), "--hours", "2", *out)
    assert (code, err.strip()) == (
        2,
        "stackctl plan: --hours shapes a --profile, and --trace sets its own rates and length; "
        "leave it out or use --profile",
    )
    code, _, err = plan(capsys, "--stack", "production", "--trace", str(good), "--deployment", "nope", *out)
    assert code == 2
    assert err.strip() == (
        "stackctl plan: no deployment 'nope' in stacks/Pulumi.production.yaml; known: general, ranker"
    )
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    code, _, err = plan(capsys, "--stack", "dev", "--trace", str(good), "--out", str(tmp_path / "taken"))
    assert code == 2
    assert err.strip() == (
        f"stackctl plan: {tmp_path / 'taken'} is not empty and was not written by stackctl plan "
        "(unexpected: notes.txt); use a new or empty folder, or one stackctl plan wrote"
    )


def test_a_trace_with_too_little_load_to_measure_is_named_not_planned_as_nan(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A near-empty trace served no request: p95 was NaN, reported as `p95 nan ms > 500 ms` with advice to raise
    replicas.max. Refused before any run, naming the trace, what it carries and what a p95 needs."""
    out = ["--out", str(tmp_path / "out"), "--budget", "2"]
    empty = tmp_path / "near-empty.csv"
    empty.write_text("t_seconds,rps\n0,0.001\n60,0.001\n")
    code, _, err = plan(capsys, "--stack", "dev", "--trace", str(empty), *out)
    assert (code, err.strip()) == (
        2,
        f"stackctl plan: {empty} carries 0.061 requests over 61 s (each rate times the seconds it holds), too little "
        "load to measure: a p95 needs at least 20 requests (with fewer, 5% of them is less than one request, and a "
        "run may serve none); raise its rates or its length",
    )
    # Enough on the trace (30 requests), too little on the diurnal day derived at half its peak.
    thin = tmp_path / "thin.csv"
    thin.write_text("t_seconds,rps\n0,0.5\n60,0.5\n")
    code, _, err = plan(capsys, "--stack", "dev", "--trace", str(thin), *out)
    assert (code, err.strip()) == (
        2,
        f"stackctl plan: {thin}: the diurnal shape `stackctl plan` derives from it (a day compressed into the "
        "shape's length, peaking at 0.5x the trace's peak) carries 8.388 requests over 61 s, too little load to "
        "measure: a p95 needs at least 20 requests on every shape; raise the peak, now 0.5 req/s, to at least "
        "1.192 req/s",
    )
    assert not (tmp_path / "out").exists()


SHARED = "t_seconds,rps\n0,200\n60,400\n119,400\n"


@pytest.fixture(scope="module")
def shared_plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two plans of production with scaling.simulation.shares (classifier called by name and through the pipeline
    ensemble: preprocess, then classifier): at a 7 ms SLO, which the stack holds, and at 4 ms, which its batching
    delays miss (exit 1: no candidate passes)."""
    root = tmp_path_factory.mktemp("shared")
    stack = stack_copy(root)
    text = stack.read_text()
    anchor = "      gpuMemoryRatio: 0.35\n"
    assert text.count(anchor) == 1
    stack.write_text(text.replace(anchor, anchor + "      shares:\n        classifier: 0.4\n        pipeline: 0.6\n"))
    trace = root / "shared.csv"
    trace.write_text(SHARED)
    args = ["--config", str(stack), "--trace", str(trace), "--seeds", "2"]
    assert main(["plan", *args, "--budget", "12", "--slo-ms", "4", "--out", str(root / "missed")]) == 1
    assert main(["plan", *args, "--budget", "30", "--slo-ms", "7", "--out", str(root / "held"), "--apply"]) == 0
    return root / "held", root / "missed"


def test_a_deployments_models_are_planned_together(shared_plans: tuple[Path, Path]) -> None:
    held = shared_plans[0]
    data = read_json(held)
    # pipeline's 60% runs on its steps: classifier carries 0.4 + 0.6 of the requests, preprocess 0.6, of 1.6.
    assert data["models"] == {"classifier": pytest.approx(1 / 1.6), "preprocess": pytest.approx(0.6 / 1.6)}
    assert data["models_not_simulated"] == []
    assert data["candidates"][data["chosen"]]["passed"]
    for model in ("classifier", "preprocess"):
        for figure in ("p95_ms", "p99_ms", "rejected_pct"):
            assert data["candidates"][0]["mean"][f"{model}/{figure}"] is not None, (model, figure)
    md = (held / "plan.md").read_text()
    assert "Models: this plan simulates classifier, preprocess together on the deployment's pods" in md
    assert "(classifier 62.5%, preprocess 37.5%;" in md
    assert re.search(
        r"Per model, p99 from classifier [0-9.]+ ms to [0-9.]+ ms, preprocess [0-9.]+ ms to [0-9.]+ ms\.", md
    )
    assert re.search(r"\| current #0 \| preprocess \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|", md)


def test_each_model_is_held_to_the_bounds(shared_plans: tuple[Path, Path]) -> None:
    failures = read_json(shared_plans[1])["candidates"][0]["failures"]
    for model in ("classifier", "preprocess"):
        assert any(re.fullmatch(rf"p95: {model} [0-9.]+ ms > 4 ms in 2 of 2 seeds", f) for f in failures), failures


def test_every_models_batching_is_planned_and_applied(shared_plans: tuple[Path, Path]) -> None:
    """The candidates tune preprocess's batching beside classifier's, and --apply writes the chosen values to each
    model's own settings in the stack file, which then loads back as the chosen values (where a preprocess value
    lands: test_another_models_knob_changes_its_batching_alone_and_lands_in_its_own_settings)."""
    held = shared_plans[0]
    data = read_json(held)
    assert {"preprocess.max_queue_delay_us", "preprocess.instances", "preprocess.timeout_us"} <= set(data["options"])
    assert len(data["options"]["preprocess.max_queue_delay_us"]) > 1
    current = data["candidates"][0]["settings"]
    moved = {k for c in data["candidates"] for k, v in c["settings"].items() if current[k] != v}
    assert any(k.startswith("preprocess.") for k in moved), moved
    chosen = data["candidates"][data["chosen"]]["settings"]
    md = (held / "plan.md").read_text()
    assert "| preprocess: max queue delay (µs) |" in md
    assert "| classifier: max queue delay (µs) |" in md
    loaded = load_stack_file(held.parent / PRODUCTION.name, "production")
    s = scenario(loaded, "general", "classifier", others=["preprocess"], mix=tuple(data["models"].values()))
    settings = current_settings(loaded, s).as_json()
    assert {k: settings[k] for k in chosen} == chosen


def test_another_models_knob_changes_its_batching_alone_and_lands_in_its_own_settings() -> None:
    loaded = load_stack_file(PRODUCTION, "production")
    s = scenario(loaded, "general", "classifier", others=["preprocess"], mix=(0.5, 0.5))
    current = current_settings(loaded, s)
    assert knobs(current)[-6:] == tuple(f"preprocess.{name}" for name in BATCHING)
    # A preferred size above the new max batch goes, as for the planned model (Settings.consistent).
    changed = with_values(current, {"preprocess.max_batch_size": 4, "preprocess.preferred_sizes": (2, 8)})
    assert knob_value(changed, "preprocess.max_batch_size") == 4
    assert knob_value(changed, "preprocess.preferred_sizes") == (2,)
    assert knob_value(changed, "max_batch_size") == current.max_batch_size
    places = locations("general", "classifier", "busy-ratio", ["preprocess"])
    assert edits(current, changed, places) == {
        ("triton-platform:models", "preprocess", "maxBatchSize"): 4,
        ("triton-platform:models", "preprocess", "dynamicBatching", "preferredBatchSize"): [2],
    }


def test_a_switch_of_signal_moves_the_target_and_pins_the_profiles() -> None:
    """From production's demand to the busy ratio: the demand's target goes with the profiles it pins, the busy
    ratio's is written; and to demand again: every served model's profile is pinned. The stack then validates (the
    planner keeps such a switch only where it does)."""
    loaded = load_stack_file(PRODUCTION, "production")
    s = scenario(loaded, "general", "classifier", others=["preprocess"], mix=(0.5, 0.5))
    current = current_settings(loaded, s)
    assert (current.signal, current.target) == ("demand", 0.82)
    places = locations("general", "classifier", "demand", ["preprocess"])
    repo = read_repository(DEFAULT_MODEL_REPO)
    pins = capacity_pins(loaded, repo)
    assert sorted(pins) == ["classifier", "preprocess", "ranker"]
    busy = with_values(current, {"signal": "busy-ratio", "target": 0.8})
    scaling = "triton-platform:scaling"
    changes = edits(current, busy, places, pins)
    assert changes == {
        (scaling, "signal"): "busy-ratio",
        (scaling, "demandTarget"): None,
        (scaling, "busyRatioTarget"): 0.8,
        (scaling, "capacityProfiles"): None,
    }
    inputs = StackInputs.read(PRODUCTION, loaded, repo, s)
    assert inputs.scenario(changes).signal == SignalSpec("busy-ratio", 0.8)
    back = edits(busy, current, places, pins)
    expected: dict[tuple[str, ...], object] = {
        (scaling, "signal"): "demand",
        (scaling, "busyRatioTarget"): None,
        (scaling, "demandTarget"): 0.82,
        **{(scaling, "capacityProfiles", m, "path"): f"bench/results/profiles/{m}.json" for m in pins},
        **{(scaling, "capacityProfiles", m, "sha256"): pins[m][1] for m in pins},
    }
    assert back == expected


STAGING = PROJECT_ROOT / "stacks" / "Pulumi.staging.yaml"


def test_a_model_the_load_leaves_out_is_named_and_one_too_light_to_measure_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """staging's general serves classifier, ranker, preprocess and pipeline (an ensemble of preprocess and
    classifier): a trace of classifier and preprocess plans them, pipeline runs on them, ranker is left out."""
    trace = tmp_path / "two.csv"
    trace.write_text("t_seconds,classifier,preprocess\n0,200,100\n60,400,200\n119,400,200\n")
    args = ["--config", str(STAGING), "--trace", str(trace), "--budget", "2", "--seeds", "1"]
    code, _, err = plan(capsys, *args, "--out", str(tmp_path / "out"))
    assert code in {0, 1}, err
    data = read_json(tmp_path / "out")
    assert list(data["models"]) == ["classifier", "preprocess"]
    assert data["models_not_simulated"] == ["ranker"]
    assert (
        "Deployment general also serves ranker, which the trace gives no load"
        in (tmp_path / "out" / "plan.md").read_text()
    )
    trace.write_text("t_seconds,classifier,preprocess\n0,200,0\n60,400,0.01\n119,400,0.01\n")
    code, _, err = plan(capsys, *args, "--out", str(tmp_path / "light"))
    assert code == 2
    assert (
        f"stackctl plan: {trace}: model preprocess carries 0.6 requests on the trace shape of `stackctl plan` "
        "(the plan's own trace), too little load to measure: a p95 needs at least 20 requests of every model on "
        "every shape; raise its rate or plan without it"
    ) in err


def test_a_knob_of_a_model_not_planned_is_refused() -> None:
    loaded = load_stack_file(PRODUCTION, "production")
    current = current_settings(loaded, scenario(loaded, "general", "classifier", others=["preprocess"], mix=(1, 1)))
    with pytest.raises(KeyError, match="no planned model ranker in these settings"):
        with_values(current, {"ranker.max_batch_size": 4})
