"""`stackctl synth`: every Kubernetes object the program would create for a stack, one YAML file each."""

from __future__ import annotations

import argparse
from pathlib import Path

from stackctl.command import Command, Exit, stack_arguments, stack_source
from stackctl.progress import Stages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--no-charts",
        action="store_true",
        help="leave out the objects of the charts the stack installs (otherwise templated with Helm, as previews do)",
    )


def run(args: argparse.Namespace) -> Exit:
    from offline.chart_template import HelmTemplater  # noqa: PLC0415
    from offline.synth import synthesize, write_synth  # noqa: PLC0415

    path, stack = stack_source(args)
    with Stages(
        "synth", ["run the program under mocks" + ("" if args.no_charts else ", charts with Helm"), "write"]
    ) as stages:
        result = synthesize(path, stack, None if args.no_charts else HelmTemplater.from_environment())
        stages.done()
        written = write_synth(result, Path(args.out))
        stages.done()
    print(f"{result.stack.source}: wrote {len(written) - 1} manifests and resources.json to {args.out}")
    return Exit.PASSED


COMMAND = Command("synth", "write every Kubernetes object the program would create", add_arguments, run, "below")
