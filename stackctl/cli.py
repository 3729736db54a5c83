"""Command line: a thin layer over platform_config and the mock runner."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from model_repository.publish import write_model_repository
from model_repository.render import render_repository
from model_repository.source import DEFAULT_MODEL_REPO, read_repository
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.loader import STACKS_DIR, load_stack_file, stack_file
from platform_config.paths import display_path
from stackctl.monitoring_files import write_monitoring_files
from stackctl.synth import synthesize, write_synth


def _stack_source(args: argparse.Namespace) -> tuple[Path, str | None]:
    if args.config:
        return Path(args.config), None
    path = stack_file(args.stack)
    if not path.exists():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS_DIR.glob("Pulumi.*.yaml"))
        raise ConfigError(
            display_path(path), [ConfigIssue("(stack)", f"no stack {args.stack!r}; known stacks: {', '.join(known)}")]
        )
    return path, args.stack


def cmd_validate(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else None
    loaded = load_stack_file(path, stack, repo)
    deployments = loaded.config.serving.deployments
    models = sorted({m for d in deployments.values() for m in d.models})
    print(
        f"{loaded.source}: OK: stack {loaded.stack} ({loaded.config.environment}, "
        f"{loaded.config.kubernetes.mode}), {len(deployments)} deployment(s), {len(models)} model(s)"
    )
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    result = synthesize(path, stack)
    try:
        written = write_synth(result, Path(args.out))
    except (FileExistsError, ValueError) as err:
        print(f"stackctl synth: {err}", file=sys.stderr)
        return 1
    print(f"{result.stack.source}: wrote {len(written) - 1} manifests and resources.json to {args.out}")
    return 0


def cmd_model_repo(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    repo = read_repository(Path(args.model_repo)) if args.model_repo else read_repository(DEFAULT_MODEL_REPO)
    loaded = load_stack_file(path, stack, repo)
    rendered = render_repository(loaded.stack, loaded.config, repo)
    deployments = loaded.config.serving.deployments
    if args.deployment and args.deployment not in deployments:
        print(
            f"stackctl model-repo: no deployment {args.deployment!r}; known: {', '.join(sorted(deployments))}",
            file=sys.stderr,
        )
        return 1
    models = deployments[args.deployment].models if args.deployment else None
    try:
        written = write_model_repository(rendered, Path(args.out), models)
    except FileExistsError as err:
        print(f"stackctl model-repo: {err}", file=sys.stderr)
        return 1
    listing = ", ".join(written)
    print(f"{loaded.source}: wrote {len(written)} models ({listing}) with configs/{loaded.stack}.pbtxt to {args.out}")
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    path, stack = _stack_source(args)
    loaded = load_stack_file(path, stack)
    try:
        written = write_monitoring_files(loaded.config, Path(args.out))
    except FileExistsError as err:
        print(f"stackctl rules: {err}", file=sys.stderr)
        return 1
    print(f"{loaded.source}: wrote {', '.join(p.name for p in written)} to {args.out}")
    return 0


def _add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
    source.add_argument("--config", metavar="FILE", help="a stack YAML file anywhere")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="stackctl", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    validate = commands.add_parser("validate", help="check a stack's config and report every error")
    _add_stack_arguments(validate)
    validate.add_argument(
        "--model-repo", metavar="DIR", help="model repository to check names against (default: model_repo/)"
    )
    validate.set_defaults(run=cmd_validate)

    synth = commands.add_parser("synth", help="write every Kubernetes object the program would create")
    _add_stack_arguments(synth)
    synth.add_argument("--out", required=True, metavar="DIR", help="output folder")
    synth.set_defaults(run=cmd_synth)

    model_repo = commands.add_parser("model-repo", help="write the model repository Triton sees for a stack")
    _add_stack_arguments(model_repo)
    model_repo.add_argument("--out", required=True, metavar="DIR", help="output folder")
    model_repo.add_argument("--model-repo", metavar="DIR", help="source model repository (default: model_repo/)")
    model_repo.add_argument("--deployment", metavar="NAME", help="only the models of this deployment")
    model_repo.set_defaults(run=cmd_model_repo)

    rules = commands.add_parser("rules", help="write the Prometheus rules, dashboards and Alertmanager config")
    _add_stack_arguments(rules)
    rules.add_argument("--out", required=True, metavar="DIR", help="output folder")
    rules.set_defaults(run=cmd_rules)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except ConfigError as err:
        print(err.report(), file=sys.stderr)
        return 1
