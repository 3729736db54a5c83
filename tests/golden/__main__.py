"""`python -m tests.golden [--update] [STACK ...]`: report, or with --update rewrite, the golden manifests."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from offline.synth import synthesize
from platform_config.paths import stack_file
from tests.golden import STACKS, compare, golden_files, synthesized_files, update


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden", description=__doc__)
    parser.add_argument("--update", action="store_true", help="rewrite tests/golden/<stack>/ from stackctl synth")
    # No `choices`: Python 3.11's argparse checks an empty `nargs="*"` list against them and refuses it.
    parser.add_argument("stacks", nargs="*", metavar="STACK", help=f"one of {', '.join(STACKS)}; default: all")
    args = parser.parse_args(argv)
    unknown = [s for s in args.stacks if s not in STACKS]
    if unknown:
        parser.error(f"no stack {', '.join(map(repr, unknown))}; known stacks: {', '.join(STACKS)}")
    differ = False
    for stack in args.stacks or STACKS:
        synthesized = synthesized_files(synthesize(stack_file(stack), stack))
        if args.update:
            done = update(stack, synthesized)
            counts = f"{len(done.changed)} changed, {len(done.added)} added, {len(done.removed)} removed"
            print(f"tests/golden/{stack}: {counts}")
            continue
        differences = compare(stack, golden_files(stack), synthesized)
        if differences:
            differ = True
            print(differences.report(), file=sys.stderr)
        else:
            print(f"tests/golden/{stack}: {len(synthesized)} files, as synthesized")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
