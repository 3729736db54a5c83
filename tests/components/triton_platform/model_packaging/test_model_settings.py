"""Per-model settings, model delivery and rendering: each rule's passing and failing case."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_config.paths import DEFAULT_MODEL_REPO
from stackctl.main import main
from tests.conftest import MODELS, SERVING, errors_of, model_folder, removing, serving_only, setting, validate
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import effective_settings, render_config
from triton_platform.model_packaging.source import parse_model_config, read_repository

GENERAL = ("deployments", "general")


def test_unknown_version_is_rejected() -> None:
    [error] = errors_of(
        "production", setting(MODELS, "ranker", "versionPolicy", value={"specific": {"versions": [1, 3]}})
    )
    assert error == (
        "triton-platform:models.ranker.versionPolicy.specific.versions[1]: version 3 of model 'ranker' does not "
        "exist; version folders: 1, 2"
    )
    assert validate("production", setting(MODELS, "ranker", "versionPolicy", value={"specific": {"versions": [2]}}))


def test_more_latest_versions_than_exist_is_rejected() -> None:
    [error] = errors_of("staging", setting(MODELS, "ranker", "versionPolicy", value={"latest": {"numVersions": 3}}))
    assert error == (
        "triton-platform:models.ranker.versionPolicy.latest.numVersions: 3 latest versions of model 'ranker' "
        "requested but only 1, 2 exist"
    )


def test_version_policy_takes_exactly_one_kind() -> None:
    [error] = errors_of(
        "dev", setting(MODELS, "ranker", "versionPolicy", value={"all": {}, "latest": {"numVersions": 1}})
    )
    assert (
        error
        == "triton-platform:models.ranker.versionPolicy: set exactly one of latest, all, specific; got latest, all"
    )


def test_warmup_batch_size_above_max_batch_size() -> None:
    [error] = errors_of("staging", setting(SERVING, "modelDefaults", "warmup", "batchSizes", value=[1, 17]))
    assert error == (
        "triton-platform:serving.modelDefaults.warmup.batchSizes[1]: warmup batch size 17 is above maxBatchSize 16 "
        "(triton-platform:serving.modelDefaults.maxBatchSize) of models 'classifier', 'preprocess', 'ranker'; "
        "warmup batch sizes must be <= 16"
    )
    assert validate("staging", setting(SERVING, "modelDefaults", "warmup", "batchSizes", value=[1, 16]))


def test_ensemble_takes_only_max_batch_size() -> None:
    errors = errors_of(
        "dev",
        setting(MODELS, "pipeline", value={"instanceGroup": {"count": 2}, "warmup": {"batchSizes": [1]}}),
    )
    message = "does not apply to model 'pipeline', an ensemble: it has no instances, batcher or warmup of its own; set it on the models it chains"
    assert errors == [
        f"triton-platform:models.pipeline.instanceGroup: {message}",
        f"triton-platform:models.pipeline.warmup: {message}",
    ]
    assert validate("dev", setting(MODELS, "pipeline", value={"maxBatchSize": 4}))


def test_ensemble_needs_its_steps_in_the_same_deployment() -> None:
    [error] = errors_of("dev", removing(MODELS), setting(SERVING, *GENERAL, "models", value=["pipeline", "preprocess"]))
    assert error == (
        "triton-platform:serving.deployments.general.models: ensemble 'pipeline' chains 'classifier', which "
        "deployment 'general' does not serve; add it"
    )


def test_ensemble_may_not_batch_more_than_its_steps() -> None:
    errors = errors_of("dev", setting(MODELS, "pipeline", value={"maxBatchSize": 16}))
    assert errors == [
        f"triton-platform:models.pipeline.maxBatchSize: ensemble 'pipeline' has maxBatchSize 16 but the model it "
        f"chains, {step!r}, has 8 (triton-platform:serving.modelDefaults.maxBatchSize); Triton requires the "
        "ensemble's to be <= each step's"
        for step in ("classifier", "preprocess")
    ]


def test_dynamic_batching_needs_batching() -> None:
    errors = errors_of(
        "dev",
        setting(MODELS, "classifier", value={"maxBatchSize": 0, "dynamicBatching": {"maxQueueDelayMicroseconds": 100}}),
        setting(MODELS, "pipeline", value={"maxBatchSize": 0}),
        setting(MODELS, "preprocess", value={"maxBatchSize": 0}),
    )
    assert errors == [
        "triton-platform:models.classifier.dynamicBatching: dynamic batching needs maxBatchSize > 0 "
        "(triton-platform:models.classifier.maxBatchSize is 0) for model 'classifier'"
    ]


def test_defaults_that_do_not_fit_a_model_are_skipped() -> None:
    repo = read_repository(DEFAULT_MODEL_REPO)
    defaults: ModelSettingsArgs = {
        "max_batch_size": 8,
        "instance_group": {"count": 2},
        "dynamic_batching": {"max_queue_delay_microseconds": 100},
    }
    pipeline = render_config(repo.models["pipeline"], effective_settings(repo.models["pipeline"], defaults, None))
    assert pipeline.max_batch_size == 8
    assert not pipeline.instance_group
    assert not pipeline.HasField("dynamic_batching")
    classifier = render_config(repo.models["classifier"], effective_settings(repo.models["classifier"], defaults, None))
    assert classifier.instance_group[0].count == 2
    assert classifier.dynamic_batching.max_queue_delay_microseconds == 100


def test_own_settings_merge_over_defaults_field_by_field() -> None:
    repo = read_repository(DEFAULT_MODEL_REPO)
    defaults: ModelSettingsArgs = {
        "dynamic_batching": {
            "max_queue_delay_microseconds": 5000,
            "default_queue_policy": {"max_queue_size": 256, "default_timeout_microseconds": 150000},
        }
    }
    own: ModelSettingsArgs = {
        "dynamic_batching": {"max_queue_delay_microseconds": 2000, "default_queue_policy": {"max_queue_size": 64}}
    }
    rendered = render_config(repo.models["ranker"], effective_settings(repo.models["ranker"], defaults, own))
    assert rendered.dynamic_batching.max_queue_delay_microseconds == 2000
    assert rendered.dynamic_batching.default_queue_policy.max_queue_size == 64
    assert rendered.dynamic_batching.default_queue_policy.default_timeout_microseconds == 150000


def test_fields_this_project_does_not_model_survive_rendering(tmp_path: Path) -> None:
    base = (
        (DEFAULT_MODEL_REPO / "classifier" / "config.pbtxt").read_text()
        + """
response_cache { enable: true }
parameters { key: "owner" value { string_value: "ml-platform" } }
model_transaction_policy { decoupled: false }
optimization { input_pinned_memory { enable: false } }
"""
    )
    (tmp_path / "classifier" / "1").mkdir(parents=True)
    (tmp_path / "classifier" / "config.pbtxt").write_text(base)
    model = read_repository(tmp_path).models["classifier"]
    settings: ModelSettingsArgs = {"max_batch_size": 16, "dynamic_batching": {"max_queue_delay_microseconds": 100}}
    rendered = render_config(model, settings)
    expected = parse_model_config(base)
    expected.max_batch_size = 16
    expected.dynamic_batching.max_queue_delay_microseconds = 100
    assert rendered == expected
    assert rendered.response_cache.enable is True
    assert rendered.parameters["owner"].string_value == "ml-platform"


def test_a_base_config_named_after_another_folder_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "classifier" / "1").mkdir(parents=True)
    (tmp_path / "classifier" / "config.pbtxt").write_text('name: "model_a"\nmax_batch_size: 8\n')
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error.endswith(": name 'model_a' differs from its folder 'classifier'; Triton requires them to match")


def test_a_model_without_versions_is_rejected(tmp_path: Path) -> None:
    model_folder(tmp_path, "classifier", "max_batch_size: 8\n", versions=False)
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error == (
        f"{tmp_path / 'classifier'}: model 'classifier' has no version folder (1/, 2/, ...); Triton serves versions only"
    )


# --- model delivery -------------------------------------------------------


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        (
            {"source": "pvc"},
            "triton-platform:serving.modelRepository.pvc: missing (required for source 'pvc'): the claim (pvc.claimName)",
        ),
        (
            {"source": "s3", "uri": "gs://bucket/x"},
            "triton-platform:serving.modelRepository.uri: source 's3' needs uri s3://<bucket>/<prefix>; got 'gs://bucket/x'",
        ),
        (
            {"source": "gcs"},
            "triton-platform:serving.modelRepository.uri: missing (required for source 'gcs'): gs://<bucket>/<prefix>",
        ),
        (
            {"source": "bundled", "credentialsSecret": "x"},
            "triton-platform:serving.modelRepository.credentialsSecret: applies only to sources 's3' and 'gcs' and to a pvc with origin, not 'bundled'",
        ),
        (
            {"source": "pvc", "pvc": {"claimName": "x"}, "credentialsSecret": "creds"},
            "triton-platform:serving.modelRepository.credentialsSecret: applies only to sources 's3' and 'gcs' and to a pvc with origin, not 'pvc' without pvc.origin",
        ),
        (
            {"source": "s3", "uri": "s3://minio.internal:9000/models/x"},
            "triton-platform:serving.modelRepository.uri: 's3://minio.internal:9000/models/x': write a private S3 endpoint with its scheme, s3://https://minio.internal:9000/<bucket>/<prefix> (or s3://http://... for plain HTTP); a bare host:port would mean plain HTTP",
        ),
        (
            {"source": "s3", "uri": "s3://https://minio.internal:9000/Models"},
            "triton-platform:serving.modelRepository.uri: bucket 'Models' in 's3://https://minio.internal:9000/Models' is not a bucket name (3-63 lowercase letters, digits, '.', '-', '_')",
        ),
        (
            {"source": "gcs", "uri": "gs://bucket/a//b"},
            "triton-platform:serving.modelRepository.uri: prefix 'a//b' in 'gs://bucket/a//b' has an empty, '.' or '..' segment",
        ),
        (
            {"source": "s3", "uri": "s3://bucket/x", "revision": "r1"},
            "triton-platform:serving.modelRepository.revision: does not apply to a published repository (s3, gcs, pvc.origin): the pods read it under its content digest, so a model change rolls them by itself; remove revision",
        ),
        (
            {
                "source": "pvc",
                "pvc": {"claimName": "x", "origin": "gs://b-1/p", "accessMode": "ReadWriteMany"},
                "revision": "r1",
            },
            "triton-platform:serving.modelRepository.revision: does not apply to a published repository (s3, gcs, pvc.origin): the pods read it under its content digest, so a model change rolls them by itself; remove revision",
        ),
        (
            {"source": "bundled", "revision": "r1"},
            "triton-platform:serving.modelRepository.revision: does not apply to source 'bundled': the bundled files roll the pods by content; remove it",
        ),
        (
            {"source": "pvc", "pvc": {"claimName": "x", "origin": "https://bucket/p", "accessMode": "ReadWriteMany"}},
            "triton-platform:serving.modelRepository.pvc.origin: must be s3://<bucket>/<prefix> or gs://<bucket>/<prefix>; got 'https://bucket/p'",
        ),
        (
            {"source": "pvc", "pvc": {"claimName": "x", "origin": "s3://bucket/p"}},
            "triton-platform:serving.modelRepository.pvc.accessMode: the loader Job writes the repository from origin into the claim, and ReadOnlyMany cannot be written; use ReadWriteMany (Triton still mounts it read-only)",
        ),
        (
            {"source": "bundled", "pvc": {"claimName": "x"}},
            "triton-platform:serving.modelRepository.pvc: applies only to source 'pvc', not 'bundled'",
        ),
    ],
)
def test_model_repository_source_fields(repository: dict[str, object], expected: str) -> None:
    assert errors_of("dev", setting(SERVING, "modelRepository", value=repository)) == [expected]


def test_every_source_with_its_fields_passes() -> None:
    for repository in (
        {"source": "pvc", "pvc": {"claimName": "models"}},
        {"source": "s3", "uri": "s3://bucket/prefix", "credentialsSecret": "creds"},
        {"source": "s3", "uri": "s3://https://minio.internal:9000/bucket/prefix"},
        {"source": "gcs", "uri": "gs://bucket/prefix"},
        {"source": "pvc", "pvc": {"claimName": "models"}, "revision": "2026-12-01.1"},
        {
            "source": "pvc",
            "pvc": {"claimName": "models", "create": True, "accessMode": "ReadWriteMany", "origin": "gs://bucket/p"},
            "credentialsSecret": "creds",
        },
        {"source": "bundled"},
    ):
        assert validate("dev", setting(SERVING, "modelRepository", value=repository))


def test_bundled_models_are_not_for_production() -> None:
    [error] = errors_of("production", setting(SERVING, "modelRepository", value={"source": "bundled"}))
    assert error == (
        "triton-platform:serving.modelRepository.source: 'bundled' is for small dev models and is not allowed in "
        "production; use pvc, s3 or gcs"
    )


def test_read_write_once_claims_cannot_serve_many_pods() -> None:
    claim = {"source": "pvc", "pvc": {"claimName": "models", "accessMode": "ReadWriteOnce"}}
    [error] = errors_of("dev", setting(SERVING, "modelRepository", value=claim))
    assert error == (
        "triton-platform:serving.modelRepository.pvc.accessMode: ReadWriteOnce mounts on one node only, but general "
        "can run several pods; use ReadOnlyMany or ReadWriteMany"
    )
    assert validate(
        "dev",
        setting(SERVING, "modelRepository", value=claim),
        setting(SERVING, *GENERAL, "replicas", value={"min": 0, "max": 1}),
    )


def test_an_enabled_ingress_needs_its_host_and_certificate() -> None:
    [error] = errors_of("dev", setting(SERVING, "ingress", value={"enabled": True, "tlsSecretName": "tls"}))
    assert error == "triton-platform:serving.ingress.baseDomain: missing (required when enabled)"
    [error] = errors_of("dev", setting(SERVING, "ingress", value={"enabled": True, "baseDomain": "ml.example.com"}))
    assert error == "triton-platform:serving.ingress.tlsSecretName: missing (required when enabled)"


def test_limits_must_cover_requests() -> None:
    resources = {"requests": {"cpu": "2", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
    [error] = errors_of("dev", setting(SERVING, *GENERAL, "resources", value=resources))
    assert error == (
        "triton-platform:serving.deployments.general.resources.limits.memory: 8Gi is below its request 16Gi; "
        "limits must be >= requests"
    )
    resources["limits"]["memory"] = "16384Mi"
    assert validate("dev", setting(SERVING, *GENERAL, "resources", value=resources))


def test_quantities_are_checked() -> None:
    [error] = errors_of("dev", setting(SERVING, "shmSizeLimit", value="1 GB"))
    assert (
        error == "triton-platform:serving.shmSizeLimit: must be a Kubernetes quantity such as 500m, 4, 8Gi; got '1 GB'"
    )


# --- stackctl model-repo -----------------------------------------------------


def test_model_repo_writes_what_triton_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "repo"
    assert main(["model-repo", "--stack", "staging", "--out", str(out)]) == 0
    assert (
        "wrote 4 models (classifier, pipeline, preprocess, ranker) with configs/staging.pbtxt"
        in capsys.readouterr().out
    )
    assert (out / "ranker" / "configs" / "staging.pbtxt").read_text().startswith('name: "ranker"')
    assert (out / "ranker" / "2" / "model.onnx").read_bytes() == (
        DEFAULT_MODEL_REPO / "ranker" / "2" / "model.onnx"
    ).read_bytes()
    assert not (out / "ranker" / "config.pbtxt").exists(), "the base config would be a silent fallback"
    assert main(["model-repo", "--stack", "staging", "--deployment", "general", "--out", str(out)]) == 0


def test_model_repo_refuses_a_folder_it_did_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["model-repo", "--stack", "dev", "--out", str(tmp_path)]) == 2
    assert "was not written by stackctl model-repo" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_model_repo_names_an_unknown_deployment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model-repo", "--stack", "production", "--deployment", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "no deployment 'nope'; known: general, ranker" in capsys.readouterr().err


# --- merge semantics (review findings) ----------------------------------------


def test_a_models_own_version_policy_replaces_the_defaults_whole() -> None:
    repo = read_repository(DEFAULT_MODEL_REPO)
    defaults: ModelSettingsArgs = {"version_policy": {"latest": {"num_versions": 1}}}
    own: ModelSettingsArgs = {"version_policy": {"specific": {"versions": [1, 2]}}}
    rendered = render_config(repo.models["ranker"], effective_settings(repo.models["ranker"], defaults, own))
    assert rendered.version_policy.WhichOneof("policy_choice") == "specific"
    assert list(rendered.version_policy.specific.versions) == [1, 2]


def test_unset_instance_fields_keep_what_is_below() -> None:
    repo = read_repository(DEFAULT_MODEL_REPO)
    defaults: ModelSettingsArgs = {"instance_group": {"count": 2, "kind": "KIND_GPU"}}
    own: ModelSettingsArgs = {"instance_group": {"count": 1}}
    rendered = render_config(repo.models["ranker"], effective_settings(repo.models["ranker"], defaults, own))
    assert (rendered.instance_group[0].count, rendered.instance_group[0].kind) == (1, 1)  # KIND_GPU == 1


def test_the_base_kind_survives_a_count_change(tmp_path: Path) -> None:
    (tmp_path / "cpu_model" / "1").mkdir(parents=True)
    (tmp_path / "cpu_model" / "config.pbtxt").write_text(
        'name: "cpu_model"\nmax_batch_size: 4\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n'
    )
    model = read_repository(tmp_path).models["cpu_model"]
    rendered = render_config(model, {"instance_group": {"count": 3}})
    assert (rendered.instance_group[0].count, rendered.instance_group[0].kind) == (3, 2)  # KIND_CPU == 2


def test_defaults_never_make_a_non_batching_model_batch(tmp_path: Path) -> None:
    model_folder(
        tmp_path, "classifier", 'max_batch_size: 0\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]\n'
    )
    repo = read_repository(tmp_path)
    defaults: ModelSettingsArgs = {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 100}}
    rendered = render_config(repo.models["classifier"], effective_settings(repo.models["classifier"], defaults, None))
    assert rendered.max_batch_size == 0
    assert not rendered.HasField("dynamic_batching")
    assert validate("dev", *serving_only("classifier"), repo=repo)


def test_max_batch_size_may_only_lower_the_base() -> None:
    [error] = errors_of("staging", setting(MODELS, "ranker", "maxBatchSize", value=64))
    assert error == (
        "triton-platform:models.ranker.maxBatchSize: maxBatchSize 64 is above the max_batch_size 32 of model "
        "'ranker' in model_repo/ranker/config.pbtxt, which states what the model supports; it may only be lowered"
    )


def test_preferred_sizes_from_the_base_config_are_checked(tmp_path: Path) -> None:
    model_folder(tmp_path, "classifier", "max_batch_size: 32\ndynamic_batching { preferred_batch_size: [ 16, 32 ] }\n")
    errors = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    base = tmp_path / "classifier" / "config.pbtxt"
    assert errors == [
        f"preferred_batch_size in {base}[{i}]: preferred batch size {size} is above "
        "maxBatchSize 8 (triton-platform:serving.modelDefaults.maxBatchSize) of model 'classifier'; "
        "each preferred size must be <= maxBatchSize"
        for i, size in ((0, 16), (1, 32))
    ]


def test_a_queue_delay_from_the_base_config_is_checked_against_the_slo(tmp_path: Path) -> None:
    model_folder(
        tmp_path, "classifier", "max_batch_size: 32\ndynamic_batching { max_queue_delay_microseconds: 900000 }\n"
    )
    errors = errors_of(
        "dev",
        *serving_only("classifier"),
        removing(SERVING, "modelDefaults", "dynamicBatching"),
        repo=read_repository(tmp_path),
    )
    assert errors == [
        f"max_queue_delay_microseconds in {tmp_path / 'classifier' / 'config.pbtxt'}: queue delay 900000 us of model "
        "'classifier' is above the p95 latency SLO (triton-platform:serving.p95LatencySloMs = 500000 us); "
        "set dynamicBatching.maxQueueDelayMicroseconds for this stack"
    ]


def test_a_created_claim_needs_an_origin_to_be_filled_from() -> None:
    claim = {"source": "pvc", "pvc": {"claimName": "models", "create": True, "accessMode": "ReadWriteMany"}}
    [error] = errors_of("staging", setting(SERVING, "modelRepository", value=claim))
    assert error == (
        "triton-platform:serving.modelRepository.pvc.origin: missing (required with create): a claim the component "
        "creates starts empty, and Triton would find no model; set the s3:// or gs:// URI the repository is published "
        "to (a Job then fills the claim), or use an existing, filled claim (create: false)"
    )
    # `origin: null` written out is the same mistake, named the same way, never a traceback.
    claim["pvc"]["origin"] = None  # type: ignore[index]
    assert errors_of("staging", setting(SERVING, "modelRepository", value=claim)) == [error]
    claim["pvc"]["origin"] = "s3://bucket/models"  # type: ignore[index]
    assert validate("staging", setting(SERVING, "modelRepository", value=claim))


def test_the_committed_model_files_are_what_the_generator_writes() -> None:
    from model_publishing import examples  # noqa: PLC0415

    for relative, content in examples.files().items():
        assert (DEFAULT_MODEL_REPO / relative).read_bytes() == content, (
            f"{relative} drifted: run python -m model_publishing.examples"
        )
