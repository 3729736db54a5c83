"""`stackctl rules`: the Prometheus rules, Grafana dashboards and Alertmanager config of a stack, as files."""

from __future__ import annotations

import argparse
from pathlib import Path

from stackctl.command import Command, Exit, stack_arguments, stack_source


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")


def run(args: argparse.Namespace) -> Exit:
    from platform_config.loader import load_stack_file  # noqa: PLC0415
    from stackctl.monitoring_files import write_monitoring_files  # noqa: PLC0415

    path, stack = stack_source(args)
    loaded = load_stack_file(path, stack)
    written = write_monitoring_files(loaded, Path(args.out))
    print(f"{loaded.source}: wrote {', '.join(p.name for p in written)} to {args.out}")
    return Exit.PASSED


COMMAND = Command(
    "rules",
    "write the Prometheus rules, dashboards and Alertmanager config",
    add_arguments,
    run,
    "[architecture.md](architecture.md#monitoring)",
)
