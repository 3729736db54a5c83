"""The GPU node pool: device plugin, node autoscaling, priorities and warm spare capacity.

Builders take the checked Args (`pool_of`, triton_platform/gpu_pool/gpu_node_pool_args.py) and return plain manifests:
the `gpu-system` namespace (gpu_system.py), the device plugin (device_plugin.py), the Karpenter NodePool
(karpenter_node_pool.py), the cluster-autoscaler (cluster_autoscaler.py), the placeholder pods
(overprovisioning.py) and the DCGM exporter (dcgm_exporter.py). `pool_manifests` gathers them with the pool's
PriorityClasses; `GpuNodePool` wires them and exposes the pool placement (gpu_pool_nodes.py: where GPU pods
may run, what they tolerate, the GPU resource) that TritonServing uses. No `from __future__ import
annotations`: Pulumi infers the component's schema from its annotations as objects.
"""

from collections.abc import Mapping
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from triton_platform.args.component_types import type_token, with_former_type
from triton_platform.args.object_claims import claim
from triton_platform.gpu_pool.cluster_autoscaler import cluster_autoscaler_manifests
from triton_platform.gpu_pool.dcgm_exporter import dcgm_manifests, gpu_operator_dcgm_monitor, metrics_only_policy
from triton_platform.gpu_pool.device_plugin import device_plugin_manifests
from triton_platform.gpu_pool.gpu_node_pool_args import COMPONENT, GpuNodePoolArgs, pool_of
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.gpu_pool.gpu_pool_nodes import max_gpus, node_taints, pool_placement
from triton_platform.gpu_pool.gpu_system import SYSTEM_NAMESPACE, system_namespace_manifests
from triton_platform.gpu_pool.karpenter_node_pool import karpenter_node_pool
from triton_platform.gpu_pool.overprovisioning import overprovisioning_manifest
from triton_platform.kube.kubernetes_objects import create_object
from triton_platform.kube.priority_classes import priority_class

TYPE_TOKEN = type_token("GpuNodePool")
FORMER_TYPE_TOKEN = "triton-platform:gpu:GpuNodePool"
"""The type before the component package (component_types.py)."""
BATCH_PRIORITY, OVERPROVISIONING_PRIORITY = 1_000, -10
"""Batch work ranks below inference (100,000); placeholders below everything, so any pod evicts them."""


def pool_manifests(pool: GpuNodePoolArgs, placement: PoolPlacement) -> dict[str, dict[str, Any]]:
    """Every object of the GPU pool, by role, but for the static NodePatches and `metrics_only_policy`.

    Reads only the pool's plain values: `metrics_namespace` may be another resource's output.
    """
    platform, digests, prefix = pool["labels"], pool["image_digests"], pool["workload_namespace"]
    out: dict[str, dict[str, Any]] = {
        "batch-priority": priority_class(
            f"{prefix}-batch", BATCH_PRIORITY, "Batch and dev GPU work: below inference serving.", True, platform
        )
    }
    if pool["overprovisioning_replicas"]:
        out["overprovisioning-priority"] = priority_class(
            f"{prefix}-overprovisioning",
            OVERPROVISIONING_PRIORITY,
            "Placeholders any pod may evict.",
            False,
            platform,
        )
        out["overprovisioning"] = overprovisioning_manifest(pool, placement, prefix, platform, digests)
    if not pool["manage"]:
        return out  # another stack owns the cluster-level objects
    cluster_level: dict[str, dict[str, Any]] = {}
    if pool["gpu_software"] == "pool":
        cluster_level |= device_plugin_manifests(pool, placement, platform, digests)
    elif pool["gpu_software"] == "gpu-operator":
        cluster_level["gpu-operator-dcgm-monitor"] = gpu_operator_dcgm_monitor(pool)
    if pool["autoscaler"] == "karpenter":
        cluster_level["node-pool"] = karpenter_node_pool(pool, placement, prefix, platform)
    elif pool["autoscaler"] == "cluster-autoscaler":
        cluster_level |= cluster_autoscaler_manifests(pool, prefix, platform, digests)
    if pool["dcgm_exporter"]:
        cluster_level |= dcgm_manifests(
            pool,
            placement,
            platform=platform,
            digests=digests,
            selector_labels=pool["metrics_selector_labels"],
            scrape_interval=pool.get("scrape_interval"),
        )
    if any(m["metadata"].get("namespace") == SYSTEM_NAMESPACE for m in cluster_level.values()):
        # Where the cloud runs the node software and scales the pool (GKE), the namespace would stand empty.
        out |= system_namespace_manifests(platform)
    return out | cluster_level


def named_objects(pool: GpuNodePoolArgs, manifests: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """What the pool creates under its own names (`manifests`, from `pool_manifests`) and the static nodes it
    labels: patched, not created, but two pools patching one node would fight over its labels."""
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}} for node in pool["static_nodes"]]
    return [*manifests.values(), *nodes]


class GpuNodePool(pulumi.ComponentResource):
    """Device plugin, node autoscaling, priorities and spare capacity of the GPU pool. Its ServiceMonitor (with
    `dcgm_exporter`) waits for what the component's `opts.depends_on` names: give it the Prometheus Operator's
    chart when that is installed in the same `pulumi up` (its CRDs)."""

    placement: PoolPlacement
    """Where GPU pods may run, what they tolerate and the GPU resource: TritonServing places its pods by it."""

    max_gpus: int
    """The most GPUs the pool's nodes hold together: `max_nodes` x `gpus_per_node`."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        pool = pool_of(name, args)
        placement = pool_placement(pool)
        manifests = pool_manifests(pool, placement)
        claim(f"{COMPONENT} {name}", opts, named_objects(pool, manifests))
        super().__init__(TYPE_TOKEN, name, None, with_former_type(opts, FORMER_TYPE_TOKEN))
        child = pulumi.ResourceOptions(parent=self)
        self.placement = placement
        self.max_gpus = max_gpus(pool)
        after: list[pulumi.Resource] = []
        if "system-namespace" in manifests:
            after.append(create_object(f"{name}-system-namespace", manifests.pop("system-namespace"), child))
        in_system = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=after))
        # What the component waits for (the operator's CRDs) only its ServiceMonitor needs.
        waits = opts.depends_on if opts is not None and opts.depends_on is not None else []
        after_crds = pulumi.ResourceOptions.merge(in_system, pulumi.ResourceOptions(depends_on=waits))
        for role, manifest in manifests.items():
            create_object(f"{name}-{role}", manifest, after_crds if manifest["kind"] == "ServiceMonitor" else in_system)
        if after:
            # Prometheus's namespace may be another resource's output: the policy is built once it is known.
            policy = pulumi.Output.from_input(pool["metrics_namespace"]).apply(
                lambda namespace: metrics_only_policy(namespace, pool["labels"])
            )
            k8s.networking.v1.NetworkPolicy(
                f"{name}-system-network-policy", metadata=policy["metadata"], spec=policy["spec"], opts=in_system
            )
        taints: list[Any] = node_taints(pool)
        for node in pool["static_nodes"]:
            # A patch: the nodes stay the cluster's; Pulumi only owns these labels and taints.
            k8s.core.v1.NodePatch(
                f"{name}-node-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node, labels=dict(self.placement["node_selector"])),
                spec=k8s.core.v1.NodeSpecPatchArgs(taints=taints),
                opts=child,
            )
        self.register_outputs({"maxGpus": self.max_gpus, "placement": self.placement})
