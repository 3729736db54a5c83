"""Every `stackctl simulate` input refused with one clear line, never a traceback or a silently wrong run.

Two kinds of refusal, asserted separately: an option's own value is argparse's usage error (exit 2,
`stackctl simulate: error: argument --X: expected ..., got '...'`); anything that needs a file, the stack
or git (exit 1) prints `stackctl simulate: ...` naming the input, where it is and what is allowed.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import platform_config.types
import simulator.scenario
import stackctl.run_inputs
from platform_config.paths import PROJECT_ROOT
from simulator.scenario import read_trace
from stackctl.commands.simulate import slo_failures
from stackctl.main import main
from tests.support.profile_warnings import without_profile_warnings

DEV = PROJECT_ROOT / "stacks" / "Pulumi.dev.yaml"
TRACE_RULES = (
    "a header t_seconds,rps, then at least two rows of finite numbers: times from 0 (the first row at 0), "
    "strictly increasing, each row in a later whole second, the last from 59 to 172800 s "
    "(a run of one minute to 2 days); rates from 0 to 1000000 req/s, not all 0"
)
PROFILE_KEYS = (
    "expected a JSON object with tau_seconds (batch size -> seconds) and optionally "
    "request_overhead_percentiles_seconds, as bench/latency_profile.py writes"
)
OVERHEAD = "request_overhead_percentiles_seconds"


def simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str]:
    """`stackctl simulate ARGS --out tmp_path/out` in-process: the exit code and stderr."""
    try:
        code = main(["simulate", *args, "--no-plot", "--out", str(tmp_path / "out")])
    except SystemExit as exit_:  # argparse's usage errors
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, without_profile_warnings(err)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--hours", "0"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got '0'"),
        (["--hours", "-1"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got '-1'"),
        (["--hours", "nan"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got 'nan'"),
        (["--hours", "inf"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got 'inf'"),
        (["--hours", "49"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got '49'"),
        (["--hours", "0.01"], "argument --hours: expected HOURS from 1/60 (one minute) to 48 (2 days), got '0.01'"),
        (["--peak-rps", "0"], "argument --peak-rps: expected PEAK_RPS with 0 < PEAK_RPS <= 1000000, got '0'"),
        (["--peak-rps", "-5"], "argument --peak-rps: expected PEAK_RPS with 0 < PEAK_RPS <= 1000000, got '-5'"),
        (["--peak-rps", "nan"], "argument --peak-rps: expected PEAK_RPS with 0 < PEAK_RPS <= 1000000, got 'nan'"),
        (["--peak-rps", "1e8"], "argument --peak-rps: expected PEAK_RPS with 0 < PEAK_RPS <= 1000000, got '1e8'"),
        (["--seed", "-1"], "argument --seed: expected an integer SEED with 0 <= SEED <= 4294967295, got '-1'"),
        (["--seed", "2.5"], "argument --seed: expected an integer SEED with 0 <= SEED <= 4294967295, got '2.5'"),
        (
            ["--seed", "4294967296"],
            "argument --seed: expected an integer SEED with 0 <= SEED <= 4294967295, got '4294967296'",
        ),
        *(
            (
                [f"--metrics-outage={bad}"],  # "=": "-5:60" alone would read as an option
                f"argument --metrics-outage: expected START:SECONDS with START >= 0 and SECONDS > 0, got {bad!r}; "
                "both finite, at most 172800 (2 days)",
            )
            for bad in ("600", "600:0", "-5:60", "a:b", "nan:60", "60:nan", "inf:60", "60:inf", "60:-1", "0:172801")
        ),
        (
            ["--profile", "x" * 500],
            "argument --profile: expected one of step, diurnal, spike, got '" + "x" * 79 + "…",
        ),
    ],
)
def test_an_option_out_of_range_is_argparses_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    if "--profile" not in argv:
        argv = ["--profile", "step", *argv]
    code, err = simulate(capsys, tmp_path, "--stack", "dev", *argv)
    assert code == 2
    assert err.splitlines()[-1] == f"stackctl simulate: error: {expected}"


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        ("", "{path}:1: the header is nothing; expected " + TRACE_RULES),
        ("time,rate\n0,1\n60,1\n", "{path}:1: the header is 'time,rate'; expected " + TRACE_RULES),
        ("rps,t_seconds\n0,1\n60,1\n", "{path}:1: the header is 'rps,t_seconds'; expected " + TRACE_RULES),
        ("t_seconds,rps\n", "{path}: 0 rows after the header; expected " + TRACE_RULES),
        ("t_seconds,rps\n0,1\n\n", "{path}: 1 row after the header; expected " + TRACE_RULES),
        (
            "t_seconds,rps\n0,x\n",
            "{path}:2: '0,x' is not a row of t_seconds,rps (two numbers, the header naming them)",
        ),
        (
            "t_seconds,rps\n0,1,2\n",
            "{path}:2: '0,1,2' is not a row of t_seconds,rps (two numbers, the header naming them)",
        ),
        (
            "t_seconds,rps\n0," + "9" * 500 + "x\n",
            "{path}:2: '0," + "9" * 77 + "… is not a row of t_seconds,rps (two numbers, the header naming them)",
        ),
        ("t_seconds,rps\n0,-5\n", "{path}:2: t_seconds and rps must be finite and non-negative; got 0.0, -5.0"),
        ("t_seconds,rps\n-1,5\n", "{path}:2: t_seconds and rps must be finite and non-negative; got -1.0, 5.0"),
        ("t_seconds,rps\n0,nan\n", "{path}:2: t_seconds and rps must be finite and non-negative; got 0.0, nan"),
        ("t_seconds,rps\n0,1\ninf,1\n", "{path}:3: t_seconds and rps must be finite and non-negative; got inf, 1.0"),
        ("t_seconds,rps\n0,5\n10,5\n5,5\n", "{path}:4: t_seconds must increase; 5.0 follows 10.0"),
        ("t_seconds,rps\n0,5\n\n0,5\n", "{path}:4: t_seconds must increase; 0.0 follows 0.0"),
        (
            "t_seconds,rps\n0,5\n172801,5\n",
            "{path}:3: t_seconds 172801.0 is past 172800 s; a trace lasts 2 days at most",
        ),
        (
            "t_seconds,rps\n0,5\n60,1e8\n",
            "{path}:3: rps 100000000.0 is above 1000000; rates are 1000000 req/s at most",
        ),
        (
            "t_seconds,rps\n0,5\n57.5,5\n",
            "{path}:3: the last row, at t_seconds 57.5, ends the run after 59 s; expected " + TRACE_RULES,
        ),
        (
            "t_seconds,rps\n0,5\n1," + "9" * 200_000 + "\n",
            "{path}:3: not CSV (field larger than field limit (131072)); expected " + TRACE_RULES,
        ),
    ],
)
def test_a_bad_trace_names_its_file_line_and_the_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trace: str, expected: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(trace, encoding="utf-8")
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--trace", str(path))
    assert code == 2
    assert err.strip() == "stackctl simulate: " + expected.format(path=path)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--trace", "{path}"],
            "{path} carries 0.061 requests over 61 s (each rate times the seconds it holds), too little load to "
            "measure: a p95 needs at least 20 requests (with fewer, 5% of them is less than one request, and a run "
            "may serve none); raise its rates or its length",
        ),
        (
            ["--profile", "step", "--peak-rps", "0.1", "--hours", "0.02"],
            "--profile step --peak-rps 0.1 --hours 0.02 carries 5.85 requests over 72 s (each rate times the seconds "
            "it holds), too little load to measure: a p95 needs at least 20 requests (with fewer, 5% of them is less "
            "than one request, and a run may serve none); raise --peak-rps or --hours",
        ),
    ],
)
def test_a_load_too_small_to_measure_is_refused_not_reported_as_nan(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    """It served no request, and the run printed `p95_ms: nan` and missed its SLO by `p95 nan ms > 500 ms`."""
    path = tmp_path / "near-empty.csv"
    path.write_text("t_seconds,rps\n0,0.001\n60,0.001\n", encoding="utf-8")
    code, err = simulate(capsys, tmp_path, "--stack", "dev", *(arg.format(path=path) for arg in argv))
    assert (code, err.strip()) == (2, "stackctl simulate: " + expected.format(path=path))


def test_a_run_that_serves_nothing_says_so_not_nan() -> None:
    """Past the inputs' bound a run may still serve nothing (every request rejected): no `p95 nan ms`."""
    assert slo_failures({"p95_ms": float("nan"), "slo_ms": 500.0, "rejected_pct": 0.0}, 0.1) == [
        "p95 not measured: no request was served"
    ]


def test_a_trace_that_is_no_text_or_no_file_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    binary = tmp_path / "trace.bin"
    binary.write_bytes(b"\xff\xfe\x00t")
    for path, why in [
        (binary, "not UTF-8 text (byte 0)"),
        (tmp_path / "missing.csv", "cannot read the trace (No such file or directory)"),
    ]:  # a directory, a FIFO or a device: tests/platform_config/test_file_inputs.py
        code, err = simulate(capsys, tmp_path, "--stack", "dev", "--trace", str(path))
        assert code == 2
        assert err.strip() == f"stackctl simulate: {path}: {why}; expected a CSV file with {TRACE_RULES}"


def test_a_valid_trace_may_carry_a_bom_spaces_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("\ufeff t_seconds , rps \n0,10\n\n30.5, 20 \n119,5\n\n", encoding="utf-8")
    rate = read_trace(path)
    assert len(rate) == 120
    # A row holds from its time's whole second: 30.5 takes second 30.
    assert (rate[0], rate[29], rate[30], rate[119]) == (10, 10, 20, 5)


def _dev_with_profile(tmp_path: Path, profile: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The dev stack, its simulation reading `profile`, a file in `tmp_path`, which stands for the project root
    (a profile must be inside the project) where the stack's paths are resolved."""
    monkeypatch.setattr(platform_config.types, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(simulator.scenario, "PROJECT_ROOT", tmp_path)
    stack = tmp_path / "Pulumi.dev.yaml"
    text = DEV.read_text(encoding="utf-8")
    anchor = "  triton-platform:scaling:\n"
    assert anchor in text
    relative = json.dumps(str(profile.relative_to(tmp_path)))
    stack.write_text(text.replace(anchor, f"{anchor}    simulation: {{profile: {relative}}}\n"))
    return stack


GOOD_TAU = {"1": 0.001, "8": 0.002}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "{where}:1: not JSON (Expecting property name enclosed in double quotes); " + PROFILE_KEYS),
        ("[1, 2]", "{where}: the top level is a JSON list; " + PROFILE_KEYS),
        (
            '{"model": "x"}',
            "{where}: tau_seconds is missing; expected an object of batch sizes to seconds, "
            'at least one, e.g. {{"1": 0.0008, "32": 0.0048}}',
        ),
        (
            '{"tau_seconds": {}}',
            "{where}: tau_seconds is empty; expected an object of batch sizes to seconds, "
            'at least one, e.g. {{"1": 0.0008, "32": 0.0048}}',
        ),
        (
            '{"tau_seconds": [0.001]}',
            "{where}: tau_seconds is a JSON list; expected an object of batch sizes to "
            'seconds, at least one, e.g. {{"1": 0.0008, "32": 0.0048}}',
        ),
        ('{"tau_seconds": {"0": 0.001}}', "{where}: tau_seconds key '0' is not a batch size; expected integers >= 1"),
        ('{"tau_seconds": {"b": 0.001}}', "{where}: tau_seconds key 'b' is not a batch size; expected integers >= 1"),
        (
            '{"tau_seconds": {"1": 0.001, "01": 0.002}}',
            "{where}: tau_seconds gives batch size 1 twice; expected each size once",
        ),
        (
            '{"tau_seconds": {"1": -0.001}}',
            "{where}: tau_seconds['1'] is '-0.001'; expected a finite number of seconds > 0",
        ),
        ('{"tau_seconds": {"1": 0}}', "{where}: tau_seconds['1'] is '0'; expected a finite number of seconds > 0"),
        (
            '{"tau_seconds": {"1": NaN}}',
            "{where}: tau_seconds['1'] is 'NaN'; expected a finite number of seconds > 0",
        ),
        (
            '{"tau_seconds": {"1": "0.001"}}',
            "{where}: tau_seconds['1'] is '\"0.001\"'; expected a finite number of seconds > 0",
        ),
        (
            '{"tau_seconds": {"1": true}}',
            "{where}: tau_seconds['1'] is 'true'; expected a finite number of seconds > 0",
        ),
        (
            '{"tau_seconds": {"1": 0.002, "8": 0.001}}',
            "{where}: tau_seconds['8'] = 0.001 is below tau_seconds['1'] = 0.002; "
            "expected seconds that do not fall as the batch grows",
        ),
        (
            json.dumps({"tau_seconds": GOOD_TAU, OVERHEAD: []}),
            "{where}: " + OVERHEAD + " is empty; expected a list of seconds (percentiles 0..100), at least one",
        ),
        (
            json.dumps({"tau_seconds": GOOD_TAU, OVERHEAD: 0.001}),
            "{where}: " + OVERHEAD + " is a JSON float; expected a list of seconds (percentiles 0..100), at least one",
        ),
        (
            json.dumps({"tau_seconds": GOOD_TAU, OVERHEAD: [0.0, -0.001]}),
            "{where}: " + OVERHEAD + "[1] is '-0.001'; expected a finite number of seconds >= 0",
        ),
        (
            json.dumps({"tau_seconds": GOOD_TAU, OVERHEAD: [0.0, 0.002, 0.001]}),
            "{where}: " + OVERHEAD + "[2] = 0.001 is below " + OVERHEAD + "[1] = 0.002; "
            "expected percentiles in ascending order",
        ),
    ],
)
def test_a_bad_latency_profile_is_named_with_the_rule(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, expected: str
) -> None:
    profile = tmp_path / "profile.json"
    profile.write_text(content, encoding="utf-8")
    stack = _dev_with_profile(tmp_path, profile, monkeypatch)
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step")
    assert code == 2
    assert err.strip() == "stackctl simulate: " + expected.format(where=profile)


def test_a_missing_latency_profile_names_the_way_to_measure_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--profile", "step", "--model", "pipeline")
    assert code == 2
    assert err.strip() == (
        "stackctl simulate: no latency profile bench/results/profiles/pipeline.json for model 'pipeline'; measure it "
        "with stackctl profile --model pipeline (docs/profiling.md), or simulate a model with one (classifier, "
        "ranker, preprocess)"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--deployment", "nope"], "no deployment 'nope' in stacks/Pulumi.dev.yaml; known: general"),
        (
            ["--deployment", "d" * 300],
            "no deployment '" + "d" * 79 + "… in stacks/Pulumi.dev.yaml; known: general",
        ),
        (
            ["--model", "nope"],
            "model 'nope' is not served by deployment 'general' of stacks/Pulumi.dev.yaml; "
            "it serves classifier, ranker, preprocess, pipeline",
        ),
        (
            ["--hours", "0.025", "--metrics-outage", "90:5"],
            "--metrics-outage 90:5 starts after the run, which lasts 90 s; START is from 0 to 89",
        ),
        (
            ["--compare", "no-such-ref"],
            f"--compare 'no-such-ref' is not a commit in the git repository at {PROJECT_ROOT}; give a branch, tag or "
            "commit (git rev-parse --verify REF^{commit} resolves it)",
        ),
        (
            ["--compare=--output=x"],
            f"--compare '--output=x' is not a commit in the git repository at {PROJECT_ROOT}; give a branch, tag or "
            "commit (git rev-parse --verify REF^{commit} resolves it)",
        ),
    ],
)
def test_a_name_the_stack_or_the_run_does_not_have_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--profile", "step", *argv)
    assert code == 2
    assert err.strip() == f"stackctl simulate: {expected}"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--hours", "2"],
            "--hours shapes a --profile, and --trace sets its own rates and length; leave it out or use --profile",
        ),
        (
            ["--peak-rps", "5", "--hours", "2"],
            "--peak-rps and --hours shape a --profile, and --trace sets its own "
            "rates and length; leave them out or use --profile",
        ),
    ],
)
def test_profile_options_with_a_trace_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("t_seconds,rps\n0,1\n60,1\n")
    code, err = simulate(capsys, tmp_path, "--stack", "dev", "--trace", str(trace), *argv)
    assert code == 2
    assert err.strip() == f"stackctl simulate: {expected}"


def test_a_default_peak_above_the_rate_bound_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 10000 queued per pod, the batching delay counted as at least 1 ms: the trigger fires at 10 M req/s.
    stack = tmp_path / "Pulumi.dev.yaml"
    text = DEV.read_text().replace("signal: busy-ratio", "signal: queue-depth")
    stack.write_text(re.sub(r"busyRatioTarget: [0-9.]+", "queueDepthTarget: 10000", text))
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step")
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: the default --peak-rps, twice the load that fires the scaling trigger of deployment "
        f"'general' in {stack}, is 20000000 req/s, above 1000000; give --peak-rps from above 0 to 1000000"
    )


def _git(repo: Path, *argv: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *argv]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository standing in for the project, with one commit without any stack file."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "README").write_text("x\n")
    _git(root, "add", "README")
    _git(root, "commit", "-q", "-m", "first")
    monkeypatch.setattr(stackctl.run_inputs, "PROJECT_ROOT", root)
    return root


def test_compare_with_a_stack_file_outside_the_project_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(DEV.read_text())
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step", "--compare", "HEAD")
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: --compare reads the stack file from git, and {stack} is outside the project; "
        f"give a stack file under {PROJECT_ROOT}"
    )


def test_compare_with_a_revision_without_the_stack_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, repo: Path
) -> None:
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(DEV.read_text())
    sha = _git(repo, "rev-parse", "HEAD")
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step", "--compare", "HEAD")
    assert code == 2
    assert err.strip() == (
        f"stackctl simulate: --compare 'HEAD': Pulumi.dev.yaml does not exist at {sha[:12]}; "
        "compare with a revision that has this stack file"
    )
    assert not (tmp_path / "out" / "summary.json").exists()


def test_compare_with_an_invalid_stack_file_at_the_revision_names_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, repo: Path
) -> None:
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(re.sub(r"busyRatioTarget: [0-9.]+", "busyRatioTarget: -5", DEV.read_text()))
    _git(repo, "add", stack.name)
    _git(repo, "commit", "-q", "-m", "bad")
    stack.write_text(DEV.read_text())
    code, err = simulate(capsys, tmp_path, "--config", str(stack), "--profile", "step", "--compare", "HEAD")
    assert code == 2
    assert err.splitlines() == [
        "Pulumi.dev.yaml at HEAD: 1 config error",
        "Pulumi.dev.yaml at HEAD: triton-platform:scaling.busyRatioTarget: Input should be greater than 0; got -5",
    ]
    assert not (tmp_path / "out" / "summary.json").exists()


def test_help_states_every_bound(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for bound in ("t_seconds,rps", "172800 s", "1000000 req/s", "at most 1000000", "to 48 (2 days)", "4294967295"):
        assert bound in text


def test_a_short_valid_run_still_works(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A load dev's replica floor holds, so the run passes its SLO (exit 0).
    code = main(["simulate", "--stack", "dev", "--profile", "step", "--hours", "0.05", "--peak-rps", "20",
                 "--no-plot", "--out", str(tmp_path / "out")])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "180 s simulated" in captured.out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["arrived"] > 0
    assert len((tmp_path / "out" / "timeline.csv").read_text().splitlines()) == 181
