"""scripts/pulumi-toolchain: cached, pinned in one place, and clear when it cannot build."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT
from tests.support.pulumi_cli import LANGUAGE_HOST_SOURCES, pulumi_binary, pulumi_home

SCRIPT = PROJECT_ROOT / "scripts" / "pulumi-toolchain"


def run_copy(
    tmp_path: Path, requirements: str, path: str, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """The script (with `args`) in a scratch project with these requirements, and only `path` to find commands."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(SCRIPT, tmp_path / "scripts" / "pulumi-toolchain")
    (tmp_path / "requirements.txt").write_text(requirements)
    (tmp_path / ".venv").symlink_to(PROJECT_ROOT / ".venv")
    return subprocess.run(
        [shutil.which("bash") or "bash", str(tmp_path / "scripts" / "pulumi-toolchain"), *args],
        env={"PATH": path, "HOME": str(tmp_path), **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def tools_dir(tmp_path: Path, *tools: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        assert found, f"{tool} is needed to run scripts/pulumi-toolchain"
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.real_tools
def test_a_second_run_does_nothing() -> None:
    """`make tools` built everything before the tests; running again only checks the stamps."""
    run = subprocess.run([str(SCRIPT)], capture_output=True, text=True, check=False, cwd=PROJECT_ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    parts = [line for line in run.stdout.splitlines() if line.startswith("[pulumi-toolchain")]
    assert [p.split("] ", 1)[1] for p in parts[:-1]] == [
        "pulumi v3.260.0: up to date",
        "pulumi-language-python v3.260.0: up to date",
        "pulumi-language-nodejs v3.260.0: up to date",
        "pulumi-language-yaml v1.25.0: up to date",
        "pulumi-resource-kubernetes v4.25.0: up to date",
        "helm v3.18.6: up to date",
        "pulumi-resource-random v4.21.4: up to date",
    ]
    assert parts[-1].endswith("ready: v3.260.0")
    # `pulumi plugin ls` shows both providers at the versions requirements.txt pins.
    assert any(line.split()[:3] == ["kubernetes", "resource", "4.25.0"] for line in run.stdout.splitlines())
    assert any(line.split()[:3] == ["random", "resource", "4.21.4"] for line in run.stdout.splitlines())


@pytest.mark.real_tools
def test_helm_alone_is_the_one_the_provider_embeds() -> None:
    """`make synth` builds only Helm: in the provider's module, at the version that module requires."""
    run = subprocess.run([str(SCRIPT), "helm"], capture_output=True, text=True, check=False, cwd=PROJECT_ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [line.split("] ", 1)[1] for line in run.stdout.splitlines()] == ["helm v3.18.6: up to date"]
    gomod = (PROJECT_ROOT / ".tools" / "build" / "pulumi-resource-kubernetes" / "go.mod").read_text()
    assert "\thelm.sh/helm/v3 v3.18.6" in gomod
    version = subprocess.run(
        [str(PROJECT_ROOT / ".tools" / "bin" / "helm-v3.18.6"), "version", "--short"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.startswith("v3.18.6")


@pytest.mark.real_tools
def test_an_unknown_part_is_refused() -> None:
    run = subprocess.run([str(SCRIPT), "kubectl"], capture_output=True, text=True, check=False, cwd=PROJECT_ROOT)
    assert (run.returncode, run.stderr) == (2, "usage: scripts/pulumi-toolchain [helm|inputs]\n")


@pytest.mark.real_tools
@pytest.mark.parametrize("automatic_log", [True, False])
def test_a_home_without_the_automatic_log(tmp_path: Path, automatic_log: bool) -> None:
    """The tests' Pulumi home shares the toolchain's plugins; the CLI starts its automatic log where `logs` is a
    folder and runs on without one where it is a file."""
    home = pulumi_home(tmp_path / "home", automatic_log=automatic_log)
    run = subprocess.run(
        [pulumi_binary(), "plugin", "ls"],
        env={**os.environ, "PULUMI_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert any(line.split()[:3] == ["kubernetes", "resource", "4.25.0"] for line in run.stdout.splitlines())
    logs = home / "logs"
    if automatic_log:
        assert [path.suffix for path in logs.iterdir()] == [".log"]
    else:
        assert logs.is_file()
        assert logs.stat().st_size == 0


def test_versions_come_from_one_place_each() -> None:
    """The SDK and the providers from requirements.txt; the CLI and its hosts from the hosts' sources."""
    pins = dict(
        line.split("==") for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines() if "==" in line
    )
    assert (pins["pulumi"], pins["pulumi-kubernetes"], pins["pulumi-random"]) == ("3.272.0", "4.25.0", "4.21.4")
    for host in ("python", "nodejs"):
        gomod = (LANGUAGE_HOST_SOURCES / f"pulumi-language-{host}" / "go.mod").read_text()
        assert "\tgithub.com/pulumi/pulumi/pkg/v3 v3.260.0\n" in gomod
    script = SCRIPT.read_text()
    for version in ("3.272.0", "3.260.0", "4.21.4"):
        assert version not in script, f"{version} is stated elsewhere; the script must not repeat it"


@pytest.mark.parametrize(
    ("nodejs_requires", "expected"),
    [
        (
            "require github.com/pulumi/pulumi/pkg/v3 v3.274.0\n",
            "pulumi-toolchain: the language hosts' sources in {sources} are of two Pulumi releases (python: "
            "github.com/pulumi/pulumi/pkg/v3 v3.260.0, nodejs: v3.274.0); use both of one release\n",
        ),
        (
            "",
            "pulumi-toolchain: {sources}/pulumi-language-nodejs/go.mod requires no github.com/pulumi/pulumi/pkg/v3 "
            "version\n",
        ),
    ],
)
def test_the_language_hosts_release_must_be_one(tmp_path: Path, nodejs_requires: str, expected: str) -> None:
    """The CLI's release is the hosts' own, read from their go.mod: one release, stated."""
    sources = tmp_path / "sources"
    requires = {"python": "require (\n\tgithub.com/pulumi/pulumi/pkg/v3 v3.260.0\n)\n", "nodejs": nodejs_requires}
    for host, require in requires.items():
        (sources / f"pulumi-language-{host}").mkdir(parents=True)
        (sources / f"pulumi-language-{host}" / "main.go").write_text("package main\n")
        (sources / f"pulumi-language-{host}" / "go.mod").write_text(
            f"module example.com/{host}\n\ngo 1.24\n\n{require}"
        )
    provider = tmp_path / "toolchain" / "kubernetes_provider"
    provider.mkdir(parents=True)
    shutil.copy2(PROJECT_ROOT / "toolchain" / "kubernetes_provider" / "main.go", provider / "main.go")
    requirements = "pulumi==3.272.0\npulumi-kubernetes==4.25.0\npulumi-random==4.21.4\n"
    path = tools_dir(tmp_path, *SYSTEM_TOOLS, "go", "sha256sum", "cut", "mkdir")
    run = run_copy(tmp_path, requirements, path, {"TRITON_LANGUAGE_HOST_SOURCES": str(sources)})
    assert (run.returncode, run.stderr) == (1, expected.format(sources=sources))


SYSTEM_TOOLS = ("sed", "cat", "dirname")


@pytest.mark.parametrize(
    ("kubernetes", "tools", "expected"),
    [
        # Checked first: a pin the script has no provider module for.
        (
            "9.9.9",
            SYSTEM_TOOLS,
            "pulumi-toolchain: requirements.txt pins pulumi-kubernetes==9.9.9, but scripts/pulumi-toolchain knows "
            "no provider module version for it;",
        ),
        # Then the build needs Go, which this PATH lacks.
        (
            "4.25.0",
            SYSTEM_TOOLS,
            "pulumi-toolchain: Go is needed to build the toolchain: install Go 1.26 or newer "
            "(https://go.dev/dl/; the CLI module needs it)",
        ),
        # Then the language hosts' sources, which are not beside the scratch project.
        (
            "4.25.0",
            (*SYSTEM_TOOLS, "go"),
            "pulumi-toolchain: the source of Pulumi's python language host is not in {root}/../shared/"
            "pulumi-language-python (its Go module is not served by the module proxy); put that folder there, "
            "or name the folder that holds it with TRITON_LANGUAGE_HOST_SOURCES\n",
        ),
    ],
)
def test_what_is_missing_is_named(tmp_path: Path, kubernetes: str, tools: tuple[str, ...], expected: str) -> None:
    requirements = f"pulumi==3.272.0\npulumi-kubernetes=={kubernetes}\npulumi-random==4.21.4\n"
    run = run_copy(tmp_path, requirements, tools_dir(tmp_path, *tools))
    expected = expected.format(root=tmp_path)
    assert run.returncode == 1
    assert run.stderr.startswith(expected), run.stderr


@pytest.mark.real_tools
def test_a_users_own_plugin_home_is_never_written(tmp_path: Path) -> None:
    """An exported PULUMI_HOME is the user's plugin cache: the toolchain registers its plugins only in its own."""
    users = tmp_path / "user-pulumi-home"
    users.mkdir()
    env = {**os.environ, "PULUMI_HOME": str(users)}
    run = subprocess.run([str(SCRIPT)], capture_output=True, text=True, check=False, cwd=PROJECT_ROOT, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(users.iterdir()) == []
    assert (PROJECT_ROOT / ".tools" / "pulumi-home" / "plugins" / "resource-random-v4.21.4").is_dir()


PROVIDER = "github.com/pulumi/pulumi-kubernetes/provider/v4@v4.0.0-20260115033456-f47bc2d6f199"
OFFLINE = f"{PROVIDER}: Get https://proxy.golang.org/: dial tcp: lookup proxy.golang.org: no such host"


@pytest.mark.parametrize(
    ("download", "expected"),
    [
        # `go mod download -json` names its failure in the object's Error field, on stdout, and exits 1.
        (
            f'printf \'{{"Path": "x", "Version": "y", "Error": "%s"}}\\n\' \'{OFFLINE}\'; exit 1',
            f"pulumi-toolchain: go mod download {PROVIDER} failed: {OFFLINE}\n",
        ),
        # No object at all: Go's own stderr.
        (
            "echo 'go: GOPROXY list is not the empty string, but contains no entries' >&2; exit 1",
            f"pulumi-toolchain: go mod download {PROVIDER} failed: go: GOPROXY list is not the empty string, but "
            "contains no entries\n",
        ),
    ],
)
def test_a_failed_module_download_names_gos_error(tmp_path: Path, download: str, expected: str) -> None:
    """Not a KeyError of the JSON reader: Go's error, with the module it could not download."""
    provider = tmp_path / "toolchain" / "kubernetes_provider"
    provider.mkdir(parents=True)
    shutil.copy2(PROJECT_ROOT / "toolchain" / "kubernetes_provider" / "main.go", provider / "main.go")
    path = tools_dir(tmp_path, *SYSTEM_TOOLS, "sha256sum", "cut", "mkdir", "rm")
    go = Path(path) / "go"
    go.write_text(f'#!/bin/sh\ncase "$1 $2" in\n  "mod download") {download} ;;\nesac\nexit 0\n')
    go.chmod(0o755)
    requirements = "pulumi==3.272.0\npulumi-kubernetes==4.25.0\npulumi-random==4.21.4\n"
    run = run_copy(tmp_path, requirements, path, args=("helm",))
    assert (run.returncode, run.stderr) == (1, expected)
    assert "Traceback" not in run.stdout + run.stderr
