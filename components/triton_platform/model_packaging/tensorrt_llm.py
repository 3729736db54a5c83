"""A TensorRT-LLM model's config.pbtxt parameters, checked as the TensorRT-LLM backend of the 24.10
`tritonserver:24.10-trtllm-python-py3` image reads them (TensorRT-LLM 0.14.0; triton-inference-server/
tensorrtllm_backend v0.14.0, `all_models/inflight_batcher_llm/tensorrt_llm/config.pbtxt` and
`inflight_batcher_llm/src/model_instance_state.cc`). The backend reads each parameter it knows by name and skips
the rest, so a misspelt key silently leaves its setting at the default: this names it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from tritonclient.grpc.model_config_pb2 import ModelConfig

from triton_platform.args.excerpts import excerpt

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
PLACEHOLDER = re.compile(r"\$\{[^}]*\}")
"""What the repository's fill_template.py replaces (`${engine_dir}`): left in, the backend reads it literally."""


def tensorrt_llm_problems(config: ModelConfig) -> Iterator[str]:
    """Unknown or unfilled parameters of a `tensorrtllm` model, a model type the backend refuses, no engine."""
    if config.backend != BACKEND:
        return
    parameters = {key: value.string_value for key, value in config.parameters.items()}
    for key in sorted(set(parameters) - PARAMETERS):
        close = difflib.get_close_matches(key, sorted(PARAMETERS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        yield (
            f"parameter {excerpt(key)} is none the TensorRT-LLM backend 0.14.0 reads, so it would be ignored and "
            f"its setting left at the default{hint}"
        )
    for key, value in sorted(parameters.items()):
        if PLACEHOLDER.search(value):
            yield (
                f"parameter {key!r} is {excerpt(value)}, a template placeholder left unfilled "
                "(tools/fill_template.py): the backend would read it as it is"
            )
    model_type = parameters.get("gpt_model_type")
    if model_type is not None and not PLACEHOLDER.search(model_type) and model_type not in MODEL_TYPES:
        yield f"parameter 'gpt_model_type' is {excerpt(model_type)}; the backend takes {', '.join(MODEL_TYPES)}"
    if not parameters.get("gpt_model_path"):
        yield "has no parameter 'gpt_model_path': the folder of the TensorRT-LLM engine the backend loads"
