"""`GpuNodePool` built alone, with hand-written args and no stack file, under Pulumi's public mocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime.mocks import MockMonitor

from tests.support.mocks import RecordingMocks, install, pulumi_test
from triton_platform.args.arg_problems import ArgProblems, ArgsError
from triton_platform.args.arg_schema import resolve_record
from triton_platform.gpu_pool.gpu_node_pool import GpuNodePool
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs, pool_of
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.gpu_pool.gpu_pool_nodes import pool_placement

POOL_TYPE = "triton-platform:index:GpuNodePool"
PLUGIN_DIGEST = "sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"


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
            "image_digests": {"nvcr.io/nvidia/k8s-device-plugin:v0.20.0": PLUGIN_DIGEST},
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
    assert pod["containers"][0]["image"] == f"nvcr.io/nvidia/k8s-device-plugin:v0.20.0@{PLUGIN_DIGEST}"

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
    assert autoscaler["image"] == "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"
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
    assert pool_of("pool", args) == {
        "workload_namespace": "ml",
        "max_nodes": 2,
        "gpus_per_node": 4,
        "min_nodes": 2,
        "manage": True,
        "resource_name": "nvidia.com/gpu",
        "node_labels": {"triton-platform/gpu-pool": "inference"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        "autoscaler": "static",
        "static_nodes": [],
        "gpu_software": "pool",
        "gpu_operator_namespace": "gpu-operator",
        "device_plugin": {
            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
            "sharing": "none",
            "time_slicing_replicas": 4,
            "mig_strategy": "single",
        },
        "overprovisioning_replicas": 0,
        "overprovisioning_image": "registry.k8s.io/pause:3.10",
        "dcgm_exporter": False,
        "dcgm_exporter_image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
        "labels": {},
        "image_digests": {},
        "metrics_namespace": "monitoring",
        "metrics_selector_labels": {},
    }


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
            ["args.workload_namespace: missing (required)", "args.max_nodes: missing (required)"],
        ),
        (
            _with(STATIC, max_node=3),
            [
                "args.max_node: unknown key; known keys: autoscaler, cluster_autoscaler, dcgm_exporter, "
                "dcgm_exporter_image, device_plugin, gpu_operator_namespace, gpu_software, gpus_per_node, "
                "image_digests, karpenter, kube_version, labels, manage, max_nodes, metrics_namespace, metrics_selector_labels, "
                "min_nodes, node_labels, overprovisioning_image, overprovisioning_replicas, resource_name, "
                "scrape_interval, static_nodes, taints, workload_namespace (did you mean 'max_nodes'?)"
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
                "args.karpenter.consolidate_after: must be a duration such as 90s, 10m or 1h30m (units h, m, s); "
                "got 'Never'",
                "args.karpenter.expire_after: must be a duration such as 720h (units h, m, s), or Never; got '3x'",
            ],
        ),
        (
            _with(AUTOSCALER, cluster_autoscaler={"cloud_provider": None, "node_groups": []}),
            [
                "args.cluster_autoscaler.cloud_provider: missing (required)",
                "args.cluster_autoscaler.node_groups: has 0 items; list at least 1",
            ],
        ),
        (
            _with(AUTOSCALER, cluster_autoscaler={"cloud_provider": "ibm", "node_groups": None}),
            [
                "args.cluster_autoscaler.cloud_provider: 'ibm' is not one of aws, gce, azure",
                "args.cluster_autoscaler.node_groups: missing (required)",
            ],
        ),
        (
            _with(AUTOSCALER, cluster_autoscaler={"scale_down_unneeded_time": "10 minutes"}),
            [
                "args.cluster_autoscaler.scale_down_unneeded_time: must be a duration such as 90s, 10m or 1h30m "
                "(units h, m, s); got '10 minutes'"
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


@pytest.mark.parametrize(
    ("version", "image"),
    [
        (None, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"),
        ("v1.33.2", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6"),
        ("v1.35.0", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.2"),
    ],
)
def test_the_autoscaler_image_follows_the_clusters_minor(version: str | None, image: str) -> None:
    args = AUTOSCALER if version is None else _with(AUTOSCALER, kube_version=version)
    assert pool_of("gpu", cast(GpuNodePoolArgs, args))["cluster_autoscaler"]["image"] == image


def test_an_autoscaler_of_another_minor_is_refused_naming_both() -> None:
    mine = "registry.example.com/mirror/cluster-autoscaler:v1.31.0"
    with pytest.raises(ArgsError) as error:
        pool_of(
            "gpu", cast(GpuNodePoolArgs, _with(AUTOSCALER, kube_version="v1.34.1", cluster_autoscaler={"image": mine}))
        )
    assert str(error.value) == (
        f"GpuNodePool gpu: args.cluster_autoscaler.image: {mine!r} is cluster-autoscaler 1.31, but the cluster runs "
        "Kubernetes 1.34 (v1.34.1); a cluster-autoscaler release supports only its own minor: use a v1.34 release "
        "(the default, registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5)"
    )
    # Of the cluster's minor, from a mirror, or a tag that names no version: taken as given.
    for image in ("registry.example.com/mirror/cluster-autoscaler:v1.34.0", "registry.example.com/ca:stable"):
        given = _with(AUTOSCALER, kube_version="v1.34.1", cluster_autoscaler={"image": image})
        assert pool_of("gpu", cast(GpuNodePoolArgs, given))["cluster_autoscaler"]["image"] == image


def test_a_minor_with_no_known_release_needs_an_image() -> None:
    with pytest.raises(ArgsError) as error:
        pool_of("gpu", cast(GpuNodePoolArgs, _with(AUTOSCALER, kube_version="v1.37.2")))
    assert str(error.value) == (
        "GpuNodePool gpu: args.cluster_autoscaler.image: not set, and no cluster-autoscaler release of Kubernetes "
        "1.37 (v1.37.2) is known here; set it to a v1.37 release of registry.k8s.io/autoscaling/cluster-autoscaler"
    )


def test_the_readme_minimal_args_build_a_static_pool_of_that_size() -> None:
    """README: `GpuNodePool("gpu", {"workload_namespace": "ml", "max_nodes": 2})`; a static pool's minimum is its
    maximum unless given."""
    built: list[GpuNodePool] = []
    objects = children(
        run_alone(lambda: built.append(GpuNodePool("gpu", {"workload_namespace": "ml", "max_nodes": 2})))
    )

    assert built[0].max_gpus == 2
    assert sorted(objects) == [
        "kubernetes:apps/v1:DaemonSet gpu-device-plugin",
        "kubernetes:core/v1:ConfigMap gpu-device-plugin-config",
        "kubernetes:core/v1:Namespace gpu-system-namespace",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy gpu-system-deny-egress",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy gpu-system-network-policy",
        "kubernetes:scheduling.k8s.io/v1:PriorityClass gpu-batch-priority",
    ]
    assert pool_of("gpu", {"workload_namespace": "ml", "max_nodes": 2})["min_nodes"] == 2


def test_a_scaled_pool_without_min_nodes_keeps_no_idle_node() -> None:
    args: GpuNodePoolArgs = {
        "workload_namespace": "ml",
        "max_nodes": 3,
        "autoscaler": "cluster-autoscaler",
        "cluster_autoscaler": {"cloud_provider": "aws", "node_groups": ["gpu-asg"]},
    }
    objects = children(run_alone(lambda: GpuNodePool("pool", args)))

    autoscaler = objects["kubernetes:apps/v1:Deployment pool-autoscaler"]["spec"]["template"]["spec"]["containers"][0]
    assert "--nodes=0:3:gpu-asg" in autoscaler["args"]


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        pytest.param(None, ["args: missing: give GpuNodePoolArgs, a mapping of its keys"], id="no-args"),
        pytest.param(
            [STATIC],
            [
                "args: [{'workload_namespace': 'ml', 'min_nodes': 2, 'max_nodes': 2}] is not a mapping of "
                "GpuNodePoolArgs's keys"
            ],
            id="list-for-the-args",
        ),
        pytest.param(
            _with(STATIC, node_labels=["pool"]), ["args.node_labels: ['pool'] is not a mapping"], id="list-for-a-map"
        ),
        pytest.param(
            _with(STATIC, device_plugin="time-slicing"),
            ["args.device_plugin: 'time-slicing' is not a mapping of DevicePluginSettings's keys"],
            id="string-for-a-settings-object",
        ),
        pytest.param(
            _with(STATIC, taints=["nvidia.com/gpu"]),
            ["args.taints[0]: 'nvidia.com/gpu' is not a mapping of Taint's keys"],
            id="string-for-a-taint",
        ),
        pytest.param(
            _with(KARPENTER, karpenter={"node_clas": "gpu"}),
            [
                "args.karpenter.node_clas: unknown key; known keys: capacity_types, consolidate_after, expire_after, "
                "gpu_names, instance_families, node_class, node_class_kind (did you mean 'node_class'?)"
            ],
            id="misspelt-nested-key",
        ),
        pytest.param(
            _with(AUTOSCALER, cluster_autoscaler={"scale_down_unneded_time": "5m"}),
            [
                "args.cluster_autoscaler.scale_down_unneded_time: unknown key; known keys: cloud_provider, image, "
                "node_groups, scale_down_delay_after_add, scale_down_delay_after_delete, scale_down_unneeded_time, "
                "service_account_annotations (did you mean 'scale_down_unneeded_time'?)"
            ],
            id="misspelt-autoscaler-key",
        ),
        pytest.param(
            _with(STATIC, static_nodes="node-1"),
            ["args.static_nodes: 'node-1' is a string, not a list; a list of one is ['node-1']"],
            id="string-for-static-nodes",
        ),
        pytest.param(
            _with(KARPENTER, karpenter={"capacity_types": "spot"}),
            ["args.karpenter.capacity_types: 'spot' is a string, not a list; a list of one is ['spot']"],
            id="string-for-capacity-types",
        ),
        pytest.param(
            _with(STATIC, manage="false", dcgm_exporter="true"),
            [
                "args.manage: 'false' is a string; write the boolean true or false, unquoted",
                "args.dcgm_exporter: 'true' is a string; write the boolean true or false, unquoted",
            ],
            id="string-booleans",
        ),
        pytest.param(
            _with(STATIC, max_nodes=2**31, min_nodes=2**31),
            [
                "args.max_nodes: 2147483648 is above the maximum 1000",
                "args.min_nodes: 2147483648 is above the maximum 1000",
            ],
            id="past-int32",
        ),
        pytest.param(
            _with(STATIC, max_nodes=float("inf"), overprovisioning_replicas=float("nan")),
            ["args.max_nodes: inf is not a whole number", "args.overprovisioning_replicas: nan is not a whole number"],
            id="infinite-numbers",
        ),
        pytest.param(
            _with(STATIC, gpus_per_node=0, device_plugin={"sharing": "time-slicing", "time_slicing_replicas": 65}),
            [
                "args.gpus_per_node: 0 is below the minimum 1",
                "args.device_plugin.time_slicing_replicas: 65 is above the maximum 64",
            ],
            id="bounds",
        ),
        pytest.param(
            _with(STATIC, overprovisioning_replicas=-1),
            ["args.overprovisioning_replicas: -1 is below the minimum 0"],
            id="negative-placeholders",
        ),
        pytest.param(
            _with(STATIC, labels={"app.kubernetes.io/name": "gpu", "pod-security.kubernetes.io/enforce": "baseline"}),
            [
                'args.labels["app.kubernetes.io/name"]: is a label the component sets itself on some of its objects; '
                "leave it out of labels",
                'args.labels["pod-security.kubernetes.io/enforce"]: is a label the component sets itself on some of its '
                "objects; leave it out of labels",
            ],
            id="labels-the-component-sets",
        ),
        pytest.param(
            _with(STATIC, static_nodes=["node-a", "node-b", "node-a"]),
            ["args.static_nodes: 'node-a' is listed twice; list each once"],
            id="static-node-twice",
        ),
        pytest.param(
            _with(
                STATIC,
                taints=[
                    {"key": "gpu", "value": "a"},
                    {"key": "gpu", "value": "b"},
                    {"key": "gpu", "effect": "NoExecute"},
                ],
            ),
            [
                "args.taints[1]: key 'gpu' with effect 'NoSchedule' is taints[0]'s too; a node takes each key and "
                "effect once"
            ],
            id="taint-twice",
        ),
        pytest.param(
            _with(
                STATIC,
                workload_namespace="ML Team",
                static_nodes=["Node_A"],
                gpu_software="gpu-operator",
                gpu_operator_namespace="gpu operator",
                metrics_namespace="Monitoring",
            ),
            [
                "args.workload_namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending "
                "with a letter or digit); got 'ML Team'",
                "args.static_nodes[0]: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', each "
                "starting and ending with a letter or digit, joined by single dots); got 'Node_A'",
                "args.gpu_operator_namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and "
                "ending with a letter or digit); got 'gpu operator'",
                "args.metrics_namespace: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending "
                "with a letter or digit); got 'Monitoring'",
            ],
            id="names",
        ),
        pytest.param(
            _with(
                STATIC,
                node_labels={"gpu pool": "inference"},
                taints=[{"key": "nvidia.com/gpu ", "value": "present!"}],
                labels={"team": "ML Team"},
                metrics_selector_labels={"release": "-prom"},
            ),
            [
                'args.node_labels["gpu pool"]: key must be a Kubernetes label key such as example.com/pool; '
                "got 'gpu pool'",
                "args.taints[0].key: must be a Kubernetes label key such as example.com/pool; got 'nvidia.com/gpu '",
                "args.taints[0].value: must be a Kubernetes label value (up to 63 letters, digits, '-', '_', '.'); "
                "got 'present!'",
                "args.labels.team: must be a Kubernetes label value (up to 63 letters, digits, '-', '_', '.'); "
                "got 'ML Team'",
                "args.metrics_selector_labels.release: must be a Kubernetes label value (up to 63 letters, digits, "
                "'-', '_', '.'); got '-prom'",
            ],
            id="labels-and-taints",
        ),
        pytest.param(
            _with(
                STATIC,
                device_plugin={"image": "NVCR.io/nvidia/Device-Plugin:v0.20.0"},
                overprovisioning_image="pause",
                dcgm_exporter_image="nvcr.io/nvidia/k8s/dcgm-exporter:latest",
            ),
            [
                "args.device_plugin.image: must be an image reference such as nvcr.io/nvidia/tritonserver:24.10-py3 "
                "(distribution/reference grammar: [registry/]repository[:tag][@digest], the repository in "
                "lowercase); got 'NVCR.io/nvidia/Device-Plugin:v0.20.0'",
                "args.overprovisioning_image: image 'pause' has no tag; pin a version such as "
                "nvcr.io/nvidia/tritonserver:24.10-py3",
                "args.dcgm_exporter_image: image 'nvcr.io/nvidia/k8s/dcgm-exporter:latest' uses 'latest'; pin a "
                "version tag or a digest",
            ],
            id="images",
        ),
        pytest.param(
            _with(
                AUTOSCALER,
                cluster_autoscaler={
                    "image": "registry.k8s.io/autoscaling/cluster-autoscaler@sha1:abc",
                    "service_account_annotations": {"role arn": "arn:aws:iam::1:role/ca"},
                },
            ),
            [
                "args.cluster_autoscaler.image: must be an image reference such as "
                "nvcr.io/nvidia/tritonserver:24.10-py3 (distribution/reference grammar: "
                "[registry/]repository[:tag][@digest], the repository in lowercase); got "
                "'registry.k8s.io/autoscaling/cluster-autoscaler@sha1:abc'",
                'args.cluster_autoscaler.service_account_annotations["role arn"]: key must be a Kubernetes label key '
                "such as example.com/pool; got 'role arn'",
            ],
            id="autoscaler-image-and-annotation",
        ),
        pytest.param(
            _with(STATIC, image_digests={"registry.k8s.io/pause:3.10": "sha256:abc"}),
            [
                'args.image_digests["registry.k8s.io/pause:3.10"]: must be a sha256 digest: sha256: and 64 lowercase '
                "hex digits; got 'sha256:abc'"
            ],
            id="digest",
        ),
        pytest.param(
            _with(KARPENTER, karpenter={"consolidate_after": "48h", "expire_after": "30m"}),
            [
                "args.karpenter.consolidate_after: '48h' is above 24h; a node scale-down delay must be between 0s "
                "and 24h",
                "args.karpenter.expire_after: '30m' is below 1h; a node lifetime must be between 1h and 8760h",
            ],
            id="karpenter-duration-bounds",
        ),
        pytest.param(
            _with(
                AUTOSCALER,
                cluster_autoscaler={"scale_down_delay_after_delete": "1d", "scale_down_unneeded_time": "25h"},
            ),
            [
                "args.cluster_autoscaler.scale_down_delay_after_delete: must be a duration such as 90s, 10m or 1h30m "
                "(units h, m, s); got '1d'",
                "args.cluster_autoscaler.scale_down_unneeded_time: '25h' is above 24h; a node scale-down delay must "
                "be between 0s and 24h",
            ],
            id="autoscaler-durations",
        ),
        pytest.param(
            _with(STATIC, scrape_interval="5m"),
            ["args.scrape_interval: '5m' is above 2m; a scrape interval must be between 1s and 2m"],
            id="scrape-interval",
        ),
        pytest.param(
            _with(KARPENTER, karpenter={"instance_families": ["g5.xlarge"], "gpu_names": ["a10g", "L4 Tensor"]}),
            [
                "args.karpenter.instance_families[0]: must be an instance family such as g5, p4d or N (letters and "
                "digits); got 'g5.xlarge'",
                "args.karpenter.gpu_names[1]: must be a GPU name such as a10g, l4 or A100 (letters, digits and '-'); "
                "got 'L4 Tensor'",
            ],
            id="instance-families-and-gpu-names",
        ),
        pytest.param(
            _with(KARPENTER, karpenter={"node_class": "Default"}),
            [
                "args.karpenter.node_class: must be a lowercase RFC 1123 subdomain (labels of a-z, 0-9 and '-', each "
                "starting and ending with a letter or digit, joined by single dots); got 'Default'"
            ],
            id="node-class",
        ),
        pytest.param(
            _with(AUTOSCALER, cluster_autoscaler={"node_groups": [""]}),
            ["args.cluster_autoscaler.node_groups[0]: is empty; give a value"],
            id="empty-node-group",
        ),
        pytest.param(
            _with(KARPENTER, karpenter="spot"),
            ["args.karpenter: 'spot' is not a mapping of KarpenterSettings's keys"],
            id="string-for-karpenter",
        ),
    ],
)
def test_args_of_the_wrong_shape_or_format_are_named(args: Any, problems: list[str]) -> None:
    """What a new user gets wrong, from Python or through the schema's types from another language; a bad value
    alone is named, not the rules across keys that would read it."""
    with pytest.raises(ArgsError) as error:
        pool_of("gpu", args)
    assert str(error.value).splitlines() == [f"GpuNodePool gpu: {problem}" for problem in problems]


OUTPUT_PROBLEM = (
    "is an Output, but this Arg must be a plain value known when the program runs (the component builds "
    "names, queries or files from it); pass the value itself"
)


def test_an_output_where_a_plain_value_is_needed_is_refused_by_name() -> None:
    def program() -> None:
        namespace = k8s.core.v1.Namespace("ml", metadata={"name": "ml"})
        GpuNodePool("pool", cast(GpuNodePoolArgs, {"workload_namespace": namespace.metadata.name, "max_nodes": 2}))

    with pytest.raises(ArgsError) as error:
        run_alone(program)
    assert str(error.value) == f"GpuNodePool pool: args.workload_namespace: {OUTPUT_PROBLEM}"


def test_a_placement_written_out_by_hand_is_checked_as_the_pools_own() -> None:
    """TritonServing's `pool` from another language: the contract's formats are declared beside it."""
    problems = ArgProblems("TritonServing", "t")
    placement = {
        "node_selector": {"gpu pool": "inference"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "In", "effect": "NoRun", "value": "a b"}, "gpu"],
        "gpu_resource": "nvidia gpu",
    }
    resolve_record(problems, ("pool",), placement, PoolPlacement)
    assert [problem.line(problems.prefix) for problem in problems.problems] == [
        'TritonServing t: args.pool.node_selector["gpu pool"]: key must be a Kubernetes label key such as '
        "example.com/pool; got 'gpu pool'",
        "TritonServing t: args.pool.tolerations[0].operator: 'In' is not one of Equal, Exists",
        "TritonServing t: args.pool.tolerations[0].effect: 'NoRun' is not one of NoSchedule, PreferNoSchedule, "
        "NoExecute",
        "TritonServing t: args.pool.tolerations[0].value: must be a Kubernetes label value (up to 63 letters, "
        "digits, '-', '_', '.'); got 'a b'",
        "TritonServing t: args.pool.tolerations[1]: 'gpu' is not a mapping of Toleration's keys",
        "TritonServing t: args.pool.gpu_resource: must be a Kubernetes label key such as example.com/pool; "
        "got 'nvidia gpu'",
    ]


def test_the_pools_own_placement_passes_the_contracts_formats() -> None:
    args = _with(STATIC, taints=[{"key": "nvidia.com/gpu"}, {"key": "dedicated", "value": "ml"}])
    pool = pool_of("gpu", cast(GpuNodePoolArgs, args))
    problems = ArgProblems("TritonServing", "t")
    resolve_record(problems, ("pool",), pool_placement(pool), PoolPlacement)
    assert problems.problems == []


# --- The cluster-autoscaler's workload identity (triton_platform/kube/workload_identity.py) ---------------------------

AZURE_CLIENT_ID = "0B1F5D63-7C1A-4F5E-9D2B-3A4C5E6F7A8B"


@pytest.mark.parametrize(
    ("annotations", "cloud", "problem"),
    [
        (
            {"eks.amazonaws.com/role-arn": "cluster-autoscaler"},
            "aws",
            "must be an IAM role ARN, arn:<partition>:iam::<12-digit account>:role/[<path>/]<name>; got "
            "'cluster-autoscaler'",
        ),
        (
            {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/"},
            "aws",
            "'arn:aws:iam::111122223333:role/' names no role: give the role's name after role/ (and its path, if "
            "any, before it)",
        ),
        (
            {"azure.workload.identity/client-id": AZURE_CLIENT_ID},
            "aws",
            "is an identity of cloud provider 'azure', but cloud_provider is 'aws'; give the identity of the cloud "
            "whose node groups it scales, or remove it",
        ),
    ],
    ids=["role-arn-no-arn", "role-arn-without-a-name", "identity-of-another-cloud"],
)
def test_the_autoscalers_identity_annotation_is_of_its_cloud_and_form(
    annotations: dict[str, str], cloud: str, problem: str
) -> None:
    args = _with(AUTOSCALER, cluster_autoscaler={"cloud_provider": cloud, "service_account_annotations": annotations})
    with pytest.raises(ArgsError) as error:
        pool_of("gpu", cast(GpuNodePoolArgs, args))
    [key] = annotations
    assert str(error.value) == (
        f'GpuNodePool gpu: args.cluster_autoscaler.service_account_annotations["{key}"]: {problem}'
    )


def test_an_azure_identity_labels_the_autoscalers_pods_for_its_webhook() -> None:
    annotations = {"azure.workload.identity/client-id": AZURE_CLIENT_ID}
    args = _with(AUTOSCALER, cluster_autoscaler={"cloud_provider": "azure", "service_account_annotations": annotations})
    objects = children(run_alone(lambda: GpuNodePool("pool", cast(GpuNodePoolArgs, args))))
    account = objects["kubernetes:core/v1:ServiceAccount pool-autoscaler-account"]
    assert account["metadata"]["annotations"] == annotations
    deployment = objects["kubernetes:apps/v1:Deployment pool-autoscaler"]["spec"]
    assert deployment["template"]["metadata"]["labels"] == {
        "azure.workload.identity/use": "true",
        "app.kubernetes.io/name": "cluster-autoscaler",
    }
    assert deployment["selector"]["matchLabels"] == {"app.kubernetes.io/name": "cluster-autoscaler"}
