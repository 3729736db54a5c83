"""The real Pulumi CLI for the end-to-end tests: the project's toolchain, a scratch backend, a project copy."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from platform_config.paths import PROJECT_ROOT
from preview.workspace import cli_env, export_tree, tree_env
from tests.support.crd_schemas import Yaml12Loader

TOOLS_BIN = PROJECT_ROOT / ".tools" / "bin"
TOOLCHAIN_HOME = PROJECT_ROOT / ".tools" / "pulumi-home"
"""The offline toolchain's Pulumi home: scripts/pulumi-toolchain registers its providers in its plugins."""
PULUMI_HOME = PROJECT_ROOT / ".tools" / "pulumi-home-tests"
"""The tests' Pulumi home: the toolchain's plugins, without the CLI's automatic log (`pulumi_home`)."""
LANGUAGE_HOST_SOURCES = Path(os.environ.get("TRITON_LANGUAGE_HOST_SOURCES") or PROJECT_ROOT.parent / "shared")
"""Where scripts/pulumi-toolchain finds the Python and Node.js language hosts' sources (docs/development.md)."""


def pulumi_home(path: Path, *, automatic_log: bool) -> Path:
    """A Pulumi home at `path` that shares the toolchain's plugins.

    Without the automatic log, its `logs` is a file, where the CLI cannot start that log. Since pulumi/pulumi#23731
    the CLI writes a debug log of every property it marshals into `<home>/logs` on every run, with no setting to turn
    it off (pkg/logging/encrypted.go, StartLogging; it goes on silently when it cannot): about two thirds of the CPU
    of a preview of production's charts (bench/results/preview_time.md). No test reads that log, so theirs is off.
    """
    path.mkdir(parents=True, exist_ok=True)
    plugins = path / "plugins"
    if not plugins.is_symlink():
        with contextlib.suppress(FileExistsError):  # another pytest-xdist worker linked it first
            plugins.symlink_to(TOOLCHAIN_HOME / "plugins")
    logs = path / "logs"
    if automatic_log:
        logs.mkdir(exist_ok=True)
    else:
        logs.touch()
    return path


def pulumi_binary() -> str:
    """The CLI the toolchain set up, or a clear failure saying how to get it."""
    for candidate in (TOOLS_BIN / "pulumi", shutil.which("pulumi")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise AssertionError(
        "no Pulumi CLI: run scripts/pulumi-toolchain (or `make tools`), which builds it from the Go module proxy"
    )


@dataclass
class Project:
    """A copy of the working tree, run with the real CLI against a scratch file backend."""

    root: Path
    env: dict[str, str]

    def pulumi(self, *args: str, stack: str | None = None) -> subprocess.CompletedProcess[str]:
        command = [pulumi_binary(), *args, "--non-interactive"]
        if stack:
            command += ["--stack", stack]
        return subprocess.run(command, cwd=self.root, env=self.env, capture_output=True, text=True, check=False)

    def ok(self, *args: str, stack: str | None = None) -> str:
        result = self.pulumi(*args, stack=stack)
        assert result.returncode == 0, f"pulumi {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout + result.stderr

    def destroy(self, stack: str, *, protected: bool) -> None:
        """`pulumi destroy`; a stack with protected resources must refuse until they are unprotected explicitly."""
        destroy = self.pulumi("destroy", "--yes", "--skip-preview", stack=stack)
        if protected:
            assert destroy.returncode != 0, "destroy went through protected resources"
            assert "protected" in destroy.stdout + destroy.stderr
            self.ok("state", "unprotect", "--all", "--yes", stack=stack)
            destroy = self.pulumi("destroy", "--yes", "--skip-preview", stack=stack)
        assert destroy.returncode == 0, destroy.stdout + destroy.stderr

    def stackctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.root / ".venv" / "bin" / "python"), "-m", "stackctl", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )


DEPLOY_PASSPHRASE = "tests-only-deploy-passphrase"
"""What deploying test stacks encrypt their secrets with: deploy-mode stacks refuse the local-only default."""


def toolchain_env(scratch: Path) -> dict[str, str]:
    """The offline toolchain's environment: its CLI and language hosts first on PATH, its plugin home.

    This machine reaches no Pulumi downloads. The file backend and the render folder are in `scratch`.
    """
    env = cli_env(scratch)
    env["PATH"] = f"{TOOLS_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PULUMI_HOME"] = str(pulumi_home(PULUMI_HOME, automatic_log=False))
    env["TRITON_PULUMI_TOOLCHAIN"] = "offline"
    # A project copy is not beside them: its own run of scripts/pulumi-toolchain (scripts/up) is told.
    env["TRITON_LANGUAGE_HOST_SOURCES"] = str(LANGUAGE_HOST_SOURCES)
    return env


def make_project(scratch: Path, render_override: bool = True, deploys: bool = False) -> Project:
    """A copy of the tree run with the offline toolchain.

    `deploys`: the copy's stacks deploy to a cluster, with a passphrase of their own: the salts committed
    for the local-only one go, and `stack init` draws new ones.
    """
    env = toolchain_env(scratch)
    if deploys:
        env["PULUMI_CONFIG_PASSPHRASE"] = DEPLOY_PASSPHRASE
    if not render_override or deploys:
        env.pop("TRITON_PLATFORM_RENDER_DIR")
    root = export_tree(PROJECT_ROOT, None, scratch / "project")
    if deploys:
        for stack_file in (root / "stacks").glob("Pulumi.*.yaml"):
            lines = stack_file.read_text().splitlines(keepends=True)
            stack_file.write_text("".join(line for line in lines if not line.startswith("encryptionsalt:")))
    return Project(root, tree_env(root, env))


def rendered_objects(folder: Path) -> list[dict[str, Any]]:
    """Every object render mode wrote (0-crd/ and 1-manifest/), in file order."""
    objects: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*.yaml")):
        objects += [doc for doc in yaml.load_all(path.read_text(), Loader=Yaml12Loader) if doc]
    return objects


PROJECT_PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"


def component_virtualenv(dest: Path) -> Path:
    """A virtualenv for a component package's PulumiPlugin.yaml to name, in which the project's packages import.

    Before `pulumi package get-schema`, `gen-sdk` or `add` runs a Python component package, the CLI has the
    Python language host install its dependencies: `python -m venv <virtualenv>` again, then `pip install
    --upgrade pip setuptools wheel` (from PyPI, until they are current) and the package's requirements.txt.
    So a package must not name the project's .venv: the host would upgrade a shared virtualenv's tools, and
    `venv` refuses a symlinked one (as git worktrees and test project copies have). This one is the
    package's own; a .pth file adds the project's site-packages to it, so nothing else is installed.
    """
    subprocess.run([str(PROJECT_PYTHON), "-m", "venv", "--without-pip", str(dest)], check=True)
    lib = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    # addsitedir, not a bare path: the project's own .pth files (editable installs) apply too.
    (dest / lib / "project-venv.pth").write_text(
        f"import site; site.addsitedir({str(PROJECT_ROOT / '.venv' / lib)!r})\n"
    )
    return dest


def package_env(scratch: Path) -> dict[str, str]:
    """The offline toolchain's environment for `pulumi package` commands on a Python component package.

    PULUMI_PYTHON_CMD: the interpreter the host runs `-m venv` with, the one the project's .venv was
    made from, so a `component_virtualenv` keeps the Python version the project's packages are built for.
    """
    return {**toolchain_env(scratch), "PULUMI_PYTHON_CMD": str(PROJECT_PYTHON)}


def package_schema(package: Path, scratch: Path) -> dict[str, Any]:
    """The schema `pulumi package get-schema <package>` infers, with the offline toolchain.

    `package` is a component package's folder (its PulumiPlugin.yaml names the runtime): the CLI runs
    it through Pulumi's own language host for that runtime.
    """
    out = Project(package, package_env(scratch)).pulumi("package", "get-schema", str(package))
    assert out.returncode == 0, f"pulumi package get-schema {package} failed:\n{out.stdout}\n{out.stderr}"
    schema: dict[str, Any] = json.loads(out.stdout)
    return schema


def generate_sdk(package: Path, language: str, out: Path, scratch: Path) -> Path:
    """`pulumi package gen-sdk <package> --language <language>` into `out`, with the offline toolchain.

    Returns the SDK's folder, which the CLI names after the language's SDK (`nodejs` for typescript).
    """
    run = Project(package, package_env(scratch)).pulumi(
        "package", "gen-sdk", str(package), "--language", language, "--out", str(out)
    )
    assert run.returncode == 0, (
        f"pulumi package gen-sdk {package} --language {language} failed:\n{run.stdout}\n{run.stderr}"
    )
    [sdk] = list(out.iterdir())
    return sdk
