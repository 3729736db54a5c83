"""`serving.tokenObjectives` (platform_config/token_checks.py): each streaming model's objectives checked against
the repository and the image, with the series its backend gives; and what the program hands Monitoring."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_config.paths import DEFAULT_MODEL_REPO, PROJECT_ROOT
from platform_config.schema import PlatformConfig
from platform_config.token_checks import image_release
from program.platform import Workload, monitoring_args, scaling_args, served_plainly
from tests.conftest import SERVING, Mutation, errors_of, model_folder, removing, setting, validate
from triton_platform.model_packaging.source import ModelRepository, read_repository
from triton_platform.monitoring.monitoring_settings import monitoring_settings
from triton_platform.monitoring.token_rules import token_queries

STREAMING = PROJECT_ROOT / "tests" / "fixtures" / "streaming_repo" / "tokens"
NEWER = "nvcr.io/nvidia/tritonserver:24.11-py3"
VLLM = 'backend: "vllm"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n'
REPORTS = 'parameters { key: "REPORT_CUSTOM_METRICS" value: { string_value: "yes" } }\n'
TRTLLM = (
    'backend: "tensorrtllm"\nmax_batch_size: 8\nmodel_transaction_policy { decoupled: true }\n'
    'parameters { key: "gpt_model_type" value: { string_value: "inflight_fused_batching" } }\n'
    'parameters { key: "gpt_model_path" value: { string_value: "/engines/llama" } }\n'
)
KEY = f"{SERVING}.tokenObjectives"


@pytest.fixture
def repo(tmp_path: Path) -> ModelRepository:
    """classifier (one answer per request), tokens (a decoupled Python model), two vLLM models, one reporting
    its metrics, and a TensorRT-LLM engine."""
    shutil.copytree(DEFAULT_MODEL_REPO / "classifier", tmp_path / "classifier")
    shutil.copytree(STREAMING, tmp_path / "tokens")
    for name, config in (("llama", VLLM + REPORTS), ("quiet", VLLM)):
        model_folder(tmp_path, name, config)
        (tmp_path / name / "1" / "model.json").write_text('{"model": "meta-llama/Llama-3.1-8B-Instruct"}')
    model_folder(tmp_path, "engine", TRTLLM)
    return read_repository(tmp_path)


def serving(*models: str, image: str = NEWER) -> tuple[Mutation, ...]:
    return (
        removing("triton-platform:models"),
        setting(SERVING, "deployments", "general", "models", value=list(models)),
        setting(SERVING, "image", value=image),
        # Above the 0.9 of its GPU an LLM engine takes by default as it loads (platform_config/scaling_checks.py).
        setting("triton-platform:scaling", "gpuMemoryRatioTarget", value=0.95),
    )


def objectives(value: dict[str, object]) -> Mutation:
    return setting(SERVING, "tokenObjectives", value=value)


def test_a_streaming_models_objectives_reach_monitoring_with_the_series_its_backend_gives(
    repo: ModelRepository,
) -> None:
    config = validate(
        "dev",
        *serving("classifier", "tokens", "llama"),
        objectives(
            {
                "tokens": {"timeToFirstTokenP95Ms": 500, "timeToFirstTokenP99Ms": 1000},
                "llama": {"timeToFirstTokenP95Ms": 400, "interTokenP95Ms": 50, "interTokenP99Ms": 80},
            }
        ),
        repo=repo,
    )
    from platform_config.model_settings import render_stack  # noqa: PLC0415

    rendered = render_stack("dev", config.serving, config.models, repo)
    args = monitoring_args(config, served_plainly(config, rendered), rendered)
    assert args["token_objectives"] == {
        "tokens": {"time_to_first_token_p95_ms": 500, "time_to_first_token_p99_ms": 1000, "metrics": "triton"},
        "llama": {
            "time_to_first_token_p95_ms": 400,
            "inter_token_p95_ms": 50,
            "inter_token_p99_ms": 80,
            "metrics": "vllm",
        },
    }


def test_a_model_that_does_not_stream_has_no_token_objectives(repo: ModelRepository) -> None:
    assert errors_of(
        "dev",
        *serving("classifier"),
        objectives({"classifier": {"timeToFirstTokenP95Ms": 500}}),
        repo=repo,
    ) == [
        f"{KEY}.classifier: model 'classifier' does not stream: its config.pbtxt has no `model_transaction_policy "
        "{ decoupled: true }`, so it answers each request once and has no first token to time; token objectives "
        "are for decoupled models, and `p95LatencySloMs` covers this one"
    ]


def test_objectives_name_a_served_model_of_the_repository(repo: ModelRepository) -> None:
    assert errors_of(
        "dev",
        *serving("classifier"),
        objectives({"tokens": {"timeToFirstTokenP95Ms": 500}, "chat": {"timeToFirstTokenP95Ms": 500}}),
        repo=repo,
    ) == [
        f"{KEY}.chat: 'chat' is not in the model repository; known models: classifier, engine, llama, quiet, tokens",
        f"{KEY}.tokens: model 'tokens' has token objectives but no deployment serves it; serve it or remove them",
    ]


def test_triton_before_24_11_cannot_time_a_first_token(repo: ModelRepository) -> None:
    image = "nvcr.io/nvidia/tritonserver:24.10-py3"
    assert errors_of(
        "dev",
        *serving("tokens", image=image),
        objectives({"tokens": {"timeToFirstTokenP95Ms": 500}}),
        repo=repo,
    ) == [
        f"{SERVING}.image: '{image}' is Triton 24.10, which exports no first-response histogram, so model 'tokens''s "
        "time to first token could not be measured; Triton 24.11 (2.52) and later export it: use such an image, or "
        "serve the model with the vLLM backend"
    ]


def test_the_components_rule_runs_with_the_models_series(repo: ModelRepository) -> None:
    assert errors_of(
        "dev",
        *serving("tokens", "llama"),
        objectives(
            {
                "tokens": {"timeToFirstTokenP95Ms": 500, "interTokenP95Ms": 40},
                "llama": {"timeToFirstTokenP95Ms": 400, "timeToFirstTokenP99Ms": 300},
            }
        ),
        repo=repo,
    ) == [
        f"{KEY}.llama.timeToFirstTokenP99Ms: 300 is below the p95 objective (400 ms): a p99 is never below the p95; give at least 400",
        f"{KEY}.tokens.interTokenP95Ms: needs metrics 'vllm', the vLLM backend's: Triton reports no inter-token "
        "latency (its only token series is the first-response histogram), so this objective could never be "
        "measured; remove it, or serve the model with the vLLM backend and its metrics",
    ]


def test_a_vllm_model_must_report_its_metrics(repo: ModelRepository) -> None:
    assert errors_of(
        "dev",
        *serving("quiet"),
        objectives({"quiet": {"timeToFirstTokenP95Ms": 400}}),
        repo=repo,
    ) == [
        f"{KEY}.quiet: model 'quiet' is served by the vLLM backend, which reports its token metrics only with "
        '`parameters { key: "REPORT_CUSTOM_METRICS" value: { string_value: "yes" } }` in its config.pbtxt '
        "(exactly `yes`); add it"
    ]


def test_a_vllm_model_reports_only_with_exactly_yes_and_its_stats_logged(repo: ModelRepository, tmp_path: Path) -> None:
    # vllm_backend r24.10 src/model.py compares the parameter to "yes" as written, and skips its metrics when the
    # engine's disable_log_stats is set.
    model_folder(tmp_path, "loud", VLLM + REPORTS.replace('"yes"', '"Yes"'))
    (tmp_path / "loud" / "1" / "model.json").write_text('{"model": "m", "disable_log_stats": true}')
    found = errors_of(
        "dev", *serving("loud"), objectives({"loud": {"timeToFirstTokenP95Ms": 400}}), repo=read_repository(tmp_path)
    )
    assert len(found) == 2
    assert found[0].endswith("in its config.pbtxt (exactly `yes`); add it")
    (tmp_path / "loud" / "config.pbtxt").write_text(VLLM + REPORTS)
    assert errors_of(
        "dev", *serving("loud"), objectives({"loud": {"timeToFirstTokenP95Ms": 400}}), repo=read_repository(tmp_path)
    ) == [
        f"{KEY}.loud: model 'loud''s vLLM engine has disable_log_stats true ({tmp_path}/loud/1/model.json), which turns "
        "the backend's token metrics off, so its objectives could not be measured; remove it"
    ]


def test_tensorrt_llm_on_triton_before_24_11_cannot_time_a_first_token(repo: ModelRepository) -> None:
    # Its backend reports gauges only: its first token is timed by Triton's histogram, as any model's is.
    image = "nvcr.io/nvidia/tritonserver:24.10-trtllm-python-py3"
    [message] = errors_of(
        "dev", *serving("engine", image=image), objectives({"engine": {"timeToFirstTokenP95Ms": 800}}), repo=repo
    )
    assert message.startswith(f"{SERVING}.image: '{image}' is Triton 24.10, which exports no first-response histogram")


def test_an_objective_its_histogram_cannot_see_broken_is_refused(repo: ModelRepository) -> None:
    assert errors_of(
        "dev",
        *serving("tokens", "llama"),
        objectives(
            {
                "tokens": {"timeToFirstTokenP95Ms": 4000, "timeToFirstTokenP99Ms": 5000},
                "llama": {"timeToFirstTokenP95Ms": 12000, "interTokenP95Ms": 2000, "interTokenP99Ms": 3000},
            }
        ),
        repo=repo,
    ) == [
        f"{KEY}.llama.interTokenP99Ms: 3000 is at or above the highest bucket of "
        "vllm:time_per_output_token_seconds_bucket (2500 ms): a percentile above it reads as 2500 ms, so this "
        "objective could never be seen broken; give less than 2500",
        f"{KEY}.llama.timeToFirstTokenP95Ms: 12000 is at or above the highest bucket of "
        "vllm:time_to_first_token_seconds_bucket (10000 ms): a percentile above it reads as 10000 ms, so this "
        "objective could never be seen broken; give less than 10000",
        f"{KEY}.tokens.timeToFirstTokenP99Ms: 5000 is at or above the highest bucket of "
        "nv_inference_first_response_histogram_ms_bucket (5000 ms): a percentile above it reads as 5000 ms, so this "
        "objective could never be seen broken; give less than 5000",
    ]


@pytest.mark.parametrize(
    ("image", "release"),
    [
        ("nvcr.io/nvidia/tritonserver:24.10-py3", (24, 10)),
        ("nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3", (24, 10)),
        ("nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3@sha256:" + "a" * 64, (25, 1)),
        ("registry:5000/tritonserver:24.12", (24, 12)),
        ("registry:5000/tritonserver", None),
        ("nvcr.io/nvidia/tritonserver@sha256:" + "a" * 64, None),
        ("example.com/triton:latest", None),
    ],
)
def test_an_images_release_is_read_from_its_tag(image: str, release: tuple[int, int] | None) -> None:
    assert image_release(image) == release


@given(st.text())
def test_any_image_text_reads_as_a_release_or_none(image: str) -> None:
    release = image_release(image)
    assert release is None or (len(release) == 2 and all(0 <= part <= 99 for part in release))


def keda_targets(config: PlatformConfig, repo: ModelRepository) -> dict[str, Any]:
    """KedaScaling's targets as the program builds them, Monitoring's token queries read as plain values."""
    from platform_config.model_settings import render_stack  # noqa: PLC0415

    rendered = render_stack("dev", config.serving, config.models, repo)
    watched = monitoring_settings("dev-monitoring", monitoring_args(config, served_plainly(config, rendered), rendered))
    workloads = {key: Workload(key, "ml") for key in config.serving.deployments}
    queries = dict.fromkeys(config.serving.deployments, "q")
    return scaling_args(config, workloads, queries, "http://p", None, token_queries=token_queries(watched))["targets"]


def test_a_streaming_deployment_scales_on_the_token_signals_its_backends_report(repo: ModelRepository) -> None:
    config = validate(
        "dev",
        *serving("classifier", "tokens", "llama"),
        setting(SERVING, "deployments", "llm", value={"models": ["engine"], "replicas": {"min": 1, "max": 2}}),
        setting("triton-platform:gpuPool", "maxNodes", value=4),
        setting("triton-platform:gpuPool", "minNodes", value=4),
        objectives(
            {
                "tokens": {"timeToFirstTokenP95Ms": 500},
                "llama": {"timeToFirstTokenP95Ms": 400},
                "engine": {"timeToFirstTokenP95Ms": 800},
            }
        ),
        setting("triton-platform:scaling", "timeToFirstTokenTarget", value=0.7),
        repo=repo,
    )
    targets = keda_targets(config, repo)
    selector = 'namespace="triton-dev", deployment="triton-general"'
    ttft = (
        "max(((histogram_quantile(0.95, sum by (model, le) (rate(vllm:time_to_first_token_seconds_bucket{"
        + selector
        + ', model="llama"}[2m]))) / 0.4 or histogram_quantile(0.95, sum by (model, le) '
        "(rate(nv_inference_first_response_histogram_ms_bucket{"
        + selector
        + ', model="tokens"}[2m]))) / 500)) >= 0) or vector(0)'
    )
    assert targets["general"]["extra_triggers"] == [
        {"name": "time-to-first-token", "query": ttft, "threshold": 0.7, "metric_type": "Value"}
    ]
    llm = 'namespace="triton-dev", deployment="triton-llm", model=~"engine"'
    assert targets["llm"]["extra_triggers"] == [
        {
            "name": "time-to-first-token",
            "query": "max(((histogram_quantile(0.95, sum by (model, le) (rate(nv_inference_first_response_histogram_ms"
            '_bucket{namespace="triton-dev", deployment="triton-llm", model="engine"}[2m]))) / 800)) >= 0) '
            "or vector(0)",
            "threshold": 0.7,
            "metric_type": "Value",
        },
        {
            "name": "kv-cache",
            "query": f'sum(sum by (pod) (nv_trt_llm_kv_cache_block_metrics{{{llm}, kv_cache_block_type="used"}}) / '
            f'(sum by (pod) (nv_trt_llm_kv_cache_block_metrics{{{llm}, kv_cache_block_type="max"}}) > 0)) '
            "or vector(0)",
            "threshold": 0.8,
            "metric_type": "AverageValue",
        },
    ]


def test_a_deployment_without_objectives_scales_on_its_load_alone(repo: ModelRepository) -> None:
    config = validate("dev", *serving("classifier", "tokens"), repo=repo)
    assert "extra_triggers" not in keda_targets(config, repo)["general"]


def test_a_token_target_nothing_reads_is_refused(repo: ModelRepository) -> None:
    scaling = "triton-platform:scaling"
    assert errors_of(
        "dev",
        *serving("classifier", "tokens"),
        objectives({"tokens": {"timeToFirstTokenP95Ms": 500}}),
        setting(scaling, "kvCacheTarget", value=0.9),
        repo=repo,
    ) == [
        f"{scaling}.kvCacheTarget: is set but read only by the token trigger of a deployment serving a TensorRT-LLM "
        "model (backend tensorrtllm) with serving.tokenObjectives, and this stack has none; remove it, or state the "
        "model's objectives"
    ]
    assert errors_of(
        "dev", *serving("classifier"), setting(scaling, "timeToFirstTokenTarget", value=0.9), repo=repo
    ) == [
        f"{scaling}.timeToFirstTokenTarget: is set but read only by the token trigger of a deployment serving a model "
        "with serving.tokenObjectives, and this stack has none; remove it, or state the model's objectives"
    ]
