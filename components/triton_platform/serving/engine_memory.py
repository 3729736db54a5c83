"""Whether a deployment's LLM engines fit its pods' GPU memory: a vLLM engine takes its `gpu_memory_utilization`
share of every GPU it runs on when it loads, for its weights and KV cache (vLLM 0.5.5, the 24.10 vLLM image's); a
TensorRT-LLM engine takes its weights plus `kv_cache_free_gpu_mem_fraction` of the memory they leave free, so at
least that share of its GPU (tensorrtllm_backend v0.14.0, model_packaging/tensorrt_llm.py `kv_cache_share`). Engines
whose shares add up to more GPUs than a pod has cannot all load: the later ones fail for memory.

A TensorRT-LLM engine's GPUs (its tensor and pipeline parallel sizes) are built into the engine, not in its
config.pbtxt: each is counted on one GPU, the least it takes. Each instance of a `tensorrtllm` model is an engine,
whatever its kind: the backend's template says KIND_CPU (v0.14.0 `all_models/inflight_batcher_llm/tensorrt_llm/
config.pbtxt`) and the backend places the engine on its GPUs itself.

It counts what the engines take, not what the other models of the pod use: a pod that also runs other GPU models
needs the difference left free.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from tritonclient.grpc.model_config_pb2 import ModelConfig, ModelInstanceGroup

from triton_platform.args.input_files import InputFile
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import effective_settings, render_config, served_versions, version_texts
from triton_platform.model_packaging.source import ModelRepository, RepoModel
from triton_platform.model_packaging.tensorrt_llm import BACKEND as TENSORRT_LLM
from triton_platform.model_packaging.tensorrt_llm import kv_cache_share, tensorrt_llm_problems
from triton_platform.model_packaging.vllm_engine import (
    ENGINE_ARGS_FILE,
    ENGINE_ARGS_FILE_NAME,
    engine_args_problems,
    engine_config_problems,
    gpu_memory_share,
)


def engines_per_pod(config: ModelConfig, gpus_per_pod: int) -> int:
    """The engines (model instances) a pod loads of a model: a KIND_MODEL group's count is per pod (the engine places
    itself on its GPUs), a GPU group's count is per GPU (each listed one, or each of the pod's); no group, one per
    GPU (model_config.proto, `ModelInstanceGroup`)."""
    if not config.instance_group:
        return gpus_per_pod
    total = 0
    for group in config.instance_group:
        count = group.count or 1
        if group.kind == ModelInstanceGroup.KIND_MODEL:
            total += count
        elif group.kind != ModelInstanceGroup.KIND_CPU:
            total += count * (len(group.gpus) or gpus_per_pod)
    return total


def _instances(config: ModelConfig) -> int:
    return sum(group.count or 1 for group in config.instance_group) or 1


def _vllm_taken(model: RepoModel, settings: ModelSettingsArgs, gpus_per_pod: int) -> Iterator[tuple[str, float]]:
    engines = engines_per_pod(render_config(model, settings), gpus_per_pod)
    own = settings.get("vllm", {}).get("engine_args")
    if own is not None and engine_config_problems(own):
        return  # named by the model fit
    written = version_texts(model, settings)  # the stack's engine arguments, where it sets them
    for version in served_versions(model, settings):
        path = model.path / str(version) / ENGINE_ARGS_FILE_NAME
        text = written.get(f"{version}/{ENGINE_ARGS_FILE_NAME}")
        if text is None and path.is_file():
            text = InputFile(path, ENGINE_ARGS_FILE).read_text()
        if text is None or engine_args_problems(text):
            continue  # named where the repository is read, or by the model fit
        share, gpus = gpu_memory_share(text)
        yield f"{model.name!r} version {version}: {engines} x {share:g} of {gpus}", share * gpus * engines


def _tensorrt_llm_taken(model: RepoModel, settings: ModelSettingsArgs) -> Iterator[tuple[str, float]]:
    config = render_config(model, settings)
    share = kv_cache_share(config)
    if share is None or any(tensorrt_llm_problems(config)):
        return  # sized by max_tokens_in_paged_kv_cache, or named where the repository is read
    engines = _instances(config)
    for version in served_versions(model, settings):
        yield f"{model.name!r} version {version}: {engines} x {share:g} of 1 (TensorRT-LLM)", share * engines


@dataclass(frozen=True)
class EngineMemory:
    """What a deployment's LLM engines take of its pods' GPU memory as they load, counted in GPUs."""

    gpus_per_pod: int
    taken: tuple[tuple[str, float], ...]
    """(which engines: `'chat' version 1: 1 x 0.9 of 1`, GPUs' worth of memory) for each served version."""
    backends: frozenset[str]

    @property
    def total(self) -> float:
        return sum(amount for _, amount in self.taken)


def engine_memory(
    repo: ModelRepository,
    deployments: Mapping[str, Sequence[str]],
    defaults: ModelSettingsArgs,
    models: Mapping[str, ModelSettingsArgs],
    gpus_per_pod: Mapping[str, int],
) -> dict[str, EngineMemory]:
    """Each deployment's LLM engines' memory, the least each takes; engines whose settings are refused elsewhere are
    left out."""
    out = {}
    for key, served in sorted(deployments.items()):
        taken: list[tuple[str, float]] = []
        backends = set()
        for name in sorted(served):
            model = repo.models.get(name)
            if model is None or model.config.backend not in ("vllm", TENSORRT_LLM):
                continue
            settings = effective_settings(model, defaults, models.get(name))
            if model.config.backend == "vllm":
                found = list(_vllm_taken(model, settings, gpus_per_pod[key]))
            else:
                found = list(_tensorrt_llm_taken(model, settings))
            backends |= {model.config.backend} if found else set()
            taken += found
        out[key] = EngineMemory(gpus_per_pod[key], tuple(taken), frozenset(backends))
    return out


def engine_memory_problems(memory: Mapping[str, EngineMemory]) -> Iterator[tuple[str, str]]:
    """(deployment, problem) for each deployment (`engine_memory`) whose LLM engines take more GPU memory than its
    pods have."""
    for key, engines in memory.items():
        if engines.total > engines.gpus_per_pod + 1e-9:
            yield key, _too_much(key, list(engines.taken), engines.total, engines.gpus_per_pod, set(engines.backends))


_TAKES = {
    "vllm": "its gpu_memory_utilization share of each of its GPUs (vLLM's default 0.9)",
    TENSORRT_LLM: (
        "its weights plus its kv_cache_free_gpu_mem_fraction (default 0.9) of the memory they leave free, so at least "
        "that share of its GPU"
    ),
}
_NAMES = {"vllm": "vLLM", TENSORRT_LLM: "TensorRT-LLM"}


def _too_much(key: str, taken: list[tuple[str, float]], total: float, gpus: int, backends: set[str]) -> str:
    parts = "; ".join(what for what, _ in taken)
    kinds = sorted(backends, reverse=True)  # vLLM first
    if len(kinds) == 1:
        each = f"each engine takes {_TAKES[kinds[0]]}"
    else:
        each = "; ".join(f"a {_NAMES[kind]} engine takes {_TAKES[kind]}" for kind in kinds)
    where = (
        "in their engine arguments (model.json)" if backends == {"vllm"} else "(model.json, config.pbtxt parameters)"
    )
    return (
        f"deployment {key!r}'s {' and '.join(_NAMES[kind] for kind in kinds)} engines take {total:g} GPUs' memory "
        f"({parts}) but a pod has {gpus}: {each} for weights and KV cache as it loads (this counts the least each "
        "takes), so they cannot all load; "
        f"lower the shares {where}, serve fewer versions, or give the pods more GPUs"
    )
