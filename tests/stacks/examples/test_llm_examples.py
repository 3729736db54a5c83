"""The LLM example stacks (stacks/examples/Pulumi.vllm.yaml, Pulumi.trtllm.yaml) over their model repository
(stacks/examples/llm_repo): each validates, writes its backend's settings where the backend reads them, and names a
misspelt key with its file, line, stack path and the closest key the backend has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from platform_config.paths import PROJECT_ROOT
from stackctl.main import main

EXAMPLES = PROJECT_ROOT / "stacks" / "examples"
REPO = EXAMPLES / "llm_repo"


def run(*args: str) -> int:
    return main([*args, "--model-repo", str(REPO)])


@pytest.mark.parametrize(("name", "models"), [("vllm", 1), ("trtllm", 4)])
def test_each_llm_example_validates(name: str, models: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("validate", "--config", str(EXAMPLES / f"Pulumi.{name}.yaml")) == 0
    assert capsys.readouterr().out == (
        f"stacks/examples/Pulumi.{name}.yaml: OK: stack {name} (staging, deploy), 1 deployment(s), {models} model(s)\n"
    )


def test_the_vllm_engine_arguments_are_the_version_folders_model_json(tmp_path: Path) -> None:
    assert run("model-repo", "--config", str(EXAMPLES / "Pulumi.vllm.yaml"), "--out", str(tmp_path)) == 0
    engine = json.loads((tmp_path / "chat" / "1" / "model.json").read_text())
    stack = yaml.safe_load((EXAMPLES / "Pulumi.vllm.yaml").read_text())
    assert engine == stack["config"]["triton-platform:models"]["chat"]["vllm"]["engineArgs"]
    assert not (REPO / "chat" / "1" / "model.json").exists()  # written from the stack, never into the repository


def test_the_tensorrt_llm_parameters_are_in_the_engines_config_and_the_ensemble_renders(tmp_path: Path) -> None:
    assert run("model-repo", "--config", str(EXAMPLES / "Pulumi.trtllm.yaml"), "--out", str(tmp_path)) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [
        "ensemble",
        "postprocessing",
        "preprocessing",
        "tensorrt_llm",
    ]
    config = (tmp_path / "tensorrt_llm" / "configs" / "trtllm.pbtxt").read_text()
    assert 'key: "kv_cache_free_gpu_mem_fraction"\n  value {\n    string_value: "0.8"' in config
    assert 'key: "gpt_model_path"' in config  # the base config's stay


def test_the_pods_config_map_carries_the_model_json_the_init_container_copies(tmp_path: Path) -> None:
    env = {**os.environ, "TRITON_PLATFORM_MODEL_REPO": str(REPO)}
    command = [str(Path(sys.executable).parent / "stackctl"), "synth", "--config", str(EXAMPLES / "Pulumi.vllm.yaml")]
    subprocess.run([*command, "--no-charts", "--out", str(tmp_path)], env=env, check=True, capture_output=True)
    [config_map] = [yaml.safe_load(p.read_text()) for p in tmp_path.glob("configmap-*-triton-chat-config-*.yaml")]
    assert json.loads(config_map["data"]["chat.model.json"])["gpu_memory_utilization"] == 0.85
    [deployment] = [yaml.safe_load(p.read_text()) for p in tmp_path.glob("deployment-*-triton-chat.yaml")]
    [init] = deployment["spec"]["template"]["spec"]["initContainers"]
    assert 'cp "$RENDERED_DIR"/chat.model.json "$MODELS_DIR"/chat/1/model.json' in init["command"][-1]


@pytest.mark.parametrize(
    "case",
    [
        (
            "vllm",
            "gpu_memory_utilization: 0.85",
            "gpu_memory_utilisation: 0.85",
            ":43:11: triton-platform:models.chat.vllm.engineArgs.gpu_memory_utilisation: 'gpu_memory_utilisation' is "
            "no engine argument of vLLM 0.5.5 (AsyncEngineArgs), so the backend fails to load the model (did you mean "
            "'gpu_memory_utilization'?)",
        ),
        (
            "trtllm",
            "kv_cache_free_gpu_mem_fraction",
            "kv_cache_free_gpu_memory_fraction",
            ":44:11: triton-platform:models.tensorrt_llm.tensorrtLlm.parameters.kv_cache_free_gpu_memory_fraction: "
            "parameter 'kv_cache_free_gpu_memory_fraction' is none the TensorRT-LLM backend 0.14.0 reads, so it would "
            "be ignored and its setting left at the default (did you mean 'kv_cache_free_gpu_mem_fraction'?)",
        ),
        (
            "vllm",
            "    chat:\n      vllm:",
            "    chat:\n      instanceGroup: {count: 2}\n      vllm:",
            ":36:9: triton-platform:serving.deployments.chat.gpusPerPod: deployment 'chat''s vLLM engines take 1.7 "
            "GPUs' memory ('chat' version 1: 2 x 0.85 of 1) but a pod has 1: each engine takes its "
            "gpu_memory_utilization share of each of its GPUs (vLLM's default 0.9) for weights and KV cache as it "
            "loads (this counts the least each takes), so they cannot all load; lower the shares in their engine "
            "arguments (model.json), serve fewer versions, or give the pods more GPUs",
        ),
        (
            "vllm",
            "    chat:\n      vllm:",
            "    chat:\n      tensorrtLlm: {parameters: {max_beam_width: '1'}}\n      vllm:",
            ":39:7: triton-platform:models.chat.tensorrtLlm: model 'chat' has backend 'vllm' in "
            "stacks/examples/llm_repo/chat/config.pbtxt; tensorrtLlm sets its config.pbtxt parameters of a backend "
            "'tensorrtllm' model only",
        ),
    ],
)
def test_a_key_the_backend_does_not_read_is_named(
    case: tuple[str, str, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, before, after, expected = case
    text = (EXAMPLES / f"Pulumi.{name}.yaml").read_text()
    assert before in text
    stack = tmp_path / f"Pulumi.{name}.yaml"
    stack.write_text(text.replace(before, after))
    assert run("validate", "--config", str(stack)) == 1
    assert f"{stack}{expected}\n" in capsys.readouterr().err
