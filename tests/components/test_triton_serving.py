"""TritonServing built alone under Pulumi's public mocks: hand-written args, no stack file, literal expectations."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.gpu_pool_contract import PoolPlacement
from components.triton_serving import TritonServing, TritonServingArgs
from components.triton_serving_args import ModelClaimArgs, ModelRepositoryArgs
from tests.components.mocks import RecordingMocks, install, pulumi_test

TRITON_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3"
DIGEST = "sha256:" + "a" * 64
SELECTOR = {"app.kubernetes.io/name": "triton-inference-server", "app.kubernetes.io/instance": "triton-demo"}
LABELS = {**SELECTOR, "app.kubernetes.io/component": "inference-server", "team": "ml"}
METADATA = {"name": "triton-demo", "namespace": "inference", "labels": LABELS}
POOL: PoolPlacement = {
    "node_selector": {"pool": "gpu"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "gpu_resource": "nvidia.com/gpu",
}


MODEL_REPO = str(Path(__file__).resolve().parents[2] / "model_repo")
"""The project's example models."""


def serving_args(metrics_namespace: pulumi.Input[str], repository: ModelRepositoryArgs) -> TritonServingArgs:
    """One deployment of model_repo/classifier, no settings laid over its base config, rendered as
    `configs/demo.pbtxt`; two replicas at most, called by one client namespace."""
    return {
        "namespace": "inference",
        "deployments": {"demo": {"models": ["classifier"], "replicas": {"min": 1, "max": 2}}},
        "model_repository": repository,
        "config_name": "demo",
        "inference_clients": [{"namespace": "apps", "pod_labels": {"app": "web"}}],
        "pool": POOL,
        "metrics_namespace": metrics_namespace,
    }


@pytest.fixture
def recorder() -> RecordingMocks:
    # Set here, not once per module: other tests in the same process install their own mocks.
    # A RandomPassword's result, as the provider would set it; TritonServing makes no provider call.
    return install(
        RecordingMocks({"random:index/randomPassword:RandomPassword": {"result": "k" * 40}}, refuse_calls=True)
    )


def build(
    args: Callable[[pulumi.Output[str]], TritonServingArgs], opts: pulumi.ResourceOptions | None = None
) -> dict[str, Any]:
    """Runs a program of a metrics Namespace and TritonServing; returns what the component exposes, resolved."""
    seen: dict[str, Any] = {}

    @pulumi_test
    def program() -> pulumi.Output[Any]:
        # The metrics namespace comes from another resource's output, as Monitoring's does.
        metrics = k8s.core.v1.Namespace("metrics", metadata={"name": "observability"})
        serving = TritonServing("unit", args(metrics.metadata.name), opts)
        deployment = serving.deployments["demo"]
        outputs = {
            "urn": deployment.urn,
            "name": deployment.metadata.name,
            "namespace": deployment.metadata.namespace,
            "services": serving.services,
        }
        return pulumi.Output.all(**outputs).apply(seen.update)

    program()  # returns once every registration is done
    return seen


def bundled(metrics_namespace: pulumi.Output[str]) -> TritonServingArgs:
    return {
        **serving_args(metrics_namespace, {"path": MODEL_REPO, "source": "bundled"}),
        "labels": {"team": "ml"},
    }


def test_one_deployment_alone(recorder: RecordingMocks) -> None:
    assert build(bundled) == {
        "urn": "urn:pulumi:test::unit::triton-platform:serving:TritonServing$kubernetes:apps/v1:Deployment::unit-demo-deployment",
        "name": "triton-demo",
        "namespace": "inference",
        "services": {"demo": "triton-demo"},
    }
    assert set(recorder.inputs) == {
        ("kubernetes:core/v1:Namespace", "metrics"),
        ("triton-platform:serving:TritonServing", "unit"),
        ("random:index/randomPassword:RandomPassword", "unit-admin-key"),
        ("kubernetes:core/v1:Secret", "unit-admin-key"),
        ("kubernetes:core/v1:ServiceAccount", "unit-service-account"),
        ("kubernetes:scheduling.k8s.io/v1:PriorityClass", "unit-priority-class"),
        ("kubernetes:core/v1:ConfigMap", "unit-demo-config"),
        ("kubernetes:core/v1:ConfigMap", "unit-demo-models"),
        ("kubernetes:apps/v1:Deployment", "unit-demo-deployment"),
        ("kubernetes:core/v1:Service", "unit-demo-service"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "unit-demo-network-policy"),
        ("kubernetes:policy/v1:PodDisruptionBudget", "unit-demo-pdb"),
    }


def test_the_deployment_runs_triton_restricted_on_the_pool(recorder: RecordingMocks) -> None:
    build(bundled)
    deployment = recorder.inputs["kubernetes:apps/v1:Deployment", "unit-demo-deployment"]
    assert deployment["metadata"] == METADATA
    spec = deployment["spec"]
    assert spec["replicas"] == 1, "no autoscaler: replicas.min"
    assert spec["selector"] == {"matchLabels": SELECTOR}, "never the version: a selector is immutable"
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    assert spec["template"]["metadata"]["labels"] == {**LABELS, "app.kubernetes.io/version": "24.10-py3"}
    pod = spec["template"]["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert (pod["serviceAccountName"], pod["automountServiceAccountToken"]) == ("triton-server", False)
    assert pod["priorityClassName"] == "inference-inference"
    assert pod["terminationGracePeriodSeconds"] == 55
    assert pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    [triton] = pod["containers"]
    assert (triton["name"], triton["image"], triton["command"]) == ("triton", TRITON_IMAGE, ["tritonserver"])
    assert triton["args"] == [
        "--model-repository=/models",
        "--model-config-name=demo",
        "--disable-auto-complete-config",
        "--model-control-mode=none",
        "--http-restricted-api=model-repository,logging,trace,shared-memory:triton-admin-key=$(TRITON_ADMIN_KEY)",
        "--grpc-restricted-protocol=model-repository,logging,trace,shared-memory:triton-admin-key=$(TRITON_ADMIN_KEY)",
        "--strict-readiness=true",
        "--exit-on-error=true",
        "--exit-timeout-secs=30",
        "--http-port=8000",
        "--grpc-port=8001",
        "--allow-metrics=true",
        "--allow-gpu-metrics=true",
        "--allow-cpu-metrics=true",
        "--metrics-port=8002",
        "--metrics-config=summary_latencies=true",
    ]
    ready = {"path": "/v2/health/ready", "port": "http"}
    assert triton["startupProbe"] == {
        "httpGet": ready,
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 60,
    }
    assert triton["readinessProbe"] == {
        "httpGet": ready,
        "periodSeconds": 5,
        "timeoutSeconds": 3,
        "failureThreshold": 3,
    }
    assert triton["livenessProbe"] == {
        "httpGet": {"path": "/v2/health/live", "port": "http"},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 3,
    }
    assert triton["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "10"]}}}
    restricted = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert triton["securityContext"] == restricted
    assert triton["resources"] == {
        "requests": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "10816Mi"},
        "limits": {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "10816Mi", "nvidia.com/gpu": "1"},
    }
    [assemble] = pod["initContainers"]
    assert (assemble["image"], assemble["securityContext"]) == (TRITON_IMAGE, restricted)
    assert {"name": "STACK", "value": "demo"} in assemble["env"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["models"] == {"name": "models", "emptyDir": {"sizeLimit": "64Mi"}}
    assert volumes["model-store"]["configMap"]["items"] == [
        {"key": "classifier.1.model.onnx", "path": "classifier/1/model.onnx"}
    ]
    # Content-named ConfigMaps: the pod mounts exactly the ones the component creates.
    config = recorder.inputs["kubernetes:core/v1:ConfigMap", "unit-demo-config"]
    assert re.fullmatch(r"triton-demo-config-[0-9a-f]{10}", config["metadata"]["name"])
    assert volumes["rendered-config"]["configMap"] == {"name": config["metadata"]["name"]}
    assert list(config["data"]) == ["classifier.pbtxt"]
    bundle = recorder.inputs["kubernetes:core/v1:ConfigMap", "unit-demo-models"]
    assert volumes["model-store"]["configMap"]["name"] == bundle["metadata"]["name"]
    assert list(bundle["binaryData"]) == ["classifier.1.model.onnx"]


def test_service_pdb_and_network_policy(recorder: RecordingMocks) -> None:
    build(bundled)
    service = recorder.inputs["kubernetes:core/v1:Service", "unit-demo-service"]
    assert service["metadata"] == METADATA
    assert service["spec"] == {
        "type": "ClusterIP",
        "selector": SELECTOR,
        "ports": [
            {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"},
            {"name": "grpc", "port": 8001, "targetPort": "grpc", "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"},
            {"name": "metrics", "port": 8002, "targetPort": "metrics", "protocol": "TCP", "appProtocol": "http"},
        ],
    }
    pdb = recorder.inputs["kubernetes:policy/v1:PodDisruptionBudget", "unit-demo-pdb"]
    assert pdb["metadata"] == METADATA
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SELECTOR}}
    policy = recorder.inputs["kubernetes:networking.k8s.io/v1:NetworkPolicy", "unit-demo-network-policy"]
    assert policy["metadata"] == METADATA
    assert policy["spec"] == {
        "podSelector": {"matchLabels": SELECTOR},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                # The namespace resolved from the other resource's output.
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}},
                        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 8002}],
            },
            {
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps"}},
                        "podSelector": {"matchLabels": {"app": "web"}},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 8000}, {"protocol": "TCP", "port": 8001}],
            },
        ],
        "egress": [{"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
    }


def test_an_autoscaled_deployment_leaves_replicas_unset_and_runs_images_by_digest(recorder: RecordingMocks) -> None:
    def scaled(metrics_namespace: pulumi.Output[str]) -> TritonServingArgs:
        return {
            **serving_args(metrics_namespace, {"path": MODEL_REPO, "source": "bundled"}),
            "autoscaled": True,
            "image_digests": {TRITON_IMAGE: DIGEST},
        }

    build(scaled)
    spec = recorder.inputs["kubernetes:apps/v1:Deployment", "unit-demo-deployment"]["spec"]
    assert "replicas" not in spec
    pod = spec["template"]["spec"]
    assert [c["image"] for c in pod["initContainers"] + pod["containers"]] == [f"{TRITON_IMAGE}@{DIGEST}"] * 2
    assert spec["template"]["metadata"]["labels"]["app.kubernetes.io/version"] == "24.10-py3"


@pytest.mark.parametrize(("protect", "expected"), [(False, (False, True)), (True, (True, True))])
def test_a_created_claim_is_always_kept_and_protected_on_request(
    recorder: RecordingMocks, protect: bool, expected: tuple[bool, bool]
) -> None:
    def with_claim(metrics_namespace: pulumi.Output[str]) -> TritonServingArgs:
        claim: ModelClaimArgs = {
            "claim_name": "models",
            "create": True,
            "access_mode": "ReadWriteMany",
            "origin": "s3://models-bucket/repository",
        }
        return {
            **serving_args(metrics_namespace, {"path": MODEL_REPO, "source": "pvc", "pvc": claim}),
            "protect_model_claim": protect,
        }

    options: dict[str, tuple[bool | None, bool | None]] = {}

    def record(args: pulumi.ResourceTransformationArgs) -> None:
        options[args.name] = (args.opts.protect, args.opts.retain_on_delete)

    # Transformations are inherited by every child: they see each one's final options.
    build(with_claim, pulumi.ResourceOptions(transformations=[record]))
    assert options.pop("unit-model-repository") == expected
    assert all(opts == (None, None) for name, opts in options.items() if name != "unit"), options
    assert recorder.inputs["kubernetes:core/v1:PersistentVolumeClaim", "unit-model-repository"]["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "50Gi"}},
    }

