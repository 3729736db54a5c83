"""Property: any Args a user can send a component, of any shape, end in an `ArgsError` naming the problem or
in manifests the API server's schema (and each operator's CRD schema) accepts, never in a traceback.

Each case starts from right Args and puts junk at one to three places in them (None, booleans, huge or
infinite numbers, `'false'`, names with spaces and quotes, strings where lists belong, lists and maps where
scalars belong) or adds a key the type does not declare. The component's own checker and the pure builders it
wires run on what comes out; the manifests are validated as `tests/program/test_manifests_valid.py` and
`tests/components/triton_platform/kube/test_custom_resources.py` validate the stacks'.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platform_config.paths import DEFAULT_MODEL_REPO
from tests.support.crd_schemas import validate as validate_custom
from triton_platform.args.arg_problems import ArgsError
from triton_platform.gpu_pool.gpu_node_pool import pool_manifests
from triton_platform.gpu_pool.gpu_node_pool_args import pool_of
from triton_platform.gpu_pool.gpu_pool_nodes import pool_placement
from triton_platform.monitoring.monitoring import monitoring_manifests
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.scaling.keda_scaling import scaled_object_manifest, trigger_authentication_manifest
from triton_platform.scaling.keda_scaling_args import KedaScalingArgs, scaling_of
from triton_platform.serving.serving_context import ServingContext
from triton_platform.serving.triton_manifests import serving_manifests
from triton_platform.serving.triton_serving_spec import serving_spec

pytestmark = pytest.mark.real_tools  # `go mod download` for the operators' CRD schemas

KUBERNETES = "1.34.0"
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["false", "true", "", "ML Team", 'a"b', "x" * 300, "http://", "1h", "-1", "latest"]),
    st.text(max_size=12),
    st.lists(st.text(max_size=6), max_size=3),
    st.dictionaries(st.text(max_size=8), st.text(max_size=6), max_size=2),
)


def places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place inside `value` a junk value can go: each key of a mapping, each item of a list."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from places(item, (*path, index))


def put(value: Any, path: tuple[Any, ...], junk: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = junk


@st.composite
def spoiled(draw: st.DrawFn, right: dict[str, Any]) -> dict[str, Any]:
    args = copy.deepcopy(right)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        spots = list(places(args))
        path = draw(st.sampled_from(spots))
        if draw(st.booleans()):
            put(args, path, draw(JUNK))
        else:
            parent: Any = args
            for step in path[:-1]:
                parent = parent[step]
            if isinstance(parent, dict):
                parent[draw(st.text(min_size=1, max_size=8))] = draw(JUNK)
    return args


def valid(manifest: dict[str, Any]) -> None:
    if "." in manifest["apiVersion"].split("/")[0] and not manifest["apiVersion"].startswith(
        ("apps/", "policy/", "networking.k8s.io/", "rbac.authorization.k8s.io/", "scheduling.k8s.io/")
    ):
        validate_custom(manifest)
    else:
        kubernetes_validate.validate(manifest, KUBERNETES, strict=True)


def keda_manifests(args: dict[str, Any]) -> list[dict[str, Any]]:
    scaling = scaling_of("s", args)  # type: ignore[arg-type]
    manifests = [
        scaled_object_manifest(
            namespace=str(target["namespace"]),
            deployment=str(target["deployment_name"]),
            min_replicas=target["min_replicas"],
            max_replicas=target["max_replicas"],
            trigger=target["trigger"],
            prometheus_url=str(scaling["prometheus_url"]),
            scaling=scaling,
        )
        for target in scaling["targets"].values()
    ]
    if "prometheus_auth" in scaling:
        manifests.append(trigger_authentication_manifest(scaling["prometheus_auth"], "ml", scaling["labels"]))
    return manifests


KEDA: KedaScalingArgs = {
    "targets": {
        "general": {
            "deployment_name": "triton-general",
            "namespace": "ml",
            "min_replicas": 1,
            "max_replicas": 4,
            "trigger": {"name": "busy-ratio", "query": "sum(x)", "threshold": 0.8, "activation_threshold": 0},
        }
    },
    "prometheus_url": "http://prometheus-operated.monitoring.svc:9090",
    "scale_up": {"stabilization_seconds": 0, "percent": 100, "pods": 3, "period_seconds": 30},
    "fallback": {"replicas": 2, "failure_threshold": 3, "behavior": "static"},
    "prometheus_auth": {"mode": "bearer", "secret_name": "prometheus-token"},
    "labels": {"app.kubernetes.io/part-of": "triton-platform"},
    "paused_replicas": 2,
}


def pool_objects(args: dict[str, Any]) -> list[dict[str, Any]]:
    pool = pool_of("s", args)  # type: ignore[arg-type]
    return list(pool_manifests(pool, pool_placement(pool)).values())


POOL: dict[str, Any] = {
    "workload_namespace": "ml",
    "max_nodes": 3,
    "gpus_per_node": 2,
    "autoscaler": "cluster-autoscaler",
    "cluster_autoscaler": {"cloud_provider": "aws", "node_groups": ["gpu-a"], "scale_down_unneeded_time": "10m"},
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    "node_labels": {"triton-platform/gpu-pool": "inference"},
    "device_plugin": {"sharing": "time-slicing", "time_slicing_replicas": 2},
    "overprovisioning_replicas": 1,
    "dcgm_exporter": True,
    "labels": {"app.kubernetes.io/part-of": "triton-platform"},
    "metrics_namespace": "monitoring",
}


def serving_objects(args: dict[str, Any]) -> list[dict[str, Any]]:
    spec = serving_spec("s", args, "dev")  # type: ignore[arg-type]
    return list(serving_manifests(ServingContext(spec, "admin-key")).values())


SERVING: dict[str, Any] = {
    "namespace": "ml",
    "deployments": {
        "general": {
            "models": ["classifier"],
            "replicas": {"min": 2, "max": 4},
            "gpus_per_pod": 1,
            "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}},
        }
    },
    "model_repository": {"path": str(DEFAULT_MODEL_REPO), "source": "bundled"},
    "pool": {
        "node_selector": {"triton-platform/gpu-pool": "inference"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "gpu_resource": "nvidia.com/gpu",
    },
    "metrics_namespace": "monitoring",
    "model_defaults": {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500}},
    "ingress": {"enabled": True, "base_domain": "models.example.com", "tls_secret_name": "models-tls"},
    "inference_clients": [{"namespace": "apps", "pod_labels": {"app": "web"}}],
    "drain": {"pre_stop_seconds": 10, "exit_timeout_seconds": 30},
    "labels": {"app.kubernetes.io/part-of": "triton-platform"},
}


def monitoring_objects(args: dict[str, Any]) -> list[dict[str, Any]]:
    return list(monitoring_manifests(monitoring_settings("s", args)).values())  # type: ignore[arg-type]


MONITORING: dict[str, Any] = {
    "namespace": "ml",
    "latency_slo_ms": 200,
    "deployments": {
        "general": {
            "object_name": "triton-general",
            "max_replicas": 4,
            "models": ["classifier", "ranker"],
            "signal": {"kind": "busy-ratio", "target": 0.8, "instances_per_pod": {"classifier": 1, "ranker": 2}},
        }
    },
    "receivers": {"oncall": {"webhook": {"url": {"secret": {"name": "alert-hooks", "key": "url"}}}}},
    "routes": {"critical": "oncall"},
    "scrape_interval": "30s",
    "alerts": {"latency_for": "5m", "failure_ratio": 0.02},
    "labels": {"app.kubernetes.io/part-of": "triton-platform"},
    "scaling_enabled": True,
}

COMPONENTS: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], list[dict[str, Any]]]]] = {
    "KedaScaling": (dict(KEDA), keda_manifests),
    "GpuNodePool": (POOL, pool_objects),
    "TritonServing": (SERVING, serving_objects),
    "Monitoring": (MONITORING, monitoring_objects),
}


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_right_args_build_valid_manifests(component: str) -> None:
    right, build = COMPONENTS[component]
    manifests = build(copy.deepcopy(right))
    assert manifests
    for manifest in manifests:
        valid(manifest)


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_any_args_end_in_a_named_error_or_valid_manifests(component: str) -> None:
    right, build = COMPONENTS[component]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spoiled(right))
    def check(args: dict[str, Any]) -> None:
        refused: list[str] = []
        manifests: list[dict[str, Any]] = []
        try:
            manifests = build(args)
        except ArgsError as error:
            refused = str(error).splitlines()
        # Refused: one line per problem, each naming the component and the Arg; built: each object valid.
        assert all(line.startswith(f"{component} s: args") for line in refused)
        for manifest in manifests:
            valid(manifest)

    check()
