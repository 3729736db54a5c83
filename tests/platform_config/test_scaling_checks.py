"""Scaling against serving and the models (platform_config/scaling_checks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_config.errors import ConfigError
from platform_config.loader import load_stack_file
from platform_config.paths import PROJECT_ROOT
from triton_platform.model_packaging.source import read_repository

EXAMPLES = PROJECT_ROOT / "stacks" / "examples"


def test_a_gpu_memory_target_below_the_llm_engines_share_is_refused(tmp_path: Path) -> None:
    """vLLM takes its gpu_memory_utilization (0.85 here) as it loads: at the default target 0.8 an idle pod reads
    above it, and KEDA would climb to replicas.max."""
    text = (EXAMPLES / "Pulumi.vllm.yaml").read_text()
    stack = tmp_path / "Pulumi.vllm.yaml"
    text = text.replace("replicas: {min: 1, max: 1}", "replicas: {min: 1, max: 3}").replace("Nodes: 1", "Nodes: 3")
    stack.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_stack_file(stack, repo=read_repository(EXAMPLES / "llm_repo"))
    assert [(issue.path, issue.message) for issue in caught.value.issues] == [
        (
            "triton-platform:scaling.gpuMemoryRatioTarget",
            "0.8 is at or below the 0.85 of each GPU's memory deployment 'chat''s LLM engines take as they load "
            "('chat' version 1: 1 x 0.85 of 1), whatever their load: its pods would read above the target idle and "
            "KEDA would scale it to replicas.max (3); raise gpuMemoryRatioTarget above 0.85, or lower the engines' "
            "share (gpu_memory_utilization, kv_cache_free_gpu_mem_fraction)",
        )
    ]
    stack.write_text(
        stack.read_text() + "  triton-platform:scaling:\n    # Above the engines' 0.85, which they take as they load.\n"
        "    gpuMemoryRatioTarget: 0.95\n"
    )
    load_stack_file(stack, repo=read_repository(EXAMPLES / "llm_repo"))
