"""Model repositories Triton would refuse at load time, refused first by `stackctl validate` and by TritonServing;
links out of the repository; files a bundled ConfigMap cannot carry. Each class is asserted on both paths: the
stack file (its keys, files shown as the user reads them) and the component (its Args, files as given)."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_config.paths import PROJECT_ROOT
from tests.components.triton_platform.serving.test_triton_serving import problems, valid
from tests.conftest import Mutation, errors_of, removing, setting, validate
from triton_platform.model_packaging.source import read_repository

SERVING = "triton-platform:serving"
ONNX = """platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 2 ] } ]
"""
VERSION_RULE = "version folders are named 1, 2, 3, ... (no leading zeros, signs or dots)"


def _model(root: Path, name: str, config: str = ONNX, files: dict[str, str] | None = None) -> Path:
    """A model folder: config.pbtxt named after it, and its version folders' files (default: 1/model.onnx)."""
    folder = root / name
    for path in files if files is not None else {"1/model.onnx": ""}:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(b"weights")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(f'name: "{name}"\n{config}')
    return folder


def _ensemble(*steps: str, max_batch: int = 8) -> str:
    """An ensemble config over `steps`, each `model_name ... output_map {...}` text."""
    return (
        f'platform: "ensemble"\nmax_batch_size: {max_batch}\n'
        'input [ { name: "in" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'output [ { name: "out" data_type: TYPE_FP32 dims: [ 2 ] } ]\n'
        f"ensemble_scheduling {{ step [ {', '.join('{ ' + s + ' }' for s in steps)} ] }}\n"
    )


def _step(model: str, version: int | None, tensors: tuple[str, str] = ("x", "y")) -> str:
    """One ensemble step: `model` at `version` (None: unset), its input `tensors[0]` fed from the ensemble's
    input, its output `tensors[1]` written to the ensemble's output."""
    pinned = "" if version is None else f" model_version: {version}"
    return (
        f'model_name: "{model}"{pinned} input_map {{ key: "{tensors[0]}" value: "in" }} '
        f'output_map {{ key: "{tensors[1]}" value: "out" }}'
    )


def _stack(root: Path, served: list[str], *mutations: Mutation) -> list[str]:
    """What `stackctl validate` says of dev serving `served` from the repository at `root`."""
    serve = setting(SERVING, "deployments", "general", "models", value=served)
    return errors_of("dev", removing("triton-platform:models"), serve, *mutations, repo=read_repository(root))


def _component(root: Path, served: list[str]) -> list[str]:
    """What TritonServing says of one deployment serving `served` from the bundled repository at `root`."""
    deployments = {"demo": {"models": served, "replicas": {"min": 1, "max": 2}}}
    return problems(valid(model_repository={"path": str(root), "source": "bundled"}, deployments=deployments))


def _refusals(root: Path, served: list[str]) -> tuple[list[str], list[str]]:
    """What each path says of the repository at `root` serving `served`: the stack's problems, the component's."""
    return _stack(root, served), _component(root, served)


def _by_both(served: list[str], *problems_by_model: tuple[str, str]) -> tuple[list[str], list[str]]:
    """The refusals both paths must give for these repository problems, in the component's order: (served model,
    `file: message`); the stack sorts its problems, the component names the served model's Arg."""
    return sorted(problem for _, problem in problems_by_model), [
        f"deployments.demo.models[{served.index(model)}]: {problem}" for model, problem in problems_by_model
    ]


def test_an_ensemble_that_chains_itself_directly_or_through_another_is_refused(tmp_path: Path) -> None:
    _model(tmp_path, "classifier")
    loop = _model(tmp_path, "loop", _ensemble(_step("loop", -1, ("in", "out"))), {"1/.keep": ""})
    first = _model(tmp_path, "first", _ensemble(_step("second", -1, ("in", "out"))), {"1/.keep": ""})
    second = _model(tmp_path, "second", _ensemble(_step("first", -1, ("in", "out"))), {"1/.keep": ""})
    circular = "Triton refuses circular dependencies between ensembles"
    assert _refusals(tmp_path, ["first", "second", "loop"]) == _by_both(
        ["first", "second", "loop"],
        ("first", f"{first / 'config.pbtxt'}: ensemble 'first' chains itself (first -> second -> first); {circular}"),
        (
            "second",
            f"{second / 'config.pbtxt'}: ensemble 'second' chains itself (second -> first -> second); {circular}",
        ),
        ("loop", f"{loop / 'config.pbtxt'}: ensemble 'loop' chains itself (loop -> loop); {circular}"),
    )


def test_a_step_may_pin_only_a_version_triton_loads(tmp_path: Path) -> None:
    _model(tmp_path, "classifier", files={"1/model.onnx": "", "2/model.onnx": ""})
    unset = _step("classifier", None)
    pipeline = _model(
        tmp_path, "pipeline", _ensemble(_step("classifier", 1), _step("classifier", 3), unset), {"1/.keep": ""}
    )
    base = pipeline / "config.pbtxt"
    expected = [
        f"{base}: ensemble 'pipeline' step 1 pins model_version 1 of 'classifier', which Triton does not load "
        "(versions loaded: 2); pin a loaded version, or -1 for the latest",
        f"{base}: ensemble 'pipeline' step 2 pins model_version 3 of 'classifier', which Triton does not load "
        "(versions loaded: 2); pin a loaded version, or -1 for the latest",
        f"{base}: ensemble 'pipeline' step 3 pins model_version 0 (unset is 0) of 'classifier', which Triton does "
        "not load (versions loaded: 2); pin a loaded version, or -1 for the latest",
    ]
    assert _stack(tmp_path, ["classifier", "pipeline"]) == expected
    assert _component(tmp_path, ["classifier", "pipeline"]) == expected
    # Version 1 exists: served under a policy that loads it, the pin holds and only the others are refused.
    loads_all = setting("triton-platform:models", "classifier", "versionPolicy", value={"all": {}})
    assert _stack(tmp_path, ["classifier", "pipeline"], loads_all) == [
        expected[1].replace("(versions loaded: 2)", "(versions loaded: 1, 2)"),
        expected[2].replace("(versions loaded: 2)", "(versions loaded: 1, 2)"),
    ]


def test_tensor_maps_must_name_the_step_models_own_tensors(tmp_path: Path) -> None:
    _model(tmp_path, "classifier")
    wrong = _step("classifier", -1, ("z", "w"))
    pipeline = _model(tmp_path, "pipeline", _ensemble(wrong), {"1/.keep": ""})
    prefix = f"{pipeline / 'config.pbtxt'}: ensemble 'pipeline' step 1 (model 'classifier')"
    assert _refusals(tmp_path, ["classifier", "pipeline"]) == _by_both(
        ["classifier", "pipeline"],
        ("pipeline", f"{prefix}: input_map key 'z' is not an input of 'classifier' (inputs: x)"),
        ("pipeline", f"{prefix}: output_map key 'w' is not an output of 'classifier' (outputs: y)"),
        ("pipeline", f"{prefix}: input 'x' of 'classifier' is not in input_map; map it to a tensor"),
    )


@pytest.mark.parametrize(
    ("config", "files", "loaded"),
    [
        (
            ONNX + 'default_model_filename: "weights.onnx"\n',
            {"1/model.onnx": ""},
            "'weights.onnx', the file default_model_filename",
        ),
        ('backend: "python"\nmax_batch_size: 8\n', {"1/preprocess.py": ""}, "'model.py', the file backend 'python'"),
        (ONNX, {"1/model.onnx": "", "2/other.bin": ""}, "'model.onnx', the file platform 'onnxruntime_onnx'"),
    ],
    ids=["default_model_filename", "python backend", "platform default"],
)
def test_a_served_version_needs_the_file_its_backend_loads(
    tmp_path: Path, config: str, files: dict[str, str], loaded: str
) -> None:
    folder = _model(tmp_path, "model", config, files)
    version = max(int(path.partition("/")[0]) for path in files)
    expected = [
        f"{folder / str(version)}: version {version} of model 'model' is served but has no {loaded} in "
        f"{folder / 'config.pbtxt'} loads; add it, or set default_model_filename to the model's file"
    ]
    assert _stack(tmp_path, ["model"]) == expected
    assert _component(tmp_path, ["model"]) == expected


def test_a_config_naming_neither_backend_nor_platform_leaves_the_file_to_triton(tmp_path: Path) -> None:
    # Triton infers the backend from the version folder's files (AutoCompleteBackendFields): nothing to check.
    _model(tmp_path, "model", "max_batch_size: 8\n", {"1/model.savedmodel/saved_model.pb": ""})
    assert validate(
        "dev",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "general", "models", value=["model"]),
        repo=read_repository(tmp_path),
    )


def test_an_empty_config_is_refused(tmp_path: Path) -> None:
    folder = _model(tmp_path, "classifier", "# nothing yet\n")
    (folder / "config.pbtxt").write_text("# nothing yet\n")
    assert _refusals(tmp_path, ["classifier"]) == _by_both(
        ["classifier"],
        (
            "classifier",
            f"{folder / 'config.pbtxt'}: it is empty; state the model in it (platform or backend, input, output): "
            "tritonserver runs with --disable-auto-complete-config, so nothing is filled in from the model file",
        ),
    )


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        (
            ONNX + 'backend: "tensorrt"\n',
            "platform 'onnxruntime_onnx' and backend 'tensorrt' name different backends; set one of them, or a "
            "matching pair (tensorflow_graphdef with tensorflow, tensorflow_savedmodel with tensorflow, "
            "tensorrt_plan with tensorrt, onnxruntime_onnx with onnxruntime, pytorch_libtorch with pytorch)",
        ),
        (
            _ensemble(_step("classifier", -1)) + 'backend: "python"\n',
            "platform 'ensemble' with backend 'python': an ensemble has no backend; remove backend",
        ),
        (
            ONNX + "ensemble_scheduling { }\n",
            "ensemble_scheduling is set but platform is 'onnxruntime_onnx'; only platform 'ensemble' takes it",
        ),
        (
            'platform: "ensemble"\nmax_batch_size: 8\n',
            "platform 'ensemble' without ensemble_scheduling; list the ensemble's steps in it",
        ),
        (
            ONNX.replace("max_batch_size: 8", "max_batch_size: -1"),
            "max_batch_size -1 is negative; 0 means the model does not batch",
        ),
    ],
    ids=[
        "known backends that differ",
        "ensemble with a backend",
        "steps without ensemble",
        "ensemble without steps",
        "negative batch",
    ],
)
def test_platform_and_backend_must_agree(tmp_path: Path, config: str, problem: str) -> None:
    _model(tmp_path, "classifier")
    folder = _model(tmp_path, "model", config)
    (folder / "1" / "model.py").write_text("")
    [error] = [e for e in _stack(tmp_path, ["classifier", "model"]) if e.startswith(str(folder / "config.pbtxt"))]
    assert error == f"{folder / 'config.pbtxt'}: {problem}"
    assert f"deployments.demo.models[1]: {error}" in _component(tmp_path, ["classifier", "model"])


@pytest.mark.parametrize(
    "pair",
    ['platform: "onnxruntime_onnx"\nbackend: "onnxruntime"\n', 'platform: "onnxruntime_onnx"\nbackend: "python"\n'],
    ids=["a matching pair", "a custom backend with any platform"],
)
def test_pairs_triton_accepts_stay_accepted(tmp_path: Path, pair: str) -> None:
    _model(
        tmp_path, "model", ONNX.replace('platform: "onnxruntime_onnx"\n', pair), {"1/model.onnx": "", "1/model.py": ""}
    )
    assert validate(
        "dev",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "general", "models", value=["model"]),
        repo=read_repository(tmp_path),
    )


def test_dims_are_at_least_one_or_minus_one(tmp_path: Path) -> None:
    config = ONNX.replace("dims: [ 4 ]", "dims: [ -5, 4 ]").replace(
        "dims: [ 2 ] }", "dims: [ 2 ] reshape { shape: [ 0, 2 ] } }"
    )
    config += 'input [ { name: "" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "mask" dims: [ ] } ]\n'
    folder = _model(tmp_path, "classifier", config)
    file = folder / "config.pbtxt"
    assert _refusals(tmp_path, ["classifier"]) == _by_both(
        ["classifier"],
        ("classifier", f"{file}: input 'x' dims [-5, 4] has -5; each dimension is >= 1, or -1 for a variable size"),
        ("classifier", f"{file}: input[1] has no name; every input and output needs one"),
        ("classifier", f"{file}: input 'mask' has no data_type; set one such as TYPE_FP32"),
        (
            "classifier",
            f"{file}: input 'mask' has no dims; list its shape (without the batch dimension), -1 for a variable size",
        ),
        (
            "classifier",
            f"{file}: output 'y' reshape.shape [0, 2] has 0; each dimension is >= 1, or -1 for a variable size",
        ),
    )


def test_served_models_whose_names_differ_only_in_case_are_refused(tmp_path: Path) -> None:
    _model(tmp_path, "Classifier")
    second = _model(tmp_path, "classifier")
    expected = [
        f"{second}: models 'Classifier', 'classifier' differ only in case; on a case-insensitive file system "
        "their folders are one, so a copy of the repository would hold one of them. Rename one"
    ]
    assert _stack(tmp_path, ["Classifier", "classifier"]) == expected
    assert _component(tmp_path, ["Classifier", "classifier"]) == expected


def test_a_base_config_warmup_above_the_batch_limit_is_refused(tmp_path: Path) -> None:
    warmup = 'model_warmup [ { name: "w" batch_size: 6 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]\n'
    folder = _model(tmp_path, "classifier", ONNX + warmup)
    file = folder / "config.pbtxt"
    served = ["classifier"]
    assert validate(
        "dev",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "general", "models", value=served),
        repo=read_repository(tmp_path),
    )
    lowered = setting("triton-platform:models", "classifier", "maxBatchSize", value=4)
    assert _stack(tmp_path, served, lowered) == [
        f"model_warmup[0].batch_size in {file}: warmup batch size 6 is above maxBatchSize 4 "
        "(triton-platform:models.classifier.maxBatchSize) of model 'classifier'; warmup batch sizes must be <= 4"
    ]
    (folder / "config.pbtxt").write_text(
        (folder / "config.pbtxt").read_text().replace("batch_size: 6", "batch_size: 16")
    )
    assert _component(tmp_path, served) == [
        f"model_warmup[0].batch_size in {file}: warmup batch size 16 is above max_batch_size 8 "
        f"(max_batch_size in {file}) of model 'classifier'; warmup batch sizes must be <= 8"
    ]
    # The stack's own warmup replaces the base's, so only its sizes count.
    own = setting("triton-platform:models", "classifier", "warmup", value={"batchSizes": [2]})
    assert validate(
        "dev",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "general", "models", value=served),
        own,
        repo=read_repository(tmp_path),
    )


def test_a_version_folder_beyond_int64_is_refused(tmp_path: Path) -> None:
    folder = _model(tmp_path, "classifier", files={"1/model.onnx": "", "99999999999999999999/model.onnx": ""})
    (folder / "9223372036854775807").mkdir()
    (folder / "9223372036854775807" / "model.onnx").write_bytes(b"")
    assert _refusals(tmp_path, ["classifier"]) == _by_both(
        ["classifier"],
        (
            "classifier",
            f"{folder / '99999999999999999999'}: version folder '99999999999999999999' of model 'classifier': "
            f"Triton reads versions as int64 and cannot read one above 9223372036854775807; {VERSION_RULE}",
        ),
    )
    assert read_repository(tmp_path).models["classifier"].versions == (1, 9223372036854775807)


OUT_OF_REPO = (
    "is a symbolic link to {target}, outside the model repository {repo}; Triton and the bundled or published "
    "copies would read it from there. Put the file itself in the repository (a link to a path inside it is allowed)"
)


@pytest.mark.parametrize("linked", ["model file", "version folder", "model folder"])
def test_a_link_out_of_the_repository_is_refused_naming_link_and_target(tmp_path: Path, linked: str) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    source = _model(outside, "classifier")
    folder = repo / "classifier"
    if linked == "model folder":
        repo.mkdir()
        folder.symlink_to(source)
        link, target = folder, source
    else:
        _model(repo, "classifier", files={} if linked == "version folder" else {"1/.keep": ""})
        link = folder / "1" if linked == "version folder" else folder / "1" / "model.onnx"
        target = source / "1" if linked == "version folder" else source / "1" / "model.onnx"
        link.symlink_to(target)
    message = OUT_OF_REPO.format(target=target, repo=repo)
    assert _refusals(repo, ["classifier"]) == _by_both(
        ["classifier"], ("classifier", f"{link.parent}: {link.name!r} {message}")
    )


def test_a_link_inside_the_repository_is_allowed_and_a_loop_is_refused(tmp_path: Path) -> None:
    folder = _model(tmp_path, "classifier", files={"1/model.onnx": "", "2/.keep": ""})
    (folder / "2" / "model.onnx").symlink_to(folder / "1" / "model.onnx")
    served = setting(SERVING, "deployments", "general", "models", value=["classifier"])
    assert validate("dev", removing("triton-platform:models"), served, repo=read_repository(tmp_path))
    (folder / "2" / "a").symlink_to(folder / "2" / "b")
    (folder / "2" / "b").symlink_to(folder / "2" / "a")
    assert _refusals(tmp_path, ["classifier"]) == _by_both(
        ["classifier"],
        ("classifier", f"{folder / '2'}: 'a' is a loop of symbolic links"),
        ("classifier", f"{folder / '2'}: 'b' is a loop of symbolic links"),
    )


def test_bundled_files_must_be_configmap_keys_one_file_each(tmp_path: Path) -> None:
    folder = _model(
        tmp_path,
        "classifier",
        files={"1/model.onnx": "", "1/my weights.bin": "", "1/a.b": "", "1/a/b": "", f"1/{'l' * 241}": ""},
    )
    version = folder / "1"
    elsewhere = "rename it, or use source pvc, s3 or gcs, which keep paths as they are"
    expected = [
        f"{version / 'a' / 'b'}: cannot be bundled: it and {version / 'a.b'} both become ConfigMap key "
        "'classifier.1.a.b', so one would replace the other; rename one, or use source pvc, s3 or gcs",
        f"{version / ('l' * 241)}: cannot be bundled: its ConfigMap key is 254 characters, above Kubernetes' 253; "
        f"{elsewhere}",
        f"{version / 'my weights.bin'}: cannot be bundled: its ConfigMap key 'classifier.1.my weights.bin' has ' ', "
        f"which Kubernetes refuses (a key is letters, digits, '-', '_' and '.'); {elsewhere}",
    ]
    assert _stack(tmp_path, ["classifier"]) == expected
    assert _component(tmp_path, ["classifier"]) == expected
    # Other sources keep paths as they are: nothing to refuse.
    s3 = {"source": "s3", "uri": "s3://models-bucket/triton"}
    assert validate(
        "dev",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "general", "models", value=["classifier"]),
        setting(SERVING, "modelRepository", value=s3),
        repo=read_repository(tmp_path),
    )


def test_the_projects_model_repository_passes_every_load_check() -> None:
    repo = read_repository(PROJECT_ROOT / "model_repo")
    assert repo.problems == {}
    assert validate("dev", repo=repo)


def test_a_batching_ensemble_may_chain_a_model_that_does_not_batch(tmp_path: Path) -> None:
    # ensemble_utils.cc: "batchable ensemble can include non-batchable models"; a batching step with a
    # smaller limit is still refused.
    _model(tmp_path, "classifier", ONNX.replace("max_batch_size: 8", "max_batch_size: 0"))
    _model(tmp_path, "ranker")
    _model(tmp_path, "pipeline", _ensemble(_step("classifier", -1)), {"1/.keep": ""})
    serve = setting(SERVING, "deployments", "general", "models", value=["classifier", "pipeline"])
    assert validate("dev", removing("triton-platform:models"), serve, repo=read_repository(tmp_path))
    (tmp_path / "pipeline" / "config.pbtxt").write_text(
        'name: "pipeline"\n' + _ensemble(_step("classifier", -1), _step("ranker", -1))
    )
    smaller = setting("triton-platform:models", "ranker", "maxBatchSize", value=4)
    assert _stack(tmp_path, ["classifier", "pipeline", "ranker"], smaller) == [
        "triton-platform:serving.modelDefaults.maxBatchSize: ensemble 'pipeline' has maxBatchSize 8 but the model "
        "it chains, 'ranker', has 4 (triton-platform:models.ranker.maxBatchSize); Triton requires the ensemble's "
        "to be <= each step's"
    ]
