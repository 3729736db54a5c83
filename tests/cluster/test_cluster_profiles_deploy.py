"""Each cluster profile's example stack deploys onto a real control plane laid out as that cluster would be.

One local cluster (scripts/local-cluster, with KEDA and the Prometheus Operator's CRDs) serves the four
profiles in turn, each stack destroyed before the next. Per profile the cluster gets what that kind of
cluster has (docs/clusters.md): EKS the `EC2NodeClass` CRD (the Go module aws/karpenter-provider-aws),
AKS the `AKSNodeClass` CRD (../shared/crds, from Azure/karpenter-provider-azure), GKE GPU nodes labelled
`cloud.google.com/gke-accelerator` with GKE's taint, a GPU Operator cluster untainted nodes labelled by GPU
feature discovery and the operator's DCGM exporter Service and ServiceMonitor, as its chart makes them.
Then `pulumi up` with the policy pack, a second preview with no change, and destroy.

An example that serves its models from an existing claim (aks, gpu-operator) serves them bundled here:
the claim would hold files no test can put there, and the profile does not touch the model source.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from platform_config.paths import PROJECT_ROOT
from tests.support.local_cluster import LocalCluster, edit_stack, module_file, point_stack_at, start_cluster
from tests.support.pulumi_cli import make_project

pytestmark = pytest.mark.real_tools  # the local control plane and the Pulumi CLI

KARPENTER_AWS = (
    "github.com/aws/karpenter-provider-aws",
    "v1.15.2",
    "pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml",
)
AKS_NODE_CLASS_CRD = PROJECT_ROOT.parent / "shared" / "crds" / "karpenter.azure.com_aksnodeclasses.yaml"
EXAMPLES = PROJECT_ROOT / "stacks" / "examples"


def gpu_nodes(prefix: str, labels: dict[str, str], taints: list[dict[str, str]]) -> str:
    """Two fake GPU nodes (kwok) with the labels and taints the cloud or the operator gives them."""
    docs = []
    for i in range(2):
        name = f"{prefix}-{i}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                    "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", **labels},
                },
                "spec": {"taints": taints},
                "status": {
                    "allocatable": {
                        "cpu": "16",
                        "memory": "64Gi",
                        "ephemeral-storage": "200Gi",
                        "pods": "110",
                        "nvidia.com/gpu": "1",
                    },
                    "capacity": {
                        "cpu": "16",
                        "memory": "64Gi",
                        "ephemeral-storage": "200Gi",
                        "pods": "110",
                        "nvidia.com/gpu": "1",
                    },
                },
            }
        )
    return "\n---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)


# The GPU Operator's DCGM exporter Service and ServiceMonitor (NVIDIA/gpu-operator v26.7.0,
# assets/state-dcgm-exporter/): label app, port gpu-metrics 9400, path /metrics, jobLabel app.
GPU_OPERATOR_EXPORTER = """
apiVersion: v1
kind: Namespace
metadata: {name: gpu-operator}
---
apiVersion: v1
kind: Service
metadata:
  name: nvidia-dcgm-exporter
  namespace: gpu-operator
  labels: {app: nvidia-dcgm-exporter}
  annotations: {prometheus.io/scrape: "true"}
spec:
  selector: {app: nvidia-dcgm-exporter}
  ports: [{name: gpu-metrics, port: 9400, targetPort: 9400, protocol: TCP}]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: nvidia-dcgm-exporter
  namespace: gpu-operator
  labels: {app: nvidia-dcgm-exporter}
spec:
  jobLabel: app
  selector: {matchLabels: {app: nvidia-dcgm-exporter}}
  namespaceSelector: {matchNames: [gpu-operator]}
  endpoints: [{port: gpu-metrics, path: /metrics}]
"""

GKE_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]

CLUSTER_LAYOUT: dict[str, Callable[[], str]] = {
    "eks": lambda: module_file(*KARPENTER_AWS),
    "aks": AKS_NODE_CLASS_CRD.read_text,
    "gke": lambda: gpu_nodes("gke-gpu", {"cloud.google.com/gke-accelerator": "nvidia-l4"}, GKE_TAINT),
    "gpu-operator": lambda: (
        gpu_nodes("operator-gpu", {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L4"}, [])
        + "\n---\n"
        + GPU_OPERATOR_EXPORTER
    ),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    running = start_cluster(tmp_path_factory.mktemp("profiles-cluster"))
    try:
        yield running
    finally:
        running.stop()


def bundled_models(config: dict[str, Any]) -> None:
    repository = config["triton-platform:serving"]["modelRepository"]
    if repository["source"] == "pvc" and not repository["pvc"].get("create"):
        config["triton-platform:serving"]["modelRepository"] = {"source": "bundled"}


@pytest.mark.parametrize("profile", list(CLUSTER_LAYOUT))
def test_each_profile_deploys_and_previews_clean(profile: str, cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.apply(CLUSTER_LAYOUT[profile]())
    project = make_project(tmp_path / "pulumi", deploys=True)
    stack_file = project.root / "stacks" / f"Pulumi.{profile}.yaml"
    shutil.copy(EXAMPLES / f"Pulumi.{profile}.yaml", stack_file)
    point_stack_at(stack_file, cluster)
    edit_stack(stack_file, bundled_models)
    policy = str(project.root / "policy")
    project.ok("stack", "init", profile)
    try:
        up = project.ok("up", "--yes", "--skip-preview", "--policy-pack", policy, stack=profile)
        assert "[mandatory]" not in up
        project.ok("preview", "--expect-no-changes", stack=profile)
        namespace = f"triton-{profile}"
        ready = cluster.get("deployment", "triton-general", "-n", namespace)["status"].get("readyReplicas")
        assert ready == 1
        plugin = cluster.get("daemonset", "nvidia-device-plugin", "-n", "gpu-system")
        assert (plugin is not None) == (profile in ("eks", "aks")), profile
        if profile == "gpu-operator":
            assert cluster.get("servicemonitor", "gpu-operator-dcgm-exporter", "-n", "gpu-system") is not None
    finally:
        project.ok("destroy", "--yes", stack=profile)
