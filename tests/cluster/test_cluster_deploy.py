"""`pulumi up` in deploy mode onto a real control plane (scripts/local-cluster), for every stack.

Each stack file is copied with its context pointed at the local cluster (and install-mode charts
read from the offline chart folders); nothing else changes. For each stack, in order: preview with
the policy pack, up (the real API server admits every object, PSS `restricted` enforced; Deployments
roll out to Ready pods, which kwok fakes), no changes on a second preview and on refresh, a batching
change rolls the Deployment to a new ReplicaSet, and destroy keeps what docs/architecture.md says it keeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import STACKS, stack_values
from tests.support.local_cluster import (
    SHARED_CHARTS,
    LocalCluster,
    edit_stack,
    point_stack_at,
    start_cluster,
    wait_until,
)
from tests.support.local_registry import pin_images
from tests.support.pulumi_cli import Project, make_project
from triton_platform.kube.namespace import namespace_manifests
from triton_platform.serving.serving_context import APP_NAME

pytestmark = pytest.mark.real_tools  # the local control plane and the Pulumi CLI

# What production keeps after `pulumi destroy` (docs/architecture.md, "Publishing and the PVC loader"): its namespace and the model
# claim in it (retained), and the CRDs of the charts it installed (protected, retained).
PRODUCTION_KEEPS = [
    ("namespace", "triton-production", ""),
    ("persistentvolumeclaim", "triton-model-repository", "triton-production"),
    ("customresourcedefinition", "scaledobjects.keda.sh", ""),
    ("customresourcedefinition", "prometheusrules.monitoring.coreos.com", ""),
]


def deployments(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, Any]]:
    listed = cluster.get("deployments", "-n", namespace, "-l", f"app.kubernetes.io/name={APP_NAME}")
    return {d["metadata"]["name"]: d for d in (listed or {}).get("items", [])}


def template_hashes(cluster: LocalCluster, namespace: str, deployment: str) -> set[str]:
    """pod-template-hash of the ReplicaSets that currently run pods of `deployment`."""
    listed = cluster.get("replicasets", "-n", namespace)
    return {
        rs["metadata"]["labels"]["pod-template-hash"]
        for rs in listed["items"]
        if any(o["name"] == deployment for o in rs["metadata"].get("ownerReferences", []))
        and (rs["spec"].get("replicas") or 0) > 0
    }


def rolled_out(cluster: LocalCluster, namespace: str) -> bool:
    found = deployments(cluster, namespace)
    return bool(found) and all(
        d["status"].get("observedGeneration") == d["metadata"]["generation"]
        and d["status"].get("updatedReplicas") == d["status"].get("replicas") == d["status"].get("readyReplicas")
        for d in found.values()
    )


def assert_full_monitoring_stack(stack: str, cluster: LocalCluster) -> None:
    """In install mode, the whole kube-prometheus-stack ran, its grafana and kube-state-metrics subcharts
    included, from the offline folder: the policy pack passed them and the API server accepted every object."""
    monitoring = stack_values(stack)["triton-platform:monitoring"]
    if monitoring.get("mode") != "install":
        return
    metrics_namespace = (monitoring.get("prometheus") or {}).get("namespace", "monitoring")
    listed = cluster.get("deployments", "-n", metrics_namespace)["items"]
    ready = {d["metadata"]["name"] for d in listed if d["status"].get("readyReplicas")}
    assert {"kube-prometheus-stack-grafana", "kube-prometheus-stack-kube-state-metrics"} <= ready, ready
    if stack == "production":
        assert_production_scaling_path(cluster, metrics_namespace)


def assert_production_scaling_path(cluster: LocalCluster, metrics_namespace: str) -> None:
    """What the API server holds of production's scaling path: Prometheus and Alertmanager with a volume per
    replica, two replicas, resources and the priority above Triton's; no control-plane jobs on EKS; KEDA at two
    replicas with disruption budgets, reading Secrets only in its namespace and scaling nothing but workloads."""
    for kind, name, storage in (
        ("prometheus", "kube-prometheus-stack-prometheus", "storage"),
        ("alertmanager", "kube-prometheus-stack-alertmanager", "storage"),
    ):
        spec = cluster.get(kind, name, "-n", metrics_namespace)["spec"]
        claim = spec[storage]["volumeClaimTemplate"]["spec"]
        assert (claim["storageClassName"], claim["accessModes"]) == ("gp3", ["ReadWriteOnce"]), claim
        assert (spec["replicas"], spec["priorityClassName"]) == (2, "triton-production-monitoring")
        assert set(spec["resources"]) == {"requests", "limits"}
        assert "@sha256:" in spec["image"]
    priority = cluster.get("priorityclass", "triton-production-monitoring")
    assert priority["value"] > cluster.get("priorityclass", "triton-production-inference")["value"]
    services = {s["metadata"]["name"] for s in cluster.get("services", "-n", "kube-system")["items"]}
    assert not {s for s in services if s.endswith(("kube-controller-manager", "kube-scheduler", "kube-etcd"))}
    for name in ("keda-operator", "keda-operator-metrics-apiserver"):
        assert cluster.get("deployment", name, "-n", "keda")["spec"]["replicas"] == 2
    budgets = {b["metadata"]["name"] for b in cluster.get("poddisruptionbudgets", "-n", "keda")["items"]}
    assert {"keda-operator", "keda-operator-metrics-apiserver"} <= budgets, budgets
    rules = cluster.get("clusterrole", "keda-operator")["rules"]
    assert not [r for r in rules if "*" in r.get("resources", []) or "*" in r.get("apiGroups", [])], rules
    assert not [r for r in rules if "secrets" in r.get("resources", [])], rules


def assert_autoscaler_follows_the_api_server(project: Project, stack: str) -> None:
    """Deploying, the program reads the cluster's version from its API server (the local one runs 1.34): a
    hand-set cluster-autoscaler of another minor stops the preview at its stack key; the default (used after)
    follows the server's minor."""
    stack_file = project.root / "stacks" / f"Pulumi.{stack}.yaml"
    original = stack_file.read_text()

    def older(config: dict[str, Any]) -> None:
        config["triton-platform:gpuPool"]["clusterAutoscaler"]["image"] = CLUSTER_AUTOSCALER_1_33

    edit_stack(stack_file, older)
    refused = project.pulumi("preview", stack=stack)
    stack_file.write_text(original)
    assert refused.returncode != 0
    assert (
        f"triton-platform:gpuPool.clusterAutoscaler.image: '{CLUSTER_AUTOSCALER_1_33}' is cluster-autoscaler 1.33, but "
        "the cluster runs Kubernetes 1.34 (v1.34.4)"
    ) in refused.stdout + refused.stderr, refused.stdout[-3000:] + refused.stderr[-3000:]


CLUSTER_AUTOSCALER_1_33 = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6"


def assert_autoscaler_of_the_servers_minor(stack: str, cluster: LocalCluster) -> None:
    """Where the pool runs cluster-autoscaler, the deployed image is the release of the API server's minor."""
    if stack_values(stack)["triton-platform:gpuPool"].get("autoscaler") != "cluster-autoscaler":
        return
    autoscaler = cluster.get("deployment", "cluster-autoscaler", "-n", "gpu-system")["spec"]["template"]["spec"]
    assert autoscaler["containers"][0]["image"] == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"


@pytest.fixture(params=STACKS)
def deployed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Project, LocalCluster]]:
    stack: str = request.param
    values = stack_values(stack)
    # A cluster that already runs KEDA and the Prometheus Operator's CRDs, unless the stack installs them.
    installs = values["triton-platform:monitoring"].get("mode") == "install"
    cluster = start_cluster(tmp_path / "cluster", operators=not installs)
    try:
        project = make_project(tmp_path / "pulumi", deploys=True)
        stack_file = project.root / "stacks" / f"Pulumi.{stack}.yaml"
        point_stack_at(stack_file, cluster)
        if values["triton-platform:environment"] == "production":
            # Its images by digest, pinned as the deploy workflow pins them before its preview.
            pin_images(stack_file, tmp_path / "registry", {"TRITON_CHART_MIRROR": str(SHARED_CHARTS)})
        yield stack, project, cluster
    finally:
        cluster.stop()


def test_stack_deploys_updates_and_destroys_on_a_real_control_plane(
    deployed: tuple[str, Project, LocalCluster],
) -> None:
    stack, project, cluster = deployed
    namespace = stack_values(stack)["triton-platform:kubernetes"]["namespace"]
    policy = str(project.root / "policy")
    project.ok("stack", "init", stack)
    if stack == "staging":
        assert_autoscaler_follows_the_api_server(project, stack)

    preview = project.ok("preview", "--policy-pack", policy, stack=stack)
    assert "[mandatory]" not in preview

    project.ok("up", "--yes", "--skip-preview", "--policy-pack", policy, stack=stack)
    # The API server enforces PSS restricted on the namespace: a privileged pod is refused there.
    labels = cluster.get("namespace", namespace)["metadata"]["labels"]
    expected = namespace_manifests(namespace, stack)["namespace"]["metadata"]["labels"]
    assert (
        labels["pod-security.kubernetes.io/enforce"] == expected["pod-security.kubernetes.io/enforce"] == "restricted"
    )
    refused = cluster.kubectl(
        "run", "privileged", "-n", namespace, "--image=busybox:1.36", "--privileged", "--restart=Never", check=False
    )
    assert refused.returncode != 0
    assert "violates PodSecurity" in refused.stderr, refused.stderr
    # Pulumi's await logic waited for each rollout; kwok made the pods Ready.
    assert rolled_out(cluster, namespace)
    assert_full_monitoring_stack(stack, cluster)
    assert_autoscaler_of_the_servers_minor(stack, cluster)
    # A claim with an origin was filled by the loader Job before the Deployments came (kwok completed its pod).
    if (stack_values(stack)["triton-platform:serving"]["modelRepository"].get("pvc") or {}).get("origin"):
        loaders = [
            j
            for j in cluster.get("jobs", "-n", namespace)["items"]
            if j["metadata"]["name"].startswith("model-loader-")
        ]
        assert len(loaders) == 1, loaders
        conditions = {c["type"]: c["status"] for c in loaders[0]["status"].get("conditions", [])}
        assert conditions.get("Complete") == "True", conditions
    before = {name: template_hashes(cluster, namespace, name) for name in deployments(cluster, namespace)}
    assert all(len(h) == 1 for h in before.values()), before

    # Nothing the API server defaults reads as a change, in the program's inputs or in the live objects.
    project.ok("preview", "--expect-no-changes", stack=stack)
    project.ok("refresh", "--yes", "--expect-no-changes", stack=stack)

    # A batching change: a new config ConfigMap, and the Deployment rolls to a new ReplicaSet.
    def slower_batching(config: dict[str, Any]) -> None:
        # Every model's delay, the defaults' and each model's own: every deployment's config changes.
        for settings in [
            config["triton-platform:serving"]["modelDefaults"],
            *config["triton-platform:models"].values(),
        ]:
            batching = settings.get("dynamicBatching") or {}
            if "maxQueueDelayMicroseconds" in batching:
                batching["maxQueueDelayMicroseconds"] += 100

    edit_stack(project.root / "stacks" / f"Pulumi.{stack}.yaml", slower_batching)
    update = project.ok("up", "--yes", "--skip-preview", "--policy-pack", policy, stack=stack)
    serving = stack_values(stack)["triton-platform:serving"]
    for name in serving["deployments"]:
        assert f"Deployment {stack}-serving-{name}-deployment updated" in update, update
        if serving["modelRepository"]["source"] not in ("s3", "gcs"):
            # Rendered configs travel in a content-named ConfigMap (object stores: in the bucket).
            assert f"ConfigMap {stack}-serving-{name}-config replaced" in update, update
    wait_until("the rollout of the batching change", lambda: rolled_out(cluster, namespace))
    after = {name: template_hashes(cluster, namespace, name) for name in deployments(cluster, namespace)}
    for name, hashes in before.items():
        assert after[name], f"{name} has no ReplicaSet with pods"
        assert after[name].isdisjoint(hashes), f"{name} did not roll: {hashes} -> {after[name]}"

    project.destroy(stack, protected=stack == "production")
    if stack == "production":
        for kind, name, ns in PRODUCTION_KEEPS:
            kept = cluster.get(kind, name, *(["-n", ns] if ns else []))
            assert kept is not None, f"{kind}/{name} was deleted"
            assert not kept["metadata"].get("deletionTimestamp"), f"{kind}/{name} is being deleted"
        assert deployments(cluster, namespace) == {}
    else:
        wait_until(f"namespace {namespace} to go", lambda: cluster.get("namespace", namespace) is None)
