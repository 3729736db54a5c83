"""The GPU pool's nodes as the builders read them: the placement they offer (`pool_placement`, what TritonServing
places its pods by; gpu_pool_contract.py), the taints a Node and a Karpenter NodePool write (`node_taints`), and
the most GPUs they hold together (`max_gpus`)."""

from triton_platform.gpu_pool.gpu_node_pool_args import GpuNodePoolArgs
from triton_platform.gpu_pool.gpu_pool_contract import PoolPlacement, Toleration


def pool_placement(pool: GpuNodePoolArgs) -> PoolPlacement:
    """The placement a pool offers: its node labels, a toleration for each taint, and its GPU resource."""
    tolerations: list[Toleration] = [
        {"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]}
        if t["value"]
        else {"key": t["key"], "operator": "Exists", "effect": t["effect"]}
        for t in pool["taints"]
    ]
    return {
        "node_selector": dict(pool["node_labels"]),
        "tolerations": tolerations,
        "gpu_resource": pool["resource_name"],
    }


def node_taints(pool: GpuNodePoolArgs) -> list[dict[str, str]]:
    """The taints of the pool's nodes as a Node's `spec.taints` and a NodePool's template write them."""
    return [{"key": t["key"], "value": t["value"], "effect": t["effect"]} for t in pool["taints"]]


def max_gpus(pool: GpuNodePoolArgs) -> int:
    """The most GPUs the pool's nodes hold together: `max_nodes` x `gpus_per_node`."""
    return pool["max_nodes"] * pool["gpus_per_node"]
