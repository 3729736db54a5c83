"""What every `stackctl` command is: its name, its arguments and its run, and the exit codes they share.

A command module imports only what its arguments need at the top; its `run` imports the libraries it drives, so
`stackctl --help` loads no component, no Pulumi SDK and no simulator.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platform_config.errors import ConfigError, ConfigIssue
from platform_config.paths import STACKS_DIR, display_path
from stackctl.terminal import json_text

if TYPE_CHECKING:
    from platform_config.loader import StackConfig


class Exit(IntEnum):
    """`stackctl`'s exit codes (docs/stackctl.md, "Exit codes")."""

    PASSED = 0
    """The command did its work, and its checks passed."""
    FAILED = 1
    """A check failed: findings in `validate`, the SLO missed in `simulate`, no passing candidate in `plan`."""
    INPUT = 2
    """A usage or input error: an option, a stack, a file, a folder the command cannot use."""
    BUG = 3
    """An unexpected error: a bug in stackctl (`--debug` shows its traceback)."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Exit]
    docs: str
    """Where its user guide is: a docs/ page and anchor, as a Markdown link from docs/stackctl.md."""
    description: str | None = None
    json: bool = False
    """Whether `--json` prints its result as one object on stdout."""


def repository_folder(value: str) -> Path:
    """`--model-repo DIR`: a folder, else a usage error naming it (one message, not a finding per model)."""
    path = Path(value)
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise argparse.ArgumentTypeError(f"{value!r} {what}; give the model repository's folder")
    return path


def model_repo_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """The `--model-repo DIR` option of the commands that read a model repository."""
    parser.add_argument("--model-repo", type=repository_folder, metavar="DIR", help=help_text)


def stack_arguments(parser: argparse.ArgumentParser) -> None:
    """--stack or --config: the stack file a command reads."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
    source.add_argument("--config", metavar="FILE", help="a stack YAML file anywhere")


def stack_source(args: argparse.Namespace) -> tuple[Path, str | None]:
    """The stack file and stack name `--stack` or `--config` name; an unknown stack is an input error."""
    if args.config:
        return Path(args.config), None
    path = STACKS_DIR / f"Pulumi.{args.stack}.yaml"
    if not path.exists():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS_DIR.glob("Pulumi.*.yaml"))
        raise ConfigError(
            display_path(path), [ConfigIssue("(stack)", f"no stack {args.stack!r}; known stacks: {', '.join(known)}")]
        )
    return path, args.stack


def stack_with_models(args: argparse.Namespace) -> StackConfig:
    """The stack `--stack` or `--config` names, validated with the models of `--model-repo` (default model_repo/)."""
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from triton_platform.model_packaging.source import read_repository  # noqa: PLC0415

    path, stack = stack_source(args)
    return load_stack_file(path, stack, read_repository(args.model_repo) if args.model_repo else None)


def print_json(result: dict[str, Any]) -> None:
    """A command's result as one JSON object on stdout (its keys are documented in docs/stackctl.md)."""
    sys.stdout.write(f"{json_text(result)}\n")
