"""`KedaScaling` alone, on a Deployment of its own, under Pulumi's public mocks (tests/components/mocks.py).

No stack file: each case writes its Args by hand, as a user of the component would, and asserts what
the component registered against literal values. The pure builders have cases of their own at the end.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.keda_scaling import (
    KedaScaling,
    KedaScalingArgs,
    LoadTrigger,
    ScaleTarget,
    ScalingBehavior,
    one_namespace,
    scaled_object_manifest,
)
from components.keda_scaling_config import Fallback, KedaInstall, PrometheusAuth, ScalePolicy
from tests.components.mocks import RecordingMocks, install, pulumi_test

KEDA = "triton-platform:scaling:KedaScaling"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
GPU_QUERY = (
    'sum(sum by (pod) (nv_gpu_memory_used_bytes{namespace="ml", deployment="my-model"})'
    ' / sum by (pod) (nv_gpu_memory_total_bytes{namespace="ml", deployment="my-model"}))'
)
"""The GPU-memory trigger's query for Deployment `my-model` in namespace `ml`, written out."""


@pytest.fixture
def mocks() -> RecordingMocks:
    # Set per test: other tests of the same process install mocks of their own.
    return install(project="keda-test", stack="unit")


def my_deployment(name: str = "my-model", namespace: str = "ml") -> k8s.apps.v1.Deployment:
    """A user's own Deployment, without `replicas` (KEDA owns the count)."""
    labels = {"app": name}
    return k8s.apps.v1.Deployment(
        name,
        metadata={"name": name, "namespace": namespace},
        spec={
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "server", "image": "registry.example/server:1.0"}]},
            },
        },
    )


def prometheus_url() -> pulumi.Output[str]:
    """The URL of a Prometheus Service of the user's: another resource's output, not a plain string."""
    service = k8s.core.v1.Service(
        "prom", metadata={"name": "prom", "namespace": "monitoring"}, spec={"ports": [{"port": 9090}]}
    )
    return service.metadata.apply(lambda m: f"http://{m.name}.{m.namespace}.svc:9090")


QUEUE = LoadTrigger(name="queue", query="sum(my_queue_depth)", threshold=5, activation_threshold=1)


@pulumi_test
def test_a_deployment_of_ones_own_is_scaled_on_its_query(mocks: RecordingMocks) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        KedaScalingArgs(
            targets={"my-model": ScaleTarget(my_deployment(), min_replicas=1, max_replicas=4, trigger=QUEUE)},
            prometheus_url=prometheus_url(),
            behavior=ScalingBehavior(
                polling_interval_seconds=15,
                scale_down=ScalePolicy.model_validate(
                    {"stabilizationSeconds": 120, "percent": 50, "periodSeconds": 60}
                ),
                fallback=Fallback.model_validate({"replicas": 2}),
            ),
            labels={"team": "ml"},
        ),
    )
    scaled = scaling.scaled_objects["my-model"]

    def check(urn: str) -> None:
        # The ScaledObject is the component's child: its URN's type chain runs through KedaScaling.
        assert urn == (
            "urn:pulumi:unit::keda-test::triton-platform:scaling:KedaScaling$kubernetes:keda.sh/v1alpha1:ScaledObject"
            "::my-scaling-my-model-scaled-object"
        )
        # The user's two resources, the component and one ScaledObject: no KEDA install, no credentials.
        assert sorted((r.typ, r.name) for r in mocks.resources) == sorted(
            [
                ("kubernetes:apps/v1:Deployment", "my-model"),
                ("kubernetes:core/v1:Service", "prom"),
                (KEDA, "my-scaling"),
                (SCALED_OBJECT, "my-scaling-my-model-scaled-object"),
            ]
        )
        assert mocks.calls == []
        manifest = mocks.registered(SCALED_OBJECT)["my-scaling-my-model-scaled-object"]
        assert manifest["metadata"] == {"name": "my-model", "namespace": "ml", "labels": {"team": "ml"}}
        common = {"serverAddress": "http://prom.monitoring.svc:9090", "ignoreNullValues": "false"}
        assert manifest["spec"] == {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "my-model"},
            "pollingInterval": 15,
            "minReplicaCount": 1,
            "maxReplicaCount": 4,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        # The default scale-up: 100% or 3 pods per 30 s.
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "selectPolicy": "Max",
                            "policies": [
                                {"type": "Percent", "value": 100, "periodSeconds": 30},
                                {"type": "Pods", "value": 3, "periodSeconds": 30},
                            ],
                        },
                        "scaleDown": {
                            "stabilizationWindowSeconds": 120,
                            "selectPolicy": "Max",
                            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
                        },
                    }
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "name": "queue",
                    "metricType": "AverageValue",
                    "metadata": {
                        **common,
                        "query": "sum(my_queue_depth)",
                        "threshold": "5",
                        "activationThreshold": "1",
                    },
                },
                {
                    "type": "prometheus",
                    "name": "gpu-memory",
                    "metricType": "AverageValue",
                    "metadata": {**common, "query": GPU_QUERY, "threshold": "0.8", "activationThreshold": "0"},
                },
            ],
            "fallback": {"failureThreshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"},
        }

    return scaled.urn.apply(check)


@pulumi_test
def test_install_mode_installs_keda_into_its_namespace_first(mocks: RecordingMocks) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        KedaScalingArgs(
            targets={"my-model": ScaleTarget(my_deployment(), min_replicas=1, max_replicas=2, trigger=QUEUE)},
            prometheus_url="http://prometheus.example.com:9090",
            keda=KedaInstall.model_validate({"mode": "install", "namespace": "keda-system"}),
            labels={"team": "ml"},
            kube_version="v1.34.0",
        ),
    )

    def check(_: str) -> None:
        assert sorted((r.typ, r.name) for r in mocks.resources) == sorted(
            [
                ("kubernetes:apps/v1:Deployment", "my-model"),
                (KEDA, "my-scaling"),
                ("kubernetes:core/v1:Namespace", "my-scaling-namespace"),
                ("triton-platform:helm:InstalledChart", "my-scaling-keda"),
                ("kubernetes:yaml/v2:ConfigGroup", "my-scaling-keda-objects"),
                (SCALED_OBJECT, "my-scaling-my-model-scaled-object"),
            ]
        )
        namespace = mocks.registered("kubernetes:core/v1:Namespace")["my-scaling-namespace"]["metadata"]
        assert namespace["name"] == "keda-system"
        assert namespace["labels"] == {"team": "ml", "pod-security.kubernetes.io/enforce": "restricted"}
        [template] = mocks.calls
        assert template.token == "kubernetes:helm:template"
        assert json.loads(template.args["jsonOpts"]) == {
            "release_name": "keda",
            "namespace": "keda-system",
            "values": {"prometheus": {"operator": {"enabled": True, "serviceMonitor": {"enabled": True}}}},
            "include_test_hook_resources": False,
            "chart": "keda",
            "fetch_opts": {"repo": "https://kedacore.github.io/charts", "version": "2.20.2"},
            "kube_version": "v1.34.0",
        }

    return scaling.scaled_objects["my-model"].urn.apply(check)


@pulumi_test
def test_credentials_go_through_a_trigger_authentication_beside_the_deployment(
    mocks: RecordingMocks,
) -> pulumi.Output[None]:
    scaling = KedaScaling(
        "my-scaling",
        KedaScalingArgs(
            targets={"my-model": ScaleTarget(my_deployment(), min_replicas=1, max_replicas=2, trigger=QUEUE)},
            prometheus_url="https://prometheus.example.com",
            behavior=ScalingBehavior(gpu_memory_ratio_target=None),
            prometheus_auth=PrometheusAuth.model_validate({"mode": "basic", "secretName": "prom-login"}),
        ),
    )

    def check(_: str) -> None:
        [auth] = mocks.registered("kubernetes:keda.sh/v1alpha1:TriggerAuthentication").items()
        assert auth == (
            "my-scaling-prometheus-auth",
            {
                "apiVersion": "keda.sh/v1alpha1",
                "kind": "TriggerAuthentication",
                "metadata": {"name": "triton-prometheus", "namespace": "ml"},
                "spec": {
                    "secretTargetRef": [
                        {"parameter": "username", "name": "prom-login", "key": "username"},
                        {"parameter": "password", "name": "prom-login", "key": "password"},
                    ]
                },
            },
        )
        # No GPU-memory trigger: the one trigger reads the credentials.
        [trigger] = mocks.registered(SCALED_OBJECT)["my-scaling-my-model-scaled-object"]["spec"]["triggers"]
        assert trigger["authenticationRef"] == {"name": "triton-prometheus"}
        assert trigger["metadata"]["authModes"] == "basic"

    return scaling.scaled_objects["my-model"].urn.apply(check)


@pulumi_test
def test_a_target_with_more_replicas_at_least_than_at_most_is_refused(mocks: RecordingMocks) -> None:
    with pytest.raises(ValueError, match=r"^ScaleTarget: ") as error:
        ScaleTarget(my_deployment(), min_replicas=3, max_replicas=2, trigger=QUEUE)
    assert str(error.value) == (
        "ScaleTarget: min_replicas 3, max_replicas 2: need 0 <= min_replicas <= max_replicas and max_replicas >= 1"
    )


def test_credentials_for_targets_in_two_namespaces_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^KedaScalingArgs\.prometheus_auth: ") as error:
        one_namespace(["ml", "search", "ml"])
    assert str(error.value) == (
        "KedaScalingArgs.prometheus_auth: the TriggerAuthentication goes in the namespace of the Deployments, "
        "but the targets are in ['ml', 'search']; give targets of one namespace, or one KedaScaling per namespace"
    )
    assert one_namespace(["ml", "ml"]) == "ml"


def test_pausing_annotates_the_scaled_object() -> None:
    manifest = scaled_object_manifest(
        namespace="ml",
        deployment="my-model",
        min_replicas=1,
        max_replicas=4,
        trigger=QUEUE,
        prometheus_url="http://prom:9090",
        behavior=ScalingBehavior(paused=True, paused_replicas=2),
        prometheus_auth=None,
        labels={},
    )
    # No labels given: none written.
    assert manifest["metadata"] == {
        "name": "my-model",
        "namespace": "ml",
        "annotations": {"autoscaling.keda.sh/paused": "true", "autoscaling.keda.sh/paused-replicas": "2"},
    }
    assert "fallback" not in manifest["spec"]
