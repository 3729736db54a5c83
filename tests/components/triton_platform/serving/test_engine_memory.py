"""A deployment's vLLM engines against its pods' GPU memory (triton_platform/serving/engine_memory.py), alone and
as TritonServing refuses its Args (which `stackctl validate` reports at the stack's key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.components.triton_platform.serving.test_triton_serving import POOL
from triton_platform.args.arg_problems import ArgsError
from triton_platform.model_packaging.source import parse_model_config, read_repository
from triton_platform.serving.engine_memory import engine_memory, engine_memory_problems, engines_per_pod
from triton_platform.serving.triton_serving_args import TritonServingArgs
from triton_platform.serving.triton_serving_spec import serving_spec

VLLM = 'backend: "vllm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n'


def vllm_model(root: Path, name: str, engine: str, groups: str = "") -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(f'name: "{name}"\n{VLLM}{groups}')
    (root / name / "1" / "model.json").write_text(engine)


@pytest.mark.parametrize(
    ("groups", "gpus", "engines"),
    [
        ("", 2, 2),  # no group: one instance per GPU
        ("instance_group [ { kind: KIND_MODEL } ]", 4, 1),  # the engine places itself
        ("instance_group [ { count: 2 kind: KIND_GPU } ]", 2, 4),  # per GPU
        ("instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]", 4, 1),  # on the GPUs listed
        ("instance_group [ { count: 3 kind: KIND_CPU } ]", 2, 0),
    ],
)
def test_the_engines_a_pod_loads(groups: str, gpus: int, engines: int) -> None:
    assert engines_per_pod(parse_model_config(VLLM + groups), gpus) == engines


def test_engines_sharing_one_gpu_with_the_default_share_do_not_fit(tmp_path: Path) -> None:
    vllm_model(tmp_path, "chat", '{"model": "meta/chat"}')
    vllm_model(tmp_path, "code", '{"model": "meta/code", "tensor_parallel_size": 1}')
    repo = read_repository(tmp_path)
    assert list(engine_memory_problems(engine_memory(repo, {"llm": ["chat", "code"]}, {}, {}, {"llm": 1}))) == [
        (
            "llm",
            "deployment 'llm''s vLLM engines take 1.8 GPUs' memory ('chat' version 1: 1 x 0.9 of 1; 'code' version 1: "
            "1 x 0.9 of 1) but a pod has 1: each engine takes its gpu_memory_utilization share of each of its GPUs "
            "(vLLM's default 0.9) for weights and KV cache as it loads (this counts the least each takes), so they "
            "cannot all load; lower the "
            "shares in their engine arguments (model.json), serve fewer versions, or give the pods more GPUs",
        )
    ]


def test_shares_that_add_up_to_the_pods_gpus_fit(tmp_path: Path) -> None:
    vllm_model(tmp_path, "chat", '{"model": "meta/chat", "gpu_memory_utilization": 0.45}')
    vllm_model(tmp_path, "code", '{"model": "meta/code", "gpu_memory_utilization": 0.45}')
    big = '{"model": "meta/big", "tensor_parallel_size": 2}'
    vllm_model(tmp_path, "big", big, "instance_group [ { kind: KIND_MODEL } ]")
    repo = read_repository(tmp_path)
    assert (
        list(
            engine_memory_problems(
                engine_memory(repo, {"small": ["chat", "code"], "large": ["big"]}, {}, {}, {"small": 1, "large": 2})
            )
        )
        == []
    )
    # One engine per GPU of each model: on two GPUs, twice the share each.
    assert [
        key for key, _ in engine_memory_problems(engine_memory(repo, {"small": ["chat", "code"]}, {}, {}, {"small": 2}))
    ] == []
    assert [
        key for key, _ in engine_memory_problems(engine_memory(repo, {"large": ["big"]}, {}, {}, {"large": 1}))
    ] == ["large"]


def test_engine_arguments_from_the_settings_take_their_share(tmp_path: Path) -> None:
    vllm_model(tmp_path, "chat", '{"model": "meta/chat", "gpu_memory_utilization": 0.5}')
    (tmp_path / "code" / "1").mkdir(parents=True)
    (tmp_path / "code" / "config.pbtxt").write_text(f'name: "code"\n{VLLM}')
    repo = read_repository(tmp_path)
    models: Any = {"code": {"vllm": {"engine_args": {"model": "meta/code", "gpu_memory_utilization": 0.6}}}}
    [(_, problem)] = engine_memory_problems(engine_memory(repo, {"llm": ["chat", "code"]}, {}, models, {"llm": 1}))
    assert problem.startswith(
        "deployment 'llm''s vLLM engines take 1.1 GPUs' memory ('chat' version 1: 1 x 0.5 of 1; 'code' version 1: "
        "1 x 0.6 of 1) but a pod has 1"
    )
    models["code"]["vllm"]["engine_args"]["gpu_memory_utilization"] = 0.5
    assert list(engine_memory_problems(engine_memory(repo, {"llm": ["chat", "code"]}, {}, models, {"llm": 1}))) == []


def tensorrt_llm_model(root: Path, name: str, parameters: str = "", count: int = 1) -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "tensorrtllm"\nmax_batch_size: 8\nmodel_transaction_policy {{ decoupled: true }}\n'
        f"instance_group [ {{ count: {count} kind: KIND_CPU }} ]\n"
        'parameters { key: "gpt_model_path" value: { string_value: "/engines/1" } }\n' + parameters
    )


def fraction(value: str) -> str:
    return f'parameters {{ key: "kv_cache_free_gpu_mem_fraction" value: {{ string_value: "{value}" }} }}\n'


def test_tensorrt_llm_engines_take_their_kv_cache_share_beside_vllm_engines(tmp_path: Path) -> None:
    vllm_model(tmp_path, "chat", '{"model": "meta/chat", "gpu_memory_utilization": 0.5}')
    tensorrt_llm_model(tmp_path, "tensorrt_llm")  # the backend's default 0.9, though its instance is KIND_CPU
    repo = read_repository(tmp_path)
    assert list(engine_memory_problems(engine_memory(repo, {"llm": ["chat", "tensorrt_llm"]}, {}, {}, {"llm": 1}))) == [
        (
            "llm",
            "deployment 'llm''s vLLM and TensorRT-LLM engines take 1.4 GPUs' memory ('chat' version 1: 1 x 0.5 of 1; "
            "'tensorrt_llm' version 1: 1 x 0.9 of 1 (TensorRT-LLM)) but a pod has 1: a vLLM engine takes its "
            "gpu_memory_utilization share of each of its GPUs (vLLM's default 0.9); a TensorRT-LLM engine takes its "
            "weights plus its kv_cache_free_gpu_mem_fraction (default 0.9) of the memory they leave free, so at least "
            "that share of its GPU for weights and KV cache as it loads (this counts the least each takes), so they "
            "cannot all load; lower the "
            "shares (model.json, config.pbtxt parameters), serve fewer versions, or give the pods more GPUs",
        )
    ]


def test_tensorrt_llm_instances_are_engines_each_taking_its_share(tmp_path: Path) -> None:
    tensorrt_llm_model(tmp_path, "two", fraction("0.6"), count=2)
    tensorrt_llm_model(tmp_path, "half", fraction("0.5"))
    capped = 'parameters { key: "max_tokens_in_paged_kv_cache" value: { string_value: "8192" } }\n'
    tensorrt_llm_model(tmp_path, "capped", capped)
    repo = read_repository(tmp_path)
    [(_, problem)] = engine_memory_problems(engine_memory(repo, {"llm": ["two"]}, {}, {}, {"llm": 1}))
    assert problem.startswith(
        "deployment 'llm''s TensorRT-LLM engines take 1.2 GPUs' memory ('two' version 1: 2 x 0.6 of 1 (TensorRT-LLM)) "
        "but a pod has 1: each engine takes its weights plus its kv_cache_free_gpu_mem_fraction"
    )
    assert list(engine_memory_problems(engine_memory(repo, {"llm": ["two"]}, {}, {}, {"llm": 2}))) == []
    # A token-capped cache is not sized; two halves fill one GPU exactly.
    assert list(engine_memory_problems(engine_memory(repo, {"llm": ["half", "capped"]}, {}, {}, {"llm": 1}))) == []
    assert [
        k
        for k, _ in engine_memory_problems(engine_memory(repo, {"llm": ["half", "capped", "two"]}, {}, {}, {"llm": 1}))
    ] == ["llm"]


def test_triton_serving_names_the_deployments_gpus(tmp_path: Path) -> None:
    vllm_model(tmp_path, "chat", '{"model": "meta/chat"}')
    vllm_model(tmp_path, "code", '{"model": "meta/code"}')
    args: TritonServingArgs = {
        "namespace": "llm",
        "deployments": {"llm": {"models": ["chat", "code"], "replicas": {"min": 1, "max": 2}}},
        "model_repository": {"path": str(tmp_path), "source": "bundled"},
        "pool": POOL,
        "metrics_namespace": "monitoring",
    }
    with pytest.raises(ArgsError) as refused:
        serving_spec("unit", args, "dev")
    [problem] = refused.value.problems
    assert problem.path == ("deployments", "llm", "gpus_per_pod")
    assert problem.reason.startswith("deployment 'llm''s vLLM engines take 1.8 GPUs' memory")
