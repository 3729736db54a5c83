"""Model files bundled into a ConfigMap (source `bundled`): the key each repository path gets, and the paths
no key can carry.

A ConfigMap key may not hold '/', so a path's folders become dots (`classifier/1/model.onnx` is
`classifier.1.model.onnx`) and the pod's volume maps each key back to its path. Kubernetes accepts a key of
letters, digits, '-', '_' and '.' up to 253 characters (IsConfigMapKey, k8s.io/apimachinery
pkg/util/validation/validation.go); the API server refuses the ConfigMap otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

KEY_CHARACTERS = re.compile(r"[-._a-zA-Z0-9]")
KEY_MAX = 253
"""DNS1123SubdomainMaxLength, in bytes."""
ELSEWHERE = "rename it, or use source pvc, s3 or gcs, which keep paths as they are"
BUNDLE_LIMIT = 900 * 1024
"""A deployment's bundled files ride in one ConfigMap; the API server caps an object near 1 MiB."""


def bundle_key(path: str) -> str:
    """The ConfigMap key of a repository path."""
    return path.replace("/", ".")


def bundle_problems(files: Mapping[str, Path], shown: Callable[[Path], str]) -> Iterator[tuple[Path, str]]:
    """(file, problem) for each file of `files` (by repository path) whose key Kubernetes refuses, and for each
    file whose key another file already has: one would silently replace the other. `shown` writes a path."""
    owners: dict[str, Path] = {}
    for path, file in sorted(files.items()):
        key = bundle_key(path)
        refused = sorted({c for c in key if not KEY_CHARACTERS.fullmatch(c)})
        if refused:
            yield (
                file,
                f"cannot be bundled: its ConfigMap key {key!r} has {', '.join(map(repr, refused))}, which "
                f"Kubernetes refuses (a key is letters, digits, '-', '_' and '.'); {ELSEWHERE}",
            )
        elif len(key.encode()) > KEY_MAX:
            yield (
                file,
                f"cannot be bundled: its ConfigMap key is {len(key.encode())} characters, above Kubernetes' "
                f"{KEY_MAX}; {ELSEWHERE}",
            )
        if key in owners:
            yield (
                file,
                f"cannot be bundled: it and {shown(owners[key])} both become ConfigMap key {key!r}, so one would "
                "replace the other; rename one, or use source pvc, s3 or gcs",
            )
        else:
            owners[key] = file
