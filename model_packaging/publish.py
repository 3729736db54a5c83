"""The model repository exactly as Triton sees it for one stack, laid out by model_packaging/layout.py.

Every written repository carries a manifest with its content digest: what
`stackctl publish-models` uploads under `<uri>/<digest>/`, and what the program
computes from the same local files to point Triton (or the PVC loader) at.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from model_packaging.layout import config_path, version_path
from model_packaging.render import RenderedRepository
from stackctl.out_folder import COMMAND_MANIFESTS, claim

MANIFEST = COMMAND_MANIFESTS["model-repo"]
"""The digest and file list of a written repository; it also marks a folder a rerun may replace."""


def version_files(rendered: RenderedRepository, models: list[str]) -> dict[str, bytes]:
    """Every file under the version folders of `models`, by path relative to the repository."""
    files = {}
    for name in sorted(models):
        model = rendered.source.models[name]
        for version in model.versions:
            folder = model.path / str(version)
            for path in sorted(folder.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    files[f"{version_path(name, str(version))}/{path.relative_to(folder)}"] = path.read_bytes()
    return files


def repository_files(rendered: RenderedRepository, models: list[str] | None = None) -> dict[str, bytes]:
    """What Triton loads for `models` (default: every served model): version files and rendered configs."""
    names = sorted(models if models is not None else rendered.models)
    files = version_files(rendered, names)
    for name in names:
        files[config_path(name, rendered.stack)] = rendered.models[name].text.encode()
    return files


def files_digest(files: dict[str, bytes]) -> str:
    """sha256 over every path and its content's sha256: changes exactly when a file, or the file set, does."""
    sha = hashlib.sha256()
    for path, data in sorted(files.items()):
        sha.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
    return sha.hexdigest()


def repository_digest(rendered: RenderedRepository) -> str:
    """Digest of the stack's whole repository, as `stackctl publish-models` publishes it."""
    return files_digest(repository_files(rendered))


def manifest_text(stack: str, files: dict[str, bytes]) -> str:
    listing = {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())}
    return json.dumps({"digest": files_digest(files), "stack": stack, "files": listing}, indent=2) + "\n"


def write_model_repository(rendered: RenderedRepository, out: Path, models: list[str] | None = None) -> list[str]:
    """Write what Triton loads for `models` (default: every served model); returns the models written.

    Only into a new or empty folder, or one model-repo wrote: its manifest marks it and lists what a rerun
    removes (stackctl/out_folder.py)."""
    names = sorted(models if models is not None else rendered.models)
    files = repository_files(rendered, names)
    claim(out, "model-repo").replace(files, manifest=manifest_text(rendered.stack, files))
    return names
