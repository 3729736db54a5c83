"""What the model repository on disk must look like: version folders, config files, ensemble steps."""

from __future__ import annotations

from pathlib import Path

from platform_config.paths import DEFAULT_MODEL_REPO
from tests.conftest import errors_of, serving_only, setting, validate
from triton_platform.model_packaging.source import read_repository

MODELS = "triton-platform:models"
VERSION_RULE = "version folders are named 1, 2, 3, ... (no leading zeros, signs or dots)"


def _model(root: Path, name: str, config: str = "max_batch_size: 8\n", versions: dict[str, bool] | None = None) -> Path:
    """A model folder: its config.pbtxt and version folders, each holding a model file or left empty."""
    folder = root / name
    for version, has_file in (versions if versions is not None else {"1": True}).items():
        (folder / version).mkdir(parents=True)
        if has_file:
            (folder / version / "model.onnx").write_bytes(b"onnx")
    folder.mkdir(exist_ok=True)
    (folder / "config.pbtxt").write_text(f'name: "{name}"\n{config}')
    return folder


def test_version_folders_must_be_canonical_positive_integers(tmp_path: Path) -> None:
    versions = {name: True for name in ("1", "03", "0", "-1", "1.0", "assets", "warmup", "configs")}
    folder = _model(tmp_path, "classifier", versions=versions)
    errors = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert errors == [
        f"{folder / '-1'}: version folder '-1' of model 'classifier': versions start at 1; {VERSION_RULE}",
        f"{folder / '0'}: version folder '0' of model 'classifier': versions start at 1; {VERSION_RULE}",
        f"{folder / '03'}: version folder '03' of model 'classifier': Triton ignores a version folder whose name "
        f"starts with 0; {VERSION_RULE}",
        f"{folder / '1.0'}: version folder '1.0' of model 'classifier': Triton would read it as version 1; "
        f"{VERSION_RULE}",
    ]
    assert read_repository(tmp_path).models["classifier"].versions == (1,)


def test_folders_that_are_not_versions_are_left_alone(tmp_path: Path) -> None:
    _model(tmp_path, "classifier", versions={"1": True, "12": True, "assets": True, "warmup": True})
    assert validate("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert read_repository(tmp_path).models["classifier"].versions == (1, 12)


def test_an_empty_version_folder_is_an_error_when_served(tmp_path: Path) -> None:
    folder = _model(tmp_path, "classifier", versions={"1": False, "2": True})
    (folder / "1" / ".gitkeep").write_text("")
    repo = read_repository(tmp_path)
    # The default policy serves the latest version only, which has its file.
    assert validate("dev", *serving_only("classifier"), repo=repo)
    [error] = errors_of(
        "dev", *serving_only("classifier"), setting(MODELS, "classifier", "versionPolicy", value={"all": {}}), repo=repo
    )
    assert error == (
        f"{folder / '1'}: version 1 of model 'classifier' is served but its folder is empty, so Triton cannot load "
        "it; put the model's files in it, or serve other versions (versionPolicy)"
    )
    policy = {"specific": {"versions": [2]}}
    assert validate(
        "dev", *serving_only("classifier"), setting(MODELS, "classifier", "versionPolicy", value=policy), repo=repo
    )


def test_an_empty_latest_version_is_an_error(tmp_path: Path) -> None:
    folder = _model(tmp_path, "classifier", versions={"1": True, "2": False})
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error.startswith(f"{folder / '2'}: version 2 of model 'classifier' is served but its folder is empty")


def test_an_ensembles_empty_version_folder_is_expected() -> None:
    repo = read_repository(DEFAULT_MODEL_REPO)
    assert repo.models["pipeline"].empty_versions == frozenset({1})
    assert validate("dev", repo=repo)


def test_a_model_folder_without_config_gets_its_own_message(tmp_path: Path) -> None:
    (tmp_path / "classifier" / "1").mkdir(parents=True)
    (tmp_path / "classifier" / "1" / "model.onnx").write_bytes(b"onnx")
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error == (
        f"{tmp_path / 'classifier'}: model folder 'classifier' has no config.pbtxt; every model needs one "
        "(each stack's config is rendered from it)"
    )


ENSEMBLE = """platform: "ensemble"
max_batch_size: 8
ensemble_scheduling {
  step [
    { model_name: "preprocess" model_version: -1 },
    { model_name: "tokenizer" model_version: -1 }
  ]
}
"""


def test_a_missing_ensemble_step_is_named_as_missing(tmp_path: Path) -> None:
    _model(tmp_path, "a")
    _model(tmp_path, "preprocess")
    pipeline = _model(tmp_path, "pipeline", ENSEMBLE, versions={"1": False})
    repo = read_repository(tmp_path)
    assert "pipeline" not in repo.models
    [error] = errors_of("dev", *serving_only("pipeline"), repo=repo)
    assert error == (
        f"{pipeline / 'config.pbtxt'}: ensemble 'pipeline' step 2 uses model 'tokenizer', which is not in the "
        "repository (models: a, preprocess)"
    )


def test_a_present_step_the_deployment_does_not_serve_is_still_asked_for(tmp_path: Path) -> None:
    _model(tmp_path, "preprocess")
    _model(tmp_path, "tokenizer")
    _model(tmp_path, "pipeline", ENSEMBLE, versions={"1": False})
    errors = errors_of("dev", *serving_only("pipeline"), repo=read_repository(tmp_path))
    assert errors == [
        f"triton-platform:serving.deployments.general.models: ensemble 'pipeline' chains {step!r}, which "
        "deployment 'general' does not serve; add it"
        for step in ("preprocess", "tokenizer")
    ]
    models = ["pipeline", "preprocess", "tokenizer"]
    assert validate(
        "dev",
        *serving_only("pipeline"),
        setting("triton-platform:serving", "deployments", "general", "models", value=models),
        repo=read_repository(tmp_path),
    )


def test_a_queue_timeout_from_the_base_config_is_checked_against_the_slo(tmp_path: Path) -> None:
    base = "max_batch_size: 8\ndynamic_batching { default_queue_policy { default_timeout_microseconds: 900000 } }\n"
    folder = _model(tmp_path, "classifier", base)
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error == (
        f"default_queue_policy.default_timeout_microseconds in {folder / 'config.pbtxt'}: queue timeout 900000 us "
        "of model 'classifier' is above the p95 latency SLO (triton-platform:serving.p95LatencySloMs = 500000 us); "
        "set dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds for this stack"
    )
    timeout = ("dynamicBatching", "defaultQueuePolicy", "defaultTimeoutMicroseconds")
    assert validate(
        "dev",
        *serving_only("classifier"),
        setting("triton-platform:serving", "modelDefaults", *timeout, value=400_000),
        repo=read_repository(tmp_path),
    )


LABELLED = """output [ { name: "probs" data_type: TYPE_FP32 dims: [ 10 ] label_filename: "labels.txt" } ]
model_warmup [
  {
    name: "one"
    batch_size: 1
    inputs { key: "features" value: { data_type: TYPE_FP32 dims: [ 128 ] input_data_file: "features.bin" } }
  }
]
"""


def test_label_and_warmup_files_the_config_names_must_exist(tmp_path: Path) -> None:
    """Triton reads both when it loads the model (core src/model.cc Model::Init; src/backend_model_instance.cc
    GenerateWarmupData, under the model's warmup/ folder) and fails the load without them."""
    folder = _model(tmp_path, "classifier", config=f"max_batch_size: 8\n{LABELLED}")
    errors = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    config = folder / "config.pbtxt"
    assert errors == [
        f"{config}: model 'classifier': model_warmup[0].inputs['features'].input_data_file is 'features.bin', but "
        f"{folder / 'warmup' / 'features.bin'} does not exist (or is no file); Triton reads it when it loads the "
        "model and fails the load without it: add the file, or remove the key",
        f"{config}: model 'classifier': output[0].label_filename is 'labels.txt', but {folder / 'labels.txt'} does "
        "not exist (or is no file); Triton reads it when it loads the model and fails the load without it: add the "
        "file, or remove the key",
    ]


def test_a_label_file_outside_the_model_folder_is_refused(tmp_path: Path) -> None:
    config = 'max_batch_size: 8\noutput [ { name: "p" data_type: TYPE_FP32 dims: [ 1 ] label_filename: "../x" } ]\n'
    folder = _model(tmp_path, "classifier", config=config)
    (tmp_path / "x").write_text("cat\n")
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error == (
        f"{folder / 'config.pbtxt'}: model 'classifier': output[0].label_filename is '../x', which leads out of "
        "the model folder; Triton refuses a label file there, and only the model folder ships: give a path inside it"
    )


def test_present_label_and_warmup_files_are_the_models_own(tmp_path: Path) -> None:
    folder = _model(tmp_path, "classifier", config=f"max_batch_size: 8\n{LABELLED}")
    (folder / "labels.txt").write_text("".join(f"class{i}\n" for i in range(10)))
    (folder / "warmup").mkdir()
    (folder / "warmup" / "features.bin").write_bytes(bytes(4 * 128))
    repo = read_repository(tmp_path)
    assert validate("dev", *serving_only("classifier"), repo=repo)
    assert repo.models["classifier"].extra_files == ("labels.txt", "warmup/features.bin")
