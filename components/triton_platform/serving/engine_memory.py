"""Whether a deployment's vLLM engines fit its pods' GPU memory: each engine takes its `gpu_memory_utilization`
share of every GPU it runs on when it loads, for its weights and KV cache (vLLM 0.5.5, the 24.10 vLLM image's), so
engines whose shares add up to more GPUs than a pod has cannot all load: the later ones fail for memory.

It counts what the engines take, not what the other models of the pod use: a pod that also runs other GPU models
needs the difference left free.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from tritonclient.grpc.model_config_pb2 import ModelConfig, ModelInstanceGroup

from triton_platform.args.input_files import InputFile
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import effective_settings, render_config
from triton_platform.model_packaging.source import ModelRepository
from triton_platform.model_packaging.vllm_engine import (
    ENGINE_ARGS_FILE,
    ENGINE_ARGS_FILE_NAME,
    engine_args_problems,
    gpu_memory_share,
)
from triton_platform.serving.model_fit import served_versions


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


def engine_memory_problems(
    repo: ModelRepository,
    deployments: Mapping[str, Sequence[str]],
    defaults: ModelSettingsArgs,
    models: Mapping[str, ModelSettingsArgs],
    gpus_per_pod: Mapping[str, int],
) -> Iterator[tuple[str, str]]:
    """(deployment, problem) for each deployment whose vLLM engines take more GPU memory than its pods have."""
    for key, served in sorted(deployments.items()):
        taken: list[tuple[str, float]] = []
        for name in sorted(served):
            model = repo.models.get(name)
            if model is None or model.config.backend != "vllm":
                continue
            settings = effective_settings(model, defaults, models.get(name))
            engines = engines_per_pod(render_config(model, settings), gpus_per_pod[key])
            for version in served_versions(model, settings):
                path = model.path / str(version) / ENGINE_ARGS_FILE_NAME
                text = InputFile(path, ENGINE_ARGS_FILE).read_text() if path.is_file() else None
                if text is None or engine_args_problems(text):
                    continue  # named where the repository is read, or by the model fit
                share, gpus = gpu_memory_share(text)
                taken.append((f"{name!r} version {version}: {engines} x {share:g} of {gpus}", share * gpus * engines))
        total = sum(amount for _, amount in taken)
        if total > gpus_per_pod[key] + 1e-9:
            parts = "; ".join(what for what, _ in taken)
            yield (
                key,
                f"deployment {key!r}'s vLLM engines take {total:g} GPUs' memory ({parts}) but a pod has "
                f"{gpus_per_pod[key]}: each engine takes its gpu_memory_utilization share of each of its GPUs (vLLM's "
                "default 0.9) for weights and KV cache as it loads, so the later ones would fail; lower the shares in "
                "their model.json, serve fewer versions, or give the pods more GPUs",
            )
