"""What the GPU node pool promises the pods that run on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platform_config.schema import GpuPoolConfig


@dataclass(frozen=True)
class PoolContract:
    """Where GPU pods may run and what they must tolerate, derived from the pool's config."""

    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    gpu_resource: str
    gpus_per_node: int
    min_nodes: int
    max_nodes: int


def pool_contract(pool: GpuPoolConfig) -> PoolContract:
    tolerations = [
        {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
        if t.value
        else {"key": t.key, "operator": "Exists", "effect": t.effect}
        for t in pool.taints
    ]
    return PoolContract(
        node_selector=dict(pool.node_labels),
        tolerations=tolerations,
        gpu_resource=pool.resource_name,
        gpus_per_node=pool.gpus_per_node,
        min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes,
    )
