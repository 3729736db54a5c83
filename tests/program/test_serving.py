"""The Triton serving stack under mocks, for every stack: every Deployment field and its neighbours."""

from __future__ import annotations

from typing import Any

import pytest

from offline.mock_runtime import REDACTED
from offline.synth import SynthResult
from tests.conftest import SCALING, SERVING, STACKS, removing, setting, synth_mutated, synth_stack
from tests.support.model_store import expected_digest, write_published
from triton_platform.serving.triton_deployment import CONFIG_HASH_ANNOTATION
from triton_platform.serving.triton_server_args import ADMIN_KEY_ENV

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def objects(result: SynthResult, kind: str) -> dict[str, dict[str, Any]]:
    """Manifests of one kind, by metadata.name."""
    return {m["metadata"]["name"]: m for m in result.manifests() if m["kind"] == kind}


def pod(result: SynthResult, deployment: str) -> dict[str, Any]:
    spec: dict[str, Any] = objects(result, "Deployment")[f"triton-{deployment}"]["spec"]["template"]["spec"]
    return spec


def triton(result: SynthResult, deployment: str) -> dict[str, Any]:
    container: dict[str, Any] = pod(result, deployment)["containers"][0]
    assert container["name"] == "triton"
    return container


CASES = [(s, d) for s in STACKS for d in sorted(synth_stack(s).stack.config.serving.deployments)]
IDS = [f"{s}-{d}" for s, d in CASES]

EXPLICIT_LOADS = {("staging", "general"): ["classifier", "pipeline", "preprocess", "ranker"]}
"""Deployments that read an object store (staging's S3) and so load their models by name; the rest load all."""


def selector(deployment: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "triton-inference-server", "app.kubernetes.io/instance": f"triton-{deployment}"}


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_args_read_the_rendered_config_and_restrict_the_admin_apis(stack: str, deployment: str) -> None:
    result = synth_stack(stack)
    config = result.stack.config
    args = triton(result, deployment)["args"]
    assert triton(result, deployment)["command"] == ["tritonserver"]
    assert f"--model-config-name={stack}" in args
    assert "--metrics-config=summary_latencies=true" in args
    assert "--exit-timeout-secs=30" in args
    apis = "model-repository,logging,trace,shared-memory"
    if (stack, deployment) in EXPLICIT_LOADS:
        assert "--model-control-mode=explicit" in args
        loads = [a for a in args if a.startswith("--load-model=")]
        assert loads == [f"--load-model={m}" for m in EXPLICIT_LOADS[stack, deployment]]
        apis += ",model-config"
        # The published version: `stackctl model-repo` output's digest, computed here on its own.
        published = write_published(stack)
        assert args[0] == f"--model-repository={config.serving.model_repository.uri}/{expected_digest(published)}"
    else:
        assert "--model-control-mode=none" in args
        assert args[0] == "--model-repository=/models"
    restriction = f"{apis}:triton-admin-key=$({ADMIN_KEY_ENV})"
    assert f"--http-restricted-api={restriction}" in args
    assert f"--grpc-restricted-protocol={restriction}" in args


def test_production_flags_in_full() -> None:
    assert triton(synth_stack("production"), "ranker")["args"] == [
        "--model-repository=/models",
        "--model-config-name=production",
        "--disable-auto-complete-config",
        "--model-control-mode=none",
        f"--http-restricted-api=model-repository,logging,trace,shared-memory:triton-admin-key=$({ADMIN_KEY_ENV})",
        f"--grpc-restricted-protocol=model-repository,logging,trace,shared-memory:triton-admin-key=$({ADMIN_KEY_ENV})",
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


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_ports_probes_and_drain(stack: str, deployment: str) -> None:
    result = synth_stack(stack)
    serving = result.stack.config.serving
    container = triton(result, deployment)
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
        ("http", 8000),
        ("grpc", 8001),
        ("metrics", 8002),
    ]
    assert container["startupProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= serving.startup_timeout_seconds
    # Production: a 900 s load budget and a 15 s preStop; the others 600 s and 10 s. Exit timeout 30 s, margin 15 s.
    threshold, pre_stop, grace = (90, 15, 60) if stack == "production" else (60, 10, 55)
    assert (startup["periodSeconds"], startup["failureThreshold"]) == (10, threshold)
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", str(pre_stop)]
    assert pod(result, deployment)["terminationGracePeriodSeconds"] == grace


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_pod_security_is_restricted(stack: str, deployment: str) -> None:
    spec = pod(synth_stack(stack), deployment)
    assert spec["securityContext"] == {
        "fsGroup": 1000,
        "runAsGroup": 1000,
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["automountServiceAccountToken"] is False
    assert spec["serviceAccountName"] == "triton-server"
    for container in spec["containers"] + spec.get("initContainers", []):
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        }
        assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
        assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    assert "emptyDir" in volumes["tmp"]
    assert not any("hostPath" in v for v in spec["volumes"])
    mounts = {m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    assert {"/tmp", "/dev/shm"} <= mounts


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_gpu_placement_follows_the_pool_contract(stack: str, deployment: str) -> None:
    result = synth_stack(stack)
    config = result.stack.config
    spec = pod(result, deployment)
    assert triton(result, deployment)["resources"]["limits"]["nvidia.com/gpu"] == str(
        config.serving.deployments[deployment].gpus_per_pod
    )
    assert spec["nodeSelector"] == config.gpu_pool.node_labels
    for taint in config.gpu_pool.taints:
        assert {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect} in spec[
            "tolerations"
        ]
    assert spec["priorityClassName"] == f"{config.kubernetes.namespace}-inference"
    assert f"{config.kubernetes.namespace}-inference" in objects(result, "PriorityClass")


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_availability_and_selectors(stack: str, deployment: str) -> None:
    result = synth_stack(stack)
    dep_config = result.stack.config.serving.deployments[deployment]
    body = objects(result, "Deployment")[f"triton-{deployment}"]
    matched = body["spec"]["selector"]["matchLabels"]
    assert matched == selector(deployment)
    assert "app.kubernetes.io/version" in body["spec"]["template"]["metadata"]["labels"]
    assert body["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert "replicas" not in body["spec"], "KEDA owns the replica count"
    pdbs = objects(result, "PodDisruptionBudget")
    spread = pod(result, deployment).get("topologySpreadConstraints", [])
    if dep_config.replicas.max > 1:
        assert pdbs[f"triton-{deployment}"]["spec"] == {
            "maxUnavailable": 1,
            "selector": {"matchLabels": matched},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        }
        assert {c["topologyKey"] for c in spread} == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    else:
        assert f"triton-{deployment}" not in pdbs
        assert spread == []
    image = body["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.rpartition(":")[2] not in ("", "latest")


def test_static_scaling_sets_replicas_from_config() -> None:
    result = synth_mutated(
        "dev",
        setting(SCALING, "enabled", value=False),
        setting(SERVING, "deployments", "general", "replicas", value={"min": 2, "max": 2}),
        removing(SERVING, "deployments", "general", "wake"),
    )
    assert objects(result, "Deployment")["triton-general"]["spec"]["replicas"] == 2


@pytest.mark.parametrize(("stack", "deployment"), CASES, ids=IDS)
def test_service_and_network_policy(stack: str, deployment: str) -> None:
    result = synth_stack(stack)
    config = result.stack.config
    # A deployment at zero keeps its pods' Service under another name (the client's goes to the interceptor:
    # tests/program/test_scale_to_zero.py).
    woken = config.serving.deployments[deployment].wake is not None
    service = objects(result, "Service")[f"triton-{deployment}{'-pods' if woken else ''}"]["spec"]
    assert [(p["name"], p["port"]) for p in service["ports"]] == [("http", 8000), ("grpc", 8001), ("metrics", 8002)]
    assert service["selector"] == selector(deployment)
    policy = objects(result, "NetworkPolicy")[f"triton-{deployment}"]["spec"]
    metrics_rule, inference_rule = policy["ingress"]
    prometheus = config.monitoring.prometheus
    assert metrics_rule == {
        "from": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": prometheus.namespace}},
                "podSelector": {"matchLabels": prometheus.pod_labels},
            }
        ],
        "ports": [{"port": 8002, "protocol": "TCP"}],
    }
    assert [p["port"] for p in inference_rule["ports"]] == [8000, 8001]
    allowed = [
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for peer in inference_rule["from"]
    ]
    assert allowed == [c.namespace for c in config.serving.inference_clients] + (["keda"] if woken else [])
    assert objects(result, "NetworkPolicy")["default-deny-ingress"]["spec"] == {
        "podSelector": {},
        "policyTypes": ["Ingress"],
    }


def test_ingress_carries_grpc_over_tls() -> None:
    result = synth_mutated(
        "dev",
        setting(SERVING, "ingress", value={"enabled": True, "baseDomain": "ml.example.com", "tlsSecretName": "ml-tls"}),
    )
    ingresses = objects(result, "Ingress")
    grpc = ingresses["triton-general-grpc"]
    assert grpc["metadata"]["annotations"] == {
        "nginx.ingress.kubernetes.io/backend-protocol": "GRPC",
        "nginx.ingress.kubernetes.io/proxy-body-size": "64m",
    }
    assert grpc["spec"]["tls"] == [{"hosts": ["general-grpc.ml.example.com"], "secretName": "ml-tls"}]
    backend = grpc["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    assert backend == {"service": {"name": "triton-general", "port": {"name": "grpc"}}}
    assert ingresses["triton-general-http"]["spec"]["rules"][0]["host"] == "general.ml.example.com"
    allowed = objects(result, "NetworkPolicy")["triton-general"]["spec"]["ingress"][1]["from"]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}} in allowed
    assert "Ingress" not in {m["kind"] for m in synth_stack("dev").manifests()}


def test_bundled_models_ship_in_a_content_named_config_map() -> None:
    result = synth_stack("dev")
    spec = pod(result, "general")
    store = next(v for v in spec["volumes"] if v["name"] == "model-store")["configMap"]
    bundle = objects(result, "ConfigMap")[store["name"]]
    assert bundle["immutable"] is True
    assert {i["path"] for i in store["items"]} == {
        "classifier/1/model.onnx",
        "ranker/1/model.onnx",
        "ranker/2/model.onnx",
        "preprocess/1/model.py",
        "pipeline/1/.gitkeep",
    }
    assert {i["key"] for i in store["items"]} == set(bundle["binaryData"])
    rendered = next(v for v in spec["volumes"] if v["name"] == "rendered-config")["configMap"]["name"]
    assert set(objects(result, "ConfigMap")[rendered]["data"]) == {
        f"{m}.pbtxt" for m in result.stack.config.serving.deployments["general"].models
    }


def test_object_storage_reads_credentials_from_a_secret_only() -> None:
    result = synth_stack("staging")
    container = triton(result, "general")
    assert container["envFrom"] == [{"secretRef": {"name": "staging-model-store"}}]
    assert container["env"] == [
        {"name": ADMIN_KEY_ENV, "valueFrom": {"secretKeyRef": {"name": "triton-admin-key", "key": "key"}}}
    ]
    assert objects(result, "Secret")["triton-admin-key"]["stringData"] == {"key": REDACTED}
    assert "initContainers" not in pod(result, "general")


def test_a_config_change_rolls_the_pods_and_nothing_else() -> None:
    """With a claim filled by hand; a published repository is the stack's, so its change rolls every deployment."""
    by_hand = setting(SERVING, "modelRepository", value={"source": "pvc", "pvc": {"claimName": "models"}})
    before = synth_mutated("production", by_hand)
    after = synth_mutated(
        "production",
        by_hand,
        setting("triton-platform:models", "ranker", "dynamicBatching", "maxQueueDelayMicroseconds", value=1000),
    )
    ranker_before, ranker_after = (
        objects(r, "Deployment")["triton-ranker"]["spec"]["template"] for r in (before, after)
    )
    assert (
        ranker_before["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]
        != ranker_after["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]
    )
    general = [objects(r, "Deployment")["triton-general"] for r in (before, after)]
    assert general[0] == general[1]


def test_removing_a_model_changes_the_deployment_but_keeps_model_data() -> None:
    before = synth_stack("production")
    after = synth_mutated(
        "production",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "ranker", "models", value=["classifier"]),
        setting(SERVING, "deployments", "general", "models", value=["classifier", "preprocess", "pipeline", "ranker"]),
    )
    trimmed = synth_mutated(
        "production",
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "ranker", "models", value=["classifier"]),
        # A model no deployment serves keeps no capacity profile (the demand signal reads none of it).
        removing("triton-platform:scaling", "capacityProfiles", "ranker"),
    )
    assert objects(trimmed, "Deployment")["triton-ranker"] != objects(before, "Deployment")["triton-ranker"]
    for result in (before, after, trimmed):
        claim = result.find("kubernetes:core/v1:PersistentVolumeClaim", "production-serving-model-repository")
        assert claim.protect is True
        assert claim.retain_on_delete is True
        assert claim.inputs == before.find(claim.type, claim.name).inputs


def test_claims_outside_production_are_kept_but_not_protected() -> None:
    result = synth_mutated(
        "staging",
        setting(
            SERVING,
            "modelRepository",
            value={
                "source": "pvc",
                "pvc": {"claimName": "models", "create": True, "accessMode": "ReadWriteMany", "origin": "s3://b-1/p"},
            },
        ),
    )
    claim = result.find("kubernetes:core/v1:PersistentVolumeClaim", "staging-serving-model-repository")
    assert (claim.protect, claim.retain_on_delete) == (False, True)
    assert claim.inputs["spec"]["accessModes"] == ["ReadWriteMany"]
    namespace = result.find("kubernetes:core/v1:Namespace", "staging-namespace")
    assert (namespace.protect, namespace.retain_on_delete) == (False, True), "deleting the namespace deletes the claim"


def test_the_production_namespace_holding_the_claim_is_protected() -> None:
    namespace = synth_stack("production").find("kubernetes:core/v1:Namespace", "production-namespace")
    assert (namespace.protect, namespace.retain_on_delete) == (True, True)
    dev = synth_stack("dev").find("kubernetes:core/v1:Namespace", "dev-namespace")
    assert (dev.protect, dev.retain_on_delete) == (False, False)


def test_a_new_store_revision_rolls_the_pods() -> None:
    """A claim filled by hand (no origin): only `revision` tells Pulumi its files changed."""
    by_hand = setting(SERVING, "modelRepository", value={"source": "pvc", "pvc": {"claimName": "models"}})
    before = objects(synth_mutated("production", by_hand), "Deployment")["triton-ranker"]
    after = objects(
        synth_mutated("production", by_hand, setting(SERVING, "modelRepository", "revision", value="2026-12-01.1")),
        "Deployment",
    )["triton-ranker"]
    hashes = [d["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] for d in (before, after)]
    assert hashes[0] != hashes[1]


# --- the PVC loader Job -----------------------------------------------------------------


def test_a_claim_with_an_origin_is_filled_by_one_secure_job_before_the_pods_start() -> None:
    result = synth_stack("production")
    digest = expected_digest(write_published("production"))
    [job] = objects(result, "Job").values()
    assert job["metadata"]["name"] == f"model-loader-{digest[:16]}"
    spec = job["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"], spec["ttlSecondsAfterFinished"]) == (3, 3600, 86400)
    pod_spec = spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    assert pod_spec["automountServiceAccountToken"] is False
    assert pod_spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    [container] = pod_spec["containers"]
    # By tag in the committed stack: the deploy workflow's pin-images resolves it (no public pin of this tag).
    assert container["image"] == "docker.io/rclone/rclone:1.76.0"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "512Mi", "ephemeral-storage": "256Mi"}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["SOURCE"] == f":s3:triton-platform-production-models/repository/{digest}"
    assert env["DIGEST"] == digest
    assert container["envFrom"] == [{"secretRef": {"name": "production-model-store"}}]
    assert pod_spec["volumes"] == [{"name": "claim", "persistentVolumeClaim": {"claimName": "triton-model-repository"}}]

    loader = result.find("kubernetes:batch/v1:Job", "production-serving-model-loader")
    claim = result.find("kubernetes:core/v1:PersistentVolumeClaim", "production-serving-model-repository")
    assert claim.urn in loader.dependencies
    for name in ("general", "ranker"):
        deployment = result.find(DEPLOYMENT, f"production-serving-{name}-deployment")
        assert loader.urn in deployment.dependencies
        template = pod(result, name)
        mounts = [*template["initContainers"][0]["volumeMounts"], *template["containers"][0]["volumeMounts"]]
        store = [m for m in mounts if m["name"] == "model-store"]
        assert (
            store
            == [{"name": "model-store", "mountPath": "/store", "readOnly": True, "subPath": f"repositories/{digest}"}]
            * 2
        )


def test_a_model_change_is_a_new_loader_job_and_a_rollout() -> None:
    changed = synth_mutated(
        "production",
        setting("triton-platform:models", "ranker", "dynamicBatching", "maxQueueDelayMicroseconds", value=1000),
    )
    before, after = (list(objects(r, "Job")) for r in (synth_stack("production"), changed))
    assert before != after
    mounts = [pod(r, "general")["containers"][0]["volumeMounts"] for r in (synth_stack("production"), changed)]
    assert mounts[0] != mounts[1], "every deployment mounts the new version"


def test_claims_without_origin_have_no_loader() -> None:
    result = synth_mutated(
        "production", setting(SERVING, "modelRepository", value={"source": "pvc", "pvc": {"claimName": "models"}})
    )
    assert objects(result, "Job") == {}
    assert {"name": "model-store", "mountPath": "/store", "readOnly": True} in pod(result, "general")["containers"][0][
        "volumeMounts"
    ]


def network_policy(result: SynthResult, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = objects(result, "NetworkPolicy")[name]["spec"]
    return spec


DNS = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


def test_triton_reaches_dns_and_its_object_store_and_nothing_else() -> None:
    staging = synth_stack("staging")  # s3: Triton reads the bucket itself
    policy = network_policy(staging, "triton-general")
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["egress"] == [
        DNS,
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]},
        {"to": [{"ipBlock": {"cidr": "::/0"}}], "ports": [{"protocol": "TCP", "port": 443}]},
    ]
    production = synth_stack("production")  # a claim: only the loader Job reads the store
    assert network_policy(production, "triton-general")["egress"] == [DNS]
    loader = network_policy(production, "triton-model-loader")
    assert loader["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "triton-model-loader"}}
    assert loader["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in loader
    assert loader["egress"][1]["ports"] == [{"protocol": "TCP", "port": 443}]
    for result, namespace in ((staging, "triton-staging"), (production, "triton-production")):
        [deny] = [
            m
            for m in result.manifests()
            if m["kind"] == "NetworkPolicy"
            and m["metadata"]["name"] == "default-deny-egress"
            and m["metadata"]["namespace"] == namespace
        ]
        assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Egress"]}


def test_store_egress_narrows_the_store_rule_and_a_private_endpoint_sets_its_port() -> None:
    repository = ("triton-platform:serving", "modelRepository")
    narrowed = synth_mutated(
        "staging",
        setting(*repository, "uri", value="s3://https://minio.storage.svc:9000/models/repository"),
        setting(*repository, "storeEgress", value=[{"cidr": "10.20.0.0/16", "ports": [9000]}]),
    )
    assert network_policy(narrowed, "triton-general")["egress"] == [
        DNS,
        {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 9000}]},
    ]
    endpoint = synth_mutated("staging", setting(*repository, "uri", value="s3://http://minio.storage.svc/models/r"))
    assert network_policy(endpoint, "triton-general")["egress"][1]["ports"] == [{"protocol": "TCP", "port": 80}]


def test_every_byte_triton_writes_to_node_disk_is_requested_and_bounded() -> None:
    container = triton(synth_stack("production"), "general")
    # /tmp 10Gi (10240Mi) + the assembled repository 64Mi + logs 512Mi.
    assert container["resources"]["requests"]["ephemeral-storage"] == "10816Mi"
    assert container["resources"]["limits"]["ephemeral-storage"] == "10816Mi"
    smaller = synth_mutated("dev", setting("triton-platform:serving", "tmpSizeLimit", value="1Gi"))
    assert triton(smaller, "general")["resources"]["limits"]["ephemeral-storage"] == "1600Mi"
    assert all("sizeLimit" in v["emptyDir"] for v in pod(smaller, "general")["volumes"] if "emptyDir" in v)


def test_production_runs_its_images_by_digest() -> None:
    images = {
        c["image"]
        for m in synth_stack("production").manifests()
        if m["kind"] in ("Deployment", "DaemonSet", "Job")
        for c in [
            *m["spec"]["template"]["spec"].get("initContainers", []),
            *m["spec"]["template"]["spec"]["containers"],
        ]
    }
    assert images == {
        "nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312",
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
        "@sha256:613ab03c11d442fd960ff515f547e9921537454a712d08160bc8f677f89f1c35",
        "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
        # The exceptions, granted with their reason in the stack file (no public digest for these tags): the
        # deploy workflow's pin-images resolves them before its preview.
        "nvcr.io/nvidia/tritonserver:24.10-py3",
        "docker.io/rclone/rclone:1.76.0",
    }


def test_gcs_with_workload_identity_may_reach_the_metadata_server_only_on_port_80() -> None:
    repository = ("triton-platform:serving", "modelRepository")
    gcs = [setting(*repository, "source", value="gcs"), setting(*repository, "uri", value="gs://models/repository")]
    identity = synth_mutated("staging", *gcs, removing(*repository, "credentialsSecret"))
    assert network_policy(identity, "triton-general")["egress"][-1] == {
        "to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}],
        "ports": [{"protocol": "TCP", "port": 80}],
    }
    keyed = synth_mutated("staging", *gcs)
    assert len(network_policy(keyed, "triton-general")["egress"]) == 3  # DNS and the two any-address rules
