"""`triton-platform:gpuPool`: the GPU nodes, their device plugin, autoscaler and spare capacity."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from platform_config.component_fields import arg_format, arg_unique, component_rule, from_component
from platform_config.types import (
    Strict,
)
from triton_platform.gpu_pool import gpu_node_pool_args
from triton_platform.gpu_pool.gpu_node_pool_args import default_min_nodes

# [[[cog
# import cog
# from platform_config.component_fields import stack_fields
# from triton_platform.gpu_pool import gpu_node_pool_args
# def fields(args_type, **options): cog.outl(stack_fields(args_type, **options))
# ]]]
# [[[end]]]


class Taint(Strict):
    """A node taint; Triton pods get the matching toleration."""

    # [[[cog fields(gpu_node_pool_args.Taint)]]]
    # fmt: off
    key: Annotated[str, arg_format(gpu_node_pool_args.Taint, "key")] = from_component(gpu_node_pool_args.Taint, "key")
    """Taint key, e.g. `nvidia.com/gpu`. Required."""

    value: Annotated[str, arg_format(gpu_node_pool_args.Taint, "value")] = from_component(gpu_node_pool_args.Taint, "value")
    """Taint value; when empty, pods tolerate the key with any value."""

    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = from_component(gpu_node_pool_args.Taint, "effect")
    """What the taint does to pods that do not tolerate it: `NoSchedule`, `PreferNoSchedule` or `NoExecute`."""
    # fmt: on
    # [[[end]]]


class KarpenterPool(Strict):
    """A Karpenter `karpenter.sh/v1` NodePool for the GPU nodes, with the node class of `cluster.platform` (`EC2NodeClass` on eks, `AKSNodeClass` on aks)."""

    # [[[cog fields(gpu_node_pool_args.KarpenterSettings, exclude=['node_class_kind'])]]]
    # fmt: off
    instance_families: list[Annotated[str, arg_format(gpu_node_pool_args.KarpenterSettings, "instance_families")]] = from_component(gpu_node_pool_args.KarpenterSettings, "instance_families")
    """Instance families, e.g. `g5`, `p4d` on AWS (`karpenter.k8s.aws/instance-family`), `N` on Azure (`karpenter.azure.com/sku-family`). Set this or `gpuNames`, or Karpenter may launch nodes without GPUs."""

    gpu_names: list[Annotated[str, arg_format(gpu_node_pool_args.KarpenterSettings, "gpu_names")]] = from_component(gpu_node_pool_args.KarpenterSettings, "gpu_names")
    """GPU models, e.g. `a10g`, `l4` on AWS (`karpenter.k8s.aws/instance-gpu-name`), `A100` on Azure (`karpenter.azure.com/sku-gpu-name`). Set this or `instanceFamilies`."""

    capacity_types: list[Literal["on-demand", "spot", "reserved"]] = from_component(gpu_node_pool_args.KarpenterSettings, "capacity_types")
    """`karpenter.sh/capacity-type` values the pool may launch: `on-demand`, `spot`, `reserved`."""

    node_class: Annotated[str, arg_format(gpu_node_pool_args.KarpenterSettings, "node_class")] = from_component(gpu_node_pool_args.KarpenterSettings, "node_class")
    """Name of the node class (of `nodeClassKind`) the nodes use."""

    consolidate_after: Annotated[str, arg_format(gpu_node_pool_args.KarpenterSettings, "consolidate_after")] = from_component(gpu_node_pool_args.KarpenterSettings, "consolidate_after")
    """How long a node must be empty before Karpenter removes it (the NodePool's `disruption.consolidateAfter`), a Go duration. The default is cluster-autoscaler's default `--scale-down-unneeded-time`."""

    expire_after: Annotated[str, arg_format(gpu_node_pool_args.KarpenterSettings, "expire_after")] = from_component(gpu_node_pool_args.KarpenterSettings, "expire_after")
    """Node lifetime before Karpenter replaces it (fresh AMIs), a Go duration; `Never` keeps nodes until they are empty."""
    # fmt: on
    # [[[end]]]


class ClusterAutoscalerPool(Strict):
    """The Kubernetes cluster-autoscaler, scaling existing node groups."""

    # [[[cog fields(gpu_node_pool_args.ClusterAutoscalerSettings)]]]
    # fmt: off
    cloud_provider: Literal["aws", "gce", "azure"] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "cloud_provider")
    """`--cloud-provider`: `aws`, `gce` or `azure`. Required."""

    node_groups: list[Annotated[str, Field(min_length=1)]] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "node_groups")
    """Node group names (ASG, MIG or VMSS), at least one; each is bounded by `minNodes`-`maxNodes` (`--nodes`). Required."""

    image: Annotated[str, arg_format(gpu_node_pool_args.ClusterAutoscalerSettings, "image")] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "image")
    """cluster-autoscaler image, pinned. cluster-autoscaler supports only its own Kubernetes minor: where the pool knows the cluster's version (`kubeVersion`), an image of another minor is refused. Unset, the newest release known here of the cluster's minor (`CLUSTER_AUTOSCALER_RELEASES`), else the default."""

    scale_down_delay_after_add: Annotated[str, arg_format(gpu_node_pool_args.ClusterAutoscalerSettings, "scale_down_delay_after_add")] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "scale_down_delay_after_add")
    """`--scale-down-delay-after-add`, a Go duration. The default is cluster-autoscaler's own."""

    scale_down_delay_after_delete: Annotated[str, arg_format(gpu_node_pool_args.ClusterAutoscalerSettings, "scale_down_delay_after_delete")] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "scale_down_delay_after_delete")
    """`--scale-down-delay-after-delete`, a Go duration. cluster-autoscaler's own default is its scan interval (10s); 2m lets the cluster settle after a removal before the next."""

    scale_down_unneeded_time: Annotated[str, arg_format(gpu_node_pool_args.ClusterAutoscalerSettings, "scale_down_unneeded_time")] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "scale_down_unneeded_time")
    """`--scale-down-unneeded-time`, a Go duration. The default is cluster-autoscaler's own."""

    service_account_annotations: dict[Annotated[str, arg_format(gpu_node_pool_args.ClusterAutoscalerSettings, "service_account_annotations", "key")], str] = from_component(gpu_node_pool_args.ClusterAutoscalerSettings, "service_account_annotations")
    """Annotations of its ServiceAccount, e.g. `eks.amazonaws.com/role-arn` for the cloud API permissions. A workload-identity annotation must name an identity of `cloudProvider`'s cloud, in its form; with `azure.workload.identity/client-id` its pods get the `azure.workload.identity/use: "true"` label."""
    # fmt: on
    # [[[end]]]


class DevicePlugin(Strict):
    """The NVIDIA device plugin DaemonSet that advertises `nvidia.com/gpu`."""

    # [[[cog fields(gpu_node_pool_args.DevicePluginSettings)]]]
    # fmt: off
    image: Annotated[str, arg_format(gpu_node_pool_args.DevicePluginSettings, "image")] = from_component(gpu_node_pool_args.DevicePluginSettings, "image")
    """Plugin image, pinned."""

    sharing: Literal["none", "time-slicing", "mig"] = from_component(gpu_node_pool_args.DevicePluginSettings, "sharing")
    """GPU sharing: `none`, `time-slicing` (small models share a GPU) or `mig` (large GPUs partitioned)."""

    time_slicing_replicas: int = from_component(gpu_node_pool_args.DevicePluginSettings, "time_slicing_replicas")
    """With time-slicing, how many pods share each GPU, 2-64."""

    mig_strategy: Literal["single"] = from_component(gpu_node_pool_args.DevicePluginSettings, "mig_strategy")
    """With MIG, the plugin's strategy: `single` advertises identical MIG slices as `nvidia.com/gpu`, which GPU pods request (the only one allowed: `mixed` would advertise `nvidia.com/mig-*` resources instead)."""
    # fmt: on
    # [[[end]]]


class GpuPoolConfig(Strict):
    """The GPU node pool every Triton pod runs on."""

    # The component's default depends on the autoscaler (`default_min_nodes`), filled in before validation.
    # [[[cog fields(gpu_node_pool_args.GpuNodePoolArgs, exclude=['workload_namespace', 'gpu_software', 'gpu_operator_namespace', 'labels', 'image_digests', 'metrics_namespace', 'metrics_selector_labels', 'scrape_interval', 'kube_version'], narrow={'min_nodes': 'default=0, json_schema_extra={"default_text": "`maxNodes` if static, else `0`"}'})]]]
    # fmt: off
    max_nodes: int = from_component(gpu_node_pool_args.GpuNodePoolArgs, "max_nodes")
    """Ceiling of the node autoscaler, 1-1000. With `gpusPerNode` it bounds how many GPUs the pool's workloads together may ask for. Required."""

    gpus_per_node: int = from_component(gpu_node_pool_args.GpuNodePoolArgs, "gpus_per_node")
    """Physical GPUs on each node, 1-16. With time-slicing the device plugin advertises each several times; Karpenter's limit counts advertised ones."""

    min_nodes: int = from_component(gpu_node_pool_args.GpuNodePoolArgs, "min_nodes", default=0, json_schema_extra={"default_text": "`maxNodes` if static, else `0`"})
    """Nodes kept even when idle: the cluster-autoscaler's lower bound, at most `maxNodes`. Karpenter has no node minimum (must be 0; warm capacity comes from `overprovisioningReplicas`); a static pool's size is fixed (must equal `maxNodes`). Default: `maxNodes` for autoscaler `static`, 0 otherwise."""

    manage: bool = from_component(gpu_node_pool_args.GpuNodePoolArgs, "manage")
    """Create the cluster-level pool objects (the `gpu-system` namespace, device plugin, node autoscaler, DCGM exporter), under fixed names. Exactly one pool per cluster may: two managing pools in one cluster would claim the same `gpu-system` objects (a second in the same program is refused, naming them). Others set false and only use the pool."""

    resource_name: Literal["nvidia.com/gpu"] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "resource_name")
    """Extended resource the NVIDIA device plugin advertises; only `nvidia.com/gpu`."""

    node_labels: dict[Annotated[str, arg_format(gpu_node_pool_args.GpuNodePoolArgs, "node_labels", "key")], Annotated[str, arg_format(gpu_node_pool_args.GpuNodePoolArgs, "node_labels")]] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "node_labels")
    """Labels every node of the pool carries; GPU pods select on them (`placement.node_selector`)."""

    taints: list[Taint] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "taints")
    """Taints of the pool's nodes, which keep other workloads off the GPUs; GPU pods tolerate them."""

    autoscaler: Literal["static", "karpenter", "cluster-autoscaler", "external"] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "autoscaler")
    """Node autoscaling: `karpenter` (a Karpenter NodePool, settings in `karpenter`), `cluster-autoscaler` (settings in `clusterAutoscaler`), `external` (the cloud scales the node pool: GKE node-pool autoscaling or a ComputeClass, AKS's managed cluster autoscaler; nothing in-cluster, `minNodes`-`maxNodes` state its bounds) or `static` (a fixed pool of existing nodes)."""

    karpenter: KarpenterPool | None = from_component(gpu_node_pool_args.GpuNodePoolArgs, "karpenter")
    """The NodePool, for autoscaler `karpenter` (required there, refused otherwise)."""

    cluster_autoscaler: ClusterAutoscalerPool | None = from_component(gpu_node_pool_args.GpuNodePoolArgs, "cluster_autoscaler")
    """The autoscaler, for `cluster-autoscaler` (required there, refused otherwise)."""

    static_nodes: Annotated[list[Annotated[str, arg_format(gpu_node_pool_args.GpuNodePoolArgs, "static_nodes")]], arg_unique(gpu_node_pool_args.GpuNodePoolArgs, "static_nodes")] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "static_nodes")
    """For autoscaler `static` only: existing nodes to label and taint (NodePatch). With none, the nodes already carry `nodeLabels` and `taints`."""

    device_plugin: DevicePlugin = from_component(gpu_node_pool_args.GpuNodePoolArgs, "device_plugin")
    """The NVIDIA device plugin, with `gpuSoftware: pool` only."""

    overprovisioning_replicas: int = from_component(gpu_node_pool_args.GpuNodePoolArgs, "overprovisioning_replicas")
    """Low-priority placeholder pods holding a GPU each, evicted the moment a workload needs the GPU: warm spare nodes that cut cold starts, 0-100."""

    overprovisioning_image: Annotated[str, arg_format(gpu_node_pool_args.GpuNodePoolArgs, "overprovisioning_image")] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "overprovisioning_image")
    """Image of the placeholder pods, pinned: they only hold a GPU, so the pause image (it must run as its nobody user, 65535)."""

    dcgm_exporter: bool = from_component(gpu_node_pool_args.GpuNodePoolArgs, "dcgm_exporter")
    """Run NVIDIA's DCGM exporter DaemonSet (with a ServiceMonitor) for GPU metrics, with the counters Monitoring's GPU health rules read (its `dcgmMetrics`) turned on; with `gpuSoftware: pool` only."""

    dcgm_exporter_image: Annotated[str, arg_format(gpu_node_pool_args.GpuNodePoolArgs, "dcgm_exporter_image")] = from_component(gpu_node_pool_args.GpuNodePoolArgs, "dcgm_exporter_image")
    """DCGM exporter image, pinned."""
    # fmt: on
    # [[[end]]]

    @model_validator(mode="before")
    @classmethod
    def _min_nodes_default(cls, data: Any) -> Any:
        # The component's default, which depends on the autoscaler: given here so both doors agree.
        if isinstance(data, dict) and "minNodes" not in data:
            most = data.get("maxNodes")
            return {
                **data,
                "minNodes": default_min_nodes(data.get("autoscaler", "static"), most if isinstance(most, int) else 0),
            }
        return data

    @property
    def max_gpus(self) -> int:
        return self.max_nodes * self.gpus_per_node

    _rules = component_rule(lambda problems, _, pool: gpu_node_pool_args.pool_rules(problems, pool, pool))
