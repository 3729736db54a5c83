"""Contradictions between config sections and the model repository.

Each check runs when the sections it reads parsed cleanly, so one bad section
never hides the errors of another.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from pydantic.alias_generators import to_camel

from platform_config.errors import ConfigIssue, excerpt
from platform_config.gpu_pool import GpuPoolConfig
from platform_config.kubernetes import KubernetesConfig
from platform_config.model_settings import plain_settings, served_models
from platform_config.monitoring import MonitoringConfig
from platform_config.paths import display_path
from platform_config.scaling import ScalingConfig
from platform_config.schema import section_key
from platform_config.serving import ModelSettings, ServingConfig
from triton_platform.model_packaging import settings as plain
from triton_platform.model_packaging.render import ENSEMBLE_FIELDS, effective_settings, version_policy
from triton_platform.model_packaging.source import BASE_CONFIG, ModelRepository, RepoModel

Sections = dict[str, Any]
"""Parsed sections by schema field name; a section that failed to parse is absent."""

SERVING = section_key("serving")
MODELS = section_key("models")
POOL = section_key("gpuPool")
DEFAULTS = f"{SERVING}.modelDefaults"


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
                    f"model {model!r} is not in the model repository; known models: {_known(repo)}",
                )
            else:
                yield from (ConfigIssue(display_path(p.file), p.message) for p in repo.problems.get(model, []))


def _known(repo: ModelRepository) -> str:
    return repo.describe(display_path(repo.path))


def _model_settings_exist(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    models: dict[str, ModelSettings] = sections["models"]
    for model in models:
        if model not in repo.names:
            yield ConfigIssue(
                f"{MODELS}.{model}",
                f"settings for model {model!r}, which is not in the model repository; known models: {_known(repo)}",
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


def _origin(own: plain.ModelSettings | None, model: str, key: str) -> str:
    """Config path of the layer an effective setting came from: the model's own, or the defaults."""
    node: Any = own
    for part in key.split("."):
        node = getattr(node, part, None) if node is not None else None
    return f"{MODELS}.{model}.{_camel(key)}" if node is not None else f"{DEFAULTS}.{_camel(key)}"


def _camel(key: str) -> str:
    return ".".join(to_camel(part) for part in key.split("."))


def _model_fit(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """Each served model's effective settings against what the model is and what it has."""
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    defaults = plain_settings(serving.model_defaults)
    # One issue per offending value, naming every model it breaks.
    shared: dict[tuple[str, str], list[str]] = {}
    for name in sorted(set(served_models(serving)) | set(models)):
        model = repo.models.get(name)
        if model is None:
            continue  # reported by the existence checks
        own = _own(models, name)
        for path, message in _fit(model, defaults, own, serving.p95_latency_slo_ms * 1000):
            shared.setdefault((path, message), []).append(name)
    for (path, message), names in shared.items():
        label = f"model{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}"
        yield ConfigIssue(path, message.replace("{models}", label))


def _own(models: dict[str, ModelSettings], name: str) -> plain.ModelSettings | None:
    """The model's own settings, as the renderer takes them."""
    return plain_settings(models[name]) if name in models else None


def base_config_path(model: RepoModel) -> str:
    """The model's config.pbtxt as the user finds it: inside the project, or wherever the repository is."""
    return display_path(model.path / BASE_CONFIG)


def _explicit_fit(model: RepoModel, own: plain.ModelSettings) -> Iterator[tuple[str, str]]:
    """A model's own settings that cannot apply to it (defaults that do not fit are skipped instead)."""
    own_path, base = f"{MODELS}.{model.name}", model.config
    if model.is_ensemble:
        explicit = {f.name for f in dataclasses.fields(own) if getattr(own, f.name) is not None}
        for field in sorted(explicit - ENSEMBLE_FIELDS):
            yield (
                f"{own_path}.{to_camel(field)}",
                "does not apply to {models}, an ensemble: it has no instances, batcher or warmup "
                "of its own; set it on the models it chains",
            )
    if own.dynamic_batching is not None and base.HasField("sequence_batching"):
        yield (f"{own_path}.dynamicBatching", "{models} uses sequence_batching; Triton allows one scheduler")
    if own.instance_group is not None and len(base.instance_group) > 1:
        yield (
            f"{own_path}.instanceGroup",
            f"the base config.pbtxt of {{models}} has {len(base.instance_group)} instance groups; "
            "instanceGroup can only set a model with one",
        )


def _fit(
    model: RepoModel, defaults: plain.ModelSettings, own: plain.ModelSettings | None, slo_us: int
) -> Iterator[tuple[str, str]]:
    name, base = model.name, model.config
    base_path = base_config_path(model)
    if own is not None:
        yield from _explicit_fit(model, own)
    settings = effective_settings(model, defaults, own)
    max_batch = settings.max_batch_size if settings.max_batch_size is not None else base.max_batch_size
    max_path = (
        _origin(own, name, "max_batch_size")
        if settings.max_batch_size is not None
        else f"max_batch_size in {base_path}"
    )
    if settings.max_batch_size is not None and settings.max_batch_size > base.max_batch_size and not model.is_ensemble:
        yield (
            max_path,
            f"maxBatchSize {settings.max_batch_size} is above the max_batch_size {base.max_batch_size} of "
            f"{{models}} in {base_path}, which states what the model supports; it may only be lowered",
        )
    if own is not None and own.dynamic_batching is not None and max_batch == 0:
        yield (
            f"{MODELS}.{name}.dynamicBatching",
            f"dynamic batching needs maxBatchSize > 0 ({max_path} is 0) for {{models}}",
        )
    yield from _batcher_limits(model, settings, own, (max_batch, max_path), slo_us)
    if settings.warmup is not None:
        path = _origin(own, name, "warmup.batch_sizes")
        limit = max(max_batch, 1)
        for i, size in enumerate(settings.warmup.batch_sizes):
            if size > limit:
                yield (
                    f"{path}[{i}]",
                    f"warmup batch size {size} is above maxBatchSize {max_batch} ({max_path}) of {{models}}; "
                    f"warmup batch sizes must be <= {limit}",
                )
        for tensor in base.input:
            if any(d < 0 for d in tensor.dims):
                yield (
                    _origin(own, name, "warmup"),
                    f"input {tensor.name!r} of {{models}} has variable dims {list(tensor.dims)}; "
                    "warmup needs fixed dims",
                )
    yield from _versions(model, settings, own)


def _batcher_limits(
    model: RepoModel,
    settings: plain.ModelSettings,
    own: plain.ModelSettings | None,
    max_batch: tuple[int, str],
    slo_us: int,
) -> Iterator[tuple[str, str]]:
    """Preferred sizes and the queue delay Triton will run with, wherever they were set, base config included."""
    base, base_path = model.config, base_config_path(model)
    batching = settings.dynamic_batching
    if batching is None and not base.HasField("dynamic_batching"):
        return
    sizes, sizes_path = tuple(base.dynamic_batching.preferred_batch_size), f"preferred_batch_size in {base_path}"
    if batching is not None and batching.preferred_batch_size is not None:
        sizes, sizes_path = (
            batching.preferred_batch_size,
            _origin(own, model.name, "dynamic_batching.preferred_batch_size"),
        )
    limit, limit_path = max_batch
    for i, size in enumerate(sizes):
        if size > limit:
            yield (
                f"{sizes_path}[{i}]",
                f"preferred batch size {size} is above maxBatchSize {limit} ({limit_path}) of {{models}}; "
                "each preferred size must be <= maxBatchSize",
            )
    if batching is None or batching.max_queue_delay_microseconds is None:
        delay = base.dynamic_batching.max_queue_delay_microseconds
        if delay > slo_us:
            yield (
                f"max_queue_delay_microseconds in {base_path}",
                f"queue delay {delay} us of {{models}} is above the p95 latency SLO ({SERVING}.p95LatencySloMs "
                f"= {slo_us} us); set dynamicBatching.maxQueueDelayMicroseconds for this stack",
            )
    policy = batching.default_queue_policy if batching is not None else None
    if policy is None or policy.default_timeout_microseconds is None:
        timeout = base.dynamic_batching.default_queue_policy.default_timeout_microseconds
        if timeout > slo_us:
            yield (
                f"default_queue_policy.default_timeout_microseconds in {base_path}",
                f"queue timeout {timeout} us of {{models}} is above the p95 latency SLO ({SERVING}.p95LatencySloMs "
                f"= {slo_us} us); set dynamicBatching.defaultQueuePolicy.defaultTimeoutMicroseconds for this stack",
            )


def _versions(
    model: RepoModel, settings: plain.ModelSettings, own: plain.ModelSettings | None
) -> Iterator[tuple[str, str]]:
    available = ", ".join(map(str, model.versions)) or "none"
    if not model.versions:
        yield (display_path(model.path), "{models} has no version folder (1/, 2/, ...); Triton serves versions only")
        return
    policy = settings.version_policy
    if policy is None:
        return
    if policy.specific is not None:
        path = _origin(own, model.name, "version_policy.specific.versions")
        for i, version in enumerate(policy.specific.versions):
            if version not in model.versions:
                yield (
                    f"{path}[{i}]",
                    f"version {version} of {{models}} does not exist; version folders: {available}",
                )
    if policy.latest is not None and policy.latest.num_versions > len(model.versions):
        yield (
            f"{_origin(own, model.name, 'version_policy.latest.num_versions')}",
            f"{policy.latest.num_versions} latest versions of {{models}} requested but only {available} exist",
        )


def _delay_within_slo(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
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


def _ensembles_complete(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """An ensemble runs in one Triton: its steps must be served beside it, batching no less."""
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]

    defaults = plain_settings(serving.model_defaults)

    def max_batch(name: str) -> int:
        model = repo.models[name]
        settings = effective_settings(model, defaults, _own(models, name))
        return settings.max_batch_size if settings.max_batch_size is not None else int(model.config.max_batch_size)

    for dep_name, dep in sorted(serving.deployments.items()):
        for name in dep.models:
            model = repo.models.get(name)
            if model is None or not model.is_ensemble:
                continue
            for step in sorted({s.model_name for s in model.config.ensemble_scheduling.step}):
                if step not in dep.models:
                    yield ConfigIssue(
                        f"{SERVING}.deployments.{dep_name}.models",
                        f"ensemble {name!r} chains {step!r}, which deployment {dep_name!r} does not serve; add it",
                    )
                elif step in repo.models and max_batch(step) < max_batch(name):
                    yield ConfigIssue(
                        _origin(_own(models, name), name, "max_batch_size"),
                        f"ensemble {name!r} has maxBatchSize {max_batch(name)} but the model it chains, {step!r}, "
                        f"has {max_batch(step)}; Triton requires the ensemble's to be <= each step's",
                    )


def served_versions(model: RepoModel, settings: plain.ModelSettings) -> tuple[int, ...]:
    """The version folders Triton loads under the model's effective version policy (unset: the latest one)."""
    policy = version_policy(model, settings)
    if policy.HasField("specific"):
        return tuple(v for v in model.versions if v in policy.specific.versions)
    if policy.HasField("all"):
        return model.versions
    count = policy.latest.num_versions if policy.HasField("latest") else 1
    return model.versions[len(model.versions) - count :] if count else ()


def _served_versions_have_files(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    """An empty version folder fails to load; an ensemble's is empty by design (it runs other models)."""
    serving: ServingConfig = sections["serving"]
    models: dict[str, ModelSettings] = sections["models"]
    defaults = plain_settings(serving.model_defaults)
    for name in served_models(serving):
        model = repo.models.get(name)
        if model is None or model.is_ensemble:
            continue
        settings = effective_settings(model, defaults, _own(models, name))
        for version in served_versions(model, settings):
            if version in model.empty_versions:
                yield ConfigIssue(
                    display_path(model.path / str(version)),
                    f"version {version} of model {name!r} is served but its folder is empty, so Triton cannot "
                    "load it; put the model's files in it, or serve other versions (versionPolicy)",
                )


INGRESS_HOST_SUFFIXES = ("", "-grpc")
"""Each deployment's ingress hosts are `<deployment><suffix>.<baseDomain>` (triton_platform/triton_manifests.py)."""


def _ingress_hosts(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    ingress = serving.ingress
    if not ingress.enabled or ingress.base_domain is None:
        return
    for name in sorted(serving.deployments):
        for suffix in INGRESS_HOST_SUFFIXES:
            host = f"{name}{suffix}.{ingress.base_domain}"
            if len(host) > 253:
                yield ConfigIssue(
                    f"{SERVING}.ingress.baseDomain",
                    f"host {excerpt(host)} of deployment {name!r} has {len(host)} characters; a DNS name has at "
                    "most 253, so shorten baseDomain or the deployment's name",
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


BUNDLE_LIMIT = 900 * 1024
"""Bundled model files ride in one ConfigMap per deployment; the API server caps an object near 1 MiB."""


def _model_delivery(sections: Sections, repo: ModelRepository) -> Iterator[ConfigIssue]:
    serving: ServingConfig = sections["serving"]
    source = serving.model_repository
    path = f"{SERVING}.modelRepository"
    if source.source == "bundled":
        if sections["environment"] == "production":
            yield ConfigIssue(
                f"{path}.source",
                "'bundled' is for small dev models and is not allowed in production; use pvc, s3 or gcs",
            )
        for name, dep in sorted(serving.deployments.items()):
            size = sum(
                f.stat().st_size
                for m in dep.models
                if m in repo.models
                for v in repo.models[m].versions
                for f in (repo.models[m].path / str(v)).rglob("*")
                if f.is_file()
            )
            if size > BUNDLE_LIMIT:
                yield ConfigIssue(
                    f"{path}.source",
                    f"deployment {name!r} bundles {size} bytes of model files, above the {BUNDLE_LIMIT}-byte "
                    "ConfigMap budget; use pvc, s3 or gcs",
                )
    if source.pvc is not None and source.pvc.access_mode == "ReadWriteOnce":
        spread = [n for n, d in sorted(serving.deployments.items()) if d.replicas.max > 1] or (
            list(serving.deployments) if len(serving.deployments) > 1 else []
        )
        if spread:
            yield ConfigIssue(
                f"{path}.pvc.accessMode",
                f"ReadWriteOnce mounts on one node only, but {', '.join(spread)} can run several pods; "
                "use ReadOnlyMany or ReadWriteMany",
            )


def _routes_exist(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    monitoring: MonitoringConfig = sections["monitoring"]
    known = ", ".join(sorted(monitoring.receivers)) or "none defined"
    for severity, receiver in sorted(monitoring.routes.items()):
        if receiver not in monitoring.receivers:
            yield ConfigIssue(
                f"{section_key('monitoring')}.routes.{severity}",
                f"receiver {receiver!r} is not defined under receivers; known receivers: {known}",
            )


def _scaling_bounds(sections: Sections, _repo: ModelRepository) -> Iterator[ConfigIssue]:
    scaling: ScalingConfig = sections["scaling"]
    if not scaling.enabled:
        return
    serving: ServingConfig = sections["serving"]
    key = section_key("scaling")
    if scaling.fallback is None and sections["environment"] == "production":
        yield ConfigIssue(
            f"{key}.fallback",
            "required key is missing: production must say what KEDA holds when it cannot read its metrics "
            "(fallback: {replicas: N}); without it a Prometheus outage leaves scaling unattended",
        )
    for name, dep in sorted(serving.deployments.items()):
        if dep.replicas.min == 0:
            yield ConfigIssue(
                f"{SERVING}.deployments.{name}.replicas.min",
                "0 with autoscaling: a deployment at zero exports no queue series, which KEDA (ignoreNullValues "
                "false) reads as an error, not as 'no load'; use min >= 1",
            )
        for field, value in (
            ("fallback.replicas", scaling.fallback.replicas if scaling.fallback else None),
            ("pausedReplicas", scaling.paused_replicas),
        ):
            if value is not None and not dep.replicas.min <= value <= dep.replicas.max:
                yield ConfigIssue(
                    f"{key}.{field}",
                    f"{value} is outside deployment {name!r}'s replicas range {dep.replicas.min}-{dep.replicas.max}",
                )


Check = Callable[[Sections, ModelRepository], Iterator[ConfigIssue]]

CHECKS: list[tuple[tuple[str, ...], Check]] = [
    (("environment", "kubernetes"), _production_deploys),
    (("serving",), _deployment_models_exist),
    (("models",), _model_settings_exist),
    (("serving", "models"), _model_settings_served),
    (("serving", "models"), _model_fit),
    (("serving", "models"), _delay_within_slo),
    (("serving", "models"), _ensembles_complete),
    (("serving", "models"), _served_versions_have_files),
    (("serving",), _ingress_hosts),
    (("serving", "gpu_pool"), _gpu_capacity),
    (("environment", "serving"), _model_delivery),
    (("monitoring",), _routes_exist),
    (("environment", "serving", "scaling"), _scaling_bounds),
    (("serving", "scaling"), _static_replicas),
]
"""Each check with the sections it needs."""


def cross_section_issues(sections: Sections, repo: ModelRepository) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for needs, check in CHECKS:
        if all(name in sections for name in needs):
            issues.extend(check(sections, repo))
    return issues
