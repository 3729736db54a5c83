"""`stackctl` for scripts and CI: exit codes that gate (0 passed, 1 a check failed, 2 an input, 3 a bug), `--json`,
errors at file:line:column and as GitHub annotations, `--version` from the console script, a light `--help`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from platform_config.key_positions import key_position
from platform_config.paths import PROJECT_ROOT
from stackctl.main import main
from triton_platform import __version__
from triton_platform.args.excerpts import key_step

DEV = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
PRODUCTION = PROJECT_ROOT / "stacks" / "Pulumi.production.yaml"
LIGHT = "t_seconds,rps\n0,20\n60,40\n119,40\n"
"""Two minutes at 20 then 40 req/s (as tests/planner/test_planner.py's)."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def bad_dev(tmp_path: Path) -> Path:
    """dev with replicas.min above max: one finding."""
    document = yaml.safe_load(DEV.read_text())
    document["config"]["triton-platform:serving"]["deployments"]["general"]["replicas"] = {"min": 3, "max": 2}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_validate_passes_with_exit_0_and_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", "--stack", "dev", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "command": "validate",
        "passed": True,
        "file": "stacks/Pulumi.dev.yaml",
        "stack": "dev",
        "summary": "stack dev (dev, render), 1 deployment(s), 4 model(s)",
        "deferred": [],
        "unpinned": [],
        "errors": [],
        # Dev's `general` idles at zero: the estimate of its wake, by part (platform_config/wake.py).
        "wakes": {
            "general": {
                "seconds": 15.0,
                "parts": {"node": 0, "image pull": 0, "model load": 0.0, "readiness": 15},
            }
        },
        # Dev scales on the busy ratio: no capacity per pod is read.
        "capacities": {},
    }


def test_validate_json_gives_each_capacity_the_demand_reads(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", "--stack", "production", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["capacities"] == {
        "general": {"classifier": 13554.054330712024, "preprocess": 13558.490913210078},
        "ranker": {"ranker": 20127.484043298107},
    }


def test_findings_exit_1_each_at_its_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = bad_dev(tmp_path)
    code, out, err = run(capsys, "validate", "--config", str(path))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == f"{path}: 1 config error"
    assert lines[1].startswith(f"{path}:29:9: triton-platform:serving.deployments.general.replicas: ")


def test_findings_in_json_name_file_line_column_key_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_dev(tmp_path)
    code, out, _ = run(capsys, "validate", "--config", str(path), "--json")
    result = json.loads(out)
    assert (code, result["command"], result["passed"], result["file"]) == (1, "validate", False, str(path))
    [error] = result["errors"]
    assert {k: error[k] for k in ("file", "line", "column", "key")} == {
        "file": str(path),
        "line": 29,
        "column": 9,
        "key": "triton-platform:serving.deployments.general.replicas",
    }
    assert error["message"] == "min 3 is above max 2; min must be <= max"


def test_under_github_actions_each_finding_is_an_error_annotation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    path = bad_dev(tmp_path)
    code, out, err = run(capsys, "validate", "--config", str(path), "--json")
    assert code == 1
    json.loads(out)  # stdout stays one object
    [annotation] = [line for line in err.splitlines() if line.startswith("::error ")]
    escaped = str(path).replace(":", "%3A").replace(",", "%2C")
    assert annotation.startswith(
        f"::error file={escaped},line=29,col=9,title=triton-platform%3Aserving.deployments.general.replicas::"
        "triton-platform:serving.deployments.general.replicas: "
    )


def test_without_github_actions_there_is_no_annotation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(capsys, "validate", "--config", str(bad_dev(tmp_path)))
    assert "::error" not in err


def test_an_unknown_stack_is_an_input_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", "--stack", "nope", "--json")
    assert code == 2
    result = json.loads(out)
    assert (result["command"], result["passed"], result["exit_code"]) == ("validate", False, 2)
    assert result["error"].startswith("stacks/Pulumi.nope.yaml: 1 config error")
    assert "no stack 'nope'; known stacks: dev, production, staging" in err


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["validate"])
    assert exit_.value.code == 2
    assert "one of the arguments --stack --config is required" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "command", "error"),
    [
        (
            ["validate", "--json"],
            "validate",
            "stackctl validate: error: one of the arguments --stack --config is required",
        ),
        (
            ["validate", "--stack", "dev", "--json", "--bogus"],
            "validate",
            "stackctl: error: unrecognized arguments: --bogus",
        ),
        (["--json", "bogus"], None, "stackctl: error: argument COMMAND: invalid choice: 'bogus' (choose from "),
    ],
)
def test_a_usage_error_under_json_is_one_json_object_too(
    argv: list[str], command: str | None, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert (result["command"], result["passed"], result["exit_code"]) == (command, False, 2)
    assert result["error"].startswith(error)
    assert error.split(": error: ")[1] in err  # argparse's own usage message, as without --json


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path: Path) -> None:
    """`stackctl ... --json | head -c 0`: the reader gone before the answer is written; no BrokenPipeError traceback,
    exit 141 as a shell reports SIGPIPE."""
    argv = ["simulate", "--stack", "dev", "--profile", "step", "--hours", "0.1", "--json", "--no-plot"]
    command = [sys.executable, "-m", "stackctl", *argv, "--out", str(tmp_path / "out")]
    with subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as done:
        assert done.stdout is not None
        assert done.stderr is not None
        done.stdout.close()  # the reader goes away before anything is written
        err = done.stderr.read().decode()
        code = done.wait(timeout=300)
    assert "Traceback" not in err
    assert "BrokenPipeError" not in err
    assert code == 141, err


def test_a_yaml_syntax_error_is_a_finding_at_its_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  triton-platform:environment: dev\n  triton-platform:environment: production\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run(capsys, "validate", "--config", str(path), "--json")
    assert code == 1
    assert json.loads(out)["errors"] == [
        {
            "file": str(path),
            "line": 3,
            "column": 3,
            "key": "(yaml)",
            "message": "not valid YAML: key 'triton-platform:environment' appears twice in one mapping",
        }
    ]
    escaped = str(path).replace(":", "%3A").replace(",", "%2C")
    assert f"::error file={escaped},line=3,col=3,title=(yaml)::(yaml): not valid YAML: key" in err


def simulate(
    capsys: pytest.CaptureFixture[str], out: Path, profile: str, hours: str, peak: str
) -> tuple[int, dict[str, Any]]:
    argv = ["simulate", "--stack", "dev", "--profile", profile, "--hours", hours, "--peak-rps", peak]
    code, stdout, _ = run(capsys, *argv, "--no-plot", "--out", str(out), "--json")
    return code, json.loads(stdout)


def test_simulate_that_holds_the_slo_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = simulate(capsys, tmp_path / "held", "step", "0.05", "20")
    assert (code, result["passed"], result["failures"]) == (0, True, [])
    assert result["slo"] == {"p95_ms": 500.0, "p99_ms": None, "max_rejected_pct": 0.1}
    assert sorted(result) == [
        "command",
        "compare",
        "deployment",
        "failures",
        "figures",
        "file",
        "model",
        "out",
        "passed",
        "slo",
        "stack",
    ]
    assert (tmp_path / "held" / "summary.json").is_file()


def test_simulate_that_misses_the_slo_exits_1_with_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A spike to 2,000 req/s on dev's two replicas at most: requests wait seconds in the queue.
    code, result = simulate(capsys, tmp_path / "missed", "spike", "0.1", "2000")
    assert (code, result["passed"]) == (1, False)
    assert any(failure.startswith("p95 ") and failure.endswith(" ms > 500 ms") for failure in result["failures"])
    assert (tmp_path / "missed" / "summary.json").is_file()


def test_simulate_prints_its_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--stack", "dev", "--profile", "step", "--hours", "0.05", "--peak-rps", "20", "--no-plot"]
    code, out, _ = run(capsys, *argv, "--out", str(tmp_path / "o"))
    assert code == 0
    assert out.splitlines()[-1] == "  SLO (p95 <= 500 ms, rejected <= 0.1%): held"


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("light")
    (root / "light.csv").write_text(LIGHT)
    shutil.copy(PRODUCTION, root / PRODUCTION.name)
    return root, root / "light.csv"


def test_a_plan_with_no_passing_candidate_exits_1(light: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, trace = light
    # A p95 bound of 1 ms: none of the first four candidates meets it.
    argv = ["plan", "--config", str(root / PRODUCTION.name), "--trace", str(trace), "--slo-ms", "1"]
    code, out, _ = run(capsys, *argv, "--budget", "4", "--seeds", "1", "--out", str(root / "none"), "--json")
    result = json.loads(out)
    assert (code, result["command"], result["passed"], result["chosen"]) == (1, "plan", False, None)
    # production's own p99 bound (200 ms) beside the p95 bound given
    assert result["slo"] == {"p95_ms": 1, "p99_ms": 200, "max_rejected_pct": 0.1}
    assert (result["candidates"], result["applied"], result["error"]) == (4, False, None)
    assert (root / "none" / "plan.md").is_file()


def test_a_plan_with_a_passing_candidate_exits_0(light: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, trace = light
    argv = ["plan", "--config", str(root / PRODUCTION.name), "--trace", str(trace), "--slo-ms", "4"]
    code, out, _ = run(capsys, *argv, "--budget", "30", "--seeds", "2", "--out", str(root / "some"), "--json")
    result = json.loads(out)
    assert (code, result["passed"]) == (0, True)
    assert set(result["chosen"]) == {"index", "gpu_hours", "p95_ms", "p99_ms", "shapes_not_held"}
    assert result["chosen"]["p95_ms"] <= 4


def test_the_console_script_says_its_version() -> None:
    run_ = subprocess.run(
        [str(PROJECT_ROOT / ".venv" / "bin" / "stackctl"), "--version"], capture_output=True, text=True, check=False
    )
    assert (run_.returncode, run_.stdout, run_.stderr) == (0, f"stackctl {__version__}\n", "")


def test_help_loads_no_component_sdk_or_simulator() -> None:
    """`stackctl --help` imports the command line only: the commands load their libraries when they run."""
    run_ = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "stackctl", "--help"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run_.returncode == 0
    imported = {line.split("|")[-1].strip() for line in run_.stderr.splitlines() if line.startswith("import time:")}
    assert "stackctl.commands.plan" in imported
    heavy = {
        "pulumi",
        "pulumi_kubernetes",
        "numpy",
        "pydantic",
        "triton_platform.gpu_pool.gpu_node_pool",
        "offline.synth",
    }
    assert imported & heavy == set()


@pytest.mark.parametrize(
    ("path", "position"),
    [
        ("triton-platform:serving.deployments.general.replicas.min", (43, 20)),
        # Absent below `general`: the deepest key the file has.
        ("triton-platform:serving.deployments.general.nope.deeper", (39, 7)),
        ("triton-platform:serving.deployments.general.models[1]", (41, 30)),
        ('triton-platform:serving.deployments["general"]', (39, 7)),
    ],
)
def test_a_key_is_found_at_its_line_and_column(path: str, position: tuple[int, int]) -> None:
    assert key_position(DEV.read_text(), path) == position


def test_a_file_that_is_not_yaml_has_no_positions() -> None:
    assert key_position("config: [unclosed", "triton-platform:serving") is None
    assert key_position("- a list\n", "triton-platform:serving") is None


def test_a_quoted_or_non_ascii_key_is_found_at_its_own_line() -> None:
    text = 'config:\n  triton-platform:models:\n    ranker: {}\n    "cl\\u00e4ssifier": {}\n    "a.b c": {}\n'
    # The paths as excerpts.key_step writes them: JSON in brackets, a key's own problem marked `(key)`.
    assert key_position(text, 'triton-platform:models["cl\\u00e4ssifier"] (key)') == (4, 5)
    assert key_position(text, 'triton-platform:models["a.b c"]') == (5, 5)
    assert key_position(text, "triton-platform:models.ranker (key)") == (3, 5)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30))
def test_any_key_as_the_messages_name_it_is_found_at_its_line(key: str) -> None:
    text = yaml.safe_dump({"config": {"triton-platform:models": {"first": {}, key: {}}}}, allow_unicode=True)
    if key == "first":
        return
    rows = text.splitlines()
    keys = [i for i, row in enumerate(rows, 1) if row.startswith("    ") and not row.startswith("     ")]
    line = next(i for i in keys if rows[i - 1] != "    first: {}")
    assert key_position(text, f"triton-platform:models{key_step(key)}")[0] == line  # type: ignore[index]
