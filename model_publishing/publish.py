"""Write the model repository exactly as Triton sees it for one stack, with its manifest.

Every written repository carries a manifest (layout.MANIFEST) with its content digest
(triton_platform/model_packaging/digest.py): what `stackctl publish-models` uploads under `<uri>/<digest>/`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from offline.out_folder import claim
from triton_platform.model_packaging.digest import Content, file_hashes, hashes_digest, repository_files
from triton_platform.model_packaging.render import RenderedRepository


def manifest_text(stack: str, files: Mapping[str, Content]) -> str:
    """The manifest: the repository's digest and each file's sha256 (every model file read once, in chunks)."""
    hashes = file_hashes(files)
    listing = {path: digest.hex() for path, digest in hashes.items()}
    return json.dumps({"digest": hashes_digest(hashes), "stack": stack, "files": listing}, indent=2) + "\n"


def write_model_repository(rendered: RenderedRepository, out: Path, models: list[str] | None = None) -> list[str]:
    """Write what Triton loads for `models` (default: every served model); returns the models written.

    Only into a new or empty folder, or one model-repo wrote: its manifest marks it and lists what a rerun
    removes (offline/out_folder.py). Model files are copied in chunks, never held whole."""
    names = sorted(models if models is not None else rendered.models)
    files = repository_files(rendered, names)
    claim(out, "model-repo").replace(files, manifest=manifest_text(rendered.config_name, files))
    return names
