"""The Karpenter NodePool that scales the GPU pool, and for each Karpenter cloud provider (`NODE_CLASSES`) its
node class's API group and the instance labels the NodePool's requirements select on."""

from dataclasses import dataclass
from typing import Any

from triton_platform.gpu_pool.device_plugin import advertised_per_gpu
from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement
from triton_platform.gpu_pool.gpu_pool_nodes import max_gpus, node_taints
from triton_platform.gpu_pool.gpu_system import object_meta


@dataclass(frozen=True)
class NodeClassProvider:
    """A Karpenter cloud provider: its node class's API group and the instance labels it puts on nodes."""

    group: str
    gpu_count_label: str
    family_label: str
    gpu_name_label: str


NODE_CLASSES = {
    # aws/karpenter-provider-aws pkg/apis/v1 (LabelInstanceGPUCount, LabelInstanceFamily, LabelInstanceGPUName).
    "EC2NodeClass": NodeClassProvider(
        "karpenter.k8s.aws",
        "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-gpu-name",
    ),
    # Azure/karpenter-provider-azure pkg/apis/v1beta1 (LabelSKUGPUCount, LabelSKUFamily, LabelSKUGPUName).
    "AKSNodeClass": NodeClassProvider(
        "karpenter.azure.com",
        "karpenter.azure.com/sku-gpu-count",
        "karpenter.azure.com/sku-family",
        "karpenter.azure.com/sku-gpu-name",
    ),
}


def karpenter_node_pool(
    pool: GpuNodePoolArgs, placement: PoolPlacement, prefix: str, platform: dict[str, str]
) -> dict[str, Any]:
    """The Karpenter NodePool `<prefix>-gpu`, sized and shaped for the pool."""
    karpenter = pool["karpenter"]
    provider = NODE_CLASSES[karpenter["node_class_kind"]]
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(karpenter["capacity_types"])},
        # Exactly the node shape the pool is sized for: Karpenter would otherwise pack pods onto 4- or 8-GPU sizes.
        {"key": provider.gpu_count_label, "operator": "In", "values": [str(pool["gpus_per_node"])]},
    ]
    if karpenter["instance_families"]:
        requirements.append(
            {"key": provider.family_label, "operator": "In", "values": list(karpenter["instance_families"])}
        )
    if karpenter["gpu_names"]:
        requirements.append({"key": provider.gpu_name_label, "operator": "In", "values": list(karpenter["gpu_names"])})
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": object_meta(platform, f"{prefix}-gpu", None),
        "spec": {
            "template": {
                "metadata": {"labels": dict(placement["node_selector"])},
                "spec": {
                    "nodeClassRef": {
                        "group": provider.group,
                        "kind": karpenter["node_class_kind"],
                        "name": karpenter["node_class"],
                    },
                    "requirements": requirements,
                    "taints": node_taints(pool),
                    "expireAfter": karpenter["expire_after"],
                },
            },
            # The pool's ceiling, in GPUs as the nodes advertise them (Karpenter counts node capacity).
            "limits": {pool["resource_name"]: str(max_gpus(pool) * advertised_per_gpu(pool))},
            # Conservative scale-down: only empty nodes, after they stayed empty, one node at a time.
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": karpenter["consolidate_after"],
                "budgets": [{"nodes": "1"}],
            },
        },
    }
