"""A streaming model's token objectives (`serving.tokenObjectives`) against the model repository and the image: the
model streams, a deployment serves it, and something exports the series its objectives are read from
(triton_platform/monitoring/token_rules.py). The component's own rule on them (a p99 below its p95, an
inter-token objective Triton cannot measure) runs here too, with the series the model's backend gives; and the
token triggers' targets against the models they read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import cast

from platform_config.errors import ConfigIssue
from platform_config.model_checks import camel, known
from platform_config.model_settings import served_models
from platform_config.paths import display_path
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.sections import MODELS, SERVING, Sections
from platform_config.serving import ModelSettings, ServingConfig
from triton_platform.args.arg_problems import ArgProblems
from triton_platform.model_packaging.source import ModelRepository, RepoModel
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS_FILE_NAME
from triton_platform.monitoring.monitoring_args import TokenObjectives
from triton_platform.monitoring.monitoring_settings import token_objective_rules
from triton_platform.monitoring.token_rules import token_metrics
from triton_platform.token_signal import FIRST_RESPONSE_BUCKETS, SOURCES

FIRST_RESPONSE_HISTOGRAM_RELEASE = (24, 11)
"""The first NGC release whose Triton (2.52) exports `nv_inference_first_response_histogram_ms` (core r24.11,
src/metric_model_reporter.cc); 24.10's 2.51 has none and ignores `histogram_latencies`."""
RELEASE_TAG = re.compile(r"^(\d{2})\.(\d{2})(?:-|$)")
"""An NGC Triton image tag: `<YY>.<MM>` then the variant (`24.10-py3`, `24.10-vllm-python-py3`)."""


def image_release(image: str) -> tuple[int, int] | None:
    """The NGC release of a Triton image by its tag (`nvcr.io/nvidia/tritonserver:24.10-py3`), or None where the tag
    does not say (another naming, or a digest alone)."""
    name = image.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    found = RELEASE_TAG.match(tag)
    return (int(found[1]), int(found[2])) if found else None


def _reports_vllm_metrics(model: RepoModel) -> bool:
    """vllm_backend r24.10 src/model.py: its metrics only where the config's `REPORT_CUSTOM_METRICS` is exactly
    `yes` (compared as written: `Yes` or `true` leave them off)."""
    parameter = model.config.parameters.get("REPORT_CUSTOM_METRICS")
    return parameter is not None and parameter.string_value == "yes"


def _logs_no_stats(serving: ServingConfig, models: dict[str, ModelSettings], model: RepoModel) -> str | None:
    """Where `disable_log_stats` is set true for `model`'s engine, which turns the vLLM backend's metrics off
    (vllm_backend r24.10 src/model.py: `not aync_engine_args.disable_log_stats`); None where it is not."""
    own = models.get(model.name)
    layers = [(f"{SERVING}.modelDefaults.vllm.engineArgs", serving.model_defaults.vllm)]
    layers.append((f"{MODELS}.{model.name}.vllm.engineArgs", own.vllm if own is not None else None))
    written = {key: (where, value) for where, vllm in layers if vllm for key, value in vllm.engine_args.items()}
    if "disable_log_stats" in written:
        where, value = written["disable_log_stats"]
        return f"{where}.disable_log_stats" if value else None
    for version in model.versions:
        path = model.path / str(version) / ENGINE_ARGS_FILE_NAME
        try:
            found = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, ValueError):
            continue  # the model's own checks name an unreadable model.json
        if isinstance(found, dict) and found.get("disable_log_stats"):
            return display_path(path)
    return None


def token_objectives_fit(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    served = served_models(serving)
    release = image_release(serving.image)
    for name, objectives in sorted(serving.token_objectives.items()):
        path = f"{SERVING}.tokenObjectives.{name}"
        model = repo.models.get(name)
        if model is None:
            yield ConfigIssue(path, f"{name!r} is not in the model repository; known models: {known(repo)}")
            continue
        if name not in served:
            yield ConfigIssue(
                path, f"model {name!r} has token objectives but no deployment serves it; serve it or remove them"
            )
        if not model.is_decoupled:
            yield ConfigIssue(
                path,
                f"model {name!r} does not stream: its config.pbtxt has no `model_transaction_policy {{ decoupled: "
                "true }`, so it answers each request once and has no first token to time; token objectives are for "
                "decoupled models, and `p95LatencySloMs` covers this one",
            )
            continue
        metrics = token_metrics(model)
        first_response = SOURCES[metrics][0][0] == FIRST_RESPONSE_BUCKETS
        if first_response and release is not None and release < FIRST_RESPONSE_HISTOGRAM_RELEASE:
            yield ConfigIssue(
                f"{SERVING}.image",
                f"{serving.image!r} is Triton {release[0]}.{release[1]:02d}, which exports no first-response "
                f"histogram, so model {name!r}'s time to first token could not be measured; Triton 24.11 (2.52) and "
                "later export it: use such an image, or serve the model with the vLLM backend",
            )
        if metrics == "vllm" and not _reports_vllm_metrics(model):
            yield ConfigIssue(
                path,
                f"model {name!r} is served by the vLLM backend, which reports its token metrics only with "
                '`parameters { key: "REPORT_CUSTOM_METRICS" value: { string_value: "yes" } }` in its config.pbtxt '
                "(exactly `yes`); add it",
            )
        silenced = _logs_no_stats(serving, sections.get("models", {}), model) if metrics == "vllm" else None
        if silenced is not None:
            yield ConfigIssue(
                path,
                f"model {name!r}'s vLLM engine has disable_log_stats true ({silenced}), which turns the backend's "
                "token metrics off, so its objectives could not be measured; remove it",
            )
        problems = ArgProblems("stack", "tokens")
        given = cast(TokenObjectives, {**objectives.model_dump(exclude_none=True), "metrics": metrics})
        token_objective_rules(problems, (), given)
        for problem in problems.problems:
            yield ConfigIssue(f"{path}.{camel(str(problem.path[-1]))}", problem.reason)


def token_targets_read(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A token trigger's target set where no deployment gets the trigger: it would look tuned while doing nothing
    (triton_platform/token_signal.py picks the triggers)."""
    scaling: ScalingConfig = sections["scaling"]
    serving: ServingConfig = sections["serving"]
    streaming = [repo.models[name] for name in serving.token_objectives if name in repo.models]
    read = {
        "time_to_first_token_target": (bool(streaming), "a model with serving.tokenObjectives"),
        "kv_cache_target": (
            any(token_metrics(model) == "tensorrtllm" for model in streaming),
            "a TensorRT-LLM model (backend tensorrtllm) with serving.tokenObjectives",
        ),
    }
    for field, (is_read, needs) in read.items():
        if field in scaling.model_fields_set and not is_read:
            yield ConfigIssue(
                f"{section_key('scaling')}.{camel(field)}",
                f"is set but read only by the token trigger of a deployment serving {needs}, and this stack has none; "
                "remove it, or state the model's objectives",
            )
