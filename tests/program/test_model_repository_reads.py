"""The model repository is read and rendered once while it is unchanged: the stack's validation and TritonServing
get the same objects (triton_platform/model_packaging/source.py `read_repository`, render.py
`render_repository`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from platform_config.loader import load_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from program.platform import gpu_pool_args, serving_args
from triton_platform.gpu_pool.gpu_pool_nodes import pool_placement
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import render_repository
from triton_platform.model_packaging.source import read_repository
from triton_platform.serving.triton_serving_spec import serving_spec


def test_an_unchanged_repository_is_read_once_and_a_change_is_read_again(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEFAULT_MODEL_REPO / "classifier", repo / "classifier")
    config = repo / "classifier" / "config.pbtxt"
    first = read_repository(repo)
    assert read_repository(repo) is first

    config.write_text(config.read_text().replace("max_batch_size: 32", "max_batch_size: 4"))
    changed = read_repository(repo)
    assert changed is not first
    assert changed.models["classifier"].config.max_batch_size == 4

    # The same content touched: read again, as any change the sizes alone would not show.
    stat = config.stat()
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert read_repository(repo) is not changed


def test_a_repository_is_rendered_once_per_config_name_and_settings() -> None:
    repo = read_repository(DEFAULT_MODEL_REPO)
    defaults: ModelSettingsArgs = {"max_batch_size": 4}
    rendered = render_repository("dev", repo, ["classifier"], defaults, {})
    assert render_repository("dev", repo, ["classifier"], {"max_batch_size": 4}, {}) is rendered
    assert render_repository("staging", repo, ["classifier"], defaults, {}) is not rendered
    assert render_repository("dev", repo, ["classifier"], {"max_batch_size": 2}, {}) is not rendered


def test_tritonserving_gets_the_rendering_the_stacks_validation_made() -> None:
    stack = load_stack("production")
    assert stack.rendered is not None
    placement = pool_placement(gpu_pool_args(stack.config, None))
    spec = serving_spec("production-serving", serving_args(stack.config, stack.rendered, placement), "production")
    assert spec.rendered is stack.rendered
