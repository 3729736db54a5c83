"""What the GPU node pool promises the pods that run on it.

No `from __future__ import annotations` in a module of public Args or outputs: Pulumi infers the
component schema from the annotations as objects, and postponed ones are strings it cannot read. The
formats of each key are declared beside its TypedDict (`declare`): a placement written out by hand, from any
language, is checked as the pool's own would be.
"""

from typing import NotRequired, TypedDict

from triton_platform.args.arg_schema import Setting, declare
from triton_platform.args.formats import LABEL_KEY_FORMAT, LABEL_VALUE_FORMAT

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


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


declare(
    Toleration,
    key=Setting(format=LABEL_KEY_FORMAT),
    operator=Setting(choices=TOLERATION_OPERATORS),
    effect=Setting(choices=TAINT_EFFECTS),
    value=Setting(format=LABEL_VALUE_FORMAT),
)
declare(
    PoolPlacement,
    node_selector=Setting(keys=LABEL_KEY_FORMAT, format=LABEL_VALUE_FORMAT),
    # An extended resource's name is a qualified name, as a label key (apimachinery IsQualifiedName).
    gpu_resource=Setting(format=LABEL_KEY_FORMAT),
)
