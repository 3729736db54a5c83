"""The revisions a preview compares, each exported into a scratch tree, and the Pulumi CLI's environment there.

A tree is a revision's files (or the working tree's) with this checkout's virtualenvs linked in; each runs its own
component package. Offline, the CLI runs against scratch state with the local passphrase and the render override;
live, with the caller's backend, secrets provider and kubeconfig.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platform_config.kubernetes import RENDER_OVERRIDE_ENV
from platform_config.paths import PROJECT_ROOT
from platform_config.secrets_provider import LOCAL_PASSPHRASE


@dataclass(frozen=True)
class Workspace:
    """A checked-out revision with the project's virtualenv, and the CLI environment to run it in."""

    tree: Path
    env: dict[str, str]

    def pulumi(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["pulumi", *args, "--non-interactive"],
            cwd=self.tree,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} failed in {self.tree}:\n{result.stdout}{result.stderr}")
        return result

    def stackctl(self, *args: str) -> None:
        subprocess.run(
            [str(self.tree / ".venv" / "bin" / "python"), "-m", "stackctl", *args],
            cwd=self.tree,
            env=self.env,
            check=True,
            capture_output=True,
        )


def export_tree(repo: Path, ref: str | None, dest: Path) -> Path:
    """The files of `ref` (None: the working tree, tracked and untracked but not ignored) in `dest`."""
    dest.mkdir(parents=True)
    if ref is None:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=repo,
            check=True,
            capture_output=True,
        ).stdout.split(b"\0")
        for name in filter(None, (n.decode() for n in listed)):
            if (repo / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(repo / name, dest / name)
    else:
        archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=repo, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, capture_output=True)
    # The virtualenvs are not in git: the copy uses this checkout's (program, policy pack).
    for venv in (".venv", "policy/.venv"):
        if (PROJECT_ROOT / venv).exists() and (dest / venv).parent.is_dir():
            (dest / venv).symlink_to(PROJECT_ROOT / venv)
    return dest


def tree_env(tree: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` for running the program of an exported tree: that tree's component package first on the path.

    The virtualenv installs the package editable from the checkout that built it (requirements.txt,
    `-e ./components`); without this, every revision's program would import the checkout's package, and a
    change inside components/ would never show between two revisions.
    """
    path = [str(tree / "components"), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(path)}


def cli_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PULUMI_BACKEND_URL=f"file://{scratch / 'state'}",
        PULUMI_CONFIG_PASSPHRASE=env.get("PULUMI_CONFIG_PASSPHRASE", LOCAL_PASSPHRASE),
        PULUMI_SKIP_UPDATE_CHECK="true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
        # Scratch state is thrown away: only the final state is saved. A file backend otherwise rewrites the whole
        # state after every step, and production's holds its charts' CRDs (about 100 s of a 140 s `up` here; pulumi
        # sdk/go/common/env/env.go, SkipCheckpoints, pulumi/pulumi#10668).
        PULUMI_SKIP_CHECKPOINTS="true",
        **{RENDER_OVERRIDE_ENV: str(scratch / "rendered")},
    )
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    (scratch / "state").mkdir(parents=True, exist_ok=True)
    return env


def copy_salt(from_tree: Path, to_tree: Path, stack: str) -> None:
    """The head's stack file needs the passphrase salt the base's stack got from `stack init`."""
    source = from_tree / "stacks" / f"Pulumi.{stack}.yaml"
    target = to_tree / "stacks" / f"Pulumi.{stack}.yaml"
    salt = next((line for line in source.read_text().splitlines() if line.startswith("encryptionsalt:")), None)
    if salt and target.exists() and "encryptionsalt:" not in target.read_text():
        target.write_text(f"{salt}\n{target.read_text()}")


def mode_env(mode: str, scratch: Path) -> dict[str, str]:
    """Live: the caller's backend, secrets provider and kubeconfig, as given. Offline: scratch state."""
    env = dict(os.environ) if mode == "live" else cli_env(scratch)
    # Plugin acquisition as the caller's CLI has it (scripts/pulumi-env): the stock CLI fetches
    # the providers, the offline toolchain must not.
    if "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION" not in os.environ:
        env.pop("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", None)
    return {**env, "PULUMI_SKIP_UPDATE_CHECK": "true"}
