"""What the GPU node pool promises the pods that run on it."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from components.gpu_node_pool_config import GpuPoolConfig


class Toleration(TypedDict):
    """A pod toleration (core/v1 Toleration) of one taint of the pool's nodes."""

    key: str
    """The taint's key, e.g. `nvidia.com/gpu`."""

    operator: str
    """`Equal` (the taint's value must match) or `Exists` (any value)."""

    effect: str
    """The taint's effect: `NoSchedule`, `PreferNoSchedule` or `NoExecute`."""

    value: NotRequired[str]
    """The taint's value, with operator `Equal`. Default: unset."""


class PoolPlacement(TypedDict):
    """Where GPU pods may run and the GPU resource they request: `GpuNodePool.placement`, `TritonServing`'s `pool`."""

    node_selector: dict[str, str]
    """Labels every node of the pool carries: a GPU pod's `nodeSelector`."""

    tolerations: list[Toleration]
    """One toleration per taint of the pool's nodes."""

    gpu_resource: str
    """Extended resource the device plugin advertises, e.g. `nvidia.com/gpu`."""


def pool_placement(pool: GpuPoolConfig) -> PoolPlacement:
    """The placement a pool offers: its node labels, a toleration for each taint, and its GPU resource."""
    tolerations: list[Toleration] = [
        {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
        if t.value
        else {"key": t.key, "operator": "Exists", "effect": t.effect}
        for t in pool.taints
    ]
    return {"node_selector": dict(pool.node_labels), "tolerations": tolerations, "gpu_resource": pool.resource_name}
