"""Contradictions between config sections and the model repository.

Each check runs when the sections it reads parsed cleanly, so one bad section
never hides the errors of another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from platform_config.errors import ConfigIssue
from platform_config.model_repo import ModelRepository
from platform_config.schema import (
    GpuPoolConfig,
    KubernetesConfig,
    ModelSettings,
    ScalingConfig,
    ServingConfig,
    section_key,
)

Sections = dict[str, Any]
"""Parsed sections by schema field name; a section that failed to parse is absent."""

SERVING = section_key("serving")
MODELS = section_key("models")
POOL = section_key("gpuPool")


def served_models(serving: ServingConfig) -> list[str]:
    return sorted({m for dep in serving.deployments.values() for m in dep.models})


def _production_deploys(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    kubernetes: KubernetesConfig = sections["kubernetes"]
    if sections["environment"] == "production" and kubernetes.mode == "render":
        yield ConfigIssue(
            f"{section_key('kubernetes')}.mode",
            "'render' is not allowed for a production stack: production must deploy to a "
            "cluster (set mode: deploy and context), never fall back to writing files",
        )


def _deployment_models_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    for dep_name, dep in serving.deployments.items():
        for i, model in enumerate(dep.models):
            if model not in repo.names:
                yield ConfigIssue(
                    f"{SERVING}.deployments.{dep_name}.models[{i}]",
                    f"model {model!r} is not in the model repository; known models: {repo.describe()}",
                )
            elif model in repo.problems:
                problem = repo.problems[model]
                yield ConfigIssue(problem.file, problem.message)


def _model_settings_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model not in repo.names:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which is not in the model repository; known models: {repo.describe()}",
            )


def _model_settings_served(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    served = served_models(sections["serving"])
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model in repo.names and model not in served:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which no deployment serves; add it to a "
                f"deployment's `models` under {SERVING}.deployments or remove these settings",
            )


def _batching(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """Each model's effective settings (its own, then the defaults, then its config.pbtxt) against its limits."""
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    defaults = serving.model_defaults
    defaults_path = f"{SERVING}.modelDefaults"

    def pick(model: str, field: Callable[[ModelSettings], Any], key: str) -> tuple[Any, str]:
        own = models.get(model)
        if own is not None and field(own) is not None:
            return field(own), f"{MODELS}.{model}.{key}"
        return field(defaults), f"{defaults_path}.{key}"

    def preferred(s: ModelSettings) -> list[int] | None:
        return s.dynamic_batching.preferred_batch_size if s.dynamic_batching else None

    # One issue per offending value, naming every model it breaks.
    too_big: dict[tuple[str, int, int, str], list[str]] = {}
    for model in sorted(set(served_models(serving)) | set(models)):
        max_batch, max_path = pick(model, lambda s: s.max_batch_size, "maxBatchSize")
        if max_batch is None and model in repo.models:
            max_batch = repo.models[model].config.max_batch_size
            max_path = f"max_batch_size in model_repo/{model}/config.pbtxt"
        sizes, sizes_path = pick(model, preferred, "dynamicBatching.preferredBatchSize")
        if max_batch is None or not sizes:
            continue
        for i, size in enumerate(sizes):
            if size > max_batch:
                too_big.setdefault((f"{sizes_path}[{i}]", size, max_batch, max_path), []).append(model)
    for (path, size, max_batch, max_path), names in too_big.items():
        yield ConfigIssue(
            path,
            f"preferred batch size {size} is above maxBatchSize {max_batch} ({max_path}) "
            f"of model{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}; "
            "each preferred size must be <= maxBatchSize",
        )

    slo_us = serving.p95_latency_slo_ms * 1000
    layers = [(defaults_path, defaults)] + [(f"{MODELS}.{n}", s) for n, s in sorted(models.items())]
    for path, settings in layers:
        delay = settings.dynamic_batching.max_queue_delay_microseconds if settings.dynamic_batching else None
        if delay is not None and delay > slo_us:
            yield ConfigIssue(
                f"{path}.dynamicBatching.maxQueueDelayMicroseconds",
                f"queue delay {delay} us is above the p95 latency SLO of "
                f"{serving.p95_latency_slo_ms} ms ({SERVING}.p95LatencySloMs = {slo_us} us); "
                f"the batcher alone would break the SLO, so the delay must be <= {slo_us}",
            )


def _gpu_capacity(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    pool: GpuPoolConfig = sections["gpu_pool"]
    for name, dep in sorted(serving.deployments.items()):
        if dep.gpus_per_pod > pool.gpus_per_node:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.gpusPerPod",
                f"{dep.gpus_per_pod} GPUs per pod can never be scheduled on nodes with "
                f"{pool.gpus_per_node} ({POOL}.gpusPerNode); gpusPerPod must be <= gpusPerNode",
            )
    needed = sum(dep.replicas.max * dep.gpus_per_pod for dep in serving.deployments.values())
    if needed > pool.max_gpus:
        parts = " + ".join(
            f"{name}: {dep.replicas.max} x {dep.gpus_per_pod}" for name, dep in sorted(serving.deployments.items())
        )
        yield ConfigIssue(
            f"{SERVING}.deployments",
            f"at maximum scale the deployments need {needed} GPUs (replicas.max x gpusPerPod: {parts}) "
            f"but the GPU pool has at most {pool.max_gpus} ({POOL}.maxNodes "
            f"{pool.max_nodes} x gpusPerNode {pool.gpus_per_node}); lower replicas.max or raise maxNodes",
        )


def _static_replicas(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    scaling: ScalingConfig = sections["scaling"]
    if scaling.enabled:
        return
    serving: ServingConfig = sections["serving"]
    for name, dep in serving.deployments.items():
        if dep.replicas.min != dep.replicas.max:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.max",
                f"max ({dep.replicas.max}) differs from min ({dep.replicas.min}) but "
                f"{section_key('scaling')}.enabled is false, so nothing would scale between them; "
                "set max equal to min, or enable scaling",
            )


Check = Callable[[Sections, ModelRepository], Iterator[ConfigIssue]]

CHECKS: list[tuple[tuple[str, ...], Check]] = [
    (("environment", "kubernetes"), _production_deploys),
    (("serving",), _deployment_models_exist),
    (("models",), _model_settings_exist),
    (("serving", "models"), _model_settings_served),
    (("serving", "models"), _batching),
    (("serving", "gpu_pool"), _gpu_capacity),
    (("serving", "scaling"), _static_replicas),
]
"""Each check with the sections it needs."""


def cross_section_issues(sections: Sections, repo: ModelRepository) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for needs, check in CHECKS:
        if all(name in sections for name in needs):
            issues.extend(check(sections, repo))
    return issues
