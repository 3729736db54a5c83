"""`python -m manifest_scan`: scan stacks, print the counts and every finding no exception covers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from manifest_scan.exceptions import EXCEPTIONS_FILE, ExceptionsError, load_exceptions
from manifest_scan.matching import apply, stale
from manifest_scan.report import count_table, exceptions_table
from manifest_scan.runners import ScanError
from manifest_scan.scan import known_stacks, synth_and_scan
from offline.chart_template import ChartTemplateError
from platform_config.errors import ConfigError
from platform_config.paths import display_path


def main(argv: Sequence[str] | None = None) -> int:
    stacks = known_stacks()
    parser = argparse.ArgumentParser(
        prog="python -m manifest_scan",
        description="checkov and kube-score over each stack's synthesized manifests; "
        "fails on a finding no exception covers, and on an exception that covers nothing",
    )
    parser.add_argument(
        "--stack", action="append", choices=stacks, help="a stack to scan (repeatable); default: every stack"
    )
    parser.add_argument(
        "--exceptions",
        type=Path,
        default=EXCEPTIONS_FILE,
        metavar="FILE",
        help="default: manifest_scan/exceptions.yaml",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print the exceptions as docs/policy.md's Markdown table"
    )
    args = parser.parse_args(argv)
    try:
        exceptions = load_exceptions(args.exceptions, stacks)
    except ExceptionsError as err:
        print(err, file=sys.stderr)
        return 1
    if args.markdown:
        print(exceptions_table(exceptions), end="")
        return 0

    chosen = list(dict.fromkeys(args.stack or stacks))
    try:
        scans = [synth_and_scan(stack) for stack in chosen]
    except (ConfigError, ScanError, ChartTemplateError) as err:
        print(f"manifest_scan: {err}", file=sys.stderr)
        return 1
    unexcepted, used = apply([f for scan in scans for f in scan.findings], exceptions)
    print(count_table(scans, unexcepted))
    for finding in unexcepted:
        print(finding.line())
    # A grant in a stack not scanned has had no chance to match.
    unused = stale(exceptions, used, chosen)
    source = display_path(args.exceptions)
    for exception, pattern, stack in unused:
        print(f"{source}: {exception.describe(pattern, stack)}: stale, it covers no finding there; remove it")
    if unexcepted or unused:
        print(
            f"\n{len(unexcepted)} finding(s) neither fixed nor excepted, {len(unused)} stale exception(s); "
            f"fix the manifests, or add an exception with its reason to {source}"
        )
        return 1
    print(f"no finding outside {source}")
    return 0
