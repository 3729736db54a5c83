"""Publish a stack's model repository to object storage under its content digest, with rclone.

`<uri>/<digest>/` is immutable once its manifest is there: the manifest goes up
last, so a half upload is never taken for a published version, and a rerun of
the same files finds it and uploads nothing. Triton (s3, gcs) and the PVC loader
read `<uri>/<digest>`, the digest the program computes from the same local files.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from model_publishing.publish import write_model_repository
from triton_platform.model_packaging.digest import repository_digest
from triton_platform.model_packaging.layout import MANIFEST
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.model_packaging.store import StoreUri, rclone_settings

RCLONE_HINT = "install rclone (https://rclone.org/install/; Debian: apt-get install rclone)"
NOT_FOUND_CODES = (3, 4)
"""rclone's exit codes for a missing directory or file (docs: rclone.org/docs/#exit-code)."""


class PublishError(RuntimeError):
    """rclone failed or is missing; the message says which command and why."""


@dataclass(frozen=True)
class Published:
    digest: str
    location: str
    """The rclone path written (or that would be)."""
    status: Literal["published", "already published", "dry run"]


def rclone_environment(store: StoreUri) -> dict[str, str]:
    """This process's environment over the store's settings (so RCLONE_* set by the caller win)."""
    env = {**rclone_settings(store), **os.environ}
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if store.backend == "s3" and region:
        env.setdefault("RCLONE_S3_REGION", region)  # rclone's S3 ignores the AWS SDK's region variables
    return env


def _rclone(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["rclone", *args], env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError as err:
        raise PublishError(f"rclone is not on PATH: {RCLONE_HINT}") from err


def published_digest(store: StoreUri, digest: str, env: dict[str, str]) -> str | None:
    """The digest in `<uri>/<digest>/`'s manifest, or None when there is none yet."""
    cat = _rclone(["cat", f"{store.rclone_path(digest)}/{MANIFEST}"], env)
    if cat.returncode in NOT_FOUND_CODES or (cat.returncode == 0 and not cat.stdout):
        return None
    if cat.returncode != 0:
        raise PublishError(f"rclone cat {store.rclone_path(digest)}/{MANIFEST} failed: {cat.stderr.strip()}")
    try:
        return str(json.loads(cat.stdout)["digest"])
    except (ValueError, KeyError, TypeError):
        return None  # unreadable: upload again, the manifest last


def publish_repository(rendered: RenderedRepository, store: StoreUri, *, dry_run: bool = False) -> Published:
    """Upload the stack's repository to `<uri>/<digest>/` unless that version is already complete there."""
    digest = repository_digest(rendered)
    env = rclone_environment(store)
    target = store.rclone_path(digest)
    if published_digest(store, digest, env) == digest:
        return Published(digest, target, "already published")
    with tempfile.TemporaryDirectory(prefix="publish-models-") as tmp:
        local = Path(tmp) / "repository"
        write_model_repository(rendered, local)
        # --immutable: a file under a digest never changes, so a differing one is an error, not an update.
        copy = ["copy", str(local), target, "--checksum", "--immutable", "--exclude", f"/{MANIFEST}"]
        steps = [copy + (["--dry-run"] if dry_run else [])]
        if not dry_run:
            steps.append(["copyto", str(local / MANIFEST), f"{target}/{MANIFEST}"])
        for step in steps:
            run = _rclone(step, env)
            if run.returncode != 0:
                raise PublishError(f"rclone {step[0]} to {target} failed: {run.stderr.strip()}")
    return Published(digest, target, "dry run" if dry_run else "published")
