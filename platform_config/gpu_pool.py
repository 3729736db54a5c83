"""`triton-platform:gpuPool`: the GPU nodes, their device plugin, autoscaler and spare capacity."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from platform_config.component_fields import from_component
from platform_config.types import (
    Image,
    KeyProblemError,
    LabelKey,
    Labels,
    LabelValue,
    NodeDelay,
    ObjectName,
    Strict,
    within,
)
from triton_platform.formats import GO_DURATION_OR_NEVER
from triton_platform.gpu_node_pool_args import ClusterAutoscalerSettings as ClusterAutoscalerArgs
from triton_platform.gpu_node_pool_args import DevicePluginSettings as DevicePluginArgs
from triton_platform.gpu_node_pool_args import GpuNodePoolArgs, default_min_nodes
from triton_platform.gpu_node_pool_args import KarpenterSettings as KarpenterArgs
from triton_platform.gpu_node_pool_args import Taint as TaintArgs


class Taint(Strict):
    """A node taint; Triton pods get the matching toleration."""

    key: LabelKey = from_component(TaintArgs, "key")
    """Taint key."""

    value: LabelValue = from_component(TaintArgs, "value")
    """Taint value."""

    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = from_component(TaintArgs, "effect")
    """What the taint does to pods that do not tolerate it."""


class KarpenterPool(Strict):
    """A Karpenter `karpenter.sh/v1` NodePool for the GPU nodes, with the node class of `cluster.platform` (`EC2NodeClass` on eks, `AKSNodeClass` on aks)."""

    instance_families: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9]+$")]] = []
    """Instance families: on eks EC2 families such as `g5`, `p4d` (`karpenter.k8s.aws/instance-family`), on aks VM families such as `N` (`karpenter.azure.com/sku-family`)."""

    gpu_names: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9-]+$")]] = []
    """GPU models: on eks `a10g`, `l4` (`karpenter.k8s.aws/instance-gpu-name`), on aks `A100` (`karpenter.azure.com/sku-gpu-name`). Set this or `instanceFamilies`."""

    capacity_types: list[Literal["on-demand", "spot", "reserved"]] = from_component(KarpenterArgs, "capacity_types")
    """`karpenter.sh/capacity-type` values the pool may launch."""

    node_class: ObjectName = from_component(KarpenterArgs, "node_class")
    """Name of the node class (`EC2NodeClass` on eks, `AKSNodeClass` on aks) the nodes use; the cluster provides it."""

    consolidate_after: NodeDelay = from_component(KarpenterArgs, "consolidate_after")
    """How long a node must be empty before Karpenter removes it (the karpenter.sh/v1 NodePool's `disruption.consolidateAfter`); 10m matches cluster-autoscaler's default `--scale-down-unneeded-time`; 0s-24h."""

    expire_after: Annotated[str, Field(pattern=GO_DURATION_OR_NEVER), within("1h", "8760h", "a node lifetime")] = (
        from_component(KarpenterArgs, "expire_after")
    )
    """Node lifetime before Karpenter replaces it (fresh AMIs), 1h-8760h; `Never` keeps nodes until they are empty."""

    @model_validator(mode="after")
    def _identifies_gpus(self) -> KarpenterPool:
        if not self.instance_families and not self.gpu_names:
            raise ValueError("set instanceFamilies or gpuNames: without one Karpenter may launch nodes without GPUs")
        return self


class ClusterAutoscalerPool(Strict):
    """The Kubernetes cluster-autoscaler, scaling existing node groups."""

    cloud_provider: Literal["aws", "gce", "azure"]
    """`--cloud-provider`."""

    node_groups: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    """Node group names (ASG, MIG or VMSS); each is bounded by `minNodes`-`maxNodes` (`--nodes`)."""

    image: Image = from_component(ClusterAutoscalerArgs, "image")
    """cluster-autoscaler image, pinned; match its minor version to the cluster's."""

    scale_down_delay_after_add: NodeDelay = from_component(ClusterAutoscalerArgs, "scale_down_delay_after_add")
    """`--scale-down-delay-after-add`; 10m is cluster-autoscaler's own default (kubernetes/autoscaler, cluster-autoscaler/FAQ.md, "What are the parameters to CA?"); 0s-24h."""

    scale_down_delay_after_delete: NodeDelay = from_component(ClusterAutoscalerArgs, "scale_down_delay_after_delete")
    """`--scale-down-delay-after-delete`; cluster-autoscaler's own default is its scan interval (10s), and 2m lets the cluster settle after a removal before the next; 0s-24h."""

    scale_down_unneeded_time: NodeDelay = from_component(ClusterAutoscalerArgs, "scale_down_unneeded_time")
    """`--scale-down-unneeded-time`; 10m is cluster-autoscaler's own default (cluster-autoscaler/FAQ.md); 0s-24h."""

    service_account_annotations: dict[LabelKey, str] = {}
    """Annotations of its ServiceAccount, e.g. `eks.amazonaws.com/role-arn` for the cloud API permissions."""


class DevicePlugin(Strict):
    """The NVIDIA device plugin DaemonSet that advertises `nvidia.com/gpu`."""

    image: Image = from_component(DevicePluginArgs, "image")
    """Plugin image, pinned."""

    sharing: Literal["none", "time-slicing", "mig"] = from_component(DevicePluginArgs, "sharing")
    """GPU sharing: `time-slicing` lets small models share a GPU (dev); `mig` partitions large GPUs (production)."""

    time_slicing_replicas: int = from_component(DevicePluginArgs, "time_slicing_replicas")
    """With time-slicing, how many pods share each GPU."""

    mig_strategy: Literal["single"] = from_component(DevicePluginArgs, "mig_strategy")
    """With MIG, the plugin's strategy: `single` advertises identical MIG slices as `nvidia.com/gpu`, which Triton pods request (`mixed` would advertise `nvidia.com/mig-*` resources instead)."""


class GpuPoolConfig(Strict):
    """The GPU node pool every Triton pod runs on."""

    gpus_per_node: int = from_component(GpuNodePoolArgs, "gpus_per_node")
    """Physical GPUs on each node of the pool. With time-slicing the device plugin advertises each several times; the capacity check counts physical GPUs (conservative), Karpenter's limit counts advertised ones."""

    # The component's default depends on the autoscaler (`default_min_nodes`), filled in before validation.
    min_nodes: int = from_component(
        GpuNodePoolArgs, "min_nodes", default=0, json_schema_extra={"default_text": "`maxNodes` if static, else `0`"}
    )
    """Nodes kept even when idle: the cluster-autoscaler's lower bound. Karpenter has no node minimum (must be 0; warm capacity comes from `replicas.min` and `overprovisioningReplicas`); a static pool's size is fixed (must equal `maxNodes`)."""

    manage: bool = from_component(GpuNodePoolArgs, "manage")
    """Create the cluster-level pool objects (the `gpu-system` namespace, device plugin, node autoscaler, DCGM exporter). Exactly one stack per cluster may; others set false and only use the pool."""

    max_nodes: int = from_component(GpuNodePoolArgs, "max_nodes")
    """Ceiling of the node autoscaler. With `gpusPerNode` it bounds how many GPUs all Triton replicas together may ask for. Required."""

    resource_name: Literal["nvidia.com/gpu"] = from_component(GpuNodePoolArgs, "resource_name")
    """Extended resource the NVIDIA device plugin advertises."""

    node_labels: Labels = from_component(GpuNodePoolArgs, "node_labels")
    """Labels every node of the pool carries; Triton pods select on them."""

    taints: list[Taint] = from_component(GpuNodePoolArgs, "taints")
    """Taints of the pool's nodes, which keep other workloads off the GPUs; Triton pods tolerate them."""

    autoscaler: Literal["karpenter", "cluster-autoscaler", "external", "static"] = from_component(
        GpuNodePoolArgs, "autoscaler"
    )
    """Node autoscaling: a Karpenter NodePool (on `cluster.platform` eks or aks), the cluster-autoscaler, `external` (the cloud scales the node pool: GKE node-pool autoscaling or a ComputeClass, AKS's cluster autoscaler; nothing in-cluster, `minNodes`-`maxNodes` state its bounds), or a fixed pool of existing nodes."""

    karpenter: KarpenterPool | None = None
    """The NodePool, for autoscaler `karpenter`."""

    cluster_autoscaler: ClusterAutoscalerPool | None = None
    """The autoscaler, for `cluster-autoscaler`."""

    static_nodes: list[ObjectName] = from_component(GpuNodePoolArgs, "static_nodes")
    """For `static`: existing nodes to label and taint (NodePatch); empty if they already carry `nodeLabels` and `taints`."""

    device_plugin: DevicePlugin = DevicePlugin()
    """The NVIDIA device plugin."""

    overprovisioning_replicas: int = from_component(GpuNodePoolArgs, "overprovisioning_replicas")
    """Low-priority placeholder pods holding a GPU each, evicted the moment Triton needs the GPU: warm spare nodes that cut cold starts."""

    dcgm_exporter: bool = from_component(GpuNodePoolArgs, "dcgm_exporter")
    """Run NVIDIA's DCGM exporter DaemonSet (with a ServiceMonitor) for GPU metrics beyond Triton's own; with `manage`, this stack's monitoring then adds the GPU health alerts (XID, ECC, row remapping, slowdowns) and dashboard panels."""

    dcgm_exporter_image: Image = from_component(GpuNodePoolArgs, "dcgm_exporter_image")
    """DCGM exporter image, pinned."""

    overprovisioning_image: Image = from_component(GpuNodePoolArgs, "overprovisioning_image")
    """Image of the `overprovisioningReplicas` placeholder pods, pinned: they only hold a GPU, so the pause image."""

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

    @model_validator(mode="after")
    def _node_bounds(self) -> GpuPoolConfig:
        if self.min_nodes > self.max_nodes:
            raise KeyProblemError(
                "minNodes", f"{self.min_nodes} is above maxNodes ({self.max_nodes}); minNodes must be <= maxNodes"
            )
        needs = {"karpenter": self.karpenter, "cluster-autoscaler": self.cluster_autoscaler}
        for mode, settings in needs.items():
            key = "karpenter" if mode == "karpenter" else "clusterAutoscaler"
            if self.autoscaler == mode and settings is None:
                raise KeyProblemError(key, f"required key is missing: autoscaler {mode!r} needs its settings")
            if self.autoscaler != mode and settings is not None:
                raise KeyProblemError(key, f"applies only to autoscaler {mode!r}, not {self.autoscaler!r}")
        if self.autoscaler != "static" and self.static_nodes:
            raise KeyProblemError("staticNodes", f"applies only to autoscaler 'static', not {self.autoscaler!r}")
        if self.autoscaler == "karpenter" and self.min_nodes:
            raise KeyProblemError(
                "minNodes",
                f"{self.min_nodes}, but a Karpenter NodePool has no node minimum; set 0 and keep warm capacity with "
                "the deployments' replicas.min or overprovisioningReplicas",
            )
        if self.autoscaler == "static" and self.min_nodes != self.max_nodes:
            raise KeyProblemError(
                "minNodes",
                f"{self.min_nodes}, but a static pool has a fixed size; set minNodes = maxNodes ({self.max_nodes})",
            )
        return self

    @property
    def max_gpus(self) -> int:
        return self.max_nodes * self.gpus_per_node
