"""Per-stack config.pbtxt: a model's base config with the stack's settings laid over it.

Parsing and printing go through Triton's ModelConfig protobuf, never string
templates, so every field Triton accepts survives untouched, including the
ones this project does not model (sequence batching, parameters, response
cache, ...). The settings are plain values (triton_platform/model_packaging/settings.py);
triton_platform/serving/model_fit.py rejects settings that do not fit a model before
anything is rendered, and the renderer assumes they fit.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2
from tritonclient.grpc.model_config_pb2 import ModelConfig

from triton_platform.model_packaging.settings import ModelSettings, VersionPolicy, Warmup
from triton_platform.model_packaging.source import ModelRepository, RepoModel

ENSEMBLE_FIELDS = frozenset({"max_batch_size"})
"""The only settings that apply to an ensemble: it has no instances, batcher or warmup of its own."""


ATOMIC = (VersionPolicy, Warmup)
"""Settings replaced whole: mixing a default `latest` with a model's own `specific` means nothing."""


def merge(below: Any, above: Any) -> Any:
    """`above` over `below`, field by field and recursively; unset (None) fields fall through."""
    if above is None:
        return below
    if below is None or isinstance(above, ATOMIC) or not dataclasses.is_dataclass(above):
        return above
    fields = dataclasses.fields(above)
    return dataclasses.replace(
        cast(Any, above), **{f.name: merge(getattr(below, f.name), getattr(above, f.name)) for f in fields}
    )


def applicable_defaults(model: RepoModel, defaults: ModelSettings) -> ModelSettings:
    """The stack-wide defaults that fit this model; the rest are skipped, not errors."""
    skip = set()
    if model.config.max_batch_size == 0:
        skip.add("max_batch_size")  # the model does not batch: a stack-wide default must not make it
    if model.is_ensemble:
        skip |= {field.name for field in dataclasses.fields(ModelSettings)} - ENSEMBLE_FIELDS
    if model.config.HasField("sequence_batching"):
        skip.add("dynamic_batching")
    return dataclasses.replace(defaults, **dict.fromkeys(skip))


def effective_settings(model: RepoModel, defaults: ModelSettings, own: ModelSettings | None) -> ModelSettings:
    """The model's own settings over the defaults that fit it."""
    settings: ModelSettings = merge(applicable_defaults(model, defaults), own)
    if (settings.max_batch_size if settings.max_batch_size is not None else model.config.max_batch_size) == 0 and (
        own is None or own.dynamic_batching is None
    ):
        settings = dataclasses.replace(settings, dynamic_batching=None)  # nothing to batch
    return settings


def render_config(model: RepoModel, settings: ModelSettings) -> ModelConfig:
    """A copy of the base config with the settings applied."""
    config = ModelConfig()
    config.CopyFrom(model.config)
    config.name = model.name
    if settings.max_batch_size is not None:
        config.max_batch_size = settings.max_batch_size
    if settings.dynamic_batching is not None:
        _apply_dynamic_batching(config, settings)
    if settings.instance_group is not None:
        group = config.instance_group[0] if config.instance_group else config.instance_group.add()
        if settings.instance_group.count is not None:
            group.count = settings.instance_group.count
        if settings.instance_group.kind is not None:
            group.kind = model_config_pb2.ModelInstanceGroup.Kind.Value(settings.instance_group.kind)
    if settings.version_policy is not None:
        config.version_policy.CopyFrom(version_policy(model, settings))
    if settings.warmup is not None:
        _apply_warmup(config, settings)
    return config


def _apply_dynamic_batching(config: ModelConfig, settings: ModelSettings) -> None:
    batching = settings.dynamic_batching
    assert batching is not None
    target = config.dynamic_batching
    target.SetInParent()
    if batching.max_queue_delay_microseconds is not None:
        target.max_queue_delay_microseconds = batching.max_queue_delay_microseconds
    if batching.preferred_batch_size is not None:
        del target.preferred_batch_size[:]
        target.preferred_batch_size.extend(batching.preferred_batch_size)
    policy = batching.default_queue_policy
    if policy is not None:
        queue = target.default_queue_policy
        queue.SetInParent()
        if policy.max_queue_size is not None:
            queue.max_queue_size = policy.max_queue_size
        if policy.default_timeout_microseconds is not None:
            queue.default_timeout_microseconds = policy.default_timeout_microseconds
        if policy.timeout_action is not None:
            queue.timeout_action = model_config_pb2.ModelQueuePolicy.TimeoutAction.Value(policy.timeout_action)
        if policy.allow_timeout_override is not None:
            queue.allow_timeout_override = policy.allow_timeout_override


def version_policy(model: RepoModel, settings: ModelSettings) -> model_config_pb2.ModelVersionPolicy:
    """The policy Triton applies: the stack's, which replaces the base config's whole, or else the base's."""
    policy = model_config_pb2.ModelVersionPolicy()
    own = settings.version_policy
    if own is None:
        policy.CopyFrom(model.config.version_policy)
    elif own.latest is not None:
        policy.latest.num_versions = own.latest.num_versions
    elif own.all is not None:
        policy.all.SetInParent()
    elif own.specific is not None:
        policy.specific.versions.extend(own.specific.versions)
    return policy


def _apply_warmup(config: ModelConfig, settings: ModelSettings) -> None:
    warmup = settings.warmup
    assert warmup is not None
    del config.model_warmup[:]  # the stack's warmup replaces the base config's
    for batch_size in warmup.batch_sizes:
        sample = config.model_warmup.add()
        sample.name = f"{warmup.data}_batch_{batch_size}"
        sample.batch_size = batch_size
        for tensor in config.input:
            data = sample.inputs[tensor.name]
            data.data_type = tensor.data_type
            data.dims.extend(tensor.dims)
            if warmup.data == "zero":
                data.zero_data = True
            else:
                data.random_data = True


def config_text(config: ModelConfig) -> str:
    """config.pbtxt text, as Triton reads it."""
    return str(text_format.MessageToString(config))


@dataclass(frozen=True)
class RenderedModel:
    name: str
    versions: tuple[int, ...]
    config: ModelConfig
    text: str


@dataclass(frozen=True)
class RenderedRepository:
    """What Triton sees under one config name (a stack's): each served model's rendered config and version folders."""

    config_name: str
    """Triton reads each model's config from `configs/<config_name>.pbtxt`."""
    source: ModelRepository
    models: dict[str, RenderedModel]

    def digest(self, names: Iterable[str] | None = None) -> str:
        """Content hash of the rendered configs (of `names`, default all): changes exactly when they do."""
        sha = hashlib.sha256()
        for name in sorted(names if names is not None else self.models):
            sha.update(f"{name}\0{self.models[name].text}\0".encode())
        return sha.hexdigest()


def render_repository(
    config_name: str,
    repo: ModelRepository,
    served: Iterable[str],
    defaults: ModelSettings,
    models: Mapping[str, ModelSettings],
) -> RenderedRepository:
    """Each `served` model of `repo`, rendered as `<model>/configs/<config_name>.pbtxt` (a stack's name).

    `models` holds per-model settings over the `defaults`; both must fit the models they apply to. Rendered once
    per repository (as `read_repository` gives it) and settings: the stack's validation and TritonServing get the
    same rendering.
    """
    names = tuple(sorted(set(served)))
    key = (id(repo), config_name, names, defaults, tuple(sorted(models.items())))
    if key in _RENDERED:
        return _RENDERED[key]
    rendered = {}
    for name in names:
        model = repo.models[name]
        settings = effective_settings(model, defaults, models.get(name))
        model_config = render_config(model, settings)
        rendered[name] = RenderedModel(name, model.versions, model_config, config_text(model_config))
    if len(_RENDERED) == _RENDERINGS_KEPT:
        del _RENDERED[next(iter(_RENDERED))]
    _RENDERED[key] = RenderedRepository(config_name, repo, rendered)
    return _RENDERED[key]


_RENDERINGS_KEPT = 4
_RENDERED: dict[tuple[Any, ...], RenderedRepository] = {}
"""The latest renderings, oldest first. Each holds its repository (`source`), so no other takes its `id`."""
