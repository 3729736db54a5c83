"""The stack's models against the model repository and each other: every model served exists, every model's settings are
for a served model and fit it (triton_platform/serving/model_fit.py, in the stack's keys), queue delays and
timeouts within the latency objective, ensembles complete, models delivered as production requires.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic.alias_generators import to_camel

from platform_config.errors import ConfigIssue
from platform_config.model_settings import component_settings, served_models
from platform_config.paths import display_path
from platform_config.sections import DEFAULTS, MODELS, SERVING, Sections
from platform_config.serving import ModelSettings, ServingConfig
from triton_platform.model_packaging.bundle import bundle_problems
from triton_platform.model_packaging.digest import version_paths
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import effective_settings
from triton_platform.model_packaging.source import ModelRepository
from triton_platform.serving.model_fit import SettingNames, fit_problems, unserved_steps
from triton_platform.serving.triton_serving_spec import unknown_model


def deployment_models_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    for dep_name, dep in serving.deployments.items():
        for i, model in enumerate(dep.models):
            unknown = unknown_model(repo, model, display_path(repo.path))
            if unknown is not None:
                yield ConfigIssue(f"{SERVING}.deployments.{dep_name}.models[{i}]", unknown)
            else:
                yield from (ConfigIssue(display_path(p.file), p.message) for p in repo.problems.get(model, []))


def known(repo: ModelRepository) -> str:
    return repo.describe(display_path(repo.path))


def model_settings_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model not in repo.names:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which is not in the model repository; known models: {known(repo)}",
            )


def model_settings_served(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    served = served_models(sections["serving"])
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model in repo.names and model not in served:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which no deployment serves; add it to a "
                f"deployment's `models` under {SERVING}.deployments or remove these settings",
            )


def camel(key: str) -> str:
    return ".".join(to_camel(part) for part in key.split("."))


STACK_NAMES = SettingNames(models=MODELS, defaults=DEFAULTS, key=camel, file=display_path)


"""The component's model-fit checks (triton_platform/serving/model_fit.py) in the stack file's keys."""


def layers(sections: Sections) -> tuple[ModelSettingsArgs, dict[str, ModelSettingsArgs]]:
    """The defaults and each model's own settings as the component takes them."""
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    return component_settings(serving.model_defaults), {name: component_settings(s) for name, s in models.items()}


def model_fit(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """Each served model's effective settings against what the model is and what it has."""
    serving: ServingConfig = sections["serving"]
    defaults, models = layers(sections)
    served = {name: dep.models for name, dep in serving.deployments.items()}
    for where, message in fit_problems(repo, served, defaults, models, STACK_NAMES):
        yield ConfigIssue(where, message)


def base_delay_within_slo(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """A queue delay or timeout the stack leaves to the base config.pbtxt still counts against the SLO."""
    serving: ServingConfig = sections["serving"]
    defaults, models = layers(sections)
    slo_us = serving.p95_latency_slo_ms * 1000
    for name in served_models(serving):
        model = repo.models.get(name)
        if model is None or model.is_ensemble:
            continue
        batching = effective_settings(model, defaults, models.get(name)).get("dynamic_batching")
        base, base_path = model.config.dynamic_batching, STACK_NAMES.base(model)
        if batching is None and not model.config.HasField("dynamic_batching"):
            continue
        batching = batching or {}
        if "max_queue_delay_microseconds" not in batching and base.max_queue_delay_microseconds > slo_us:
            yield ConfigIssue(
                f"max_queue_delay_microseconds in {base_path}",
                f"queue delay {base.max_queue_delay_microseconds} us of model {name!r} is above the p95 latency "
                f"SLO ({SERVING}.p95LatencySloMs = {slo_us} us); set dynamicBatching.maxQueueDelayMicroseconds "
                "for this stack",
            )
        policy = batching.get("default_queue_policy", {})
        timeout = base.default_queue_policy.default_timeout_microseconds
        if "default_timeout_microseconds" not in policy and timeout > slo_us:
            yield ConfigIssue(
                f"default_queue_policy.default_timeout_microseconds in {base_path}",
                f"queue timeout {timeout} us of model {name!r} is above the p95 latency SLO "
                f"({SERVING}.p95LatencySloMs = {slo_us} us); set "
                "dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds for this stack",
            )


def delay_within_slo(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    slo_us = serving.p95_latency_slo_ms * 1000
    layers = [(DEFAULTS, serving.model_defaults)] + [(f"{MODELS}.{n}", s) for n, s in sorted(models.items())]
    for path, settings in layers:
        batching = settings.dynamic_batching
        delay = batching.max_queue_delay_microseconds if batching else None
        if delay is not None and delay > slo_us:
            yield ConfigIssue(
                f"{path}.dynamicBatching.maxQueueDelayMicroseconds",
                f"queue delay {delay} us is above the p95 latency SLO of "
                f"{serving.p95_latency_slo_ms} ms ({SERVING}.p95LatencySloMs = {slo_us} us); "
                f"the batcher alone would break the SLO, so the delay must be <= {slo_us}",
            )
        policy = batching.default_queue_policy if batching else None
        timeout = policy.default_timeout_microseconds if policy else None
        # 0 is Triton's "no timeout", a choice of its own rather than a long one.
        if timeout and timeout > slo_us:
            yield ConfigIssue(
                f"{path}.dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds",
                f"queue timeout {timeout} us is above the p95 latency SLO of "
                f"{serving.p95_latency_slo_ms} ms ({SERVING}.p95LatencySloMs = {slo_us} us); a request queued "
                f"that long has already missed the SLO, so the timeout must be <= {slo_us}",
            )


def ensembles_complete(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    served = {name: dep.models for name, dep in sorted(serving.deployments.items())}
    for deployment, message in unserved_steps(repo, served):
        yield ConfigIssue(f"{SERVING}.deployments.{deployment}.models", message)


def model_delivery(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    source = serving.model_repository
    path = f"{SERVING}.modelRepository"
    if source.source == "bundled":
        if sections["environment"] == "production":
            yield ConfigIssue(
                f"{path}.source",
                "'bundled' is for small dev models and is not allowed in production; use pvc, s3 or gcs",
            )
        found: dict[tuple[Path, str], None] = {}  # a file two deployments bundle is named once
        for _, dep in sorted(serving.deployments.items()):
            files = version_paths(repo, [m for m in dep.models if m in repo.models])
            found |= dict.fromkeys(bundle_problems(files, display_path))
        yield from (ConfigIssue(display_path(file), problem) for file, problem in found)
