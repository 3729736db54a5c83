"""The files of a rendered model repository and their content digest, laid out by layout.py.

The digest names a published repository (`<uri>/<digest>/`): `stackctl publish-models` uploads under it,
and TritonServing computes it from the same local files to point Triton (or the PVC loader) there.
Model files are never held whole: each is hashed (and copied, by `stackctl model-repo`) in chunks, so memory
does not grow with a model's size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from triton_platform.args.input_files import InputFile, InputKind
from triton_platform.model_packaging.layout import config_path, version_path
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.model_packaging.source import ModelRepository

MODEL_FILE = InputKind("model file", 2 * 1024**4)
"""2 TiB: above the GPU memory of any one node Triton serves from (eight 192 GB GPUs hold 1.5 TB), so no file a
server can load; read in chunks, a model file costs no memory, and the bound only stops a runaway (a sparse or
growing file) from being hashed for hours."""

Content = bytes | InputFile
"""A repository file's content: in memory (a rendered config) or a file on disk, read in chunks when needed."""


def version_paths(source: ModelRepository, models: Iterable[str]) -> dict[str, Path]:
    """Every model file of `models` Triton reads, by its path relative to the repository: each file under the
    version folders (anything but a folder, so that a FIFO or a device is listed for `version_files` to refuse by
    name), and the label and warmup data files each config names outside them (source.config_files), which every
    repository form ships too: bundled, loaded onto a claim, published."""
    files = {}
    for name in sorted(models):
        model = source.models[name]
        for version in model.versions:
            folder = model.path / str(version)
            for path in sorted(folder.rglob("*")):
                if "__pycache__" in path.parts or path.is_dir():
                    continue
                files[f"{version_path(name, str(version))}/{path.relative_to(folder)}"] = path
        for relative in model.extra_files:
            files[f"{name}/{relative}"] = model.path / relative
    return files


def version_files(rendered: RenderedRepository, models: Iterable[str]) -> dict[str, InputFile]:
    """Every file under the version folders of `models`, by path relative to the repository.

    Each is checked before anything reads it: a FIFO, a device or a link that leads to none is refused
    (InputFileError), naming it, rather than hanging a read or being left out of the digest in silence.
    """
    files = {key: InputFile(path, MODEL_FILE) for key, path in version_paths(rendered.source, models).items()}
    for source in files.values():
        source.check()
    return files


def repository_files(rendered: RenderedRepository, models: Iterable[str] | None = None) -> dict[str, Content]:
    """What Triton loads for `models` (default: every served model): version files, rendered configs and the files
    the stack writes into version folders (render.py `version_texts`)."""
    names = sorted(models if models is not None else rendered.models)
    files: dict[str, Content] = dict(version_files(rendered, names))
    for name in names:
        files[config_path(name, rendered.config_name)] = rendered.models[name].text.encode()
        for relative, text in rendered.models[name].files.items():
            files[f"{name}/{relative}"] = text.encode()  # a vLLM model's model.json, from the stack
    return files


def content_sha256(content: Content) -> bytes:
    return hashlib.sha256(content).digest() if isinstance(content, bytes) else content.sha256()


def file_hashes(files: Mapping[str, Content]) -> dict[str, bytes]:
    """Each file's sha256, by path."""
    return {path: content_sha256(content) for path, content in sorted(files.items())}


def hashes_digest(hashes: Mapping[str, bytes]) -> str:
    """sha256 over every path and its content's sha256: changes exactly when a file, or the file set, does."""
    sha = hashlib.sha256()
    for path, digest in sorted(hashes.items()):
        sha.update(path.encode() + b"\0" + digest)
    return sha.hexdigest()


def files_digest(files: Mapping[str, Content]) -> str:
    return hashes_digest(file_hashes(files))


def repository_digest(rendered: RenderedRepository) -> str:
    """Digest of the whole repository, as `stackctl publish-models` publishes it."""
    return files_digest(repository_files(rendered))
