"""`GpuNodePool` built alone, with hand-written args and no stack file, under Pulumi's public mocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi_kubernetes as k8s
from pulumi.runtime.mocks import MockMonitor

from components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from components.gpu_node_pool_config import GpuPoolConfig
from tests.components.mocks import RecordingMocks, install, pulumi_test

POOL_TYPE = "triton-platform:gpu:GpuNodePool"
PLUGIN_DIGEST = "sha256:7089559ce6153018806857f5049085bae15b3bf6f1c8bd19d8b12f707d087dea"


def run_alone(program: Callable[[], object]) -> dict[str, dict[str, Any]]:
    """Run `program` under fresh mocks; the inputs of every resource it registered, by `<parent type> <type> <name>`."""
    mocks = RecordingMocks()
    monitor = MockMonitor(mocks)
    # Set here, per run: other tests in the same process install their own mocks.
    install(mocks, monitor=monitor)

    @pulumi_test
    def run() -> None:
        program()

    run()
    registered: dict[str, dict[str, Any]] = {}
    for urn, resource in monitor.get_registered_resources().items():
        qualified_type, name = urn.split("::")[2:]
        parent_type, _, own_type = qualified_type.rpartition("$")
        registered[f"{parent_type.rpartition('$')[2]} {own_type} {name}"] = resource.state
    return registered


def children(registered: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The pool's children, by `<type> <name>`."""
    prefix = f"{POOL_TYPE} "
    return {key.removeprefix(prefix): state for key, state in registered.items() if key.startswith(prefix)}


def test_a_karpenter_pool_alone_with_the_metrics_namespace_from_another_resource() -> None:
    pool = GpuPoolConfig.model_validate(
        {
            "maxNodes": 3,
            "nodeLabels": {"pool": "gpu"},
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            "autoscaler": "karpenter",
            "karpenter": {"gpuNames": ["l4"]},
            "overprovisioningReplicas": 1,
            "dcgmExporter": True,
        }
    )
    built: list[GpuNodePool] = []

    def program() -> None:
        metrics = k8s.core.v1.Namespace("metrics", metadata={"name": "observability"})
        args = GpuNodePoolArgs(
            pool=pool,
            workload_namespace="inference",
            labels={"team": "ml"},
            image_digests={"nvcr.io/nvidia/k8s-device-plugin:v0.17.0": PLUGIN_DIGEST},
            metrics_namespace=metrics.metadata.name,
            metrics_selector_labels={"release": "prom"},
            scrape_interval="30s",
        )
        built.append(GpuNodePool("pool", args))

    objects = children(run_alone(program))

    assert sorted(objects) == [
        "kubernetes:apps/v1:DaemonSet pool-dcgm-exporter",
        "kubernetes:apps/v1:DaemonSet pool-device-plugin",
        "kubernetes:apps/v1:Deployment pool-overprovisioning",
        "kubernetes:core/v1:ConfigMap pool-device-plugin-config",
        "kubernetes:core/v1:Namespace pool-system-namespace",
        "kubernetes:core/v1:Service pool-dcgm-service",
        "kubernetes:karpenter.sh/v1:NodePool pool-node-pool",
        "kubernetes:monitoring.coreos.com/v1:ServiceMonitor pool-dcgm-service-monitor",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy pool-system-deny-egress",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy pool-system-network-policy",
        "kubernetes:scheduling.k8s.io/v1:PriorityClass pool-batch-priority",
        "kubernetes:scheduling.k8s.io/v1:PriorityClass pool-overprovisioning-priority",
    ]
    assert built[0].placement == {
        "node_selector": {"pool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "gpu_resource": "nvidia.com/gpu",
    }

    plugin = objects["kubernetes:apps/v1:DaemonSet pool-device-plugin"]
    assert plugin["metadata"]["namespace"] == "gpu-system"
    assert plugin["metadata"]["labels"] == {"team": "ml"}
    pod = plugin["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
    ]
    assert pod["containers"][0]["image"] == f"nvcr.io/nvidia/k8s-device-plugin:v0.17.0@{PLUGIN_DIGEST}"

    assert objects["kubernetes:karpenter.sh/v1:NodePool pool-node-pool"] == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "inference-gpu", "labels": {"team": "ml"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"pool": "gpu"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]},
                        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]},
                    ],
                    "taints": [{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                },
            },
            "limits": {"nvidia.com/gpu": "3"},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m", "budgets": [{"nodes": "1"}]},
        },
    }

    assert objects["kubernetes:monitoring.coreos.com/v1:ServiceMonitor pool-dcgm-service-monitor"] == {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "dcgm-exporter", "namespace": "gpu-system", "labels": {"team": "ml", "release": "prom"}},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}},
            "namespaceSelector": {"matchNames": ["gpu-system"]},
            "endpoints": [{"port": "metrics", "interval": "30s"}],
        },
    }
    # Prometheus, in the namespace another resource named, is the one peer admitted to the node agents.
    assert objects["kubernetes:networking.k8s.io/v1:NetworkPolicy pool-system-network-policy"] == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "metrics-only", "namespace": "gpu-system", "labels": {"team": "ml"}},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}}],
                    "ports": [{"protocol": "TCP", "port": 9400}],
                }
            ],
        },
    }

    assert objects["kubernetes:scheduling.k8s.io/v1:PriorityClass pool-batch-priority"] == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "inference-batch", "labels": {"team": "ml"}},
        "value": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "Batch and dev GPU work: below inference serving.",
    }
    assert objects["kubernetes:scheduling.k8s.io/v1:PriorityClass pool-overprovisioning-priority"] == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "inference-overprovisioning", "labels": {"team": "ml"}},
        "value": -10,
        "preemptionPolicy": "Never",
        "description": "Placeholders any pod may evict.",
    }
    placeholders = objects["kubernetes:apps/v1:Deployment pool-overprovisioning"]
    assert placeholders["metadata"] == {
        "name": "gpu-overprovisioning",
        "namespace": "inference",
        "labels": {"team": "ml"},
    }
    assert placeholders["spec"]["template"]["spec"]["priorityClassName"] == "inference-overprovisioning"


def test_defaults_leave_labels_out_and_let_prometheus_pick_the_interval() -> None:
    pool = GpuPoolConfig.model_validate(
        {
            "minNodes": 1,
            "maxNodes": 2,
            "autoscaler": "cluster-autoscaler",
            "clusterAutoscaler": {"cloudProvider": "aws", "nodeGroups": ["gpu-asg"]},
            "dcgmExporter": True,
        }
    )
    objects = children(run_alone(lambda: GpuNodePool("pool", GpuNodePoolArgs(pool=pool, workload_namespace="ml"))))

    monitor = objects["kubernetes:monitoring.coreos.com/v1:ServiceMonitor pool-dcgm-service-monitor"]
    assert monitor["metadata"] == {"name": "dcgm-exporter", "namespace": "gpu-system"}
    assert monitor["spec"]["endpoints"] == [{"port": "metrics"}]
    policy = objects["kubernetes:networking.k8s.io/v1:NetworkPolicy pool-system-network-policy"]
    assert policy["spec"]["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    role = objects["kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding pool-autoscaler-binding"]
    assert role["metadata"] == {"name": "ml-cluster-autoscaler"}
    assert role["roleRef"]["name"] == "ml-cluster-autoscaler"
    autoscaler = objects["kubernetes:apps/v1:Deployment pool-autoscaler"]["spec"]["template"]["spec"]["containers"][0]
    assert autoscaler["image"] == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0"
    assert "--nodes=1:2:gpu-asg" in autoscaler["args"]


def test_a_pool_another_stack_manages_gets_only_priorities_and_node_patches() -> None:
    pool = GpuPoolConfig.model_validate(
        {"minNodes": 1, "maxNodes": 1, "manage": False, "staticNodes": ["node-a"], "dcgmExporter": True}
    )
    objects = children(run_alone(lambda: GpuNodePool("pool", GpuNodePoolArgs(pool=pool, workload_namespace="ml"))))

    assert objects == {
        "kubernetes:scheduling.k8s.io/v1:PriorityClass pool-batch-priority": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "ml-batch"},
            "value": 1000,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "Batch and dev GPU work: below inference serving.",
        },
        "kubernetes:core/v1:NodePatch pool-node-node-a": {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-a", "labels": {"triton-platform/gpu-pool": "inference"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        },
    }
