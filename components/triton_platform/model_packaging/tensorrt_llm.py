"""A TensorRT-LLM model's config.pbtxt parameters, checked as the TensorRT-LLM backend of the 24.10
`tritonserver:24.10-trtllm-python-py3` image reads them (TensorRT-LLM 0.14.0; triton-inference-server/
tensorrtllm_backend v0.14.0, `all_models/inflight_batcher_llm/tensorrt_llm/config.pbtxt` and
`inflight_batcher_llm/src/model_instance_state.cc`). The backend reads each parameter it knows by name and skips
the rest, so a misspelt key silently leaves its setting at the default: this names it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping

from tritonclient.grpc.model_config_pb2 import ModelConfig

from triton_platform.args.excerpts import excerpt, is_utf8

BACKEND = "tensorrtllm"
PARAMETERS = frozenset(
    # The `parameters` of v0.14.0's tensorrt_llm config.pbtxt template (docs/model_config.md lists each).
    [
        "max_beam_width",
        "FORCE_CPU_ONLY_INPUT_TENSORS",
        "gpt_model_type",
        "gpt_model_path",
        "encoder_model_path",
        "max_tokens_in_paged_kv_cache",
        "max_attention_window_size",
        "sink_token_length",
        "batch_scheduler_policy",
        "kv_cache_free_gpu_mem_fraction",
        "cross_kv_cache_fraction",
        "kv_cache_host_memory_bytes",
        "kv_cache_onboard_blocks",
        "exclude_input_in_output",
        "cancellation_check_period_ms",
        "stats_check_period_ms",
        "iter_stats_max_iterations",
        "request_stats_max_iterations",
        "enable_kv_cache_reuse",
        "normalize_log_probs",
        "enable_chunked_context",
        "gpu_device_ids",
        "participant_ids",
        "lora_cache_optimal_adapter_size",
        "lora_cache_max_adapter_size",
        "lora_cache_gpu_memory_fraction",
        "lora_cache_host_memory_bytes",
        "decoding_mode",
        "executor_worker_path",
        "medusa_choices",
        "gpu_weights_percent",
        "enable_context_fmha_fp32_acc",
        "multi_block_mode",
    ]
)
MODEL_TYPES = ("V1", "v1", "inflight_batching", "inflight_fused_batching")
"""`gpt_model_type`: model_instance_state.cc accepts these and throws on any other."""
DEFAULT_KV_CACHE_SHARE = 0.9
"""`kv_cache_free_gpu_mem_fraction` unset: v0.14.0 `inflight_batcher_llm/src/model_instance_state.cc` warns "will
use default value of 0.9 or max_tokens_in_paged_kv_cache" (TensorRT-LLM's KvCacheConfig default)."""
PLACEHOLDER = re.compile(r"\$\{[^}]*\}")
"""What the repository's fill_template.py replaces (`${engine_dir}`): left in, the backend reads it literally."""


def tensorrt_llm_problems(config: ModelConfig) -> Iterator[str]:
    """Unknown or unfilled parameters of a `tensorrtllm` model, a model type the backend refuses, no engine."""
    if config.backend != BACKEND:
        return
    parameters = {key: value.string_value for key, value in config.parameters.items()}
    yield from (message for _, message in parameter_problems(parameters))
    if not parameters.get("gpt_model_path"):
        yield "has no parameter 'gpt_model_path': the folder of the TensorRT-LLM engine the backend loads"


def closest_parameter(key: str) -> str:
    """` (did you mean '<key>'?)` for the parameter the backend reads closest to `key`, or nothing."""
    close = difflib.get_close_matches(key, sorted(PARAMETERS), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parameter_problems(parameters: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(key, problem) for each parameter the backend would skip or misread."""
    for key in sorted(set(parameters) - PARAMETERS):
        yield (
            key,
            f"parameter {excerpt(key)} is none the TensorRT-LLM backend 0.14.0 reads, so it would be ignored and "
            f"its setting left at the default{closest_parameter(key)}",
        )
    for key, value in sorted(parameters.items()):
        if not is_utf8(value):
            yield (
                key,
                f"parameter {excerpt(key)} is {excerpt(value)}, which holds a lone surrogate (U+D800-U+DFFF): "
                "config.pbtxt is UTF-8 text, which cannot hold one; write the character itself",
            )
        elif PLACEHOLDER.search(value):
            yield (
                key,
                f"parameter {key!r} is {excerpt(value)}, a template placeholder left unfilled "
                "(tools/fill_template.py): the backend would read it as it is",
            )
    model_type = parameters.get("gpt_model_type")
    if model_type is not None and not PLACEHOLDER.search(model_type) and model_type not in MODEL_TYPES:
        yield (
            "gpt_model_type",
            f"parameter 'gpt_model_type' is {excerpt(model_type)}; the backend takes {', '.join(MODEL_TYPES)}",
        )
    share = parameters.get("kv_cache_free_gpu_mem_fraction")
    if share is not None and not PLACEHOLDER.search(share) and _fraction(share) is None:
        # model_instance_state.cc reads it with GetParameter<float> in a try block that falls back to the default on
        # any error: a value that is no number would leave the KV cache at 0.9 of free memory unseen.
        yield (
            "kv_cache_free_gpu_mem_fraction",
            f"parameter 'kv_cache_free_gpu_mem_fraction' is {excerpt(share)}, not a fraction in (0, 1]: the share of "
            "the GPU memory the engine's weights leave free that the backend takes for KV cache (it would fall back "
            "to 0.9 unseen)",
        )


STOF_DECIMAL = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
"""A decimal number as std::stof reads one (model_instance_state.cc's GetParameter<float>), ASCII only: Python's
float() also takes Unicode digits and `_` between digits, which stof refuses, so the backend would fall back to 0.9."""


def _fraction(text: str) -> float | None:
    if STOF_DECIMAL.fullmatch(text) is None:
        return None
    value = float(text)
    return value if 0 < value <= 1 else None


def kv_cache_share(config: ModelConfig) -> float | None:
    """The least share of each GPU's memory a checked `tensorrtllm` engine takes as it loads: its weights plus
    `kv_cache_free_gpu_mem_fraction` f of what they leave free, w + f(M - w) >= f x M. None where
    `max_tokens_in_paged_kv_cache` is set: the KV cache is then the smaller of the two, which depends on the engine's
    bytes per token, unknown here."""
    parameters = {key: value.string_value for key, value in config.parameters.items()}
    if parameters.get("max_tokens_in_paged_kv_cache", "").strip():
        return None
    share = parameters.get("kv_cache_free_gpu_mem_fraction")
    return DEFAULT_KV_CACHE_SHARE if share is None else _fraction(share)
