"""A model's per-environment settings, as the renderer lays them over its base config.pbtxt.

Plain frozen values, named as Triton names the fields: None keeps the base config's value. TritonServing
builds them from its Args (triton_platform/serving/triton_serving_spec.py), which the stack's schema hands over.
"""

from __future__ import annotations

from dataclasses import dataclass

# Largest values of the protobuf fields the settings land in
# (https://github.com/triton-inference-server/common/blob/main/protobuf/model_config.proto).
INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class QueuePolicy:
    """Triton `dynamic_batching.default_queue_policy`."""

    max_queue_size: int | None = None
    default_timeout_microseconds: int | None = None
    timeout_action: str | None = None
    """`REJECT` or `DELAY`."""
    allow_timeout_override: bool | None = None


@dataclass(frozen=True)
class DynamicBatching:
    """Triton `dynamic_batching`."""

    max_queue_delay_microseconds: int | None = None
    preferred_batch_size: tuple[int, ...] | None = None
    default_queue_policy: QueuePolicy | None = None


@dataclass(frozen=True)
class InstanceGroup:
    """Triton `instance_group`, of a model with at most one."""

    count: int | None = None
    kind: str | None = None
    """`KIND_GPU`, `KIND_CPU` or `KIND_AUTO`."""


@dataclass(frozen=True)
class LatestVersions:
    num_versions: int


@dataclass(frozen=True)
class AllVersions:
    pass


@dataclass(frozen=True)
class SpecificVersions:
    versions: tuple[int, ...]


@dataclass(frozen=True)
class VersionPolicy:
    """Triton `version_policy`: exactly one of the three is set."""

    latest: LatestVersions | None = None
    all: AllVersions | None = None
    specific: SpecificVersions | None = None


@dataclass(frozen=True)
class Warmup:
    """Triton `model_warmup`: one request per batch size, over every input."""

    batch_sizes: tuple[int, ...]
    data: str = "zero"
    """`zero` or `random`."""


@dataclass(frozen=True)
class ModelSettings:
    """Settings laid over one model's base config; the stack-wide defaults have the same shape."""

    max_batch_size: int | None = None
    dynamic_batching: DynamicBatching | None = None
    instance_group: InstanceGroup | None = None
    version_policy: VersionPolicy | None = None
    warmup: Warmup | None = None
