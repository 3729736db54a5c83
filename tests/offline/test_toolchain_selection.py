"""Which Pulumi CLI `make up` runs: a stock CLI on PATH with its own plugins, the offline toolchain only as a fallback.

A stub `pulumi` on PATH stands for a user's stock CLI and records what it was asked and in
which environment; a stub `go` records any attempt to build the offline toolchain.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from platform_config.paths import PROJECT_ROOT
from tests.support.pulumi_cli import make_project

PIN = "v" + next(
    line.removeprefix("pulumi==")
    for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
    if line.startswith("pulumi==")
)
RANGE = yaml.safe_load((PROJECT_ROOT / "Pulumi.yaml").read_text())["requiredPulumiVersion"]
INSTALL = (
    f"install the Pulumi CLI, any release {RANGE}: curl -fsSL https://get.pulumi.com | sh "
    "(https://www.pulumi.com/docs/iac/download-install/)"
)
STUB = """#!/bin/sh
# Records argv and the environment the CLI got, then answers like the real one.
python3 -c 'import json, os, sys; print(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ)}}))' "$@" >> "{log}"
case "$1" in
  version) echo "{version}" ;;
  whoami) {whoami} ;;
esac
exit 0
"""


def stub_path(tmp_path: Path, version: str = PIN, whoami: str = "exit 1") -> tuple[str, Path]:
    """A PATH of the stubs plus the system tools (never .tools/bin), and the stubs' log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    (bin_dir / "pulumi").write_text(STUB.format(log=log, version=version, whoami=whoami))
    (bin_dir / "go").write_text(f'#!/bin/sh\necho "go $*" >> "{tmp_path / "go-calls"}"\nexit 1\n')
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    system = [p for p in os.environ["PATH"].split(os.pathsep) if ".tools" not in p]
    return os.pathsep.join([str(bin_dir), *system]), log


def calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def user_env(tmp_path: Path, path: str) -> dict[str, str]:
    """A user's shell: their own PULUMI_HOME with a plugin in it, no toolchain variables."""
    home = tmp_path / "user-pulumi-home"
    (home / "plugins" / "resource-random-v4.21.4").mkdir(parents=True)
    (home / "plugins" / "resource-random-v4.21.4" / "pulumi-resource-random").write_text("upstream")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "TRITON_"))}
    return {**env, "PATH": path, "PULUMI_HOME": str(home), "HOME": str(tmp_path)}


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("version", [PIN, "v3.157.0", "v3.260.0", "v3.999.1-alpha.x1"])
def test_make_up_runs_the_stock_cli_with_the_users_plugin_home_and_no_go(tmp_path: Path, version: str) -> None:
    """Any CLI release in Pulumi.yaml's range, not only the SDK's own."""
    project = make_project(tmp_path / "scratch")
    path, log = stub_path(tmp_path, version=version)
    env = user_env(tmp_path, path)
    before = snapshot(Path(env["PULUMI_HOME"]))
    run = subprocess.run(["scripts/up", "dev"], cwd=project.root, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    asked = calls(log)
    assert [c["argv"] for c in asked] == [
        ["version"],
        ["whoami", "--non-interactive"],
        ["version"],
        ["stack", "select", "--create", "dev", "--non-interactive"],
        ["up", "--yes", "--non-interactive", "--stack", "dev"],
    ]
    up_env = asked[-1]["env"]
    assert isinstance(up_env, dict)
    # The user's plugin cache, acquisition on: the engine fetches the upstream providers itself.
    assert up_env["PULUMI_HOME"] == env["PULUMI_HOME"]
    assert "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION" not in up_env
    assert up_env["TRITON_PULUMI_TOOLCHAIN"] == "stock"
    # Not logged in anywhere: the project's local backend.
    assert up_env["PULUMI_BACKEND_URL"] == f"file://{project.root}/.pulumi-state"
    assert snapshot(Path(env["PULUMI_HOME"])) == before
    assert not (tmp_path / "go-calls").exists(), "the offline toolchain was built"
    sdk = PIN.removeprefix("v")
    assert f"make up: {tmp_path / 'bin' / 'pulumi'} {version} (stock), Python SDK pulumi {sdk}," in run.stderr


def test_a_logged_in_stock_cli_keeps_its_own_backend(tmp_path: Path) -> None:
    project = make_project(tmp_path / "scratch")
    path, log = stub_path(tmp_path, whoami="echo alice")
    run = subprocess.run(
        ["scripts/up", "dev"],
        cwd=project.root,
        env=user_env(tmp_path, path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    up_env = calls(log)[-1]["env"]
    assert isinstance(up_env, dict)
    assert "PULUMI_BACKEND_URL" not in up_env


@pytest.mark.parametrize("version", ["v3.156.9", "v3.100.0", "v4.0.0", "v2.25.2", "garbage"])
def test_a_stock_cli_outside_the_range_is_refused(tmp_path: Path, version: str) -> None:
    path, log = stub_path(tmp_path, version=version)
    run = subprocess.run(
        ["scripts/up", "dev"],
        cwd=PROJECT_ROOT,
        env=user_env(tmp_path, path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert run.stderr == (
        f"pulumi-env: {tmp_path / 'bin' / 'pulumi'} is {version}, outside {RANGE} (requiredPulumiVersion in "
        f"Pulumi.yaml); {INSTALL}, or use TRITON_PULUMI_TOOLCHAIN=offline\n"
    )
    assert [c["argv"] for c in calls(log)] == [["version"]]


def source_env(tmp_path: Path, choice: str | None, path: str) -> subprocess.CompletedProcess[str]:
    env = user_env(tmp_path, path)
    if choice is not None:
        env["TRITON_PULUMI_TOOLCHAIN"] = choice
    script = 'source scripts/pulumi-env && echo "$TRITON_PULUMI_TOOLCHAIN $(command -v pulumi) $PULUMI_HOME"'
    return subprocess.run(
        ["bash", "-c", script], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.real_tools  # sourcing scripts/pulumi-env offline runs scripts/pulumi-toolchain
def test_offline_when_asked_always_uses_its_own_plugin_home(tmp_path: Path) -> None:
    path, log = stub_path(tmp_path)
    run = source_env(tmp_path, "offline", path)
    assert run.returncode == 0, run.stderr
    tools = PROJECT_ROOT / ".tools"
    assert run.stdout.split() == ["offline", str(tools / "bin" / "pulumi"), str(tools / "pulumi-home")]
    assert calls(log) == []  # the stock CLI on PATH is not used


@pytest.mark.real_tools  # sourcing scripts/pulumi-env offline runs scripts/pulumi-toolchain
def test_offline_is_the_fallback_when_no_cli_is_on_path(tmp_path: Path) -> None:
    path, _ = stub_path(tmp_path)
    (tmp_path / "bin" / "pulumi").unlink()
    run = source_env(tmp_path, None, path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[0] == "offline"
    assert run.stderr.startswith(
        f"pulumi-env: no pulumi on PATH: using the offline toolchain ({INSTALL}, to get the upstream plugins)"
    )


def test_without_a_cli_or_the_offline_builds_inputs_make_up_stops_at_once(tmp_path: Path) -> None:
    """A user's machine: no CLI on PATH and no language host sources beside the checkout. Nothing is built."""
    path, _ = stub_path(tmp_path)
    (tmp_path / "bin" / "pulumi").unlink()
    env = {**user_env(tmp_path, path), "TRITON_LANGUAGE_HOST_SOURCES": str(tmp_path / "no-sources")}
    run = subprocess.run(["scripts/up", "dev"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert run.stderr == (
        f"pulumi-env: no pulumi on PATH; {INSTALL} (the offline toolchain cannot be built here: the source of "
        f"Pulumi's python language host is not in {tmp_path / 'no-sources'}/pulumi-language-python (its Go module "
        "is not served by the module proxy); put that folder there, or name the folder that holds it with "
        "TRITON_LANGUAGE_HOST_SOURCES)\n"
    )
    assert not (tmp_path / "go-calls").exists(), "the offline toolchain was built"


def test_the_sdk_and_the_offline_cli_are_in_the_range() -> None:
    """The pinned SDK's release (the offline toolchain's CLI) is one the range admits: `>=<floor> <4.0.0`."""
    floor, ceiling = (part.lstrip("<>=") for part in RANGE.split())
    as_tuple = [tuple(int(n) for n in v.split(".")) for v in (floor, PIN.lstrip("v"), ceiling)]
    assert as_tuple[0] <= as_tuple[1] < as_tuple[2]
    assert ceiling == "4.0.0"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (
            "stock",
            f"pulumi-env: TRITON_PULUMI_TOOLCHAIN=stock, but no pulumi is on PATH; {INSTALL}, or use "
            "TRITON_PULUMI_TOOLCHAIN=offline\n",
        ),
        (
            "upstream",
            "pulumi-env: TRITON_PULUMI_TOOLCHAIN=upstream is not a choice; use auto (the default), stock or offline\n",
        ),
    ],
)
def test_a_choice_that_cannot_be_had_is_named(tmp_path: Path, choice: str, expected: str) -> None:
    path, _ = stub_path(tmp_path)
    (tmp_path / "bin" / "pulumi").unlink()
    run = source_env(tmp_path, choice, path)
    assert run.returncode == 1
    assert run.stderr == expected


KNOWN_STACKS = ", ".join(sorted(p.name.split(".")[1] for p in (PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml")))
STACK_MISTAKES = [
    ("", "is empty"),
    ("dev --yes", "is 2 words"),
    ("dev staging", "is 2 words"),
    ("dve", "names no stack: there is no stacks/Pulumi.dve.yaml"),
    ("dev;true", "is not a stack name (letters, digits, '-', '_' and '.')"),
]


@pytest.mark.parametrize("goal", ["up", "synth"])
@pytest.mark.parametrize(("stack", "problem"), STACK_MISTAKES)
def test_make_names_a_bad_stack_before_building_anything(tmp_path: Path, goal: str, stack: str, problem: str) -> None:
    """Read with the Makefile, before any prerequisite (virtualenv, Helm, toolchain): nothing runs, and at once."""
    path, log = stub_path(tmp_path)
    env = user_env(tmp_path, path)
    env.pop("STACK", None)
    started = time.monotonic()
    run = subprocess.run(
        ["make", "--no-print-directory", goal, f"STACK={stack}"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert time.monotonic() - started < 10
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.endswith(
        f"*** make {goal}: STACK='{stack}' {problem}; give one stack name, one of: {KNOWN_STACKS}.  Stop.\n"
    ), run.stderr
    assert calls(log) == []
    assert not (tmp_path / "go-calls").exists()


def test_make_up_without_stack_is_dev(tmp_path: Path) -> None:
    path, _ = stub_path(tmp_path)
    env = user_env(tmp_path, path)
    env.pop("STACK", None)
    # --no-print-directory: under `make test` this make is a sub-make, which names its directory by default.
    command = ["make", "--no-print-directory", "-n", "up"]
    run = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "scripts/up dev"


@pytest.mark.parametrize(
    ("argv", "shown", "problem"),
    [
        (["dev", "--yes"], "dev --yes", "is 2 words"),
        ([""], "", "is empty"),
        (["staging2"], "staging2", "names no stack: there is no stacks/Pulumi.staging2.yaml"),
    ],
)
def test_scripts_up_takes_one_stack_name_before_choosing_a_cli(
    tmp_path: Path, argv: list[str], shown: str, problem: str
) -> None:
    path, log = stub_path(tmp_path)
    run = subprocess.run(
        ["scripts/up", *argv],
        cwd=PROJECT_ROOT,
        env=user_env(tmp_path, path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (f"scripts/up: the stack '{shown}' {problem}; give one stack name, one of: {KNOWN_STACKS}\n")
    assert calls(log) == []
    assert not (tmp_path / "go-calls").exists()
