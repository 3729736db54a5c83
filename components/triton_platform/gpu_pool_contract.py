"""What the GPU node pool promises the pods that run on it.

No `from __future__ import annotations` in a module of public Args or outputs: Pulumi infers the
component schema from the annotations as objects, and postponed ones are strings it cannot read.
"""

from typing import NotRequired, TypedDict


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
