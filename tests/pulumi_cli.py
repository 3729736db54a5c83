"""The real Pulumi CLI for the end-to-end tests: the project's toolchain, a scratch backend, a project copy."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from platform_config.paths import PROJECT_ROOT
from stackctl.preview_diff import cli_env, export_tree
from tests.crd_schemas import Yaml12Loader

TOOLS_BIN = PROJECT_ROOT / ".tools" / "bin"
PULUMI_HOME = PROJECT_ROOT / ".tools" / "pulumi-home"


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


def make_project(scratch: Path, render_override: bool = True, deploys: bool = False) -> Project:
    """A copy of the tree run with the offline toolchain (this machine reaches no Pulumi downloads).

    `deploys`: the copy's stacks deploy to a cluster, with a passphrase of their own: the salts committed
    for the local-only one go, and `stack init` draws new ones.
    """
    env = cli_env(scratch)
    env["PATH"] = f"{TOOLS_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PULUMI_HOME"] = str(PULUMI_HOME)
    env["TRITON_PULUMI_TOOLCHAIN"] = "offline"
    if deploys:
        env["PULUMI_CONFIG_PASSPHRASE"] = DEPLOY_PASSPHRASE
    if not render_override or deploys:
        env.pop("TRITON_PLATFORM_RENDER_DIR")
    root = export_tree(PROJECT_ROOT, None, scratch / "project")
    if deploys:
        for stack_file in (root / "stacks").glob("Pulumi.*.yaml"):
            lines = stack_file.read_text().splitlines(keepends=True)
            stack_file.write_text("".join(line for line in lines if not line.startswith("encryptionsalt:")))
    return Project(root, env)


def rendered_objects(folder: Path) -> list[dict[str, Any]]:
    """Every object render mode wrote (0-crd/ and 1-manifest/), in file order."""
    objects: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*.yaml")):
        objects += [doc for doc in yaml.load_all(path.read_text(), Loader=Yaml12Loader) if doc]
    return objects
