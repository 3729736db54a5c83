"""Per-stack config.pbtxt: a model's base config with the stack's settings laid over it.

Parsing and printing go through Triton's ModelConfig protobuf, never string templates, so every field Triton
accepts survives untouched, including the ones this project does not model (sequence batching, parameters, response
cache, ...). The settings are TritonServing's model settings Args as they are, every default applied
(triton_platform/model_packaging/model_settings_args.py); triton_platform/serving/model_fit.py rejects settings that
do not fit a model before anything is rendered, and the renderer assumes they fit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2
from tritonclient.grpc.model_config_pb2 import ModelConfig

from triton_platform.model_packaging.layout import rendered_file_name
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.source import ModelRepository, RepoModel
from triton_platform.model_packaging.tensorrt_llm import BACKEND as TENSORRT_LLM
from triton_platform.model_packaging.vllm_engine import BACKEND as VLLM
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS_FILE_NAME

ENSEMBLE_FIELDS = frozenset({"max_batch_size"})
"""The only settings that apply to an ensemble: it has no instances, batcher or warmup of its own."""


ATOMIC = frozenset({"version_policy", "warmup"})
"""Settings replaced whole: mixing a default `latest` with a model's own `specific` means nothing."""


FLAT = frozenset({("vllm", "engine_args"), ("tensorrt_llm", "parameters")})
"""A backend's own maps, merged one level only: each key's value replaced whole, as the backend reads it. A nested
engine argument (`rope_scaling: {type: linear, factor: 2}`) mixed with a model's own (`{type: dynamic}`) would be one
neither wrote."""


def merge(below: Mapping[str, Any], above: Mapping[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    """`above` over `below`, key by key and recursively into records (not into the FLAT maps' values); a key
    `above` leaves unset falls through."""
    out = dict(below)
    for key, value in above.items():
        nested = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        if nested and key not in ATOMIC and path not in FLAT:
            out[key] = merge(out[key], value, (*path, key))
        else:
            out[key] = value
    return out


def applicable_defaults(model: RepoModel, defaults: ModelSettingsArgs) -> ModelSettingsArgs:
    """The stack-wide defaults that fit this model; the rest are skipped, not errors."""
    skip = set()
    if model.config.max_batch_size == 0:
        skip.add("max_batch_size")  # the model does not batch: a stack-wide default must not make it
    if model.is_ensemble:
        skip |= set(defaults) - ENSEMBLE_FIELDS
    if model.config.HasField("sequence_batching"):
        skip.add("dynamic_batching")
    if model.config.backend != VLLM:
        skip.add("vllm")  # each backend's settings are its own models'
    if model.config.backend != TENSORRT_LLM:
        skip.add("tensorrt_llm")
    return cast(ModelSettingsArgs, {key: value for key, value in defaults.items() if key not in skip})


def effective_settings(
    model: RepoModel, defaults: ModelSettingsArgs, own: ModelSettingsArgs | None
) -> ModelSettingsArgs:
    """The model's own settings over the defaults that fit it."""
    settings = cast(ModelSettingsArgs, merge(applicable_defaults(model, defaults), own or {}))
    if settings.get("max_batch_size", model.config.max_batch_size) == 0 and "dynamic_batching" not in (own or {}):
        settings.pop("dynamic_batching", None)  # nothing to batch
    return settings


def render_config(model: RepoModel, settings: ModelSettingsArgs) -> ModelConfig:
    """A copy of the base config with the settings applied."""
    config = ModelConfig()
    config.CopyFrom(model.config)
    config.name = model.name
    if "max_batch_size" in settings:
        config.max_batch_size = settings["max_batch_size"]
    if "dynamic_batching" in settings:
        _apply_dynamic_batching(config, settings)
    if "instance_group" in settings:
        own = settings["instance_group"]
        group = config.instance_group[0] if config.instance_group else config.instance_group.add()
        if "count" in own:
            group.count = own["count"]
        if "kind" in own:
            group.kind = model_config_pb2.ModelInstanceGroup.Kind.Value(own["kind"])
    if "version_policy" in settings:
        config.version_policy.CopyFrom(version_policy(model, settings))
    if "warmup" in settings:
        _apply_warmup(config, settings)
    for key, value in sorted(settings.get("tensorrt_llm", {}).get("parameters", {}).items()):
        config.parameters[key].string_value = value  # model_packaging/tensorrt_llm.py checked each key
    return config


def version_texts(model: RepoModel, settings: ModelSettingsArgs) -> dict[str, str]:
    """The files the stack writes into the model's served version folders, by path below the model: a vLLM model's
    engine arguments as each served version's model.json (vllm_backend r24.10 src/model.py reads it there), the same
    text in each. Versions Triton does not load get none."""
    engine_args = settings.get("vllm", {}).get("engine_args")
    if engine_args is None:
        return {}
    text = json.dumps(engine_args, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return {f"{version}/{ENGINE_ARGS_FILE_NAME}": text for version in served_versions(model, settings)}


def _apply_dynamic_batching(config: ModelConfig, settings: ModelSettingsArgs) -> None:
    batching = settings["dynamic_batching"]
    target = config.dynamic_batching
    target.SetInParent()
    if "max_queue_delay_microseconds" in batching:
        target.max_queue_delay_microseconds = batching["max_queue_delay_microseconds"]
    if "preferred_batch_size" in batching:
        del target.preferred_batch_size[:]
        target.preferred_batch_size.extend(batching["preferred_batch_size"])
    if "default_queue_policy" in batching:
        policy = batching["default_queue_policy"]
        queue = target.default_queue_policy
        queue.SetInParent()
        if "max_queue_size" in policy:
            queue.max_queue_size = policy["max_queue_size"]
        if "default_timeout_microseconds" in policy:
            queue.default_timeout_microseconds = policy["default_timeout_microseconds"]
        if "timeout_action" in policy:
            queue.timeout_action = model_config_pb2.ModelQueuePolicy.TimeoutAction.Value(policy["timeout_action"])
        if "allow_timeout_override" in policy:
            queue.allow_timeout_override = policy["allow_timeout_override"]


def version_policy(model: RepoModel, settings: ModelSettingsArgs) -> model_config_pb2.ModelVersionPolicy:
    """The policy Triton applies: the stack's, which replaces the base config's whole, or else the base's."""
    policy = model_config_pb2.ModelVersionPolicy()
    own = settings.get("version_policy")
    if own is None:
        policy.CopyFrom(model.config.version_policy)
    elif "latest" in own:
        policy.latest.num_versions = own["latest"]["num_versions"]
    elif "all" in own:
        policy.all.SetInParent()
    elif "specific" in own:
        policy.specific.versions.extend(own["specific"]["versions"])
    return policy


def served_versions(model: RepoModel, settings: ModelSettingsArgs) -> tuple[int, ...]:
    """The version folders Triton loads under the model's effective version policy (unset: the latest one)."""
    policy = version_policy(model, settings)
    if policy.HasField("specific"):
        return tuple(v for v in model.versions if v in policy.specific.versions)
    if policy.HasField("all"):
        return model.versions
    count = policy.latest.num_versions if policy.HasField("latest") else 1
    return model.versions[len(model.versions) - count :] if count else ()


def _apply_warmup(config: ModelConfig, settings: ModelSettingsArgs) -> None:
    warmup = settings["warmup"]
    del config.model_warmup[:]  # the stack's warmup replaces the base config's
    for batch_size in warmup["batch_sizes"]:
        sample = config.model_warmup.add()
        sample.name = f"{warmup['data']}_batch_{batch_size}"
        sample.batch_size = batch_size
        for tensor in config.input:
            data = sample.inputs[tensor.name]
            data.data_type = tensor.data_type
            data.dims.extend(tensor.dims)
            if warmup["data"] == "zero":
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
    files: Mapping[str, str] = field(default_factory=dict)
    """Files the stack writes into version folders, by path below the model (`1/model.json`): `version_texts`."""


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
            for path, text in sorted(self.models[name].files.items()):
                sha.update(f"{name}/{path}\0{text}\0".encode())
        return sha.hexdigest()


def config_map_data(rendered: RenderedRepository, models: Iterable[str]) -> dict[str, str]:
    """The data of the ConfigMap of `models`' rendered configs: each config as `<model>.pbtxt`, and each file the
    stack writes once per model (layout.py `rendered_file_name`: the same text in every served version)."""
    data = {f"{m}.pbtxt": rendered.models[m].text for m in sorted(models)}
    for m in sorted(models):
        for relative, text in sorted(rendered.models[m].files.items()):
            data[rendered_file_name(m, relative)] = text
    return data


def render_repository(
    config_name: str,
    repo: ModelRepository,
    served: Iterable[str],
    defaults: ModelSettingsArgs,
    models: Mapping[str, ModelSettingsArgs],
) -> RenderedRepository:
    """Each `served` model of `repo`, rendered as `<model>/configs/<config_name>.pbtxt` (a stack's name).

    `models` holds per-model settings over the `defaults`, every default applied (`resolve_record`); both must fit
    the models they apply to. Rendered once
    per repository (as `read_repository` gives it) and settings: the stack's validation and TritonServing get the
    same rendering.
    """
    names = tuple(sorted(set(served)))
    key = (id(repo), config_name, names, json.dumps([defaults, models], sort_keys=True))
    if key in _RENDERED:
        return _RENDERED[key]
    rendered = {}
    for name in names:
        model = repo.models[name]
        settings = effective_settings(model, defaults, models.get(name))
        model_config = render_config(model, settings)
        files = version_texts(model, settings)
        rendered[name] = RenderedModel(name, model.versions, model_config, config_text(model_config), files)
    if len(_RENDERED) == _RENDERINGS_KEPT:
        del _RENDERED[next(iter(_RENDERED))]
    _RENDERED[key] = RenderedRepository(config_name, repo, rendered)
    return _RENDERED[key]


_RENDERINGS_KEPT = 4
_RENDERED: dict[tuple[Any, ...], RenderedRepository] = {}
"""The latest renderings, oldest first. Each holds its repository (`source`), so no other takes its `id`."""
