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
CONFIG_MAP_DATA_LIMIT = 1024 * 1024
"""The bytes of a ConfigMap's data values the API server takes (validateConfigMap, MaxConfigMapSize: 1 MiB)."""


def config_map_key_problem(key: str) -> str | None:
    """Why Kubernetes refuses `key` as a ConfigMap key (IsConfigMapKey: at most 253 characters of letters, digits,
    '-', '_' and '.', and not '.', '..' nor starting with '..'), or None."""
    refused = sorted({c for c in key if not KEY_CHARACTERS.fullmatch(c)})
    if refused:
        return f"has {', '.join(map(repr, refused))}; a key is letters, digits, '-', '_' and '.'"
    if len(key.encode()) > KEY_MAX:
        return f"is {len(key.encode())} characters; a key is at most {KEY_MAX}"
    if key in (".", "..") or key.startswith(".."):
        return "is '.' or '..' or starts with '..', which a key may not"
    return None


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
