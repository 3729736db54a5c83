"""The model repository exactly as Triton sees it for one stack.

Layout: `<model>/<version>/...` from the source, plus the stack's rendered config
at `<model>/configs/<stack>.pbtxt`, which Triton reads with
`--model-config-name=<stack>`. The base config.pbtxt is left out on purpose:
Triton falls back to it silently when the named config is missing, so without
it a missing rendered config fails loudly instead (checked against Triton 2.51).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from model_repository.render import RenderedRepository

MARKER = ".stackctl-model-repo"
"""Marks a folder written by `stackctl model-repo`, so a rerun may replace it."""


def config_path(model: str, stack: str) -> str:
    """Where Triton looks for the stack's config of `model`, relative to the repository."""
    return f"{model}/configs/{stack}.pbtxt"


def version_files(rendered: RenderedRepository, models: list[str]) -> dict[str, bytes]:
    """Every file under the version folders of `models`, by path relative to the repository."""
    files = {}
    for name in sorted(models):
        model = rendered.source.models[name]
        for version in model.versions:
            for path in sorted((model.path / str(version)).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    files[str(path.relative_to(model.path.parent))] = path.read_bytes()
    return files


def write_model_repository(rendered: RenderedRepository, out: Path, models: list[str] | None = None) -> list[str]:
    """Write what Triton loads for `models` (default: every served model); returns the models written."""
    names = sorted(models if models is not None else rendered.models)
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise FileExistsError(f"{out} is not empty and was not written by stackctl model-repo; choose another --out")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text(f"stack {rendered.stack}\n", encoding="utf-8")
    for relative, content in version_files(rendered, names).items():
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    for name in names:
        target = out / config_path(name, rendered.stack)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rendered.models[name].text, encoding="utf-8")
    return names
