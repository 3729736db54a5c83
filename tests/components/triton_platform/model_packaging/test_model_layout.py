"""The model repository's layout is defined once (triton_platform/model_packaging/layout.py): published files and the init script agree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from platform_config.loader import load_stack
from platform_config.model_settings import render_stack
from platform_config.paths import DEFAULT_MODEL_REPO
from triton_platform.model_packaging.bundle import bundle_key
from triton_platform.model_packaging.digest import repository_files, version_paths
from triton_platform.model_packaging.layout import assemble_script, config_path, rendered_file_name, version_path
from triton_platform.model_packaging.render import render_repository
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


def test_label_and_warmup_files_are_published_and_laid_out_beside_the_versions(tmp_path: Path) -> None:
    """Triton reads `<model>/<label_filename>` and `<model>/warmup/<input_data_file>` (core src/model.cc
    Model::Init, src/backend_model_instance.cc GenerateWarmupData): every form ships them, as it ships versions."""
    repo = tmp_path / "repo"
    shutil.copytree(DEFAULT_MODEL_REPO, repo)
    classifier = repo / "classifier"
    config = (classifier / "config.pbtxt").read_text()
    config = config.replace("    dims: [ 10 ]\n", '    dims: [ 10 ]\n    label_filename: "labels/classes.txt"\n', 1)
    config += (
        'model_warmup [ { name: "zeros" batch_size: 1 inputs { key: "input_tensor" value: '
        '{ data_type: TYPE_FP32 dims: [ 128 ] input_data_file: "input_tensor.bin" } } } ]\n'
    )
    (classifier / "config.pbtxt").write_text(config)
    (classifier / "labels").mkdir()
    (classifier / "labels" / "classes.txt").write_text("".join(f"class{i}\n" for i in range(10)))
    (classifier / "warmup").mkdir()
    (classifier / "warmup" / "input_tensor.bin").write_bytes(bytes(4 * 128))
    source = read_repository(repo)
    assert not source.problems
    stack = load_stack("dev")
    rendered = render_stack("dev", stack.config.serving, stack.config.models, source)
    published = set(repository_files(rendered, ["classifier"]))
    assert {"classifier/labels/classes.txt", "classifier/warmup/input_tensor.bin"} <= published
    # Bundled: each file is a ConfigMap key mapped back to its path.
    assert bundle_key("classifier/warmup/input_tensor.bin") in {
        bundle_key(path) for path in version_paths(source, ["classifier"])
    }
    configs, models = tmp_path / "rendered", tmp_path / "models"
    configs.mkdir()
    models.mkdir()
    (configs / "classifier.pbtxt").write_text(rendered.models["classifier"].text)
    env = {"STACK": "dev", "MODELS_DIR": str(models), "STORE_DIR": str(repo), "RENDERED_DIR": str(configs)}
    script = assemble_script(["classifier"], {"classifier": source.models["classifier"].extra_files})
    subprocess.run(["/bin/sh", "-c", script], env={**env, "PATH": "/usr/bin:/bin"}, check=True)
    laid_out = {
        str((Path(folder) / name).relative_to(models))
        for folder, _dirs, names in os.walk(models, followlinks=True)
        for name in names
    }
    assert laid_out == published
    # A claim filled by hand without one: the init container names it, rather than Triton failing the load later.
    (classifier / "warmup" / "input_tensor.bin").unlink()
    shutil.rmtree(models)
    models.mkdir()
    run = subprocess.run(
        ["/bin/sh", "-c", script], env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stderr) == (
        1,
        f"no warmup/input_tensor.bin of model classifier under {repo} (its config.pbtxt names it)\n",
    )


def test_a_file_the_stack_writes_is_laid_out_in_a_version_folder_of_links(tmp_path: Path) -> None:
    store = tmp_path / "store"
    for version in ("1", "2", "3"):
        (store / "chat" / version).mkdir(parents=True)
        (store / "chat" / version / "README").write_text("the weights come from the engine arguments' model")
    (store / "chat" / "3" / ".gitkeep").write_text("")
    (store / "chat" / "3" / "..notes").write_text("a name starting with two dots")
    (store / "chat" / "config.pbtxt").write_text(
        'name: "chat"\nbackend: "vllm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n'
    )
    settings: Any = {
        "chat": {"vllm": {"engine_args": {"model": "meta/chat"}}, "version_policy": {"specific": {"versions": [2, 3]}}}
    }
    rendered = render_repository("dev", read_repository(store), ["chat"], {}, settings)
    assert sorted(rendered.models["chat"].files) == ["2/model.json", "3/model.json"]  # served versions only
    published = set(repository_files(rendered))
    assert {p for p in published if p.startswith("chat/3/")} == {
        "chat/3/..notes",
        "chat/3/.gitkeep",
        "chat/3/README",
        "chat/3/model.json",
    }
    configs, models = tmp_path / "rendered", tmp_path / "models"
    configs.mkdir()
    models.mkdir()
    (configs / "chat.pbtxt").write_text(rendered.models["chat"].text)
    for relative, text in rendered.models["chat"].files.items():
        (configs / rendered_file_name("chat", relative)).write_text(text)
    assert sorted(p.name for p in configs.iterdir()) == ["chat.model.json", "chat.pbtxt"]  # one key per model
    env = {"STACK": "dev", "MODELS_DIR": str(models), "STORE_DIR": str(store), "RENDERED_DIR": str(configs)}
    script = assemble_script(["chat"], {}, {"chat": tuple(rendered.models["chat"].files)})
    for published_store in (False, True):  # then over a published store, which holds the stack's model.json already
        if published_store:
            for version in ("2", "3"):
                (store / "chat" / version / "model.json").write_text(rendered.models["chat"].files["2/model.json"])
        shutil.rmtree(models)
        models.mkdir()
        subprocess.run(["sh", "-c", script], env={**env, "PATH": "/usr/bin:/bin"}, check=True)
        laid_out = {
            str((Path(folder) / name).relative_to(models))
            for folder, _dirs, names in os.walk(models, followlinks=True)
            for name in names
        }
        assert laid_out == published  # the unserved version 1 linked whole
        for version in ("2", "3"):
            assert json.loads((models / "chat" / version / "model.json").read_text()) == {"model": "meta/chat"}
            assert not (models / "chat" / version).is_symlink()  # a folder of links, the stack's file copied in
    # A store whose version folder holds its own, different model.json: the stack's is never laid over it.
    (store / "chat" / "3" / "model.json").write_text('{"model": "the repository\'s own"}')
    shutil.rmtree(models)
    models.mkdir()
    run = subprocess.run(
        ["sh", "-c", script], env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stderr) == (
        1,
        f"{store}/chat/3/model.json holds its own model.json, which differs from the one the stack writes; the "
        "platform never overwrites a repository's file: remove it from the store, or the stack's settings\n",
    )
    assert (store / "chat" / "3" / "model.json").read_text() == '{"model": "the repository\'s own"}'
    assert assemble_script(["classifier"]) == assemble_script(["classifier"], {}, {"chat": ("1/model.json",)})
