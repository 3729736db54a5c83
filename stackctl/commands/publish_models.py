"""`stackctl publish-models`: upload a stack's model repository to its object store, under its digest."""

from __future__ import annotations

import argparse
import sys

from stackctl.command import Command, Exit, model_repo_argument, stack_arguments, stack_with_models


def add_arguments(parser: argparse.ArgumentParser) -> None:
    stack_arguments(parser)
    model_repo_argument(parser, "source model repository (default: model_repo/)")
    parser.add_argument("--dry-run", action="store_true", help="show what would be uploaded; upload nothing")


def run(args: argparse.Namespace) -> Exit:
    from model_publishing.remote import PublishError, publish_repository  # noqa: PLC0415

    loaded = stack_with_models(args)
    source = loaded.config.serving.model_repository
    store = source.store()
    if store is None:
        # Not an error: the deploy workflow runs this for every stack, dev's bundled one included.
        print(
            f"{loaded.source}: nothing to publish: modelRepository source {source.source!r}"
            f"{' without pvc.origin' if source.source == 'pvc' else ''} is not read from object storage "
            "(publishing is for sources s3 and gcs, and for a pvc with origin)"
        )
        return Exit.PASSED
    rendered = loaded.rendered
    assert rendered is not None  # nothing is deferred without defer_to_esc
    try:
        published = publish_repository(rendered, store, dry_run=args.dry_run)
    except PublishError as err:
        # rclone missing or failing: what the command needs from the machine, an input of sorts.
        print(f"stackctl publish-models: {err}", file=sys.stderr)
        return Exit.INPUT
    where = store.triton_path(published.digest)
    if published.status == "already published":
        print(f"{loaded.source}: {where} is already published (digest {published.digest}); nothing uploaded")
    elif published.status == "dry run":
        print(f"{loaded.source}: dry run: would publish {len(rendered.models)} models to {where}")
    else:
        print(f"{loaded.source}: published {len(rendered.models)} models to {where}")
    return Exit.PASSED


COMMAND = Command(
    "publish-models",
    "upload a stack's model repository, under its digest, to its object store (s3, gcs, pvc.origin) with rclone",
    add_arguments,
    run,
    "[architecture.md](architecture.md#publishing-and-the-pvc-loader)",
)
