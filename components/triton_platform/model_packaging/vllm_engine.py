"""A vLLM model's engine arguments, its version folder's `model.json`, checked as the vLLM backend reads them.

The backend of the 24.10 `tritonserver:24.10-vllm-python-py3` image (triton-inference-server/vllm_backend r24.10,
`src/model.py`: `init_engine`) loads `<version>/model.json` with `json.load` and passes it whole to
`AsyncEngineArgs(**config)` of the vLLM it bundles, 0.5.5 (server r24.10 `build.py`, TRITON_VERSION_MAP): a key that
is no field of that dataclass raises TypeError and the model does not load.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from typing import Any

from triton_platform.args.excerpts import excerpt, is_utf8
from triton_platform.args.input_files import InputKind

BACKEND = "vllm"
ENGINE_ARGS_FILE_NAME = "model.json"
"""vllm_backend r24.10 src/model.py `_VLLM_ENGINE_ARGS_FILENAME`, read from the version folder."""
MULTI_LORA_FILE_NAME = "multi_lora.json"
"""vllm_backend r24.10 src/model.py `_MULTI_LORA_ARGS_FILENAME`: the LoRA adapters, read where `enable_lora` is set."""
ENGINE_ARGS_FILE = InputKind("vLLM model.json", 64 * 1024)
"""Engine arguments are a few hundred bytes; 64 KiB leaves room for long model paths and LoRA lists."""

VLLM_RELEASE = "0.5.5"
DEFAULT_GPU_MEMORY_SHARE = 0.9
"""vLLM 0.5.5 EngineArgs.gpu_memory_utilization: the share of a GPU's memory an engine takes when it loads, for its
weights and KV cache, unless model.json says otherwise."""
ENGINE_ARGS = frozenset(
    # vllm 0.5.5 vllm/engine/arg_utils.py: the EngineArgs dataclass's fields, then AsyncEngineArgs' own two.
    [
        "model",
        "served_model_name",
        "tokenizer",
        "skip_tokenizer_init",
        "tokenizer_mode",
        "trust_remote_code",
        "download_dir",
        "load_format",
        "dtype",
        "kv_cache_dtype",
        "quantization_param_path",
        "seed",
        "max_model_len",
        "worker_use_ray",
        "distributed_executor_backend",
        "pipeline_parallel_size",
        "tensor_parallel_size",
        "max_parallel_loading_workers",
        "block_size",
        "enable_prefix_caching",
        "disable_sliding_window",
        "swap_space",
        "cpu_offload_gb",
        "gpu_memory_utilization",
        "max_num_batched_tokens",
        "max_num_seqs",
        "max_logprobs",
        "disable_log_stats",
        "revision",
        "code_revision",
        "rope_scaling",
        "rope_theta",
        "tokenizer_revision",
        "quantization",
        "enforce_eager",
        "max_context_len_to_capture",
        "max_seq_len_to_capture",
        "disable_custom_all_reduce",
        "tokenizer_pool_size",
        "tokenizer_pool_type",
        "tokenizer_pool_extra_config",
        "limit_mm_per_prompt",
        "enable_lora",
        "max_loras",
        "max_lora_rank",
        "enable_prompt_adapter",
        "max_prompt_adapters",
        "max_prompt_adapter_token",
        "fully_sharded_loras",
        "lora_extra_vocab_size",
        "long_lora_scaling_factors",
        "lora_dtype",
        "max_cpu_loras",
        "device",
        "num_scheduler_steps",
        "ray_workers_use_nsight",
        "num_gpu_blocks_override",
        "num_lookahead_slots",
        "model_loader_extra_config",
        "ignore_patterns",
        "preemption_mode",
        "scheduler_delay_factor",
        "enable_chunked_prefill",
        "guided_decoding_backend",
        "speculative_model",
        "speculative_model_quantization",
        "speculative_draft_tensor_parallel_size",
        "num_speculative_tokens",
        "speculative_max_model_len",
        "speculative_disable_by_batch_size",
        "ngram_prompt_lookup_max",
        "ngram_prompt_lookup_min",
        "spec_decoding_acceptance_method",
        "typical_acceptance_sampler_posterior_threshold",
        "typical_acceptance_sampler_posterior_alpha",
        "qlora_adapter_name_or_path",
        "disable_logprobs_during_spec_decoding",
        "otlp_traces_endpoint",
        "collect_detailed_traces",
        "engine_use_ray",
        "disable_log_requests",
    ]
)


CHECKED_ARGS = {
    "model": "set the Hugging Face name or path of the weights",
    "tensor_parallel_size": "set a whole number of GPUs, 1 or more, or leave the key out (1)",
    "pipeline_parallel_size": "set a whole number of GPUs, 1 or more, or leave the key out (1)",
    "gpu_memory_utilization": (
        f"set a fraction in (0, 1], or leave the key out (vLLM's default {DEFAULT_GPU_MEMORY_SHARE})"
    ),
}
"""The engine arguments whose values are checked, and what each takes: null is none of them."""


def engine_args_problems(text: str) -> list[str]:
    """What the backend would refuse in a model.json's text: not a JSON object, no `model`, a key vLLM's engine
    does not take, a GPU memory share outside (0, 1]."""
    try:
        config: Any = json.loads(text)
    except ValueError as err:
        return [f"is not JSON ({err}); it holds vLLM's engine arguments as one object"]
    if not isinstance(config, dict):
        return [f"is {excerpt(config)}, not a JSON object of vLLM's engine arguments"]
    return [message for _, message in engine_config_problems(config)]


def closest_engine_arg(key: str) -> str:
    """` (did you mean '<key>'?)` for the engine argument closest to `key`, or nothing."""
    close = difflib.get_close_matches(key, sorted(ENGINE_ARGS), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def engine_config_problems(config: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """(key at fault, or None for the whole, problem) for engine arguments as vLLM would take them."""
    problems: list[tuple[str | None, str]] = []
    for key, value in sorted(config.items()):
        if not _is_json(value):
            # Only a stack's or a program's mapping can hold one (a YAML date, NaN): model.json is written as JSON.
            problems.append(
                (
                    key,
                    f"{key} {excerpt(str(value))} is no JSON value (a string, number, true/false, null, "
                    "list or object, its text without lone surrogates U+D800-U+DFFF), which model.json holds",
                )
            )
    for key in sorted(set(config) - ENGINE_ARGS):
        problems.append(
            (
                key,
                f"{excerpt(key)} is no engine argument of vLLM {VLLM_RELEASE} (AsyncEngineArgs), so the backend fails "
                f"to load the model{closest_engine_arg(key)}",
            )
        )
    nulls = sorted(key for key in CHECKED_ARGS if key in config and config[key] is None)
    for key in nulls:
        problems.append(
            (
                key,
                f"{key} is null, which the backend would pass to vLLM as it is; {CHECKED_ARGS[key]}",
            )
        )
    if "model" not in nulls and (not isinstance(config.get("model"), str) or not config["model"]):
        problems.append(
            (
                None,
                "has no `model`, the Hugging Face name or path of the weights: without it vLLM loads its own default "
                "model (EngineArgs.model)",
            )
        )
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = config.get(key, 1)
        if key not in nulls and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            problems.append((key, f"{key} {excerpt(value)} is not a whole number of GPUs, 1 or more"))
    share = config.get("gpu_memory_utilization")
    if share is not None and (isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1):
        problems.append(
            (
                "gpu_memory_utilization",
                f"gpu_memory_utilization {excerpt(share)} is not a fraction in (0, 1]: the share of the GPU's memory "
                "vLLM takes for weights and KV cache",
            )
        )
    return problems


def _is_json(value: Any) -> bool:
    if isinstance(value, str):
        return is_utf8(value)
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    return isinstance(value, dict) and all(isinstance(k, str) and is_utf8(k) and _is_json(v) for k, v in value.items())


def gpu_memory_share(text: str) -> tuple[float, int]:
    """A checked model.json's GPU memory: the share of each GPU's memory its engine takes, and on how many GPUs
    (`tensor_parallel_size` x `pipeline_parallel_size`)."""
    config = json.loads(text)
    share = float(config.get("gpu_memory_utilization", DEFAULT_GPU_MEMORY_SHARE))
    return share, int(config.get("tensor_parallel_size", 1)) * int(config.get("pipeline_parallel_size", 1))
