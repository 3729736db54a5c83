"""Every validation rule: a passing case and a failing case whose error text is asserted."""

from __future__ import annotations

from typing import Any

import pytest

from platform_config.errors import ConfigError
from platform_config.loader import load_stack
from tests.conftest import STACKS, errors_of, removing, setting, validate

K8S = "triton-platform:kubernetes"
POOL = "triton-platform:gpuPool"
SERVING = "triton-platform:serving"
MODELS = "triton-platform:models"
SCALING = "triton-platform:scaling"
MONITORING = "triton-platform:monitoring"


@pytest.mark.parametrize("stack", STACKS)
def test_every_committed_stack_is_valid(stack: str) -> None:
    loaded = load_stack(stack)
    assert loaded.config.environment == stack
    assert loaded.source == f"stacks/Pulumi.{stack}.yaml"


def test_stacks_differ_in_every_tuned_parameter() -> None:
    configs = {s: load_stack(s).config for s in STACKS}

    def distinct(get) -> bool:  # type: ignore[no-untyped-def]
        return len({repr(get(c)) for c in configs.values()}) == len(STACKS)

    assert distinct(lambda c: sorted((n, d.replicas) for n, d in c.serving.deployments.items()))
    assert distinct(lambda c: c.serving.model_defaults.max_batch_size)
    assert distinct(lambda c: c.serving.model_defaults.dynamic_batching.max_queue_delay_microseconds)
    assert distinct(lambda c: c.serving.model_defaults.dynamic_batching.default_queue_policy)
    assert distinct(lambda c: (c.gpu_pool.min_nodes, c.gpu_pool.max_nodes))
    assert distinct(lambda c: (c.scaling.queue_depth_target, c.scaling.gpu_memory_ratio_target))
    assert distinct(lambda c: c.monitoring.alerts)
    assert distinct(lambda c: c.serving.p95_latency_slo_ms)
    groups = {s: c.serving.model_defaults.instance_group for s, c in configs.items()}
    assert groups["production"] is not None
    assert groups["dev"] is not None
    assert groups["production"].count > groups["dev"].count
    polling = {s: c.scaling.polling_interval_seconds for s, c in configs.items()}
    assert polling["production"] < polling["dev"]


# --- keys -----------------------------------------------------------------


def test_unknown_section_key_is_named_with_a_suggestion() -> None:
    def typo(values: dict[str, Any]) -> None:
        values["triton-platform:scalling"] = values.pop(SCALING)

    [error] = errors_of("dev", typo)
    assert error.startswith("triton-platform:scalling: unknown key; did you mean 'triton-platform:scaling'?")


def test_unknown_nested_key_lists_allowed_keys() -> None:
    [error] = errors_of("dev", setting(POOL, "minNode", value=1))
    assert error == (
        "triton-platform:gpuPool.minNode: unknown key 'minNode'; did you mean 'minNodes'? "
        "allowed keys: gpusPerNode, maxNodes, minNodes, resourceName"
    )


def test_snake_case_keys_are_unknown_not_silently_accepted() -> None:
    [error] = errors_of("dev", setting(SERVING, "modelDefaults", "max_batch_size", value=4))
    assert error.startswith("triton-platform:serving.modelDefaults.max_batch_size: unknown key 'max_batch_size'")
    assert "maxBatchSize" in error


def test_namespace_typo_is_reported() -> None:
    [error] = errors_of("dev", setting("triton-platfrom:serving", value={}))
    assert (
        error == "triton-platfrom:serving: unknown config namespace 'triton-platfrom'; did you mean 'triton-platform'?"
    )


def test_missing_required_sections_and_keys() -> None:
    errors = errors_of("dev", removing("triton-platform:environment"), removing(SERVING, "p95LatencySloMs"))
    assert errors == [
        "triton-platform:environment: required key is missing",
        "triton-platform:serving.p95LatencySloMs: required key is missing",
    ]


def test_default_providers_must_exclude_kubernetes() -> None:
    [error] = errors_of("dev", setting("pulumi:disable-default-providers", value=["aws"]))
    assert error == (
        "pulumi:disable-default-providers: must list 'kubernetes' so nothing deploys through the "
        "ambient kubeconfig context; got ['aws']"
    )
    assert validate("dev", setting("pulumi:disable-default-providers", value=["*"]))


# --- types and ranges -----------------------------------------------------


def test_type_errors_show_the_bad_value() -> None:
    [error] = errors_of("dev", setting(SERVING, "deployments", "general", "replicas", "max", value="2"))
    assert error == "triton-platform:serving.deployments.general.replicas.max: Input should be a valid integer; got '2'"


def test_enum_values_are_listed() -> None:
    [error] = errors_of("dev", setting("triton-platform:environment", value="prod"))
    assert error == "triton-platform:environment: Input should be 'dev', 'staging' or 'production'; got 'prod'"


@pytest.mark.parametrize(
    ("key", "path", "value", "expected"),
    [
        (
            POOL,
            ("gpusPerNode",),
            0,
            "triton-platform:gpuPool.gpusPerNode: Input should be greater than or equal to 1; got 0",
        ),
        (
            SERVING,
            ("deployments", "general", "replicas", "max"),
            0,
            "triton-platform:serving.deployments.general.replicas.max: Input should be greater than or equal to 1; got 0",
        ),
        (
            SERVING,
            ("modelDefaults", "instanceGroup", "count"),
            0,
            "triton-platform:serving.modelDefaults.instanceGroup.count: Input should be greater than or equal to 1; got 0",
        ),
        (
            SCALING,
            ("queueDepthTarget",),
            0,
            "triton-platform:scaling.queueDepthTarget: Input should be greater than 0; got 0",
        ),
        (
            SCALING,
            ("gpuMemoryRatioTarget",),
            1.5,
            "triton-platform:scaling.gpuMemoryRatioTarget: Input should be less than or equal to 1; got 1.5",
        ),
        (
            MONITORING,
            ("alerts", "failureRatio"),
            1,
            "triton-platform:monitoring.alerts.failureRatio: Input should be less than 1; got 1",
        ),
        (
            MONITORING,
            ("alerts", "latencyFor"),
            "5 minutes",
            "triton-platform:monitoring.alerts.latencyFor: String should match pattern '^([0-9]+(ms|s|m|h|d|w|y))+$'; got '5 minutes'",
        ),
        (
            K8S,
            ("namespace",),
            "Triton_Dev",
            "triton-platform:kubernetes.namespace: String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'; got 'Triton_Dev'",
        ),
    ],
)
def test_out_of_range_values(key: str, path: tuple[str, ...], value: object, expected: str) -> None:
    assert errors_of("dev", setting(key, *path, value=value)) == [expected]


def test_in_range_boundaries_pass() -> None:
    assert validate("dev", setting(SCALING, "gpuMemoryRatioTarget", value=1))
    assert validate("dev", setting(MONITORING, "alerts", "latencyFor", value="1h30m"))


def test_every_error_is_reported_in_one_run() -> None:
    errors = errors_of(
        "dev",
        setting(POOL, "gpusPerNode", value=0),
        setting(SCALING, "pollingIntervalSeconds", value=-1),
        setting(MODELS, "nosuch", value={"maxBatchSize": 4}),
        setting(K8S, "namespace", value="UPPER"),
    )
    assert [e.split(":")[1] for e in errors] == [
        "gpuPool.gpusPerNode",
        "kubernetes.namespace",
        "models.nosuch",
        "scaling.pollingIntervalSeconds",
    ]


# --- contradictions -------------------------------------------------------


def test_min_replicas_above_max() -> None:
    [error] = errors_of("dev", setting(SERVING, "deployments", "general", "replicas", value={"min": 3, "max": 2}))
    assert error == "triton-platform:serving.deployments.general.replicas: min (3) is above max (2); min must be <= max"
    assert validate("dev", setting(SERVING, "deployments", "general", "replicas", value={"min": 2, "max": 2}))


def test_pool_min_nodes_above_max() -> None:
    [error] = errors_of("dev", setting(POOL, "minNodes", value=3))
    assert error == "triton-platform:gpuPool: minNodes (3) is above maxNodes (2); minNodes must be <= maxNodes"


def test_preferred_batch_size_above_max_batch_size() -> None:
    [error] = errors_of(
        "dev", setting(SERVING, "modelDefaults", "dynamicBatching", "preferredBatchSize", value=[4, 16])
    )
    assert error == (
        "triton-platform:serving.modelDefaults.dynamicBatching.preferredBatchSize[1]: preferred batch size 16 "
        "is above maxBatchSize 8 (triton-platform:serving.modelDefaults.maxBatchSize) of models 'classifier', "
        "'pipeline', 'preprocess', 'ranker'; each preferred size must be <= maxBatchSize"
    )
    assert validate("dev", setting(SERVING, "modelDefaults", "dynamicBatching", "preferredBatchSize", value=[4, 8]))


def test_per_model_max_batch_size_below_default_preferred_sizes() -> None:
    errors = errors_of(
        "dev",
        setting(SERVING, "modelDefaults", "dynamicBatching", "preferredBatchSize", value=[8]),
        setting(MODELS, "classifier", "maxBatchSize", value=4),
    )
    assert errors == [
        "triton-platform:serving.modelDefaults.dynamicBatching.preferredBatchSize[0]: preferred batch size 8 is "
        "above maxBatchSize 4 (triton-platform:models.classifier.maxBatchSize) of model 'classifier'; "
        "each preferred size must be <= maxBatchSize"
    ]


def test_queue_delay_above_latency_slo() -> None:
    [error] = errors_of(
        "production", setting(MODELS, "ranker", "dynamicBatching", "maxQueueDelayMicroseconds", value=200_001)
    )
    assert error == (
        "triton-platform:models.ranker.dynamicBatching.maxQueueDelayMicroseconds: queue delay 200001 us is above "
        "the p95 latency SLO of 200 ms (triton-platform:serving.p95LatencySloMs = 200000 us); the batcher alone "
        "would break the SLO, so the delay must be <= 200000"
    )
    assert validate(
        "production", setting(MODELS, "ranker", "dynamicBatching", "maxQueueDelayMicroseconds", value=200_000)
    )


def test_max_replicas_times_gpus_above_pool_capacity() -> None:
    [error] = errors_of("production", setting(SERVING, "deployments", "ranker", "replicas", "max", value=5))
    assert error == (
        "triton-platform:serving.deployments: at maximum scale the deployments need 15 GPUs (replicas.max x "
        "gpusPerPod: general: 10 x 1 + ranker: 5 x 1) but the GPU pool has at most 14 "
        "(triton-platform:gpuPool.maxNodes 14 x gpusPerNode 1); lower replicas.max or raise maxNodes"
    )
    assert validate(
        "production",
        setting(POOL, "maxNodes", value=15),
        setting(SERVING, "deployments", "ranker", "replicas", "max", value=5),
    )


def test_gpus_per_pod_counts_toward_capacity() -> None:
    [error] = errors_of("dev", setting(SERVING, "deployments", "general", "gpusPerPod", value=2))
    assert "need 4 GPUs (replicas.max x gpusPerPod: general: 2 x 2) but the GPU pool has at most 2" in error


def test_deployment_model_not_in_model_repo() -> None:
    [error] = errors_of("dev", setting(SERVING, "deployments", "general", "models", value=["classifier", "clasifier"]))
    assert error == (
        "triton-platform:serving.deployments.general.models[1]: model 'clasifier' is not in the model repository; "
        "known models: classifier, pipeline, preprocess, ranker"
    )


def test_model_settings_for_unknown_model() -> None:
    [error] = errors_of("dev", setting(MODELS, "clasifier", value={"maxBatchSize": 4}))
    assert error == (
        "triton-platform:models.clasifier: settings for model 'clasifier', which is not in the model repository; "
        "known models: classifier, pipeline, preprocess, ranker"
    )
    assert validate("dev", setting(MODELS, "classifier", value={"maxBatchSize": 4}))


def test_model_settings_for_model_no_deployment_serves() -> None:
    [error] = errors_of("production", setting(SERVING, "deployments", "ranker", "models", value=["classifier"]))
    assert error.startswith("triton-platform:models.ranker: settings for model 'ranker', which no deployment serves")


def test_model_listed_twice_in_a_deployment() -> None:
    [error] = errors_of("dev", setting(SERVING, "deployments", "general", "models", value=["ranker", "ranker"]))
    assert error == "triton-platform:serving.deployments.general.models: models listed twice: ranker; list each once"


def test_validation_uses_the_given_model_repository() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack("dev", repo_models={"classifier"})
    assert [i.path for i in caught.value.issues] == [
        "triton-platform:serving.deployments.general.models[1]",
        "triton-platform:serving.deployments.general.models[2]",
        "triton-platform:serving.deployments.general.models[3]",
    ]


def test_production_may_not_render() -> None:
    [error] = errors_of("production", setting(K8S, value={"mode": "render", "namespace": "triton-production"}))
    assert error == (
        "triton-platform:kubernetes.mode: 'render' is not allowed for a production stack: production must deploy "
        "to a cluster (set mode: deploy and context), never fall back to writing files"
    )
    assert validate("staging", setting(K8S, value={"mode": "render", "namespace": "triton-staging"}))


def test_deploy_mode_needs_an_explicit_context() -> None:
    [error] = errors_of("staging", removing(K8S, "context"))
    assert error.startswith("triton-platform:kubernetes: mode 'deploy' needs `context`")


def test_render_mode_rejects_cluster_settings() -> None:
    [error] = errors_of("dev", setting(K8S, "context", value="kind-dev"))
    assert error.startswith("triton-platform:kubernetes: `context`/`kubeconfig` apply only to mode 'deploy'")
    [error] = errors_of("staging", setting(K8S, "renderDir", value="out"))
    assert error.startswith("triton-platform:kubernetes: `renderDir` applies only to mode 'render'")


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/nvidia/tritonserver:latest", "uses 'latest'; pin a version tag or a digest"),
        ("nvcr.io/nvidia/tritonserver", "has no tag; pin a version"),
        ("registry:5000/tritonserver", "has no tag; pin a version"),
    ],
)
def test_image_must_be_pinned(image: str, expected: str) -> None:
    [error] = errors_of("dev", setting(SERVING, "image", value=image))
    assert error == f"triton-platform:serving.image: image {image!r} {expected}" + (
        " such as nvcr.io/nvidia/tritonserver:24.10-py3" if "no tag" in expected else ""
    )


def test_pinned_images_pass() -> None:
    assert validate("dev", setting(SERVING, "image", value="registry:5000/tritonserver:24.10-py3"))
    assert validate("dev", setting(SERVING, "image", value="nvcr.io/nvidia/tritonserver@sha256:" + "a" * 64))


def test_static_replicas_need_min_equal_max() -> None:
    [error] = errors_of("dev", setting(SCALING, "enabled", value=False))
    assert error == (
        "triton-platform:serving.deployments.general.replicas.max: max (2) differs from min (1) but "
        "triton-platform:scaling.enabled is false, so nothing would scale between them; set max equal to min, "
        "or enable scaling"
    )
    assert validate(
        "dev",
        setting(SCALING, "enabled", value=False),
        setting(SERVING, "deployments", "general", "replicas", value={"min": 2, "max": 2}),
    )
