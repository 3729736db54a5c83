"""`stackctl pin-images`: every image a stack would run, each tag resolved with crane to its digest under
`triton-platform:imageDigests` (offline/image_digests.py; docs/deploying.md, "Images by digest")."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from stackctl.command import Command, Exit, print_json, stack_arguments, stack_source
from stackctl.progress import Stages

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from offline.image_digests import Image, Mirror, Outcome


def mirror_argument(value: str) -> Mirror:
    """`--mirror <registry>=<host[:port]>`, refused as a usage error naming what is allowed."""
    from offline.image_digests import parse_mirror  # noqa: PLC0415 (startup: --help loads no library)

    try:
        return parse_mirror(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    parser.add_argument(
        "--mirror",
        type=mirror_argument,
        action="append",
        default=[],
        metavar="REGISTRY=HOST[:PORT]",
        help="resolve REGISTRY's images at this pull-through mirror, recorded under their own names (repeatable; "
        "plain HTTP only for a loopback mirror)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only list what would be resolved, asking no registry and writing nothing: exit 1 if any image is "
        "unpinned",
    )


def _row(image: Image, digest: str | None) -> dict[str, Any]:
    return {"image": image.name, "state": image.state, "digest": digest, "places": image.places}


def _say(line: str, human: bool) -> None:
    """A result line on stdout, unless stdout is --json's."""
    if human:
        print(line)


def _error(message: str) -> str:
    print(f"stackctl pin-images: {message}", file=sys.stderr)
    return message


def _check(outcome: Outcome, human: bool) -> Exit:
    """--check: what would be resolved; exit 1 if anything is unpinned."""
    from offline.image_digests import unrecordable  # noqa: PLC0415

    unpinned = [image for image in outcome.images if image.state == "unpinned"]
    for image in unpinned:
        _say(f"  would resolve {image.name} ({', '.join(image.places)})", human)
        if problem := unrecordable(image):
            _error(problem)
    return Exit.FAILED if unpinned else Exit.PASSED


def _write(path: Path, source: str, outcome: Outcome, human: bool) -> str | None:
    """The resolved digests written into the stack file; why not, if they cannot be."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from offline.image_digests import DIGESTS_KEY  # noqa: PLC0415
    from offline.output_file import OutputFile  # noqa: PLC0415
    from planner.stack_patch import PatchError  # noqa: PLC0415
    from platform_config.paths import STACK_FILE  # noqa: PLC0415
    from triton_platform.args.input_files import InputFile  # noqa: PLC0415

    # Bytes, not read_text: universal newlines would turn a CRLF file into LF (stack_patch keeps CRLF).
    before = InputFile(path, STACK_FILE).read_bytes().decode("utf-8")
    note = f"resolved by stackctl pin-images, {datetime.now(UTC):%Y-%m-%d}"
    try:
        after = pinned_text(before, outcome.resolved, note)
    except PatchError as err:
        return _error(f"cannot write {DIGESTS_KEY} into {source}: {err}")
    OutputFile(path, "the stack file").write(after.encode("utf-8"))
    for name in sorted(outcome.resolved):
        _say(f"  {name}: {outcome.resolved[name]}", human)
    _say(f"wrote {len(outcome.resolved)} digests under {DIGESTS_KEY} in {source}", human)
    return None


def run(args: argparse.Namespace) -> Exit:
    from offline import image_digests as pins  # noqa: PLC0415
    from offline.chart_template import HelmTemplater  # noqa: PLC0415
    from offline.output_file import OutputFile  # noqa: PLC0415
    from offline.synth import synthesize  # noqa: PLC0415

    path, stack = stack_source(args)
    if not args.check:
        OutputFile(path, "the stack file").check()  # before the registries are asked: a link is refused at once
    mirrors = pins.mirrors_by_registry(args.mirror)
    # Before the program runs: a missing crane is named at once, not after the charts are templated.
    crane = None if args.check else pins.find_crane()
    with Stages("pin-images", ["run the program under mocks, charts with Helm", "ask the registries"]) as stages:
        result = synthesize(path, stack, HelmTemplater.from_environment())
        stages.done()
        digests = dict(result.stack.config.image_digests)
        unused = pins.unused_mirrors(pins.list_images(result, digests), mirrors)
        if unused:
            raise ValueError("\n".join(unused))  # before any registry is asked
        outcome = pins.listed(result, digests) if crane is None else pins.resolve(result, digests, mirrors, crane)
        stages.done()
    source, human = result.stack.source, not args.json
    counts = {state: sum(image.state == state for image in outcome.images) for state in pins.STATES}
    _say(
        f"{source}: {len(outcome.images)} images; {counts['by digest']} by digest where named, "
        f"{counts['reviewed']} pinned in {pins.DIGESTS_KEY}, {counts['unpinned']} by tag alone",
        human,
    )
    for notice in outcome.notices:
        print(f"stackctl pin-images: notice: {notice}", file=sys.stderr)
    error = None
    if args.check:
        code = _check(outcome, human)
    elif outcome.failures:
        for failure in outcome.failures:
            _error(failure)
        error = _error(
            f"{len(outcome.failures)} of {counts['unpinned']} unpinned images could not be resolved; {source} is "
            "left as it is"
        )
    elif outcome.resolved:
        error = _write(path, source, outcome, human)
    else:
        _say("every image is pinned; nothing written", human)
    if not args.check:
        code = Exit.INPUT if error else Exit.PASSED
    if args.json:
        print_json(
            {
                "command": "pin-images",
                "passed": code == Exit.PASSED,
                "exit_code": int(code),
                "file": source,
                "stack": result.stack.stack,
                "check": args.check,
                "images": [_row(image, image.pinned or outcome.resolved.get(image.name)) for image in outcome.images],
                "resolved": outcome.resolved,
                "failures": outcome.failures,
                "notices": outcome.notices,
                "written": not args.check and error is None and bool(outcome.resolved),
                "error": error,
            }
        )
    return code


COMMAND = Command(
    "pin-images",
    "resolve every image a stack would run, the charts' included, to its digest under imageDigests with crane",
    add_arguments,
    run,
    "[deploying.md](deploying.md#images-by-digest)",
    json=True,
)


def pinned_text(text: str, resolved: Mapping[str, str], note: str) -> str:
    """The stack file's text with `resolved` added under imageDigests, in name order, each line noted."""
    from offline.image_digests import DIGESTS_KEY  # noqa: PLC0415 (startup: --help loads no library)
    from planner.stack_patch import Wording, patched  # noqa: PLC0415 (ruamel only when writing)

    changes: dict[tuple[str, ...], str] = {(DIGESTS_KEY, name): resolved[name] for name in sorted(resolved)}
    wording = Wording(
        values="the digests", again="run stackctl pin-images again", needs="the stack file is left as it is"
    )
    return patched(text, changes, note, wording)
