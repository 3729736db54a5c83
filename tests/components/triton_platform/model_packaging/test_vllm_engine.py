"""A vLLM model's `model.json` and config, checked as the vLLM backend of the 24.10 image reads them
(triton_platform/model_packaging/vllm_engine.py): each key against vLLM 0.5.5's engine arguments."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from triton_platform.model_packaging.source import read_repository
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS, engine_args_problems

SAMPLE = (
    '{"model":"facebook/opt-125m","disable_log_requests": true,"gpu_memory_utilization": 0.5,"enforce_eager": true}'
)
"""vllm_backend r24.10 samples/model_repository/vllm_model/1/model.json, as it is."""
CONFIG = 'name: "llama"\nbackend: "vllm"\nmax_batch_size: 0\n'
STREAMS = "model_transaction_policy { decoupled: true }\n"


def test_the_backends_own_sample_passes() -> None:
    assert engine_args_problems(SAMPLE) == []


def test_a_key_vllm_does_not_take_is_named_with_the_closest_it_does() -> None:
    text = json.dumps({"model": "m", "gpu_memory_utilisation": 0.9, "max_batch_size": 8})
    assert engine_args_problems(text) == [
        "'gpu_memory_utilisation' is no engine argument of vLLM 0.5.5 (AsyncEngineArgs), so the backend fails to "
        "load the model (did you mean 'gpu_memory_utilization'?)",
        "'max_batch_size' is no engine argument of vLLM 0.5.5 (AsyncEngineArgs), so the backend fails to load the "
        "model",
    ]


def test_the_text_must_be_an_object_naming_the_weights_within_the_gpu() -> None:
    assert engine_args_problems("{") == [
        "is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)); it holds "
        "vLLM's engine arguments as one object"
    ]
    assert engine_args_problems('["model"]') == ["is ['model'], not a JSON object of vLLM's engine arguments"]
    assert engine_args_problems('{"gpu_memory_utilization": 1.5}') == [
        "has no `model`, the Hugging Face name or path of the weights: without it vLLM loads its own default model "
        "(EngineArgs.model)",
        "gpu_memory_utilization 1.5 is not a fraction in (0, 1]: the share of the GPU's memory vLLM takes for "
        "weights and KV cache",
    ]
    assert engine_args_problems('{"model": "m", "gpu_memory_utilization": true}') == [
        "gpu_memory_utilization True is not a fraction in (0, 1]: the share of the GPU's memory vLLM takes for "
        "weights and KV cache"
    ]


def test_the_gpus_an_engine_spans_are_whole_numbers() -> None:
    assert engine_args_problems('{"model": "m", "tensor_parallel_size": 0, "pipeline_parallel_size": "2"}') == [
        "tensor_parallel_size 0 is not a whole number of GPUs, 1 or more",
        "pipeline_parallel_size '2' is not a whole number of GPUs, 1 or more",
    ]


@given(st.text(max_size=200))
def test_any_text_is_answered_with_problems_never_an_error(text: str) -> None:
    assert all(isinstance(problem, str) and problem for problem in engine_args_problems(text))


@given(st.dictionaries(st.sampled_from(sorted(ENGINE_ARGS)), st.integers(min_value=1), max_size=5))
def test_only_unknown_keys_and_the_weights_are_named(config: dict[str, int]) -> None:
    problems = engine_args_problems(json.dumps({**config, "model": "m", "gpu_memory_utilization": 0.5}))
    assert problems == []


def test_the_repository_names_each_vllm_problem_at_its_file(tmp_path: Path) -> None:
    (tmp_path / "llama" / "1").mkdir(parents=True)
    (tmp_path / "llama" / "config.pbtxt").write_text(CONFIG)
    (tmp_path / "llama" / "1" / "model.json").write_text('{"model": "meta/llama", "max_seq_len": 4096}')
    (tmp_path / "chat" / "2").mkdir(parents=True)
    (tmp_path / "chat" / "config.pbtxt").write_text(CONFIG.replace("llama", "chat") + STREAMS)
    (tmp_path / "chat" / "2" / "model.json").write_bytes(b"\xff\xfe")
    repo = read_repository(tmp_path)
    assert {(str(p.file.relative_to(tmp_path)), p.message) for m in repo.problems.values() for p in m} == {
        (
            "llama/config.pbtxt",
            "backend 'vllm' streams its tokens: set model_transaction_policy { decoupled: true }",
        ),
        (
            "llama/1/model.json",
            "'max_seq_len' is no engine argument of vLLM 0.5.5 (AsyncEngineArgs), so the backend fails to load the "
            "model (did you mean 'max_model_len'?)",
        ),
        ("chat/2/model.json", "is not UTF-8 text; it holds vLLM's engine arguments as JSON"),
    }


def test_an_oversized_model_json_is_refused_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "chat" / "1").mkdir(parents=True)
    (tmp_path / "chat" / "config.pbtxt").write_text(CONFIG.replace("llama", "chat") + STREAMS)
    (tmp_path / "chat" / "1" / "model.json").write_text(" " * (64 * 1024 + 1))
    [problem] = read_repository(tmp_path).problems["chat"]
    assert problem.message.endswith("; a vLLM model.json is a regular file of at most 64 KiB")
