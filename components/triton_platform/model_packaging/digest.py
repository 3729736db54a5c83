"""The files of a rendered model repository and their content digest, laid out by layout.py.

The digest names a published repository (`<uri>/<digest>/`): `stackctl publish-models` uploads under it,
and TritonServing computes it from the same local files to point Triton (or the PVC loader) there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from triton_platform.model_packaging.layout import config_path, version_path
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.model_packaging.source import ModelRepository


def version_paths(source: ModelRepository, models: Iterable[str]) -> dict[str, Path]:
    """Every file under the version folders of `models`, by its path relative to the repository."""
    files = {}
    for name in sorted(models):
        model = source.models[name]
        for version in model.versions:
            folder = model.path / str(version)
            for path in sorted(folder.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    files[f"{version_path(name, str(version))}/{path.relative_to(folder)}"] = path
    return files


def version_files(rendered: RenderedRepository, models: Iterable[str]) -> dict[str, bytes]:
    """Every file under the version folders of `models` with its content, by path relative to the repository."""
    return {key: path.read_bytes() for key, path in version_paths(rendered.source, models).items()}


def repository_files(rendered: RenderedRepository, models: Iterable[str] | None = None) -> dict[str, bytes]:
    """What Triton loads for `models` (default: every served model): version files and rendered configs."""
    names = sorted(models if models is not None else rendered.models)
    files = version_files(rendered, names)
    for name in names:
        files[config_path(name, rendered.config_name)] = rendered.models[name].text.encode()
    return files


def files_digest(files: dict[str, bytes]) -> str:
    """sha256 over every path and its content's sha256: changes exactly when a file, or the file set, does."""
    sha = hashlib.sha256()
    for path, data in sorted(files.items()):
        sha.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
    return sha.hexdigest()


def repository_digest(rendered: RenderedRepository) -> str:
    """Digest of the whole repository, as `stackctl publish-models` publishes it."""
    return files_digest(repository_files(rendered))
