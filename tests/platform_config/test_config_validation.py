"""Every validation rule: a passing case and a failing case whose error text is asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from platform_config.errors import ConfigError
from platform_config.loader import load_stack
from platform_config.paths import PROJECT_ROOT
from tests.conftest import (
    CLUSTER,
    K8S,
    MODELS,
    MONITORING,
    POOL,
    SCALING,
    SERVING,
    STACKS,
    Mutation,
    errors_of,
    model_folder,
    removing,
    serving_only,
    setting,
    validate,
)
from triton_platform.model_packaging.source import read_repository

GENERAL = ("deployments", "general")


@pytest.mark.parametrize("stack", STACKS)
def test_every_committed_stack_is_valid(stack: str) -> None:
    loaded = load_stack(stack)
    assert loaded.stack == stack
    assert loaded.source == f"stacks/Pulumi.{stack}.yaml"


def test_the_three_tiers_differ_in_every_tuned_parameter() -> None:
    configs = [load_stack(s).config for s in ("dev", "staging", "production")]

    def distinct(values: list[Any]) -> bool:
        return len({repr(v) for v in values}) == len(values)

    defaults = [c.serving.model_defaults for c in configs]
    batching = [d.dynamic_batching for d in defaults]
    assert all(b is not None for b in batching)
    assert distinct([sorted((n, d.replicas) for n, d in c.serving.deployments.items()) for c in configs])
    assert distinct([d.max_batch_size for d in defaults])
    assert distinct([b.max_queue_delay_microseconds for b in batching if b])
    assert distinct([b.default_queue_policy for b in batching if b])
    assert distinct([d.instance_group.count for d in defaults if d.instance_group])
    assert distinct([(c.gpu_pool.min_nodes, c.gpu_pool.max_nodes) for c in configs])
    assert distinct([c.scaling.busy_ratio_target for c in configs])
    assert distinct([c.scaling.polling_interval_seconds for c in configs])
    assert distinct([c.monitoring.alerts for c in configs])
    assert distinct([c.serving.p95_latency_slo_ms for c in configs])


def _unexplained_values(lines: list[str]) -> list[str]:
    """Leaf values with no comment right above them.

    List items are explained by the comment above their list; an alert's `...For`
    duration by the comment above the threshold it follows.
    """
    found, item_indent = [], None
    for i, line in enumerate(lines):
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        if stripped.startswith("- "):
            item_indent = indent
            continue
        if item_indent is not None and indent > item_indent:
            continue
        item_indent = None
        is_leaf = ":" in stripped and not stripped.startswith("#") and not stripped.endswith(":")
        paired_duration = stripped.split(":")[0].endswith("For") and ":" in lines[i - 1]
        if is_leaf and not paired_duration and not lines[i - 1].strip().startswith("#"):
            found.append(f"{i + 1}: {stripped}")
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_value_carries_a_comment(stack: str) -> None:
    lines = (PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text().splitlines()
    assert _unexplained_values(lines) == []


def test_the_comment_check_finds_a_bare_value() -> None:
    assert _unexplained_values(["config:", "  # why", "  a: 1", "  b: 2", "  items:", "    - x: 1"]) == ["4: b: 2"]


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
        "allowed keys: autoscaler, clusterAutoscaler, dcgmExporter, dcgmExporterImage, devicePlugin, gpusPerNode, karpenter, manage, maxNodes, minNodes, nodeLabels, overprovisioningImage, overprovisioningReplicas, resourceName, staticNodes, taints"
    )
    assert validate("dev", setting(POOL, "minNodes", value=2))


def test_snake_case_keys_are_unknown_not_silently_accepted() -> None:
    [error] = errors_of("dev", setting(SERVING, "modelDefaults", "max_batch_size", value=4))
    assert error.startswith("triton-platform:serving.modelDefaults.max_batch_size: unknown key 'max_batch_size'")
    assert "maxBatchSize" in error


def test_namespace_typo_is_reported() -> None:
    [error] = errors_of("dev", setting("triton-platfrom:serving", value={}))
    assert error == (
        "triton-platfrom:serving: unknown config namespace 'triton-platfrom', so the platform never reads this key; "
        "did you mean 'triton-platform:serving'?"
    )
    assert validate("dev", setting("aws:region", value="eu-west-1"))


def test_keys_without_namespace_are_reported() -> None:
    [error] = errors_of("dev", setting("scaling", value={}))
    assert (
        error
        == "scaling: config keys need a namespace; did you mean 'triton-platform:scaling'? use triton-platform:scaling"
    )


def test_missing_required_sections_and_keys_say_what_they_expect() -> None:
    errors = errors_of(
        "dev", removing("triton-platform:environment"), removing(SERVING, "p95LatencySloMs"), removing(POOL)
    )
    assert errors == [
        "triton-platform:environment: required key is missing (expects one of `dev`, `staging`, `production`)",
        "triton-platform:gpuPool: required key is missing (expects a mapping with keys autoscaler, clusterAutoscaler, dcgmExporter, dcgmExporterImage, devicePlugin, gpusPerNode, karpenter, manage, maxNodes, minNodes, nodeLabels, overprovisioningImage, overprovisioningReplicas, resourceName, staticNodes, taints)",
        "triton-platform:serving.p95LatencySloMs: required key is missing (expects integer (>= 1, <= 600000))",
    ]


def test_a_section_of_the_wrong_shape_lists_its_keys() -> None:
    [error] = errors_of("dev", setting(POOL, value=[1, 2]))
    assert error == (
        "triton-platform:gpuPool: expected a mapping with keys autoscaler, clusterAutoscaler, dcgmExporter, dcgmExporterImage, devicePlugin, gpusPerNode, karpenter, manage, maxNodes, minNodes, nodeLabels, overprovisioningImage, overprovisioningReplicas, resourceName, staticNodes, taints; got [1, 2]"
    )


def test_default_providers_must_exclude_kubernetes() -> None:
    [error] = errors_of("dev", setting("pulumi:disable-default-providers", value=["aws"]))
    assert error == (
        "pulumi:disable-default-providers: must list 'kubernetes' so nothing deploys through the "
        "ambient kubeconfig context; got ['aws']"
    )
    assert validate("dev", setting("pulumi:disable-default-providers", value=["*"]))


# --- types and ranges -----------------------------------------------------


def test_type_errors_show_the_bad_value() -> None:
    [error] = errors_of("dev", setting(SERVING, *GENERAL, "replicas", "max", value="2"))
    assert error == "triton-platform:serving.deployments.general.replicas.max: Input should be a valid integer; got '2'"


def test_a_quoted_number_stays_a_string() -> None:
    [error] = errors_of("dev", setting("triton-platform:environment", value="123"))
    assert error == "triton-platform:environment: Input should be 'dev', 'staging' or 'production'; got '123'"


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
            (*GENERAL, "replicas", "max"),
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
            ("queueDepthTarget",),
            float("inf"),
            "triton-platform:scaling.queueDepthTarget: Input should be a finite number; got inf",
        ),
        (
            SCALING,
            ("gpuMemoryRatioTarget",),
            1.5,
            "triton-platform:scaling.gpuMemoryRatioTarget: Input should be less than or equal to 1; got 1.5",
        ),
        (
            SCALING,
            ("simulation", "gpuMemoryRatio"),
            1.2,
            "triton-platform:scaling.simulation.gpuMemoryRatio: Input should be less than or equal to 1; got 1.2",
        ),
        (
            MONITORING,
            ("alerts", "failureRatio"),
            1,
            "triton-platform:monitoring.alerts.failureRatio: 1 is not below 1: a failure ratio of 1 would never fire",
        ),
        (
            MONITORING,
            ("alerts", "latencyFor"),
            "5 minutes",
            "triton-platform:monitoring.alerts.latencyFor: must be a Prometheus duration such as 30s, 5m or 1h30m; got '5 minutes'",
        ),
        (
            K8S,
            ("namespace",),
            "Triton_Dev",
            "triton-platform:kubernetes.namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter or digit); got 'Triton_Dev'",
        ),
    ],
)
def test_out_of_range_values(key: str, path: tuple[str, ...], value: object, expected: str) -> None:
    assert errors_of("dev", setting(key, *path, value=value)) == [expected]


def test_in_range_boundaries_pass() -> None:
    assert validate("dev", setting(SCALING, "gpuMemoryRatioTarget", value=1))
    assert validate("dev", setting(MONITORING, "alerts", "latencyFor", value="1h30m"))
    assert validate("dev", setting(K8S, "namespace", value="a-1"))


def test_odd_map_keys_are_quoted_in_the_path() -> None:
    [error] = errors_of(
        "dev",
        setting(SERVING, "deployments", value={"gen.eral": {"models": ["ranker"], "replicas": {"min": 1, "max": 1}}}),
    )
    assert error.startswith('triton-platform:serving.deployments["gen.eral"] (key): must be a lowercase RFC 1123 label')


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
    [error] = errors_of("staging", setting(SERVING, *GENERAL, "replicas", value={"min": 3, "max": 2}))
    assert error == "triton-platform:serving.deployments.general.replicas: min 3 is above max 2; min must be <= max"
    assert validate("staging", setting(SERVING, *GENERAL, "replicas", value={"min": 2, "max": 2}))


def test_pool_min_nodes_above_max() -> None:
    [error] = errors_of("dev", setting(POOL, "minNodes", value=3))
    assert error == "triton-platform:gpuPool.minNodes: 3 is above maxNodes (2); it must be at most that"
    assert validate("dev", setting(POOL, "minNodes", value=2))


def test_preferred_batch_size_above_max_batch_size() -> None:
    [error] = errors_of(
        "dev", setting(SERVING, "modelDefaults", "dynamicBatching", "preferredBatchSize", value=[4, 16])
    )
    assert error == (
        "triton-platform:serving.modelDefaults.dynamicBatching.preferredBatchSize[1]: preferred batch size 16 "
        "is above maxBatchSize 8 (triton-platform:serving.modelDefaults.maxBatchSize) of models 'classifier', "
        "'preprocess', 'ranker'; each preferred size must be <= maxBatchSize"
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
        "each preferred size must be <= maxBatchSize",
        "triton-platform:serving.modelDefaults.maxBatchSize: ensemble 'pipeline' has maxBatchSize 8 but the model "
        "it chains, 'classifier', has 4 (triton-platform:models.classifier.maxBatchSize); Triton requires the "
        "ensemble's to be <= each step's",
    ]


def test_preferred_batch_size_above_the_base_config_max_batch_size() -> None:
    errors = errors_of(
        "dev",
        removing(SERVING, "modelDefaults", "maxBatchSize"),
        setting(SERVING, "modelDefaults", "dynamicBatching", "preferredBatchSize", value=[64]),
    )
    assert errors[0] == (
        "triton-platform:serving.modelDefaults.dynamicBatching.preferredBatchSize[0]: preferred batch size 64 is "
        "above maxBatchSize 32 (max_batch_size in model_repo/classifier/config.pbtxt) of model 'classifier'; "
        "each preferred size must be <= maxBatchSize"
    )
    assert len(errors) == 3  # classifier, preprocess, ranker; the ensemble has no batcher
    assert validate(
        "dev",
        removing(SERVING, "modelDefaults", "maxBatchSize"),
        setting(SERVING, "modelDefaults", "dynamicBatching", "preferredBatchSize", value=[32]),
    )


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
    errors = errors_of(
        "dev",
        setting(POOL, "gpusPerNode", value=2),
        setting(POOL, "minNodes", value=1),
        setting(POOL, "maxNodes", value=1),
        setting(SERVING, *GENERAL, "gpusPerPod", value=2),
    )
    assert errors == [
        "triton-platform:serving.deployments: at maximum scale the deployments need 4 GPUs (replicas.max x gpusPerPod: "
        "general: 2 x 2) but the GPU pool has at most 2 (triton-platform:gpuPool.maxNodes 1 x gpusPerNode 2); "
        "lower replicas.max or raise maxNodes"
    ]
    assert validate("dev", setting(POOL, "gpusPerNode", value=2), setting(SERVING, *GENERAL, "gpusPerPod", value=2))


def test_gpus_per_pod_above_gpus_per_node_can_never_schedule() -> None:
    [error] = errors_of(
        "production",
        setting(SERVING, "deployments", "ranker", "gpusPerPod", value=2),
        setting(POOL, "maxNodes", value=20),
    )
    assert error == (
        "triton-platform:serving.deployments.ranker.gpusPerPod: 2 GPUs per pod can never be scheduled on nodes "
        "with 1 (triton-platform:gpuPool.gpusPerNode); gpusPerPod must be <= gpusPerNode"
    )


def test_deployment_model_not_in_model_repo() -> None:
    [error] = errors_of("dev", setting(SERVING, *GENERAL, "models", value=["classifier", "ranker", "clasifier"]))
    assert error == (
        "triton-platform:serving.deployments.general.models[2]: model 'clasifier' is not in the model repository; "
        "known models: classifier, pipeline, preprocess, ranker"
    )
    assert validate("dev", setting(SERVING, *GENERAL, "models", value=["classifier", "ranker"]))


def test_model_settings_for_unknown_model() -> None:
    [error] = errors_of("dev", setting(MODELS, "clasifier", value={"maxBatchSize": 4}))
    assert error == (
        "triton-platform:models.clasifier: settings for model 'clasifier', which is not in the model repository; "
        "known models: classifier, pipeline, preprocess, ranker"
    )
    assert validate("dev", setting(MODELS, "classifier", value={"instanceGroup": {"count": 2}}))


def test_model_settings_for_model_no_deployment_serves() -> None:
    # production also pins ranker's profile for the demand signal, which then names the model as unserved too.
    error, pin = errors_of("production", setting(SERVING, "deployments", "ranker", "models", value=["classifier"]))
    assert error.startswith("triton-platform:models.ranker: settings for model 'ranker', which no deployment serves")
    assert pin.startswith("triton-platform:scaling.capacityProfiles.ranker: no deployment serves model 'ranker'")
    assert validate("production", setting(SERVING, "deployments", "ranker", "models", value=["classifier", "ranker"]))


def test_model_listed_twice_in_a_deployment() -> None:
    [error] = errors_of("dev", setting(SERVING, *GENERAL, "models", value=["ranker", "ranker"]))
    assert error == "triton-platform:serving.deployments.general.models: 'ranker' is listed twice; list each once"
    assert validate("dev", setting(SERVING, *GENERAL, "models", value=["classifier", "ranker"]))


def test_validation_uses_the_given_model_repository(tmp_path: Path) -> None:
    (tmp_path / "classifier" / "1").mkdir(parents=True)
    (tmp_path / "classifier" / "1" / "model.onnx").write_bytes(b"")
    (tmp_path / "classifier" / "config.pbtxt").write_text('name: "classifier"\nmax_batch_size: 8\n')
    with pytest.raises(ConfigError) as caught:
        validate("dev", removing(MODELS), repo=read_repository(tmp_path))
    assert caught.value.issues[0].message == "model 'ranker' is not in the model repository; known models: classifier"
    assert [i.path for i in caught.value.issues] == [
        f"triton-platform:serving.deployments.general.models[{i}]" for i in (1, 2, 3)
    ]


def test_a_missing_model_repository_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack("dev", repo=read_repository(tmp_path / "nope"))
    assert caught.value.issues[0].message.endswith(
        f"known models: none: the model repository {tmp_path / 'nope'} does not exist"
    )


def test_an_unparsable_base_config_is_reported_with_its_file(tmp_path: Path) -> None:
    model_folder(tmp_path, "classifier", "max_batch_size: eight\n")
    [error] = errors_of("dev", *serving_only("classifier"), repo=read_repository(tmp_path))
    assert error.startswith(f"{tmp_path / 'classifier' / 'config.pbtxt'}: Triton cannot parse it: 2:17 : ")


def test_production_may_not_render_even_when_other_kubernetes_keys_are_wrong() -> None:
    errors = errors_of("production", setting(K8S, "mode", value="render"))
    assert errors == [
        "triton-platform:kubernetes.context: 'production' applies only to mode 'deploy'; render mode cannot be combined with a cluster connection",
        "triton-platform:kubernetes.mode: 'render' is not allowed for a production stack: production must deploy "
        "to a cluster (set mode: deploy and context), never fall back to writing files",
    ]
    assert validate("staging", setting(K8S, value={"mode": "render", "namespace": "triton-staging"}))


def test_deploy_mode_needs_an_explicit_context() -> None:
    [error] = errors_of("staging", removing(K8S, "context"))
    assert error.startswith(
        "triton-platform:kubernetes.context: required key is missing: mode 'deploy' needs the kubeconfig context"
    )
    assert validate(
        "staging", setting(K8S, "context", value="other"), setting(K8S, "kubeconfig", value="/etc/kube/config")
    )
    for blank in ("", "   "):
        assert errors_of("staging", setting(K8S, "context", value=blank)) == [
            f"triton-platform:kubernetes.context: {blank!r} is blank; give the kubeconfig context to deploy to"
        ]


def test_render_mode_rejects_cluster_settings() -> None:
    [error] = errors_of("dev", setting(K8S, "context", value="kind-dev"))
    assert error.startswith("triton-platform:kubernetes.context: 'kind-dev' applies only to mode 'deploy'")
    [error] = errors_of("staging", setting(K8S, "renderDir", value="out"))
    assert error == "triton-platform:kubernetes.renderDir: applies only to mode 'render'; remove it or set mode: render"
    assert validate("dev", setting(K8S, "renderDir", value="out/dev"))


def test_production_keeps_a_ready_pod_through_a_drain() -> None:
    [error] = errors_of("production", setting(SERVING, "deployments", "ranker", "replicas", "min", value=1))
    assert error == (
        "triton-platform:serving.deployments.ranker.replicas.min: 1 in production: a node drain or upgrade evicts "
        "one pod at a time (PodDisruptionBudget maxUnavailable 1), so with fewer than 2 replicas it takes the last "
        "ready pod and the deployment serves nothing until a new one loads its models; use min >= 2"
    )
    # Only production: dev and staging may run one replica.
    assert validate("staging", setting(SERVING, *GENERAL, "replicas", "min", value=1))


def test_production_keeps_its_scaling_path_through_a_restart_and_a_drain() -> None:
    errors = errors_of(
        "production",
        removing(MONITORING, "storage"),
        setting(MONITORING, "replicas", value=1),
        setting(SCALING, "keda", "replicas", value=1),
    )
    assert errors == [
        "triton-platform:monitoring.replicas: 1 in production: KEDA scales on this Prometheus' answers, and one "
        "replica stops every scale-up while it restarts or is drained; use replicas >= 2",
        "triton-platform:monitoring.storage: required key is missing: production's Prometheus keeps its history and "
        "Alertmanager its silences in an emptyDir without it, lost on every restart or reschedule; give storage: "
        "{storageClassName: <a ReadWriteOnce class>}",
        "triton-platform:scaling.keda.replicas: 1 in production: one KEDA operator and metrics server leave the HPA "
        "blind while it restarts or is drained; use replicas >= 2",
    ]
    # Staging installs neither: the rule is production's.
    assert validate("staging", setting(MONITORING, "replicas", value=1))


def test_static_replicas_need_min_equal_max() -> None:
    # Dev's `general` at one replica, not idling at zero (a wake needs scaling).
    awake = (removing(SERVING, *GENERAL, "wake"), setting(SERVING, *GENERAL, "replicas", "min", value=1))
    [error] = errors_of("dev", setting(SCALING, "enabled", value=False), *awake)
    assert error == (
        "triton-platform:serving.deployments.general.replicas.max: max (2) differs from min (1) but "
        "triton-platform:scaling.enabled is false, so nothing would scale between them; set max equal to min, "
        "or enable scaling"
    )
    assert validate(
        "dev",
        setting(SCALING, "enabled", value=False),
        removing(SERVING, *GENERAL, "wake"),
        setting(SERVING, *GENERAL, "replicas", value={"min": 2, "max": 2}),
    )


def test_policy_exceptions_name_a_known_policy_and_a_reason() -> None:
    exception = {"policy": "no-such-policy", "kind": "Service", "name": "triton-general", "reason": "too short"}
    errors = errors_of("production", setting("triton-platform:policyExceptions", value=[exception]))
    assert errors[0].startswith(
        "triton-platform:policyExceptions[0].policy: Input should be 'pod-security-restricted',"
    )
    assert errors[0].endswith("; got 'no-such-policy'")
    assert (
        errors[1]
        == "triton-platform:policyExceptions[0].reason: String should have at least 20 characters; got 'too short'"
    )
    good = {**exception, "policy": "no-load-balancer", "reason": "internal NLB for the on-prem gateway"}
    config = validate("production", setting("triton-platform:policyExceptions", value=[good]))
    assert config.policy_exceptions[0].policy == "no-load-balancer"


def test_kube_version_applies_only_to_render_mode() -> None:
    [error] = errors_of("staging", setting(K8S, "kubeVersion", value="v1.34.0"))
    assert error == (
        "triton-platform:kubernetes.kubeVersion: applies only to mode 'render'; "
        "deploying, charts are templated for the API server's version"
    )
    assert validate("dev", setting(K8S, "kubeVersion", value="v1.31.2")).kubernetes.kube_version == "v1.31.2"
    [error] = errors_of("dev", setting(K8S, "kubeVersion", value="1.31"))
    assert error.startswith("triton-platform:kubernetes.kubeVersion: ")
    assert "got '1.31'" in error


def _chart_folder(root: Path, version: str) -> Path:
    folder = root / "keda"
    folder.mkdir()
    (folder / "Chart.yaml").write_text(f"apiVersion: v2\nname: keda\nversion: {version}\n")
    return folder


def test_a_chart_folder_replaces_the_repository_and_must_hold_the_pinned_version(tmp_path: Path) -> None:
    keda = ("keda", "chart")
    folder = _chart_folder(tmp_path, "2.20.2")
    config = validate("production", setting(SCALING, *keda, value={"path": str(folder), "version": "2.20.2"}))
    assert config.scaling.keda.chart.path == str(folder)

    [error] = errors_of("production", setting(SCALING, *keda, value={"path": str(folder), "version": "2.19.0"}))
    assert error == (
        f"triton-platform:scaling.keda.chart.path: {str(folder)!r} holds chart version 2.20.2, "
        "but `version` pins 2.19.0"
    )
    [error] = errors_of("production", setting(SCALING, *keda, value={"path": str(tmp_path), "version": "2.20.2"}))
    assert error == (
        f"triton-platform:scaling.keda.chart.path: {str(tmp_path)!r} is not a chart folder: no Chart.yaml in {tmp_path}"
    )
    both = {"path": str(folder), "version": "2.20.2", "repository": "https://kedacore.github.io/charts"}
    [error] = errors_of("production", setting(SCALING, *keda, value=both))
    assert error == "triton-platform:scaling.keda.chart.path: give either `repository` or `path`, not both"


def test_a_partial_chart_mapping_keeps_its_own_charts_defaults(tmp_path: Path) -> None:
    """`keda.chart: {path: ...}` means KEDA's pinned version, never kube-prometheus-stack's."""
    folder = _chart_folder(tmp_path, "2.20.2")
    config = validate("production", setting(SCALING, "keda", "chart", value={"path": str(folder)}))
    assert config.scaling.keda.chart.version == "2.20.2"
    config = validate("production", setting(SCALING, "keda", "chart", value={"version": "2.19.0"}))
    assert config.scaling.keda.chart.repository == "https://kedacore.github.io/charts"
    assert config.monitoring.chart.repository == "https://prometheus-community.github.io/helm-charts"


def test_a_chart_repository_is_a_url() -> None:
    [error] = errors_of("production", setting(SCALING, "keda", "chart", value={"repository": None}))
    assert error == "triton-platform:scaling.keda.chart.repository: Input should be a valid string; got None"
    [error] = errors_of("production", setting(SCALING, "keda", "chart", value={"repository": "kedacore.github.io"}))
    assert error.startswith("triton-platform:scaling.keda.chart.repository: ")


def test_image_digests_map_a_tagged_image_to_a_sha256_digest() -> None:
    digest = "sha256:" + "ab" * 32
    errors = errors_of(
        "dev", setting(DIGESTS, value={"nvcr.io/nvidia/tritonserver": digest, "registry.k8s.io/pause:3.10": "sha256:a"})
    )
    assert errors == [
        "triton-platform:imageDigests[\"nvcr.io/nvidia/tritonserver\"] (key): 'nvcr.io/nvidia/tritonserver' is not "
        "an image named by its tag without a digest, as the images are named where they are set, e.g. "
        "nvcr.io/nvidia/tritonserver:24.10-py3",
        'triton-platform:imageDigests["registry.k8s.io/pause:3.10"]: must be a sha256 digest: sha256: and 64 '
        "lowercase hex digits; got 'sha256:a'",
    ]
    config = validate("dev", setting(DIGESTS, value={"registry.k8s.io/pause:3.10": digest}))
    assert config.image_digests == {"registry.k8s.io/pause:3.10": digest}


DIGESTS = "triton-platform:imageDigests"


def test_store_egress_needs_networks_ports_and_an_object_store() -> None:
    repository = ("triton-platform:serving", "modelRepository", "storeEgress")
    errors = errors_of(
        "staging", setting(*repository, value=[{"cidr": "10.0.0.1/16", "ports": [443]}, {"cidr": "::/0", "ports": []}])
    )
    assert errors == [
        "triton-platform:serving.modelRepository.storeEgress[0].cidr: '10.0.0.1/16' is not a network in "
        "CIDR form (e.g. 10.0.0.0/16): 10.0.0.1/16 has host bits set",
        "triton-platform:serving.modelRepository.storeEgress[1].ports: List should have at least 1 item after "
        "validation, not 0; got []",
    ]
    [error] = errors_of("dev", setting(*repository, value=[{"cidr": "10.0.0.0/16", "ports": [443]}]))
    assert error == (
        "triton-platform:serving.modelRepository.storeEgress: applies only to sources 's3' and 'gcs' and to a pvc "
        "with origin, not 'bundled'"
    )


# --- Text a terminal or a CI log shows as it is: no control character (triton_platform/args/formats.py) ---------------


@pytest.mark.parametrize(
    ("key", "value", "shown", "char", "position"),
    [
        ("context", "prod\n", r"'prod\n'", r"'\n'", 4),
        ("context", "prod\r::error::forged", r"'prod\r::error::forged'", r"'\r'", 4),
        ("context", "\x1b[2Jprod", r"'\x1b[2Jprod'", r"'\x1b'", 0),
        ("context", "prod\x07", r"'prod\x07'", r"'\x07'", 4),
        ("context", "prod\x9b31m", r"'prod\x9b31m'", r"'\x9b'", 4),
        ("context", "prod\u2028staging", r"'prod\u2028staging'", r"'\u2028'", 4),
        ("context", "dorp\u202e", r"'dorp\u202e'", r"'\u202e'", 4),
        ("kubeconfig", "/etc/kube/config\n", r"'/etc/kube/config\n'", r"'\n'", 16),
    ],
    ids=["newline", "carriage-return", "escape-sequence", "bell", "c1-csi", "line-separator", "bidi", "kubeconfig"],
)
def test_a_context_with_a_control_character_is_refused_shown_escaped(
    key: str, value: str, shown: str, char: str, position: int
) -> None:
    assert errors_of("staging", setting(K8S, key, value=value)) == [
        f"triton-platform:kubernetes.{key}: {shown} holds the control character {char} at position {position}; give "
        "printable text: no newline, carriage return, escape sequence or other control character"
    ]


@pytest.mark.parametrize(
    "context", ["arn:aws:eks:eu-west-1:111122223333:cluster/prod", "gke_my-project_europe-west4_prod", "prod ü €"]
)
def test_contexts_the_clouds_write_are_taken(context: str) -> None:
    assert validate("staging", setting(K8S, "context", value=context)).kubernetes.context == context


# --- Empty values: YAML null where a mapping or a list belongs (platform_config/empty_values.py) -----------------


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (
            setting(CLUSTER, value={"gpuOperator": None}),
            "triton-platform:cluster.gpuOperator: empty (YAML null), where a mapping of settings belongs; write {} "
            "for its defaults, or remove the key to leave it unset",
        ),
        (
            setting(CLUSTER, value={"workloadIdentity": None}),
            "triton-platform:cluster.workloadIdentity: empty (YAML null), where a mapping of settings belongs; write "
            "{} for its defaults, or remove the key to keep its defaults",
        ),
        (
            setting(CLUSTER, value=None),
            "triton-platform:cluster: empty (YAML null), where a mapping of settings belongs; write {} for its "
            "defaults, or remove the key to keep its defaults",
        ),
        (
            setting(POOL, "clusterAutoscaler", value=None),
            "triton-platform:gpuPool.clusterAutoscaler: empty (YAML null), where a mapping of settings belongs; give "
            "its settings, or remove the key to leave it unset",
        ),
        (
            setting(POOL, "taints", value=None),
            "triton-platform:gpuPool.taints: empty (YAML null), where a list belongs; write [] for an empty list, or "
            "remove the key to keep its default",
        ),
        (
            setting(POOL, "nodeLabels", value=None),
            "triton-platform:gpuPool.nodeLabels: empty (YAML null), where a map belongs; write {} for an empty map, "
            "or remove the key to keep its default",
        ),
        (
            setting(SERVING, *GENERAL, value=None),
            "triton-platform:serving.deployments.general: empty (YAML null), where a mapping of settings belongs; "
            "give its settings",
        ),
        (
            setting(SERVING, *GENERAL, "models", value=None),
            "triton-platform:serving.deployments.general.models: empty (YAML null), where a list belongs; give its "
            "entries",
        ),
    ],
    ids=[
        "optional-section",
        "section-with-defaults",
        "top-level-section",
        "section-with-required-keys",
        "list",
        "map",
        "map-entry",
        "required-list",
    ],
)
def test_an_empty_section_is_refused_whichever_it_is(mutation: Mutation, expected: str) -> None:
    """One rule for every empty value where a mapping or list belongs: YAML null is neither `{}` nor an absent key,
    so it is refused naming both, once (not also as `expected a mapping`)."""
    assert errors_of("staging", mutation) == [expected]


def test_an_empty_mapping_is_a_section_with_its_defaults() -> None:
    config = validate("staging", setting(CLUSTER, value={"gpuOperator": {}, "workloadIdentity": {}}))
    assert config.cluster.gpu_software == "gpu-operator"
    assert config.cluster.gpu_operator is not None
    assert config.cluster.gpu_operator.namespace == "gpu-operator"
