"""`scripts/preview-diff`: what a change does to each stack, as one Markdown comment body per stack.

The command line of preview/diff.py, which does the work (its two modes, live and offline, are described there):
the arguments, the files written listed on stdout, errors on stderr, and the exit code: 0 when every stack's
preview passes, 1 for a mistake in how it was called, 2 when a preview fails or --out is not a folder of its own.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from offline.out_folder import OutputFolderError
from platform_config.paths import PROJECT_ROOT
from preview.diff import MODES, PreviewDiffError, resolve_mode, run, stacks_of
from stackctl.terminal import guarded


def main(argv: Sequence[str] | None = None) -> int:
    with guarded():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="preview-diff", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="git revision the change is compared against (e.g. origin/main)")
    parser.add_argument("--head", help="git revision to preview (default: the working tree)")
    parser.add_argument("--repo", type=Path, default=PROJECT_ROOT, help="the repository (default: this project)")
    parser.add_argument("--out", type=Path, default=Path("preview-diff"), help="folder for <stack>.md")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="live: against the stacks' real state (needs PULUMI_BACKEND_URL and credentials); offline: base "
        "deployed into scratch state; auto (default): live when PULUMI_BACKEND_URL is set",
    )
    parser.add_argument(
        "--mirror",
        action="append",
        default=[],
        metavar="REGISTRY=HOST[:PORT]",
        help="passed to `stackctl pin-images`, which pins a production stack's images before its preview",
    )
    parser.add_argument("stacks", nargs="*", help="stacks to preview (default: every stacks/Pulumi.<stack>.yaml)")
    args = parser.parse_args(argv)
    stacks = args.stacks or stacks_of(args.repo)
    try:
        mode = resolve_mode(args.mode, os.environ)
        written = run(args.repo.resolve(), args.base, args.head, stacks, args.out, mode=mode, mirrors=args.mirror)
    except OutputFolderError as err:
        print(err.report(), file=sys.stderr)
        return 2
    except (PreviewDiffError, RuntimeError, subprocess.CalledProcessError) as err:
        print(f"preview-diff: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    failed = [path.stem for path, passed in written.items() if not passed]
    if failed:
        print(f"preview-diff: pulumi preview fails for {', '.join(failed)} (see their reports)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
