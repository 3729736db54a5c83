"""A model's vLLM engine arguments and TensorRT-LLM parameters from the settings, checked against the backends'
sources (triton_platform/serving/llm_settings_fit.py) and rendered (model_packaging/render.py)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.components.triton_platform.model_packaging.test_tensorrt_llm import ENGINE as TEMPLATE_FILLED
from tests.components.triton_platform.model_packaging.test_tensorrt_llm import parameters
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import render_repository
from triton_platform.model_packaging.source import read_repository
from triton_platform.model_packaging.tensorrt_llm import PARAMETERS
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS, engine_config_problems
from triton_platform.serving.engine_memory import engine_memory, engine_memory_problems
from triton_platform.serving.model_fit import fit_problems
from triton_platform.serving.triton_serving_spec import ARG_NAMES

VLLM = 'name: "chat"\nbackend: "vllm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n'
ENGINE = TEMPLATE_FILLED + parameters(gpt_model_path="/engines/llama/1")
ONNX = 'name: "classifier"\nbackend: "onnxruntime"\nmax_batch_size: 8\n'


def repository(root: Path, engine_json: bool = False) -> Path:
    for name, config in (("chat", VLLM), ("tensorrt_llm", ENGINE), ("classifier", ONNX)):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config)
    (root / "classifier" / "1" / "model.onnx").write_bytes(b"onnx")
    (root / "tensorrt_llm" / "1" / "config.json").write_text("{}")  # the engine's, as trtllm-build writes it
    if engine_json:
        (root / "chat" / "1" / "model.json").write_text('{"model": "meta/chat"}')
    return root


def problems(root: Path, models: dict[str, Any], defaults: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    repo = read_repository(root)
    served = {"llm": ["chat", "tensorrt_llm", "classifier"]}
    return fit_problems(repo, served, ModelSettingsArgs(**(defaults or {})), models, ARG_NAMES)  # type: ignore[typeddict-item]


def test_engine_arguments_are_checked_with_the_closest_key_vllm_takes(tmp_path: Path) -> None:
    engine = {"model": "meta/chat", "gpu_memory_utilisation": 0.5, "tensor_parallel_size": 0}
    assert problems(repository(tmp_path), {"chat": {"vllm": {"engine_args": engine}}}) == [
        (
            "args.models.chat.vllm.engine_args.gpu_memory_utilisation",
            "'gpu_memory_utilisation' is no engine argument of vLLM 0.5.5 (AsyncEngineArgs), so the backend fails to "
            "load the model (did you mean 'gpu_memory_utilization'?)",
        ),
        (
            "args.models.chat.vllm.engine_args.tensor_parallel_size",
            "tensor_parallel_size 0 is not a whole number of GPUs, 1 or more",
        ),
    ]


def test_engine_arguments_need_the_weights(tmp_path: Path) -> None:
    assert problems(repository(tmp_path), {"chat": {"vllm": {"engine_args": {"max_num_seqs": 8}}}}) == [
        (
            "args.models.chat.vllm.engine_args",
            "vLLM's engine arguments of model 'chat' has no `model`, the Hugging Face name or path of the weights: "
            "without it vLLM loads its own default model (EngineArgs.model)",
        )
    ]


def test_a_default_key_is_named_at_the_defaults(tmp_path: Path) -> None:
    defaults = {"vllm": {"engine_args": {"max_num_seq": 8}}}
    found = problems(repository(tmp_path), {"chat": {"vllm": {"engine_args": {"model": "m"}}}}, defaults)
    assert [where for where, _ in found] == ["args.model_defaults.vllm.engine_args.max_num_seq"]


def test_engine_arguments_beside_a_repositorys_model_json_are_refused(tmp_path: Path) -> None:
    root = repository(tmp_path, engine_json=True)
    assert problems(root, {"chat": {"vllm": {"engine_args": {"model": "meta/chat"}}}}) == [
        (
            "args.models.chat.vllm.engine_args",
            f"would be written as {root / 'chat' / '1' / 'model.json'}, which the model repository already holds: the "
            "platform never overwrites a repository's file, so the stack's engine arguments are refused beside it; "
            "remove the file, or these settings and keep the file",
        )
    ]


def test_a_backends_settings_on_another_backends_model_are_refused(tmp_path: Path) -> None:
    root = repository(tmp_path, engine_json=True)
    models = {
        "classifier": {"vllm": {"engine_args": {"model": "m"}}, "tensorrt_llm": {"parameters": {"x": "1"}}},
    }
    base = root / "classifier" / "config.pbtxt"
    assert problems(root, models) == [
        (
            "args.models.classifier.vllm",
            f"model 'classifier' has backend 'onnxruntime' in {base}; vllm sets its engine arguments, model.json of a "
            "backend 'vllm' model only",
        ),
        (
            "args.models.classifier.tensorrt_llm",
            f"model 'classifier' has backend 'onnxruntime' in {base}; tensorrt_llm sets its config.pbtxt parameters "
            "of a backend 'tensorrtllm' model only",
        ),
    ]
    # The defaults' apply to their backend's models only.
    defaults = {"vllm": {"engine_args": {"model": "m"}}, "tensorrt_llm": {"parameters": {"max_beam_width": "1"}}}
    assert problems(repository(tmp_path / "clean"), {}, defaults) == []


def test_parameters_are_checked_with_the_closest_key_the_backend_reads(tmp_path: Path) -> None:
    parameters = {"kv_cache_free_gpu_memory_fraction": "0.5", "gpt_model_type": "inflight"}
    models = {
        "chat": {"vllm": {"engine_args": {"model": "m"}}},
        "tensorrt_llm": {"tensorrt_llm": {"parameters": parameters}},
    }
    assert problems(repository(tmp_path), models) == [
        (
            "args.models.tensorrt_llm.tensorrt_llm.parameters.kv_cache_free_gpu_memory_fraction",
            "parameter 'kv_cache_free_gpu_memory_fraction' is none the TensorRT-LLM backend 0.14.0 reads, so it would "
            "be ignored and its setting left at the default (did you mean 'kv_cache_free_gpu_mem_fraction'?)",
        ),
        (
            "args.models.tensorrt_llm.tensorrt_llm.parameters.gpt_model_type",
            "parameter 'gpt_model_type' is 'inflight'; the backend takes V1, v1, inflight_batching, "
            "inflight_fused_batching",
        ),
    ]


CHECKED = {"model", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization"}
"""The engine arguments whose values are checked too; any value of the others passes."""


@given(st.sets(st.sampled_from(sorted(ENGINE_ARGS - CHECKED)), max_size=5), st.text(min_size=1))
def test_any_key_outside_the_engines_is_named_and_every_engine_key_passes(keys: set[str], odd: str) -> None:
    engine = {"model": "m", **dict.fromkeys(keys, "x")}
    assert engine_config_problems(engine) == []
    named = [key for key, _ in engine_config_problems({**engine, odd: 1})]
    assert named == ([] if odd in ENGINE_ARGS - {"model"} else [odd] if odd != "model" else [None])


def test_the_stack_writes_model_json_and_parameters(tmp_path: Path) -> None:
    repo = read_repository(repository(tmp_path))
    models: dict[str, Any] = {
        "chat": {"vllm": {"engine_args": {"model": "meta/chat", "gpu_memory_utilization": 0.4}}},
        "tensorrt_llm": {"tensorrt_llm": {"parameters": {"kv_cache_free_gpu_mem_fraction": "0.5"}}},
    }
    defaults: Any = {"vllm": {"engine_args": {"max_num_seqs": 16}}}
    rendered = render_repository("dev", repo, ["chat", "tensorrt_llm", "classifier"], defaults, models)
    assert rendered.models["chat"].files == {
        "1/model.json": '{\n  "gpu_memory_utilization": 0.4,\n  "max_num_seqs": 16,\n  "model": "meta/chat"\n}\n'
    }
    assert rendered.models["classifier"].files == {}
    text = rendered.models["tensorrt_llm"].text
    assert 'key: "kv_cache_free_gpu_mem_fraction"\n  value {\n    string_value: "0.5"' in text
    assert 'key: "gpt_model_path"' in text  # the base config's stay
    assert set(PARAMETERS) >= {key for key in rendered.models["tensorrt_llm"].config.parameters}
    # The digest changes with the engine arguments written.
    other = {**models, "chat": {"vllm": {"engine_args": {"model": "meta/chat", "gpu_memory_utilization": 0.5}}}}
    assert render_repository("dev", repo, ["chat"], defaults, other).digest() != rendered.digest(["chat"])


def test_a_value_json_cannot_hold_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    engine: Any = {"model": "meta/chat", "seed": float("nan"), "revision": datetime.date(2024, 1, 1)}
    assert problems(repository(tmp_path), {"chat": {"vllm": {"engine_args": engine}}}) == [
        (
            "args.models.chat.vllm.engine_args.revision",
            "revision '2024-01-01' is no JSON value (a string, number, true/false, null, list or object, its text "
            "without lone surrogates U+D800-U+DFFF), which model.json holds",
        ),
        (
            "args.models.chat.vllm.engine_args.seed",
            "seed 'nan' is no JSON value (a string, number, true/false, null, list or object, its text without lone "
            "surrogates U+D800-U+DFFF), which model.json holds",
        ),
    ]
    repo = read_repository(tmp_path)
    assert (
        list(
            engine_memory_problems(
                engine_memory(repo, {"llm": ["chat"]}, {}, {"chat": {"vllm": {"engine_args": engine}}}, {"llm": 1})
            )
        )
        == []
    )


def test_null_for_a_checked_engine_argument_is_named_and_nothing_crashes(tmp_path: Path) -> None:
    root = repository(tmp_path)
    defaults: Any = {"vllm": {"engine_args": {"model": "meta/chat", "gpu_memory_utilization": 0.5}}}
    own: Any = {"chat": {"vllm": {"engine_args": {"gpu_memory_utilization": None, "tensor_parallel_size": None}}}}
    assert problems(root, own, defaults) == [
        (
            "args.models.chat.vllm.engine_args.gpu_memory_utilization",
            "gpu_memory_utilization is null, which the backend would pass to vLLM as it is; set a fraction in (0, 1], "
            "or leave the key out (vLLM's default 0.9)",
        ),
        (
            "args.models.chat.vllm.engine_args.tensor_parallel_size",
            "tensor_parallel_size is null, which the backend would pass to vLLM as it is; set a whole number of GPUs, "
            "1 or more, or leave the key out (1)",
        ),
    ]
    assert engine_config_problems({"model": None}) == [
        (
            "model",
            "model is null, which the backend would pass to vLLM as it is; set the Hugging Face name or path "
            "of the weights",
        )
    ]
    repo = read_repository(root)
    assert list(engine_memory_problems(engine_memory(repo, {"llm": ["chat"]}, defaults, own, {"llm": 1}))) == []


def test_a_nested_engine_argument_is_replaced_whole_not_mixed_with_the_defaults(tmp_path: Path) -> None:
    repo = read_repository(repository(tmp_path))
    defaults: Any = {
        "vllm": {"engine_args": {"model": "meta/chat", "rope_scaling": {"type": "linear", "factor": 2.0}}},
        "tensorrt_llm": {"parameters": {"kv_cache_free_gpu_mem_fraction": "0.5"}},
    }
    models: Any = {"chat": {"vllm": {"engine_args": {"rope_scaling": {"type": "dynamic"}}}}}
    rendered = render_repository("dev", repo, ["chat", "tensorrt_llm"], defaults, models)
    assert rendered.models["chat"].files == {
        "1/model.json": '{\n  "model": "meta/chat",\n  "rope_scaling": {\n    "type": "dynamic"\n  }\n}\n'
    }
    assert 'string_value: "0.5"' in rendered.models["tensorrt_llm"].text


def test_enable_lora_needs_the_version_folders_multi_lora_json(tmp_path: Path) -> None:
    root = repository(tmp_path)
    own: Any = {"chat": {"vllm": {"engine_args": {"model": "meta/chat", "enable_lora": True}}}}
    expected = (
        f"{tmp_path}/chat/1",
        "version 1 of model 'chat' sets enable_lora in {source} but has no multi_lora.json, the LoRA adapters the "
        "vLLM backend reads from the version folder (it fails the load without it); add it, or leave enable_lora out",
    )
    assert problems(root, own) == [(expected[0], expected[1].format(source="the stack's engine arguments"))]
    (root / "chat" / "1" / "model.json").write_text('{"model": "meta/chat", "enable_lora": "true"}')
    assert problems(root, {}) == [(expected[0], expected[1].format(source="its model.json"))]
    (root / "chat" / "1" / "multi_lora.json").write_text('{"doc": "/loras/doc"}')
    assert problems(root, {}) == []


def test_a_lone_surrogate_is_named_at_its_key(tmp_path: Path) -> None:
    """A YAML `"\\ud800"` escape cannot be written as UTF-8: named at its key, never a bare codec error."""
    own: Any = {
        "chat": {"vllm": {"engine_args": {"model": "meta/chat", "rope_scaling": {"type": "\udc00"}}}},
        "tensorrt_llm": {"tensorrt_llm": {"parameters": {"batch_scheduler_policy": "guaranteed\ud800"}}},
    }
    assert problems(repository(tmp_path), own) == [
        (
            "args.models.chat.vllm.engine_args.rope_scaling",
            "rope_scaling \"{'type': '\\\\udc00'}\" is no JSON value (a string, number, true/false, null, list or "
            "object, its text without lone surrogates U+D800-U+DFFF), which model.json holds",
        ),
        (
            "args.models.tensorrt_llm.tensorrt_llm.parameters.batch_scheduler_policy",
            "parameter 'batch_scheduler_policy' is 'guaranteed\\ud800', which holds a lone surrogate (U+D800-U+DFFF): "
            "config.pbtxt is UTF-8 text, which cannot hold one; write the character itself",
        ),
    ]
