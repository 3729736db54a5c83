"""How many instances of a model one Triton pod runs: what a busy ratio divides by, and what the simulator's
batcher serves with. One function for the program, the components and the simulator."""

from __future__ import annotations

from tritonclient.grpc.model_config_pb2 import ModelConfig, ModelInstanceGroup


def instances_per_pod(model_config: ModelConfig, gpus_per_pod: int) -> int:
    """Model instances one pod runs: a GPU group's `count` is per GPU unless the group names its GPUs
    (model_config.proto, `ModelInstanceGroup.count`, `gpus`); a CPU group's is per pod. No group: Triton
    gives the model one instance per GPU available (or one on the CPU)."""
    total = 0
    for group in model_config.instance_group:
        count = group.count or 1
        per_pod = group.kind == ModelInstanceGroup.KIND_CPU or bool(group.gpus)
        total += count if per_pod else count * gpus_per_pod
    return total or gpus_per_pod
