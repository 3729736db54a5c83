"""`stackctl model-repo`: the model repository Triton sees for a stack, configs rendered."""

from __future__ import annotations

import argparse
from pathlib import Path

from stackctl.command import Command, Exit, model_repo_argument, stack_arguments, stack_with_models


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    model_repo_argument(parser, "source model repository (default: model_repo/)")
    parser.add_argument("--deployment", metavar="NAME", help="only the models of this deployment")


def run(args: argparse.Namespace) -> Exit:
    from model_publishing.publish import write_model_repository  # noqa: PLC0415

    loaded = stack_with_models(args)
    rendered = loaded.rendered
    assert rendered is not None  # nothing is deferred without defer_to_esc
    deployments = loaded.config.serving.deployments
    if args.deployment and args.deployment not in deployments:
        raise ValueError(f"no deployment {args.deployment!r}; known: {', '.join(sorted(deployments))}")
    models = deployments[args.deployment].models if args.deployment else None
    written = write_model_repository(rendered, Path(args.out), models)
    listing = ", ".join(written)
    print(f"{loaded.source}: wrote {len(written)} models ({listing}) with configs/{loaded.stack}.pbtxt to {args.out}")
    return Exit.PASSED


COMMAND = Command(
    "model-repo",
    "write the model repository Triton sees for a stack",
    add_arguments,
    run,
    "[architecture.md](architecture.md#model-repository-and-per-environment-configs)",
)
