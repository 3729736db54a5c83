"""TritonServing built alone under Pulumi's public mocks: hand-written args, no stack file, literal expectations."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s
import pytest

from platform_config.paths import PROJECT_ROOT
from tests.conftest import model_folder
from tests.support.mocks import RecordingMocks, install, pulumi_test
from triton_platform.args.arg_problems import ArgsError
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.serving.serving_context import user_pod_labels
from triton_platform.serving.triton_serving import TritonServing, TritonServingArgs
from triton_platform.serving.triton_serving_args import ModelClaimArgs, ModelRepositoryArgs
from triton_platform.serving.triton_serving_spec import serving_spec

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


MODEL_REPO = str(PROJECT_ROOT / "model_repo")
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
        "urn": "urn:pulumi:test::unit::triton-platform:index:TritonServing$kubernetes:apps/v1:Deployment::unit-demo-deployment",
        "name": "triton-demo",
        "namespace": "inference",
        "services": {"demo": "triton-demo"},
    }
    assert set(recorder.inputs) == {
        ("kubernetes:core/v1:Namespace", "metrics"),
        ("triton-platform:index:TritonServing", "unit"),
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
    # By tag the content may move: every start asks the registry.
    assert [c["imagePullPolicy"] for c in pod["initContainers"] + pod["containers"]] == ["Always"] * 2
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
    # An unready Triton never holds up a drain.
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": SELECTOR},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
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
    # By digest the content cannot change: a node's copy serves, no registry on the start path.
    assert [c["imagePullPolicy"] for c in pod["initContainers"] + pod["containers"]] == ["IfNotPresent"] * 2
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


# --- Args a direct user can get wrong: every problem at once, naming the Arg ------------------------------------

PREFIX = "TritonServing unit: "


def problems(args: dict[str, Any]) -> list[str]:
    """What `serving_spec` finds wrong with `args`, one problem a line, without the component's prefix: each
    located at an Arg (shown without `args.`) or at a file in the model repository."""
    with pytest.raises(ArgsError) as raised:
        serving_spec("unit", cast(TritonServingArgs, args), "test")
    lines = str(raised.value).splitlines()
    assert all(line.startswith(PREFIX) for line in lines), lines
    return [line.removeprefix(PREFIX).removeprefix("args.") for line in lines]


def valid(**changes: Any) -> dict[str, Any]:
    """The bundled demo's Args with `changes` over them."""
    return {**serving_args("observability", {"path": MODEL_REPO, "source": "bundled"}), **changes}


def repository(**settings: Any) -> dict[str, Any]:
    return {"path": MODEL_REPO, **settings}


def test_required_args_are_named_and_nothing_below_a_missing_one() -> None:
    assert problems({}) == [
        "namespace: missing (required)",
        "deployments: missing (required)",
        "model_repository: missing (required)",
        "pool: missing (required)",
        "metrics_namespace: missing (required)",
    ]


def test_whole_floats_are_integers_as_other_languages_send_them() -> None:
    spec = serving_spec(
        "unit",
        cast(
            TritonServingArgs,
            valid(
                deployments={
                    "demo": {"models": ["classifier"], "replicas": {"min": 1.0, "max": 2.0}, "gpus_per_pod": 2.0}
                },
                model_defaults={"max_batch_size": 4.0, "instance_group": {"count": 2.0}},
                drain={"pre_stop_seconds": 5.0},
            ),
        ),
        "test",
    )
    deployment = spec.args["deployments"]["demo"]
    assert deployment["replicas"] == {"min": 1, "max": 2}
    assert (deployment["gpus_per_pod"], spec.args["drain"]["pre_stop_seconds"]) == (2, 5)
    assert [type(n) for n in (deployment["replicas"]["min"], deployment["gpus_per_pod"])] == [int, int]
    rendered = spec.rendered.models["classifier"].text
    assert "max_batch_size: 4\n" in rendered
    assert "count: 2\n" in rendered
    assert problems(valid(deployments={"demo": {"models": ["classifier"], "replicas": {"min": 1.5, "max": 2}}})) == [
        "deployments.demo.replicas.min: 1.5 is not a whole number"
    ]


def test_the_config_name_defaults_to_the_stack() -> None:
    args = valid()
    del args["config_name"]
    spec = serving_spec("unit", cast(TritonServingArgs, args), "staging")
    assert spec.rendered.config_name == "staging"
    assert problems(valid(config_name="demo/x")) == [
        "config_name: must be a config name (letters, digits, '_', '.' and '-'); got 'demo/x'"
    ]


DEPLOYMENT_CASES = {
    "no deployment": ({}, ["deployments: has 0 entries; give at least 1"]),
    "a name objects cannot carry": (
        {"Demo_1": {"models": ["classifier"], "replicas": {"min": 1, "max": 1}}},
        [
            "deployments.Demo_1: key must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with "
            "a letter or digit); got 'Demo_1'"
        ],
    ),
    "no model": (
        {"demo": {"models": [], "replicas": {"min": 1, "max": 1}}},
        ["deployments.demo.models: has 0 items; list at least 1"],
    ),
    "a model twice": (
        {"demo": {"models": ["classifier", "classifier"], "replicas": {"min": 1, "max": 1}}},
        ["deployments.demo.models: 'classifier' is listed twice; list each once"],
    ),
    "a model absent from the repository": (
        {"demo": {"models": ["classifier", "nope"], "replicas": {"min": 1, "max": 1}}},
        [
            "deployments.demo.models[1]: model 'nope' is not in the model repository; "
            "known models: classifier, pipeline, preprocess, ranker"
        ],
    ),
    "an ensemble without its steps": (
        {"demo": {"models": ["pipeline", "preprocess"], "replicas": {"min": 1, "max": 1}}},
        [
            "deployments.demo.models: ensemble 'pipeline' chains 'classifier', which deployment 'demo' does not serve; add it"
        ],
    ),
    "min above max": (
        {"demo": {"models": ["classifier"], "replicas": {"min": 3, "max": 2}}},
        ["deployments.demo.replicas: min 3 is above max 2; min must be <= max"],
    ),
    "replicas without max": (
        {"demo": {"models": ["classifier"], "replicas": {"min": 1}}},
        ["deployments.demo.replicas.max: missing (required)"],
    ),
    "no GPU": (
        {"demo": {"models": ["classifier"], "replicas": {"min": 1, "max": 1}, "gpus_per_pod": 0}},
        ["deployments.demo.gpus_per_pod: 0 is below the minimum 1"],
    ),
    "a misspelt key": (
        {"demo": {"models": ["classifier"], "replicas": {"min": 1, "max": 1}, "gpus": 1}},
        ["deployments.demo.gpus: unknown key; known keys: gpus_per_pod, models, replicas, resources, wake_on_request"],
    ),
    "resources": (
        {
            "demo": {
                "models": ["classifier"],
                "replicas": {"min": 1, "max": 1},
                "resources": {"requests": {"cpu": "8", "memory": "8GB"}},
            }
        },
        [
            "deployments.demo.resources.requests.memory: must be a Kubernetes quantity such as 500m, 4, 8Gi; got '8GB'",
            "deployments.demo.resources.limits.cpu: 4 is below its request 8; limits must be >= requests",
        ],
    ),
}


@pytest.mark.parametrize(("deployments", "expected"), DEPLOYMENT_CASES.values(), ids=DEPLOYMENT_CASES)
def test_deployments(deployments: dict[str, Any], expected: list[str]) -> None:
    assert problems(valid(deployments=deployments)) == expected


def test_a_served_model_the_repository_cannot_load_is_named_with_its_problem(tmp_path: Path) -> None:
    model_folder(tmp_path, "classifier", "max_batch_size: 8\n")
    (tmp_path / "classifier" / "01").mkdir()
    assert problems(valid(model_repository={"path": str(tmp_path), "source": "bundled"})) == [
        f"deployments.demo.models[0]: {tmp_path / 'classifier' / '01'}: version folder '01' of model 'classifier': "
        "Triton ignores a version folder whose name starts with 0; version folders are named 1, 2, 3, ... "
        "(no leading zeros, signs or dots)"
    ]


REPOSITORY_CASES = {
    "no folder": (
        {"path": "/nonexistent", "source": "bundled"},
        ["model_repository.path: '/nonexistent' is not a folder; give the local folder of the model repository"],
    ),
    "a relative folder": (
        {"path": "model_repo", "source": "bundled"},
        ["model_repository.path: 'model_repo' is not an absolute path; give the model repository's full path"],
    ),
    "an unknown source": (
        repository(source="nfs"),
        ["model_repository.source: 'nfs' is not one of bundled, pvc, s3, gcs"],
    ),
    "pvc without its claim": (
        repository(source="pvc"),
        ["model_repository.pvc: missing (required for source 'pvc'): the claim (pvc.claim_name)"],
    ),
    "s3 without its uri": (
        repository(source="s3"),
        ["model_repository.uri: missing (required for source 's3'): s3://<bucket>/<prefix>"],
    ),
    "a uri of the other store": (
        repository(source="gcs", uri="s3://models-bucket/repository"),
        ["model_repository.uri: source 'gcs' needs uri gs://<bucket>/<prefix>; got 's3://models-bucket/repository'"],
    ),
    "settings of other sources": (
        repository(
            source="bundled",
            pvc={"claim_name": "models"},
            uri="s3://models-bucket/repository",
            credentials_secret="store",
            store_egress=[{"cidr": "10.0.0.0/8", "ports": [443]}],
            revision="r1",
        ),
        [
            "model_repository.pvc: applies only to source 'pvc', not 'bundled'",
            "model_repository.uri: applies only to sources 's3' and 'gcs', not 'bundled'",
            "model_repository.credentials_secret: applies only to sources 's3' and 'gcs' and to a pvc with origin, "
            "not 'bundled'",
            "model_repository.store_egress: applies only to sources 's3' and 'gcs' and to a pvc with origin, "
            "not 'bundled'",
            "model_repository.revision: does not apply to source 'bundled': the bundled files roll the pods by content; "
            "remove it",
        ],
    ),
    "a revision of a published repository": (
        repository(source="s3", uri="s3://models-bucket/repository", revision="r1"),
        [
            "model_repository.revision: does not apply to a published repository (s3, gcs, pvc.origin): the pods "
            "read it under its content digest, so a model change rolls them by itself; remove revision"
        ],
    ),
    "a created claim without origin": (
        repository(source="pvc", pvc={"claim_name": "models", "create": True}),
        [
            "model_repository.pvc.origin: missing (required with create): a claim the component creates starts "
            "empty, and Triton would find no model; set the s3:// or gs:// URI the repository is published to "
            "(a Job then fills the claim), or use an existing, filled claim (create: false)"
        ],
    ),
    "a claim the loader cannot write": (
        repository(source="pvc", pvc={"claim_name": "models", "origin": "s3://models-bucket/repository"}),
        [
            "model_repository.pvc.access_mode: the loader Job writes the repository from origin into the claim, and "
            "ReadOnlyMany cannot be written; use ReadWriteMany (Triton still mounts it read-only)"
        ],
    ),
    "a claim's values": (
        repository(
            source="pvc",
            pvc={"claim_name": "models", "origin": "http://store/models", "access_mode": "RWX", "size": "50GB"},
        ),
        [
            "model_repository.pvc.size: must be a Kubernetes quantity such as 500m, 4, 8Gi; got '50GB'",
            "model_repository.pvc.access_mode: 'RWX' is not one of ReadOnlyMany, ReadWriteMany, ReadWriteOnce",
            "model_repository.pvc.origin: must be s3://<bucket>/<prefix> or gs://<bucket>/<prefix>; got "
            "'http://store/models'",
        ],
    ),
    "store egress": (
        repository(
            source="s3", uri="s3://models-bucket/repository", store_egress=[{"cidr": "10.0.0.1/8", "ports": [0]}]
        ),
        [
            "model_repository.store_egress[0].cidr: '10.0.0.1/8' is not a network in CIDR form (e.g. 10.0.0.0/16): "
            "10.0.0.1/8 has host bits set",
            "model_repository.store_egress[0].ports[0]: 0 is below the minimum 1",
        ],
    ),
}


@pytest.mark.parametrize(("given", "expected"), REPOSITORY_CASES.values(), ids=REPOSITORY_CASES)
def test_model_repository(given: dict[str, Any], expected: list[str]) -> None:
    assert problems(valid(model_repository=given)) == expected


STREAMING_REPO = str(PROJECT_ROOT / "tests" / "fixtures" / "streaming_repo")


def test_a_deployment_serving_a_decoupled_model_streams_and_times_its_first_responses(
    recorder: RecordingMocks,
) -> None:
    def streaming(metrics_namespace: pulumi.Output[str]) -> TritonServingArgs:
        args = serving_args(metrics_namespace, {"path": STREAMING_REPO, "source": "bundled"})
        return {
            **args,
            "deployments": {"demo": {"models": ["tokens"], "replicas": {"min": 1, "max": 2}}},
            "ingress": {"enabled": True, "base_domain": "example.com", "tls_secret_name": "tls"},
        }

    build(streaming)
    [triton] = recorder.inputs["kubernetes:apps/v1:Deployment", "unit-demo-deployment"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert triton["args"][-2:] == [
        "--metrics-config=summary_latencies=true",
        "--metrics-config=histogram_latencies=true",
    ]
    # Its streams pass through ingress-nginx as they come, and stay open an hour between tokens.
    for protocol, extra in (("http", {}), ("grpc", {"nginx.ingress.kubernetes.io/backend-protocol": "GRPC"})):
        ingress = recorder.inputs["kubernetes:networking.k8s.io/v1:Ingress", f"unit-demo-ingress-{protocol}"]
        assert ingress["metadata"]["annotations"] == {
            "nginx.ingress.kubernetes.io/proxy-body-size": "64m",
            "nginx.ingress.kubernetes.io/proxy-buffering": "off",
            "nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
            "nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
            **extra,
        }


def test_model_settings() -> None:
    assert problems(
        valid(
            model_defaults={
                "max_batch_size": 5000,
                "dynamic_batching": {"default_queue_policy": {"timeout_action": "DROP"}},
                "instance_group": {"kind": "GPU"},
            },
            models={
                "classifier": {
                    "max_batch": 8,
                    "version_policy": {"latest": {"num_versions": 1}, "all": {}},
                    "warmup": {"batch_sizes": [], "data": "ones"},
                },
                "ranker": {"version_policy": {"specific": {"versions": [1, 1.0]}}},
            },
        )
    ) == [
        "model_defaults.max_batch_size: 5000 is above the maximum 4096",
        "model_defaults.dynamic_batching.default_queue_policy.timeout_action: 'DROP' is not one of REJECT, DELAY",
        "model_defaults.instance_group.kind: 'GPU' is not one of KIND_GPU, KIND_CPU, KIND_AUTO",
        "models.classifier.max_batch: unknown key; known keys: dynamic_batching, instance_group, max_batch_size, "
        "tensorrt_llm, version_policy, vllm, warmup (did you mean 'max_batch_size'?)",
        "models.classifier.warmup.batch_sizes: has 0 items; list at least 1",
        "models.classifier.warmup.data: 'ones' is not one of zero, random",
        "models.ranker.version_policy.specific.versions: 1 is listed twice; list each once",
        "models.classifier.version_policy: set exactly one of latest, all, specific; got latest, all",
        "models.ranker: settings for model 'ranker', which no deployment serves; add it to a deployment's models "
        "or remove them",
    ]


ALL_MODELS = {"demo": {"models": ["classifier", "pipeline", "preprocess", "ranker"], "replicas": {"min": 1, "max": 2}}}


def test_settings_that_do_not_fit_their_models_name_the_arg_and_the_base_config() -> None:
    base = f"{MODEL_REPO}/{{}}/config.pbtxt"
    assert problems(
        valid(
            deployments=ALL_MODELS,
            model_defaults={"dynamic_batching": {"preferred_batch_size": [4, 8]}, "warmup": {"batch_sizes": [1, 16]}},
            models={
                "classifier": {"max_batch_size": 64},
                "preprocess": {"max_batch_size": 8},
                "pipeline": {"instance_group": {"count": 2}},
                "ranker": {
                    "max_batch_size": 4,
                    "version_policy": {"specific": {"versions": [2, 3]}},
                },
            },
        )
    ) == [
        "models.classifier.max_batch_size: max_batch_size 64 is above the max_batch_size 32 of model "
        f"'classifier' in {base.format('classifier')}, which states what the model supports; it may only be lowered",
        "models.pipeline.instance_group: does not apply to model 'pipeline', an ensemble: it has no instances, "
        "batcher or warmup of its own; set it on the models it chains",
        "model_defaults.warmup.batch_sizes[1]: warmup batch size 16 is above max_batch_size 8 "
        "(args.models.preprocess.max_batch_size) of model 'preprocess'; warmup batch sizes must be <= 8",
        "model_defaults.dynamic_batching.preferred_batch_size[1]: preferred batch size 8 is above "
        "max_batch_size 4 (args.models.ranker.max_batch_size) of model 'ranker'; each preferred size must be "
        "<= max_batch_size",
        "model_defaults.warmup.batch_sizes[1]: warmup batch size 16 is above max_batch_size 4 "
        "(args.models.ranker.max_batch_size) of model 'ranker'; warmup batch sizes must be <= 4",
        "models.ranker.version_policy.specific.versions[1]: version 3 of model 'ranker' does not exist; "
        "version folders: 1, 2",
        f"max_batch_size in {base.format('pipeline')}: ensemble 'pipeline' has max_batch_size 32 but the model it "
        "chains, 'preprocess', has 8 (args.models.preprocess.max_batch_size); Triton requires the ensemble's to be "
        "<= each step's",
    ]


def test_a_model_whose_files_cannot_take_the_settings_is_refused_naming_the_folder(tmp_path: Path) -> None:
    model_folder(tmp_path, "classifier", 'max_batch_size: 0\ninput { name: "x" data_type: TYPE_FP32 dims: [ -1 ] }\n')
    (tmp_path / "classifier" / "2").mkdir()
    model_folder(tmp_path, "ranker", "max_batch_size: 8\nsequence_batching { }\n", versions=False)
    assert problems(
        valid(
            model_repository={"path": str(tmp_path), "source": "bundled"},
            deployments={"demo": {"models": ["classifier", "ranker"], "replicas": {"min": 1, "max": 1}}},
            models={
                "classifier": {
                    "dynamic_batching": {},
                    "version_policy": {"latest": {"num_versions": 3}},
                    "warmup": {"batch_sizes": [1]},
                },
                "ranker": {"dynamic_batching": {}},
            },
        )
    ) == [
        "models.classifier.dynamic_batching: dynamic batching needs max_batch_size > 0 "
        f"(max_batch_size in {tmp_path}/classifier/config.pbtxt is 0) for model 'classifier'",
        "models.classifier.warmup: input 'x' of model 'classifier' has variable dims [-1]; warmup needs fixed dims",
        "models.classifier.version_policy.latest.num_versions: 3 latest versions of model 'classifier' "
        "requested but only 1, 2 exist",
        f"{tmp_path}/classifier/2: version 2 of model 'classifier' is served but its folder is empty, so Triton "
        "cannot load it; put the model's files in it, or serve other versions (version_policy)",
        "models.ranker.dynamic_batching: model 'ranker' uses sequence_batching; Triton allows one scheduler",
        f"{tmp_path}/ranker: model 'ranker' has no version folder (1/, 2/, ...); Triton serves versions only",
    ]


def test_settings_refused_on_their_own_are_not_fitted_as_well() -> None:
    assert problems(valid(models={"classifier": {"max_batch_size": 5000}})) == [
        "models.classifier.max_batch_size: 5000 is above the maximum 4096"
    ]


def test_ingress_probes_drain_and_the_rest() -> None:
    assert problems(
        valid(
            namespace="Inference",
            ingress={"enabled": True},
            startup_timeout_seconds=10,
            drain={"pre_stop_seconds": 301, "exit_timeout_seconds": 0},
            shm_size_limit="1 Gi",
            inference_clients=[{"pod_labels": {}}],
            labels=["team"],
            autoscaled="yes",
        )
    ) == [
        "namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter or "
        "digit); got 'Inference'",
        "inference_clients[0].namespace: missing (required)",
        "startup_timeout_seconds: 10 is below the minimum 30",
        "drain.pre_stop_seconds: 301 is above the maximum 300",
        "drain.exit_timeout_seconds: 0 is below the minimum 1",
        "shm_size_limit: must be a Kubernetes quantity such as 500m, 4, 8Gi; got '1 Gi'",
        "labels: ['team'] is not a mapping",
        "autoscaled: 'yes' is a string; write the boolean true or false, unquoted",
        "ingress.base_domain: missing (required when enabled)",
        "ingress.tls_secret_name: missing (required when enabled)",
    ]


def test_a_deployment_named_like_the_service_of_anothers_pods_is_refused() -> None:
    woken = {"models": ["classifier"], "replicas": {"min": 0, "max": 2}, "wake_on_request": True}
    assert problems(
        valid(
            autoscaled=True,
            deployments={"demo": woken, "demo-pods": {"models": ["classifier"], "replicas": {"min": 1, "max": 1}}},
        )
    ) == [
        "deployments.demo-pods: 'demo-pods' would name this deployment's objects triton-demo-pods, the Service of "
        "deployment 'demo''s own pods (it wakes on request); name the deployment otherwise"
    ]


def test_pool() -> None:
    assert problems(
        valid(pool={"node_selector": {"pool": 1}, "tolerations": [{"key": "k", "operator": "In", "effect": "NoRun"}]})
    ) == [
        "pool.node_selector.pool: 1 is not a string",
        "pool.tolerations[0].operator: 'In' is not one of Equal, Exists",
        "pool.tolerations[0].effect: 'NoRun' is not one of NoSchedule, PreferNoSchedule, NoExecute",
        "pool.gpu_resource: missing (required)",
    ]
    exists = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "value": "present"}
    placement = {"node_selector": {"pool": "gpu"}, "tolerations": [exists], "gpu_resource": "nvidia.com/gpu"}
    assert problems(valid(pool=placement)) == [
        "pool.tolerations[0].value: 'present' is set with operator 'Exists', which tolerates any value; the API "
        "server refuses a value there: remove it, or use operator 'Equal'"
    ]


# --- What a new user gets wrong, from Python or through the schema's types from another language ---------------

GENERAL = {"models": ["classifier"], "replicas": {"min": 1, "max": 2}}


def general(**changes: Any) -> dict[str, Any]:
    """The bundled demo's Args serving classifier from a deployment `general` with `changes` over it."""
    return valid(deployments={"general": {**GENERAL, **changes}})


WRONG_ARGS = {
    "no args": (None, ["args: missing: give TritonServingArgs, a mapping of its keys"]),
    "a list for the deployments": (
        valid(deployments=[GENERAL]),
        ["deployments: [{'models': ['classifier'], 'replicas': {'min': 1, 'max': 2}}] is not a mapping"],
    ),
    "a string for drain": (valid(drain="30s"), ["drain: '30s' is not a mapping of DrainArgs's keys"]),
    "a misspelt drain key": (
        valid(drain={"pre_stop_second": 5}),
        [
            "drain.pre_stop_second: unknown key; known keys: exit_timeout_seconds, pre_stop_seconds "
            "(did you mean 'pre_stop_seconds'?)"
        ],
    ),
    "a misspelt deployment key": (
        valid(deployments={"general": {"models": ["classifier"], "replica": {"min": 1, "max": 2}}}),
        [
            "deployments.general.replica: unknown key; known keys: gpus_per_pod, models, replicas, resources, wake_on_request "
            "(did you mean 'replicas'?)",
            "deployments.general.replicas: missing (required)",
        ],
    ),
    "a string for the models": (
        general(models="ranker"),
        ["deployments.general.models: 'ranker' is a string, not a list; a list of one is ['ranker']"],
    ),
    "'false' for autoscaled": (
        valid(autoscaled="false"),
        ["autoscaled: 'false' is a string; write the boolean true or false, unquoted"],
    ),
    "more GPUs than a node has": (
        general(gpus_per_pod=17),
        ["deployments.general.gpus_per_pod: 17 is above the maximum 16"],
    ),
    "replicas past 1000 and int32": (
        general(replicas={"min": 1001, "max": 2**31}),
        [
            "deployments.general.replicas.min: 1001 is above the maximum 1000",
            "deployments.general.replicas.max: 2147483648 is above the maximum 1000",
        ],
    ),
    "an infinite startup timeout": (
        valid(startup_timeout_seconds=float("inf")),
        ["startup_timeout_seconds: inf is not a whole number"],
    ),
    "a namespace with a space": (
        valid(namespace="ML Team", metrics_namespace="Observability"),
        [
            "namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter "
            "or digit); got 'ML Team'",
            "metrics_namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a "
            "letter or digit); got 'Observability'",
        ],
    ),
    "label and annotation keys with a space": (
        valid(
            labels={"team name": "ml"},
            pod_labels={"team": "machine learning"},
            service_account_annotations={"role arn": "x"},
            metrics_pod_labels={"app": "prometheus server"},
        ),
        [
            'service_account_annotations["role arn"]: key must be a Kubernetes label key such as example.com/pool; '
            "got 'role arn'",
            "pod_labels.team: must be a Kubernetes label value (up to 63 letters, digits, '-', '_', '.'); got "
            "'machine learning'",
            "metrics_pod_labels.app: must be a Kubernetes label value (up to 63 letters, digits, '-', '_', '.'); "
            "got 'prometheus server'",
            "labels[\"team name\"]: key must be a Kubernetes label key such as example.com/pool; got 'team name'",
        ],
    ),
    "a bad image": (
        valid(image="nvcr.io/nvidia/Tritonserver:24.10-py3"),
        [
            "image: must be an image reference such as nvcr.io/nvidia/tritonserver:24.10-py3 (distribution/reference "
            "grammar: [registry/]repository[:tag][@digest], the repository in lowercase); got "
            "'nvcr.io/nvidia/Tritonserver:24.10-py3'"
        ],
    ),
    "an unpinned image": (
        valid(image="nvcr.io/nvidia/tritonserver:latest"),
        ["image: image 'nvcr.io/nvidia/tritonserver:latest' uses 'latest'; pin a version tag or a digest"],
    ),
    "image digests": (
        valid(image_digests={"nvcr.io/nvidia/tritonserver": "sha256:abc"}),
        [
            "image_digests[\"nvcr.io/nvidia/tritonserver\"]: key 'nvcr.io/nvidia/tritonserver' is not an image named by "
            "its tag without a digest, as the images are named where they are set, e.g. "
            "nvcr.io/nvidia/tritonserver:24.10-py3",
            'image_digests["nvcr.io/nvidia/tritonserver"]: must be a sha256 digest: sha256: and 64 lowercase hex '
            "digits; got 'sha256:abc'",
        ],
    ),
    "a deployment name too long": (
        valid(deployments={"d" * 41: GENERAL}),
        [f"deployments.{'d' * 41}: key {'d' * 41!r} has 41 characters; at most 40"],
    ),
    "a deployment named like the loader": (
        valid(deployments={"model-loader": GENERAL}),
        [
            "deployments.model-loader: 'model-loader' would name this deployment's objects triton-model-loader, "
            "the name of the NetworkPolicy this component adds for its model loader; name the deployment otherwise"
        ],
    ),
    "labels the component sets itself": (
        valid(labels={"app.kubernetes.io/name": "triton"}, pod_labels={"app.kubernetes.io/version": "1"}),
        [
            'labels["app.kubernetes.io/name"]: is a label this component sets itself (Triton\'s selector, role and '
            "version, what its Services, PodDisruptionBudgets and NetworkPolicies select by); name yours otherwise",
            'pod_labels["app.kubernetes.io/version"]: is a label this component sets itself (Triton\'s selector, role '
            "and version, what its Services, PodDisruptionBudgets and NetworkPolicies select by); name yours "
            "otherwise",
        ],
    ),
    "ingress names": (
        valid(
            ingress={
                "enabled": True,
                "class_name": "Nginx_1",
                "base_domain": "ML.example.com",
                "tls_secret_name": "tls cert",
                "max_request_body": "64 MB",
                "controller_namespace": "ingress_nginx",
            },
            inference_clients=[{"namespace": "Apps", "pod_labels": {"app/": "web"}}],
        ),
        [
            "inference_clients[0].namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and "
            "ending with a letter or digit); got 'Apps'",
            'inference_clients[0].pod_labels["app/"]: key must be a Kubernetes label key such as example.com/pool; '
            "got 'app/'",
            "ingress.class_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', each starting "
            "and ending with a letter or digit, joined by single dots); got 'Nginx_1'",
            "ingress.base_domain: must be a lowercase DNS name (RFC 1123: labels of 1-63 a-z, 0-9 and '-', each "
            "starting and ending with a letter or digit, joined by single dots); got 'ML.example.com'",
            "ingress.tls_secret_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', each "
            "starting and ending with a letter or digit, joined by single dots); got 'tls cert'",
            "ingress.max_request_body: must be a Kubernetes quantity such as 500m, 4, 8Gi; got '64 MB'",
            "ingress.controller_namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and "
            "ending with a letter or digit); got 'ingress_nginx'",
        ],
    ),
    "two deployments with one ingress host": (
        valid(
            deployments={"a": GENERAL, "a-grpc": GENERAL},
            ingress={"enabled": True, "base_domain": "example.com", "tls_secret_name": "tls"},
        ),
        [
            "deployments.a-grpc: its ingress host 'a-grpc.example.com' is also deployment 'a''s; name the deployment otherwise"
        ],
    ),
    "an ingress host longer than a DNS name": (
        valid(
            deployments={"general": GENERAL},
            ingress={"enabled": True, "base_domain": ".".join(["d" * 60] * 4), "tls_secret_name": "tls"},
        ),
        [
            f"ingress.base_domain: host 'general-grpc.{'d' * 60}.{'d' * 5}… of deployment 'general' has 256 "
            "characters; a DNS name has at most 253, so shorten base_domain or the deployment's name"
        ],
    ),
    "model settings out of their protobuf fields' range": (
        valid(
            models={
                "classifier": {
                    "dynamic_batching": {
                        "preferred_batch_size": [0],
                        "default_queue_policy": {"max_queue_size": 2**32, "default_timeout_microseconds": 2**64},
                    },
                    "instance_group": {"count": 65},
                    "warmup": {"batch_sizes": [2**32]},
                }
            },
            model_defaults={"version_policy": {"specific": {"versions": [0, 2**63]}}},
        ),
        [
            "model_defaults.version_policy.specific.versions[0]: 0 is below the minimum 1",
            "model_defaults.version_policy.specific.versions[1]: 9223372036854775808 is above the maximum "
            "9223372036854775807",
            "models.classifier.dynamic_batching.preferred_batch_size[0]: 0 is below the minimum 1",
            "models.classifier.dynamic_batching.default_queue_policy.max_queue_size: 4294967296 is above the "
            "maximum 4294967295",
            "models.classifier.dynamic_batching.default_queue_policy.default_timeout_microseconds: "
            "18446744073709551616 is above the maximum 18446744073709551615",
            "models.classifier.instance_group.count: 65 is above the maximum 64",
            "models.classifier.warmup.batch_sizes[0]: 4294967296 is above the maximum 4294967295",
        ],
    ),
    "a model name that is no folder name": (
        valid(models={"team/ranker": {"max_batch_size": 4}}),
        [
            "models[\"team/ranker\"]: key must be a model folder name (letters, digits, '_', '.' and '-'); got 'team/ranker'"
        ],
    ),
}


@pytest.mark.parametrize(("args", "expected"), WRONG_ARGS.values(), ids=WRONG_ARGS)
def test_args_of_the_wrong_shape_bounds_or_format_are_named(args: Any, expected: list[str]) -> None:
    assert problems(args) == expected


STORE_CASES = {
    "names of the claim and the secret": (
        repository(
            source="pvc",
            pvc={
                "claim_name": "Models",
                "storage_class_name": "fast ssd",
                "origin": "s3://models-bucket/repository",
                "access_mode": "ReadWriteMany",
                "loader_image": "docker.io/rclone/rclone",
            },
            credentials_secret="store_keys",
        ),
        [
            "model_repository.pvc.claim_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', "
            "each starting and ending with a letter or digit, joined by single dots); got 'Models'",
            "model_repository.pvc.storage_class_name: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 "
            "and '-', each starting and ending with a letter or digit, joined by single dots); got 'fast ssd'",
            "model_repository.pvc.loader_image: image 'docker.io/rclone/rclone' has no tag; pin a version such as "
            "nvcr.io/nvidia/tritonserver:24.10-py3",
            "model_repository.credentials_secret: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and "
            "'-', each starting and ending with a letter or digit, joined by single dots); got 'store_keys'",
        ],
    ),
    "a bucket no store names": (
        repository(source="s3", uri="s3://Models/repository"),
        [
            "model_repository.uri: bucket 'Models' in 's3://Models/repository' is not a bucket name (3-63 "
            "lowercase letters, digits, '.', '-', '_')"
        ],
    ),
    "a port past 65535 and a list of none": (
        repository(
            source="gcs",
            uri="gs://models-bucket/repository",
            store_egress=[{"cidr": "10.0.0.0/8", "ports": [70000]}, {"cidr": "::/0", "ports": []}],
        ),
        [
            "model_repository.store_egress[0].ports[0]: 70000 is above the maximum 65535",
            "model_repository.store_egress[1].ports: has 0 items; list at least 1",
        ],
    ),
    "an empty path and revision": (
        repository(path="", source="pvc", pvc={"claim_name": "models"}, revision=""),
        ["model_repository.path: is empty; give a value", "model_repository.revision: is empty; give a value"],
    ),
    "a prefix with a control character": (
        repository(source="s3", uri="s3://models-bucket/repo\n\x1b[2Kdone"),
        [
            r"model_repository.uri: 's3://models-bucket/repo\n\x1b[2Kdone' holds the control character '\n' at "
            "position 23; give printable text: no newline, carriage return, escape sequence or other control "
            "character"
        ],
    ),
    "a revision longer than a label": (
        repository(source="pvc", pvc={"claim_name": "models"}, revision="r" * 64),
        [f"model_repository.revision: {'r' * 64!r} has 64 characters; at most 63"],
    ),
}


@pytest.mark.parametrize(("given", "expected"), STORE_CASES.values(), ids=STORE_CASES)
def test_model_repository_names_and_addresses(given: dict[str, Any], expected: list[str]) -> None:
    assert problems(valid(model_repository=given)) == expected


def test_a_stack_name_that_cannot_name_a_config_is_named_as_the_default() -> None:
    args = valid()
    del args["config_name"]
    with pytest.raises(ArgsError) as raised:
        serving_spec("unit", cast(TritonServingArgs, args), "my stack")
    assert str(raised.value) == (
        "TritonServing unit: args.config_name: must be a config name (letters, digits, '_', '.' and '-'); got "
        "'my stack' (the Pulumi stack's name, its default)"
    )


def test_an_output_for_a_plain_arg_is_refused_by_name_and_one_for_an_input_is_taken(recorder: RecordingMocks) -> None:
    """`namespace` names objects and the PriorityClass when the program runs: an Output cannot; `metrics_namespace`
    reaches the NetworkPolicy as it is (`pulumi.Input`)."""
    raised: list[str] = []

    @pulumi_test
    def program() -> None:
        metrics = k8s.core.v1.Namespace("metrics", metadata={"name": "observability"})
        args = {**bundled(metrics.metadata.name), "namespace": metrics.metadata.name}
        try:
            TritonServing("unit", cast(TritonServingArgs, args))
        except ArgsError as error:
            raised.append(str(error))

    program()
    assert raised == [
        "TritonServing unit: args.namespace: is an Output, but this Arg must be a plain value known when the program "
        "runs (the component builds names, queries or files from it); pass the value itself"
    ]
    assert ("triton-platform:index:TritonServing", "unit") not in recorder.inputs, "refused before any resource"


def test_what_monitoring_and_scaling_need_is_output_per_deployment(recorder: RecordingMocks) -> None:
    """Names, models and instances per pod: a GPU group's count is per GPU (two here), a CPU group's per pod,
    an ensemble runs none."""
    seen: dict[str, Any] = {}

    @pulumi_test
    def program() -> pulumi.Output[Any]:
        args: TritonServingArgs = {
            **serving_args("observability", {"path": MODEL_REPO, "source": "bundled"}),
            "deployments": {
                "demo": {"models": ["classifier"], "replicas": {"min": 1, "max": 2}},
                "pipe": {
                    "models": ["pipeline", "preprocess", "classifier"],
                    "replicas": {"min": 1, "max": 2},
                    "gpus_per_pod": 2,
                },
            },
            "models": {"preprocess": {"instance_group": {"kind": "KIND_CPU", "count": 3}}},
        }
        serving = TritonServing("unit", args)
        outputs = {
            "namespace": serving.namespace,
            "deployment_names": serving.deployment_names,
            "models": serving.models,
            "instances_per_pod": serving.instances_per_pod,
        }
        return pulumi.Output.all(**outputs).apply(seen.update)

    program()
    assert seen == {
        "namespace": "inference",
        "deployment_names": {"demo": "triton-demo", "pipe": "triton-pipe"},
        "models": {"demo": ["classifier"], "pipe": ["pipeline", "preprocess", "classifier"]},
        "instances_per_pod": {"demo": {"classifier": 1}, "pipe": {"preprocess": 3, "classifier": 2}},
    }


# --- Triton's workload identity, annotated by hand (triton_platform/kube/workload_identity.py) -------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"service_account_annotations": {"eks.amazonaws.com/role-arn": "triton-models"}},
            'service_account_annotations["eks.amazonaws.com/role-arn"]: must be an IAM role ARN, '
            "arn:<partition>:iam::<12-digit account>:role/[<path>/]<name>; got 'triton-models'",
        ),
        (
            {"service_account_annotations": {"iam.gke.io/gcp-service-account": "arn:aws:iam::111122223333:role/x"}},
            'service_account_annotations["iam.gke.io/gcp-service-account"]: must be a Google service account email, '
            "<name>@<project>.iam.gserviceaccount.com; got 'arn:aws:iam::111122223333:role/x'",
        ),
        (
            {
                "service_account_annotations": {
                    "azure.workload.identity/client-id": "0b1f5d63-7c1a-4f5e-9d2b-3a4c5e6f7a8b"
                },
                "pod_labels": {"azure.workload.identity/use": "false"},
            },
            "pod_labels[\"azure.workload.identity/use\"]: 'false', but the ServiceAccount's workload-identity "
            "annotation needs azure.workload.identity/use: 'true' on its pods (the component sets it); remove the "
            "label, or the annotation",
        ),
    ],
    ids=["role-arn-no-arn", "gke-account-no-email", "azure-label-saying-otherwise"],
)
def test_an_identity_annotated_by_hand_is_checked_as_its_cloud_reads_it(changes: dict[str, Any], expected: str) -> None:
    assert problems(valid(**changes)) == [expected]


def test_an_azure_client_id_in_either_case_labels_the_pods_for_its_webhook() -> None:
    client_id = "0B1F5D63-7C1A-4F5E-9D2B-3A4C5E6F7A8B"
    spec = serving_spec(
        "unit",
        cast(TritonServingArgs, valid(service_account_annotations={"azure.workload.identity/client-id": client_id})),
        "test",
    )
    assert user_pod_labels(spec.args) == {"azure.workload.identity/use": "true"}


def test_a_read_write_once_claim_serves_one_pod() -> None:
    """The component's own rule (the stack runs it too, `component_rule`): a ReadWriteOnce claim mounts on one node."""
    claim = repository(source="pvc", pvc={"claim_name": "models", "access_mode": "ReadWriteOnce"})
    one = {"models": ["classifier"], "replicas": {"min": 1, "max": 1}}
    several = {**one, "replicas": {"min": 1, "max": 3}}
    assert problems(valid(model_repository=claim, deployments={"demo": several})) == [
        "model_repository.pvc.access_mode: ReadWriteOnce mounts on one node only, but demo can run several pods; use "
        "ReadOnlyMany or ReadWriteMany"
    ]
    assert problems(valid(model_repository=claim, deployments={"a": one, "b": one})) == [
        "model_repository.pvc.access_mode: ReadWriteOnce mounts on one node only, but a, b can run several pods; use "
        "ReadOnlyMany or ReadWriteMany"
    ]
    serving_spec("unit", cast(TritonServingArgs, valid(model_repository=claim, deployments={"demo": one})), "test")


def test_bundled_files_fit_one_config_map(tmp_path: Path) -> None:
    """The 900 KiB bundle budget the Args doc promises, checked by the component itself."""
    model_folder(tmp_path, "classifier", "max_batch_size: 8\n")
    (tmp_path / "classifier" / "1" / "model.onnx").write_bytes(b"\0" * (900 * 1024 + 1))
    assert problems(valid(model_repository={"path": str(tmp_path), "source": "bundled"})) == [
        "model_repository.source: deployment 'demo' bundles 921601 bytes of model files, above the 921600-byte "
        "ConfigMap budget; use pvc, s3 or gcs"
    ]


VLLM_CONFIG = 'backend: "vllm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n'


def vllm_args(root: Path, name: str, engine_args: dict[str, Any]) -> dict[str, Any]:
    """One deployment of a vLLM model `name` from a claim, with the stack's engine arguments."""
    model_folder(root, name, VLLM_CONFIG, versions=False)
    (root / name / "1").mkdir()
    (root / name / "1" / "README").write_text("weights from the engine arguments' model")
    return valid(
        model_repository={"path": str(root), "source": "pvc", "pvc": {"claim_name": "models"}},
        deployments={"demo": {"models": [name], "replicas": {"min": 1, "max": 1}}},
        models={name: {"vllm": {"engine_args": engine_args}}},
    )


def test_rendered_files_fit_one_config_map(tmp_path: Path) -> None:
    """The ConfigMap of rendered configs and model.json holds at most 1 MiB of data (the API server refuses more)."""
    args = vllm_args(tmp_path, "chat", {"model": "meta/chat", "tokenizer": "t" * (1024 * 1024)})
    [problem] = problems(args)
    assert re.fullmatch(
        r"deployments\.demo\.models: the rendered configs and engine arguments of deployment 'demo' are \d+ bytes in "
        r"its ConfigMap, above Kubernetes' 1048576 bytes for a ConfigMap's data; split its models across more "
        r"deployments, serve fewer versions, or shorten their engine arguments",
        problem,
    ), problem


def test_a_rendered_files_config_map_key_kubernetes_refuses_is_named(tmp_path: Path) -> None:
    """`<model>.model.json`: a 243-character model name passes as a name (and in `<model>.pbtxt`) but not there."""
    name = "c" * 243
    [problem] = problems(vllm_args(tmp_path, name, {"model": "meta/chat"}))
    assert problem == (
        f"deployments.demo.models[0]: model '{'c' * 79}… needs ConfigMap key '<model>.model.json' for its rendered "
        "files, which is 254 characters; a key is at most 253; name the model shorter"
    ), problem
