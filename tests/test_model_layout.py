"""The model repository's layout is defined once (triton_platform/model_packaging/layout.py): published files and the init script agree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from platform_config.loader import load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from triton_platform.model_packaging.digest import repository_files
from triton_platform.model_packaging.layout import assemble_script, config_path, version_path
from triton_platform.model_packaging.source import read_repository


def test_paths_are_tritons_layout() -> None:
    assert config_path("classifier", "production") == "classifier/configs/production.pbtxt"
    assert version_path("classifier", "3") == "classifier/3"


def test_the_init_script_lays_out_exactly_what_is_published(tmp_path: Path) -> None:
    stack = load_stack("dev")
    rendered = render_stack("dev", stack.config.serving, stack.config.models, read_repository(DEFAULT_MODEL_REPO))
    published = {p for p in repository_files(rendered, ["classifier", "ranker"])}
    configs, models = tmp_path / "rendered", tmp_path / "models"
    configs.mkdir()
    models.mkdir()
    for name in ("classifier", "ranker"):
        (configs / f"{name}.pbtxt").write_text(rendered.models[name].text)
    env = {
        "STACK": "dev",
        "MODELS_DIR": str(models),
        "STORE_DIR": str(DEFAULT_MODEL_REPO),
        "RENDERED_DIR": str(configs),
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["/bin/sh", "-c", assemble_script(["classifier", "ranker"])], env=env, check=True)
    # Version folders are symlinks into the store: walk through them.
    laid_out = {
        str((Path(folder) / name).relative_to(models))
        for folder, _dirs, names in os.walk(models, followlinks=True)
        for name in names
        if "__pycache__" not in Path(folder).parts
    }
    assert laid_out == published
    assert "classifier/configs/dev.pbtxt" in laid_out
