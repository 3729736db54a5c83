"""A TensorRT-LLM model's parameters, each checked against those the 0.14.0 backend reads
(triton_platform/model_packaging/tensorrt_llm.py), as the repository reader reports them."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from triton_platform.model_packaging.source import parse_model_config, read_repository
from triton_platform.model_packaging.tensorrt_llm import PARAMETERS, kv_cache_share, tensorrt_llm_problems

ENGINE = """name: "tensorrt_llm"
backend: "tensorrtllm"
max_batch_size: 64
model_transaction_policy { decoupled: true }
input [ { name: "input_ids" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "output_ids" data_type: TYPE_INT32 dims: [ -1, -1 ] } ]
"""


def parameters(**values: str) -> str:
    return "".join(f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}\n' for k, v in values.items())


def problems(text: str) -> list[str]:
    return list(tensorrt_llm_problems(parse_model_config(text)))


def test_a_filled_template_passes() -> None:
    assert (
        problems(
            ENGINE
            + parameters(
                gpt_model_type="inflight_fused_batching",
                gpt_model_path="/engines/llama/1",
                kv_cache_free_gpu_mem_fraction="0.85",
                batch_scheduler_policy="guaranteed_no_evict",
            )
        )
        == []
    )


def test_a_misspelt_parameter_is_named_with_the_closest_the_backend_reads() -> None:
    assert problems(ENGINE + parameters(gpt_model_path="/engines/1", kv_cache_free_gpu_memory_fraction="0.5")) == [
        "parameter 'kv_cache_free_gpu_memory_fraction' is none the TensorRT-LLM backend 0.14.0 reads, so it would be "
        "ignored and its setting left at the default (did you mean 'kv_cache_free_gpu_mem_fraction'?)"
    ]


def test_an_unfilled_template_and_a_bad_model_type_are_named() -> None:
    assert problems(ENGINE + parameters(gpt_model_path="${engine_dir}", gpt_model_type="inflight")) == [
        "parameter 'gpt_model_path' is '${engine_dir}', a template placeholder left unfilled (tools/fill_template.py): "
        "the backend would read it as it is",
        "parameter 'gpt_model_type' is 'inflight'; the backend takes V1, v1, inflight_batching, "
        "inflight_fused_batching",
    ]
    assert problems(ENGINE) == [
        "has no parameter 'gpt_model_path': the folder of the TensorRT-LLM engine the backend loads"
    ]


def test_a_kv_cache_share_that_is_no_fraction_is_named() -> None:
    # Unicode digits and `_` pass Python's float() but not std::stof, so the backend would fall back to 0.9.
    for value in ("ninety", "1.5", "0", "٠.٥", "0_5", "0.５"):
        assert problems(ENGINE + parameters(gpt_model_path="/e", kv_cache_free_gpu_mem_fraction=value)) == [
            f"parameter 'kv_cache_free_gpu_mem_fraction' is {value!r}, not a fraction in (0, 1]: the share of the GPU "
            "memory the engine's weights leave free that the backend takes for KV cache (it would fall back to 0.9 "
            "unseen)"
        ]


def test_the_least_share_of_its_gpu_an_engine_takes() -> None:
    assert kv_cache_share(parse_model_config(ENGINE)) == 0.9  # the backend's default
    assert kv_cache_share(parse_model_config(ENGINE + parameters(kv_cache_free_gpu_mem_fraction="0.4"))) == 0.4
    # A token cap makes the cache the smaller of the two, which needs the engine's bytes per token: not sized.
    capped = parameters(kv_cache_free_gpu_mem_fraction="0.4", max_tokens_in_paged_kv_cache="4096")
    assert kv_cache_share(parse_model_config(ENGINE + capped)) is None


def test_other_backends_parameters_are_theirs() -> None:
    assert problems(ENGINE.replace("tensorrtllm", "python") + parameters(anything="x")) == []


@given(st.sets(st.sampled_from(sorted(PARAMETERS)), max_size=6))
def test_every_parameter_the_backend_reads_passes(keys: set[str]) -> None:
    assert problems(ENGINE + parameters(gpt_model_path="/e", **dict.fromkeys(keys - {"gpt_model_path"}, "1"))) == [
        "parameter 'gpt_model_type' is '1'; the backend takes V1, v1, inflight_batching, inflight_fused_batching"
    ] * ("gpt_model_type" in keys)


def test_the_repository_reports_them_at_the_config(tmp_path: Path) -> None:
    (tmp_path / "tensorrt_llm" / "1").mkdir(parents=True)
    (tmp_path / "tensorrt_llm" / "config.pbtxt").write_text(ENGINE + parameters(gpt_model_path="/e", max_beam="2"))
    [problem] = read_repository(tmp_path).problems["tensorrt_llm"]
    assert (problem.file.name, problem.message) == (
        "config.pbtxt",
        "parameter 'max_beam' is none the TensorRT-LLM backend 0.14.0 reads, so it would be ignored and its setting "
        "left at the default (did you mean 'max_beam_width'?)",
    )


STOF_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=4)


@given(
    st.one_of(
        st.text(max_size=12),
        st.builds(
            lambda space, sign, whole, dot, part, exp: f"{space}{sign}{whole}{dot}{part}{exp}",
            st.sampled_from(["", " ", "\t"]),
            st.sampled_from(["", "+", "-"]),
            st.one_of(st.just(""), STOF_DIGITS),
            st.sampled_from(["", "."]),
            st.one_of(st.just(""), STOF_DIGITS),
            st.one_of(
                st.just(""),
                st.builds(
                    lambda e, s, d: e + s + d, st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), STOF_DIGITS
                ),
            ),
        ),
    )
)
def test_the_kv_cache_share_is_read_as_stof_reads_a_decimal(text: str) -> None:
    """A share is read only where it is all ASCII of stof's decimal form, and then as float() reads it."""
    config = parse_model_config(ENGINE + parameters(gpt_model_path="/e"))
    config.parameters["kv_cache_free_gpu_mem_fraction"].string_value = text
    share = kv_cache_share(config)
    decimal = re.fullmatch(r"[ \t\n\r\f\v]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text)
    if decimal is None:
        assert share is None
    else:
        value = float(text)
        assert share == (value if 0 < value <= 1 else None)
