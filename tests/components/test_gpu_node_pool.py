"""`GpuNodePool` built alone, with hand-written args and no stack file, under Pulumi's public mocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime.mocks import MockMonitor

from tests.components.mocks import RecordingMocks, install, pulumi_test
from triton_platform.arg_problems import ArgsError
from triton_platform.gpu_node_pool import GpuNodePool
from triton_platform.gpu_node_pool_args import DevicePlugin, GpuNodePoolArgs, NodeTaint, Pool, pool_of

POOL_TYPE = "triton-platform:index:GpuNodePool"
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
    built: list[GpuNodePool] = []

    def program() -> None:
        metrics = k8s.core.v1.Namespace("metrics", metadata={"name": "observability"})
        args: GpuNodePoolArgs = {
            "workload_namespace": "inference",
            "max_nodes": 3,
            "node_labels": {"pool": "gpu"},
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            "autoscaler": "karpenter",
            "karpenter": {"gpu_names": ["l4"]},
            "overprovisioning_replicas": 1,
            "dcgm_exporter": True,
            "labels": {"team": "ml"},
            "image_digests": {"nvcr.io/nvidia/k8s-device-plugin:v0.17.0": PLUGIN_DIGEST},
            "metrics_namespace": metrics.metadata.name,
            "metrics_selector_labels": {"release": "prom"},
            "scrape_interval": "30s",
        }
        built.append(GpuNodePool("pool", args))

    objects = children(run_alone(program))

    assert sorted(objects) == [
        "kubernetes:apps/v1:DaemonSet pool-dcgm-exporter",
        "kubernetes:apps/v1:DaemonSet pool-device-plugin",
        "kubernetes:apps/v1:Deployment pool-overprovisioning",
        "kubernetes:core/v1:ConfigMap pool-dcgm-counters",
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
    args: GpuNodePoolArgs = {
        "workload_namespace": "ml",
        "min_nodes": 1,
        "max_nodes": 2,
        "autoscaler": "cluster-autoscaler",
        "cluster_autoscaler": {"cloud_provider": "aws", "node_groups": ["gpu-asg"]},
        "dcgm_exporter": True,
    }
    objects = children(run_alone(lambda: GpuNodePool("pool", args)))

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
    args: GpuNodePoolArgs = {
        "workload_namespace": "ml",
        "min_nodes": 1,
        "max_nodes": 1,
        "manage": False,
        "static_nodes": ["node-a"],
        "dcgm_exporter": True,
    }
    objects = children(run_alone(lambda: GpuNodePool("pool", args)))

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


def test_on_a_gpu_operator_cluster_the_pool_only_scrapes_the_operators_exporter() -> None:
    args: GpuNodePoolArgs = {
        "workload_namespace": "ml",
        "min_nodes": 2,
        "max_nodes": 2,
        "gpu_software": "gpu-operator",
        "gpu_operator_namespace": "nvidia-gpu-operator",
        "metrics_selector_labels": {"release": "prometheus"},
        "scrape_interval": "30s",
    }
    objects = children(run_alone(lambda: GpuNodePool("pool", args)))

    assert sorted(objects) == [
        "kubernetes:core/v1:Namespace pool-system-namespace",
        "kubernetes:monitoring.coreos.com/v1:ServiceMonitor pool-gpu-operator-dcgm-monitor",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy pool-system-deny-egress",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy pool-system-network-policy",
        "kubernetes:scheduling.k8s.io/v1:PriorityClass pool-batch-priority",
    ]
    assert objects["kubernetes:monitoring.coreos.com/v1:ServiceMonitor pool-gpu-operator-dcgm-monitor"] == {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {
            "name": "gpu-operator-dcgm-exporter",
            "namespace": "gpu-system",
            "labels": {"release": "prometheus"},
        },
        "spec": {
            "selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
            "namespaceSelector": {"matchNames": ["nvidia-gpu-operator"]},
            "endpoints": [{"port": "gpu-metrics", "path": "/metrics", "interval": "30s"}],
        },
    }


def test_where_the_cloud_runs_the_gpu_software_and_scales_the_pool_nothing_cluster_level_is_made() -> None:
    args: GpuNodePoolArgs = {
        "workload_namespace": "ml",
        "max_nodes": 4,
        "autoscaler": "external",
        "gpu_software": "cloud",
        "node_labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"},
    }
    objects = children(run_alone(lambda: GpuNodePool("pool", args)))

    assert sorted(objects) == ["kubernetes:scheduling.k8s.io/v1:PriorityClass pool-batch-priority"]


def test_an_aks_node_pool_uses_the_aks_node_class_and_its_sku_labels() -> None:
    args: GpuNodePoolArgs = {
        "workload_namespace": "ml",
        "max_nodes": 3,
        "gpus_per_node": 2,
        "autoscaler": "karpenter",
        "karpenter": {"node_class_kind": "AKSNodeClass", "gpu_names": ["A100"], "instance_families": ["N"]},
    }
    objects = children(run_alone(lambda: GpuNodePool("pool", args)))

    template = objects["kubernetes:karpenter.sh/v1:NodePool pool-node-pool"]["spec"]["template"]["spec"]
    assert template["nodeClassRef"] == {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}
    assert template["requirements"] == [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.azure.com/sku-gpu-count", "operator": "In", "values": ["2"]},
        {"key": "karpenter.azure.com/sku-family", "operator": "In", "values": ["N"]},
        {"key": "karpenter.azure.com/sku-gpu-name", "operator": "In", "values": ["A100"]},
    ]


def test_outputs_whole_floats_and_defaults() -> None:
    # As another Pulumi language sends them: whole numbers as floats, the optional keys absent.
    built: list[GpuNodePool] = []
    args: Any = {"workload_namespace": "ml", "min_nodes": 2.0, "max_nodes": 2.0, "gpus_per_node": 4.0}
    run_alone(lambda: built.append(GpuNodePool("pool", args)))
    assert built[0].max_gpus == 8
    assert built[0].placement == {
        "node_selector": {"triton-platform/gpu-pool": "inference"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}],
        "gpu_resource": "nvidia.com/gpu",
    }
    assert pool_of("pool", args) == Pool(
        workload_namespace="ml",
        max_nodes=2,
        gpus_per_node=4,
        min_nodes=2,
        manage=True,
        resource_name="nvidia.com/gpu",
        node_labels={"triton-platform/gpu-pool": "inference"},
        taints=(NodeTaint("nvidia.com/gpu", "present", "NoSchedule"),),
        autoscaler="static",
        karpenter=None,
        cluster_autoscaler=None,
        static_nodes=(),
        gpu_software="pool",
        gpu_operator_namespace="gpu-operator",
        device_plugin=DevicePlugin("nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "none", 4, "single"),
        overprovisioning_replicas=0,
        overprovisioning_image="registry.k8s.io/pause:3.10",
        dcgm_exporter=False,
        dcgm_exporter_image="nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04",
        labels={},
        image_digests={},
        metrics_namespace="monitoring",
        metrics_selector_labels={},
        scrape_interval=None,
    )


def test_the_component_refuses_wrong_args_with_every_problem_at_once() -> None:
    args: Any = {"workload_namespace": "ml", "max_nodes": 2, "autoscaler": "gke-autopilot", "gpus_per_node": 1.5}
    with pytest.raises(ArgsError) as error:
        run_alone(lambda: GpuNodePool("pool", args))
    assert str(error.value) == (
        "GpuNodePool pool: args.gpus_per_node: 1.5 is not a whole number\n"
        "GpuNodePool pool: args.autoscaler: 'gke-autopilot' is not one of static, karpenter, cluster-autoscaler, external"
    )


STATIC = {"workload_namespace": "ml", "min_nodes": 2, "max_nodes": 2}
KARPENTER = {"workload_namespace": "ml", "max_nodes": 2, "autoscaler": "karpenter", "karpenter": {"gpu_names": ["l4"]}}
AUTOSCALER = {
    "workload_namespace": "ml",
    "max_nodes": 2,
    "autoscaler": "cluster-autoscaler",
    "cluster_autoscaler": {"cloud_provider": "aws", "node_groups": ["gpu"]},
}


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`base` with `changes`: a nested dict is merged key by key, a None value removes the key."""
    out = dict(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _with(out[key], **value)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        (
            _with(STATIC, workload_namespace=None, max_nodes=None, min_nodes=0),
            ["args.max_nodes: missing (required)", "args.workload_namespace: missing (required)"],
        ),
        (
            _with(STATIC, max_node=3),
            [
                "args.max_node: unknown key; known keys: autoscaler, cluster_autoscaler, dcgm_exporter, "
                "dcgm_exporter_image, device_plugin, gpu_operator_namespace, gpu_software, gpus_per_node, "
                "image_digests, karpenter, labels, manage, max_nodes, metrics_namespace, metrics_selector_labels, "
                "min_nodes, node_labels, overprovisioning_image, overprovisioning_replicas, resource_name, "
                "scrape_interval, static_nodes, taints, workload_namespace"
            ],
        ),
        (_with(STATIC, max_nodes=1001), ["args.max_nodes: 1001 is above the maximum 1000"]),
        (_with(STATIC, gpus_per_node=17), ["args.gpus_per_node: 17 is above the maximum 16"]),
        (_with(STATIC, min_nodes=-1), ["args.min_nodes: -1 is below the minimum 0"]),
        (
            _with(STATIC, overprovisioning_replicas=101),
            ["args.overprovisioning_replicas: 101 is above the maximum 100"],
        ),
        (
            _with(STATIC, resource_name="amd.com/gpu"),
            ["args.resource_name: 'amd.com/gpu' is not one of nvidia.com/gpu"],
        ),
        (
            _with(STATIC, taints=[{"value": "x"}, {"key": "gpu", "effect": "NoRun"}]),
            [
                "args.taints[0].key: missing (required)",
                "args.taints[1].effect: 'NoRun' is not one of NoSchedule, PreferNoSchedule, NoExecute",
            ],
        ),
        (
            _with(KARPENTER, karpenter={"gpu_names": None}),
            ["args.karpenter: set instance_families or gpu_names: without one Karpenter may launch nodes without GPUs"],
        ),
        (
            _with(KARPENTER, karpenter={"capacity_types": ["spot", "preemptible"]}),
            ["args.karpenter.capacity_types[1]: 'preemptible' is not one of on-demand, spot, reserved"],
        ),
        (
            _with(KARPENTER, karpenter={"expire_after": "3x", "consolidate_after": "Never"}),
            [
                "args.karpenter.consolidate_after: 'Never' is not a Go duration such as 10m or 1h30m",
                "args.karpenter.expire_after: '3x' is not a Go duration such as 720h or Never",
            ],
        ),
        (
            _with(AUTOSCALER, cluster_autoscaler={"cloud_provider": None, "node_groups": []}),
            [
                "args.cluster_autoscaler.cloud_provider: missing (required)",
                "args.cluster_autoscaler.node_groups: empty; name at least one node group",
            ],
        ),
        (
            _with(AUTOSCALER, cluster_autoscaler={"cloud_provider": "ibm", "node_groups": None}),
            [
                "args.cluster_autoscaler.node_groups: missing (required)",
                "args.cluster_autoscaler.cloud_provider: 'ibm' is not one of aws, gce, azure",
            ],
        ),
        (
            _with(AUTOSCALER, cluster_autoscaler={"scale_down_unneeded_time": "10 minutes"}),
            [
                "args.cluster_autoscaler.scale_down_unneeded_time: '10 minutes' is not a Go duration such as 10m or 1h30m"
            ],
        ),
        (
            _with(STATIC, device_plugin={"sharing": "mps", "mig_strategy": "mixed", "time_slicing_replicas": 1}),
            [
                "args.device_plugin.sharing: 'mps' is not one of none, time-slicing, mig",
                "args.device_plugin.time_slicing_replicas: 1 is below the minimum 2",
                "args.device_plugin.mig_strategy: 'mixed' is not one of single",
            ],
        ),
        (_with(STATIC, min_nodes=3), ["args.min_nodes: 3 is above max_nodes (2); it must be at most that"]),
        (
            _with(KARPENTER, karpenter=None),
            ["args.karpenter: missing (required): autoscaler 'karpenter' needs its settings"],
        ),
        (
            _with(STATIC, cluster_autoscaler=AUTOSCALER["cluster_autoscaler"]),
            ["args.cluster_autoscaler: applies only to autoscaler 'cluster-autoscaler', not 'static'"],
        ),
        (
            _with(AUTOSCALER, static_nodes=["node-a"]),
            ["args.static_nodes: applies only to autoscaler 'static', not 'cluster-autoscaler'"],
        ),
        (
            _with(KARPENTER, min_nodes=1),
            [
                "args.min_nodes: 1, but a Karpenter NodePool has no node minimum; set 0 and keep warm capacity with "
                "overprovisioning_replicas"
            ],
        ),
        (
            _with(STATIC, min_nodes=1),
            ["args.min_nodes: 1, but a static pool has a fixed size; set min_nodes = max_nodes (2)"],
        ),
        (
            _with(STATIC, gpu_software="gpu-operator", device_plugin={"sharing": "none"}, dcgm_exporter=True),
            [
                "args.device_plugin: the GPU Operator runs the device plugin (gpu_software 'gpu-operator')",
                "args.dcgm_exporter: true, but gpu_software is 'gpu-operator': the GPU Operator runs the DCGM exporter "
                "and the pool scrapes it; set false",
            ],
        ),
        (
            _with(STATIC, gpu_software="cloud", dcgm_exporter=True, gpu_operator_namespace="nvidia"),
            [
                "args.dcgm_exporter: true, but gpu_software is 'cloud': the cloud's nodes run no DCGM exporter of the "
                "pool's; set false",
                "args.gpu_operator_namespace: applies only to gpu_software 'gpu-operator', not 'cloud'",
            ],
        ),
        (
            _with(STATIC, gpu_software="driver"),
            ["args.gpu_software: 'driver' is not one of pool, cloud, gpu-operator"],
        ),
        (
            _with(KARPENTER, karpenter={"node_class_kind": "GCPNodeClass"}),
            ["args.karpenter.node_class_kind: 'GCPNodeClass' is not one of EC2NodeClass, AKSNodeClass"],
        ),
    ],
    ids=[
        "required",
        "unknown-key",
        "max-nodes",
        "gpus-per-node",
        "min-nodes",
        "overprovisioning-replicas",
        "resource-name",
        "taints",
        "karpenter-gpus",
        "capacity-types",
        "karpenter-durations",
        "autoscaler-required",
        "cloud-provider",
        "autoscaler-durations",
        "device-plugin",
        "min-above-max",
        "mode-needs-settings",
        "settings-of-another-mode",
        "static-nodes",
        "karpenter-minimum",
        "static-size",
        "gpu-operator-software",
        "cloud-software",
        "gpu-software",
        "node-class-kind",
    ],
)
def test_each_rule_names_the_arg_and_what_is_allowed(args: dict[str, Any], problems: list[str]) -> None:
    with pytest.raises(ArgsError) as error:
        pool_of("gpu", cast(GpuNodePoolArgs, args))
    assert str(error.value).splitlines() == [f"GpuNodePool gpu: {problem}" for problem in problems]
