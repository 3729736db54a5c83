"""Write the model repository exactly as Triton sees it for one stack, with its manifest.

Every written repository carries a manifest (layout.MANIFEST) with its content digest
(triton_platform/model_packaging/digest.py): what `stackctl publish-models` uploads under `<uri>/<digest>/`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from stackctl.out_folder import claim
from triton_platform.model_packaging.digest import files_digest, repository_files
from triton_platform.model_packaging.render import RenderedRepository


def manifest_text(stack: str, files: dict[str, bytes]) -> str:
    listing = {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())}
    return json.dumps({"digest": files_digest(files), "stack": stack, "files": listing}, indent=2) + "\n"


def write_model_repository(rendered: RenderedRepository, out: Path, models: list[str] | None = None) -> list[str]:
    """Write what Triton loads for `models` (default: every served model); returns the models written.

    Only into a new or empty folder, or one model-repo wrote: its manifest marks it and lists what a rerun
    removes (stackctl/out_folder.py)."""
    names = sorted(models if models is not None else rendered.models)
    files = repository_files(rendered, names)
    claim(out, "model-repo").replace(files, manifest=manifest_text(rendered.config_name, files))
    return names
