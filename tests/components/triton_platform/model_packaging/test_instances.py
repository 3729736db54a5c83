"""Instances per pod, the one count the program's busy ratio and the simulator's batcher both read."""

from __future__ import annotations

import pytest
from google.protobuf import text_format
from tritonclient.grpc.model_config_pb2 import ModelConfig

from triton_platform.model_packaging.instances import instances_per_pod


def config(text: str) -> ModelConfig:
    return text_format.Parse(text, ModelConfig())


@pytest.mark.parametrize(
    ("groups", "gpus", "expected"),
    [
        pytest.param("instance_group [{ count: 2, kind: KIND_GPU }]", 1, 2, id="gpu-one"),
        pytest.param("instance_group [{ count: 2, kind: KIND_GPU }]", 2, 4, id="gpu-count-is-per-gpu"),
        pytest.param("instance_group [{ count: 2, kind: KIND_AUTO }]", 4, 8, id="auto-on-a-gpu-pod"),
        pytest.param("instance_group [{ count: 3, kind: KIND_CPU }]", 2, 3, id="cpu-count-is-per-pod"),
        pytest.param("instance_group [{ count: 2, kind: KIND_GPU, gpus: [0] }]", 2, 2, id="named-gpus"),
        pytest.param("instance_group [{ kind: KIND_GPU }]", 2, 2, id="count-unset-is-one"),
        pytest.param("", 2, 2, id="no-group-one-per-gpu"),
        pytest.param(
            "instance_group [{ count: 1, kind: KIND_GPU }, { count: 2, kind: KIND_CPU }]", 2, 4, id="two-groups"
        ),
    ],
)
def test_instances_per_pod(groups: str, gpus: int, expected: int) -> None:
    assert instances_per_pod(config(f'name: "m"\n{groups}'), gpus) == expected
