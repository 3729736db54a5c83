"""What the GPU node pool promises the pods that run on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.gpu_node_pool_config import GpuPoolConfig


@dataclass(frozen=True)
class PoolContract:
    """Where GPU pods may run and what they must tolerate, derived from the pool's config."""

    node_selector: dict[str, str]
    """Labels every node of the pool carries: a GPU pod's `nodeSelector`."""

    tolerations: list[dict[str, Any]]
    """One toleration per taint of the pool's nodes."""

    gpu_resource: str
    """Extended resource the device plugin advertises, e.g. `nvidia.com/gpu`."""

    gpus_per_node: int
    """Physical GPUs on each node."""

    min_nodes: int
    """Nodes kept even when idle."""

    max_nodes: int
    """Most nodes the pool grows to."""


def pool_contract(pool: GpuPoolConfig) -> PoolContract:
    """The contract of a pool: its node labels, a toleration for each taint, its resource and its size."""
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
