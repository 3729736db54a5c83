"""Whether a model's settings fit the model: what Triton would refuse at load time, found before anything renders.

Pure functions over the model repository and the model settings Args, every default applied
(triton_platform/model_packaging/model_settings_args.py).
TritonServing runs them on its Args; the stack file's validation runs the same ones on its own keys. Only the
names differ, so each caller hands in a `SettingNames` and every problem comes back located in the caller's terms.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton_platform.args.input_files import InputFile
from triton_platform.model_packaging.config_rules import model_file
from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.render import ENSEMBLE_FIELDS, effective_settings, served_versions
from triton_platform.model_packaging.source import BASE_CONFIG, ModelRepository, RepoModel
from triton_platform.model_packaging.vllm_engine import BACKEND as VLLM
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS_FILE, ENGINE_ARGS_FILE_NAME, MULTI_LORA_FILE_NAME
from triton_platform.serving.llm_settings_fit import llm_settings_problems

Problem = tuple[str, str]
"""Where (a setting's path or a file) and what is wrong there."""


@dataclass(frozen=True)
class SettingNames:
    """How a caller names the settings: TritonServing its Args, the stack file its keys.

    `key` turns a snake_case settings path (`dynamic_batching.preferred_batch_size`) into the caller's spelling;
    `file` says how a path in the model repository reads to the user.
    """

    models: str
    """The per-model settings, e.g. `args.models`."""
    defaults: str
    """The settings every model gets, e.g. `args.model_defaults`."""
    key: Callable[[str], str]
    file: Callable[[Path], str]

    def setting(self, own: ModelSettingsArgs | None, model: str, key: str) -> str:
        """Path of the layer an effective setting came from: the model's own settings, or the defaults."""
        node: Any = own
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return f"{self.models}.{model}.{self.key(key)}" if node is not None else f"{self.defaults}.{self.key(key)}"

    def base(self, model: RepoModel) -> str:
        """The model's own config.pbtxt, the statement of what the model supports."""
        return self.file(model.path / BASE_CONFIG)


def unserved_steps(repo: ModelRepository, deployments: Mapping[str, Sequence[str]]) -> Iterator[Problem]:
    """(deployment, problem) for each model an ensemble chains that its deployment does not serve: Triton runs
    an ensemble's steps in the same server (core/src/ensemble_utils.cc)."""
    for deployment, served in deployments.items():
        for name in served:
            model = repo.models.get(name)
            if model is None or not model.is_ensemble:
                continue
            for step in sorted({s.model_name for s in model.config.ensemble_scheduling.step} - set(served)):
                yield (
                    deployment,
                    f"ensemble {name!r} chains {step!r}, which deployment {deployment!r} does not serve; add it",
                )


def fit_problems(
    repo: ModelRepository,
    deployments: Mapping[str, Sequence[str]],
    defaults: ModelSettingsArgs,
    models: Mapping[str, ModelSettingsArgs],
    names: SettingNames,
) -> list[Problem]:
    """Every served model's effective settings against its base config, its version folders and its ensemble.

    `deployments` lists the models each deployment serves; models missing from the repository are the
    caller's to report. One problem per offending value, naming every model it breaks.
    """
    shared: dict[Problem, list[str]] = {}
    for name in sorted({m for served in deployments.values() for m in served} | set(models)):
        model = repo.models.get(name)
        if model is None:
            continue
        for problem in _model_problems(model, defaults, models.get(name), names):
            shared.setdefault(problem, []).append(name)
    found = [
        (where, message.replace("{models}", f"model{'s' if len(m) > 1 else ''} {', '.join(map(repr, m))}"))
        for (where, message), m in shared.items()
    ]
    return [
        *found,
        *_ensemble_batches(repo, deployments, defaults, models, names),
        *_pinned_steps(repo, deployments, defaults, models, names),
        *_names_apart_in_case(repo, deployments, names),
    ]


def _max_batch(
    model: RepoModel, settings: ModelSettingsArgs, own: ModelSettingsArgs | None, names: SettingNames
) -> tuple[int, str]:
    """The batch limit Triton will run the model with, and where it was set: the settings, or the base config."""
    if "max_batch_size" in settings:
        return settings["max_batch_size"], names.setting(own, model.name, "max_batch_size")
    return int(model.config.max_batch_size), f"max_batch_size in {names.base(model)}"


def _model_problems(
    model: RepoModel, defaults: ModelSettingsArgs, own: ModelSettingsArgs | None, names: SettingNames
) -> Iterator[Problem]:
    """One model's problems; `{models}` in a message stands for the models that share it."""
    if own is not None:
        yield from _explicit_fit(model, own, names)
    settings = effective_settings(model, defaults, own)
    yield from llm_settings_problems(model, settings, own, names)
    base = model.config
    max_key = names.key("max_batch_size")
    max_batch, max_path = _max_batch(model, settings, own, names)
    if "max_batch_size" in settings and max_batch > base.max_batch_size and not model.is_ensemble:
        yield (
            max_path,
            f"{max_key} {max_batch} is above the max_batch_size {base.max_batch_size} of "
            f"{{models}} in {names.base(model)}, which states what the model supports; it may only be lowered",
        )
    if own is not None and "dynamic_batching" in own and max_batch == 0:
        yield (
            f"{names.models}.{model.name}.{names.key('dynamic_batching')}",
            f"dynamic batching needs {max_key} > 0 ({max_path} is 0) for {{models}}",
        )
    yield from _preferred_sizes(model, settings, own, (max_batch, max_path), names)
    # Triton runs a warmup sample of batch size n as n requests in one execution, which the backend refuses
    # above the limit ("batch size <n> for '<model>', max allowed is <max>", onnxruntime_backend
    # src/onnxruntime.cc), failing the load ("failed to run warmup sample", core src/backend_model_instance.cc).
    # The stack's warmup replaces the base config's model_warmup; without one, the base's runs.
    limit = max(max_batch, 1)
    warmups = (
        [
            (f"{names.setting(own, model.name, 'warmup.batch_sizes')}[{i}]", size)
            for i, size in enumerate(settings["warmup"]["batch_sizes"])
        ]
        if "warmup" in settings
        else [
            (f"model_warmup[{i}].batch_size in {names.base(model)}", w.batch_size)
            for i, w in enumerate(base.model_warmup)
        ]
    )
    for where, size in warmups:
        if size > limit:
            yield (
                where,
                f"warmup batch size {size} is above {max_key} {max_batch} ({max_path}) of {{models}}; "
                f"warmup batch sizes must be <= {limit}",
            )
    if "warmup" in settings:
        for tensor in base.input:
            if any(d < 0 for d in tensor.dims):
                yield (
                    names.setting(own, model.name, "warmup"),
                    f"input {tensor.name!r} of {{models}} has variable dims {list(tensor.dims)}; "
                    "warmup needs fixed dims",
                )
    yield from _versions(model, settings, own, names)


def _explicit_fit(model: RepoModel, own: ModelSettingsArgs, names: SettingNames) -> Iterator[Problem]:
    """A model's own settings that cannot apply to it (defaults that do not fit are skipped instead)."""
    own_path, base = f"{names.models}.{model.name}", model.config
    if model.is_ensemble:
        for field in sorted(set(own) - ENSEMBLE_FIELDS):
            yield (
                f"{own_path}.{names.key(field)}",
                "does not apply to {models}, an ensemble: it has no instances, batcher or warmup "
                "of its own; set it on the models it chains",
            )
    # model_config.proto: `scheduling_choice` is a oneof, so a model has one scheduler.
    if "dynamic_batching" in own and base.HasField("sequence_batching"):
        yield (
            f"{own_path}.{names.key('dynamic_batching')}",
            "{models} uses sequence_batching; Triton allows one scheduler",
        )
    if "instance_group" in own and len(base.instance_group) > 1:
        yield (
            f"{own_path}.{names.key('instance_group')}",
            f"the base config.pbtxt of {{models}} has {len(base.instance_group)} instance groups; "
            f"{names.key('instance_group')} can only set a model with one",
        )


def _preferred_sizes(
    model: RepoModel,
    settings: ModelSettingsArgs,
    own: ModelSettingsArgs | None,
    max_batch: tuple[int, str],
    names: SettingNames,
) -> Iterator[Problem]:
    """Preferred sizes above the batch limit, wherever they were set, base config included: Triton refuses
    them ("dynamic batching preferred size must be <= max batch size", core/src/model_config_utils.cc)."""
    base = model.config
    batching = settings.get("dynamic_batching")
    sizes, sizes_path = (
        tuple(base.dynamic_batching.preferred_batch_size),
        f"preferred_batch_size in {names.base(model)}",
    )
    if batching is None and not base.HasField("dynamic_batching"):
        return
    if batching is not None and "preferred_batch_size" in batching:
        sizes = tuple(batching["preferred_batch_size"])
        sizes_path = names.setting(own, model.name, "dynamic_batching.preferred_batch_size")
    limit, limit_path = max_batch
    for i, size in enumerate(sizes):
        if size > limit:
            yield (
                f"{sizes_path}[{i}]",
                f"preferred batch size {size} is above {names.key('max_batch_size')} {limit} ({limit_path}) of "
                f"{{models}}; each preferred size must be <= {names.key('max_batch_size')}",
            )


def _versions(
    model: RepoModel, settings: ModelSettingsArgs, own: ModelSettingsArgs | None, names: SettingNames
) -> Iterator[Problem]:
    available = ", ".join(map(str, model.versions)) or "none"
    if not model.versions:
        yield (names.file(model.path), "{models} has no version folder (1/, 2/, ...); Triton serves versions only")
        return
    policy = settings.get("version_policy", {})
    if "specific" in policy:
        path = names.setting(own, model.name, "version_policy.specific.versions")
        for i, version in enumerate(policy["specific"]["versions"]):
            if version not in model.versions:
                yield (f"{path}[{i}]", f"version {version} of {{models}} does not exist; version folders: {available}")
    if "latest" in policy and policy["latest"]["num_versions"] > len(model.versions):
        yield (
            names.setting(own, model.name, "version_policy.latest.num_versions"),
            f"{policy['latest']['num_versions']} latest versions of {{models}} requested but only {available} exist",
        )
    if model.is_ensemble:
        return  # an ensemble's version folder is empty by design: it runs other models
    loaded = model_file(model.config)
    if model.config.backend == VLLM:
        yield from _lora_files(model, settings, names)
    if "vllm" in settings and model.config.backend == VLLM:
        return  # the stack writes each version's model.json (llm_settings_fit.py): an empty folder is enough
    for version in served_versions(model, settings):
        if version in model.empty_versions:
            yield (
                names.file(model.path / str(version)),
                f"version {version} of {{models}} is served but its folder is empty, so Triton cannot load it; "
                f"put the model's files in it, or serve other versions ({names.key('version_policy')})",
            )
        elif loaded is not None and not (model.path / str(version) / loaded[0]).exists():
            # The backend refuses the version: "unable to find '<path>' for model instance '<model>'"
            # (onnxruntime_backend src/onnxruntime.cc), "Python model file not found in '<path>'" (python_backend
            # src/pb_stub.cc).
            yield (
                names.file(model.path / str(version)),
                f"version {version} of {{models}} is served but has no {loaded[0]!r}, the file {loaded[1]} in "
                f"{names.base(model)} loads; add it, or set default_model_filename to the model's file",
            )


def _lora_files(model: RepoModel, settings: ModelSettingsArgs, names: SettingNames) -> Iterator[Problem]:
    """A vLLM engine with `enable_lora` needs its version folder's multi_lora.json: vllm_backend r24.10 src/model.py
    `_setup_lora` reads it when `str(enable_lora).lower() == "true"` and fails the load without it."""
    for version in served_versions(model, settings):
        folder = model.path / str(version)
        engine_args: Any = settings.get("vllm", {}).get("engine_args")
        source = "the stack's engine arguments"
        if engine_args is None:
            engine_args, source = (
                _repository_engine_args(folder / ENGINE_ARGS_FILE_NAME),
                f"its {ENGINE_ARGS_FILE_NAME}",
            )
        if str(engine_args.get("enable_lora")).lower() == "true" and not (folder / MULTI_LORA_FILE_NAME).is_file():
            yield (
                names.file(folder),
                f"version {version} of {{models}} sets enable_lora in {source} but has no {MULTI_LORA_FILE_NAME}, "
                "the LoRA adapters the vLLM backend reads from the version folder (it fails the load without it); "
                "add it, or leave enable_lora out",
            )


def _repository_engine_args(path: Path) -> dict[str, Any]:
    """A repository's model.json as the backend loads it, or nothing where it has none or one that is no JSON
    object (named where the repository is read)."""
    if not path.is_file():
        return {}
    try:
        config = json.loads(InputFile(path, ENGINE_ARGS_FILE).read_text())
    except ValueError:  # InputFileError is one
        return {}
    return config if isinstance(config, dict) else {}


def _ensemble_batches(
    repo: ModelRepository,
    deployments: Mapping[str, Sequence[str]],
    defaults: ModelSettingsArgs,
    models: Mapping[str, ModelSettingsArgs],
    names: SettingNames,
) -> Iterator[Problem]:
    """An ensemble may batch no more than each batching model it chains ("ensemble ... allows maximum batch
    size ..., but it contains model ... which only allows maximum batch size to be ...",
    core/src/ensemble_utils.cc); a step that does not batch (max_batch_size 0) is allowed, as Triton allows
    it there ("batchable ensemble can include non-batchable models")."""

    def max_batch(name: str) -> tuple[int, str]:
        model, own = repo.models[name], models.get(name)
        return _max_batch(model, effective_settings(model, defaults, own), own, names)

    ensembles = sorted({m for served in deployments.values() for m in served if m in repo.models})
    for name in (n for n in ensembles if repo.models[n].is_ensemble):
        limit, where = max_batch(name)
        for step in sorted({s.model_name for s in repo.models[name].config.ensemble_scheduling.step}):
            if step in repo.models and 0 < max_batch(step)[0] < limit:
                yield (
                    where,
                    f"ensemble {name!r} has {names.key('max_batch_size')} {limit} but the model it chains, "
                    f"{step!r}, has {max_batch(step)[0]} ({max_batch(step)[1]}); Triton requires the ensemble's "
                    "to be <= each step's",
                )


def _pinned_steps(
    repo: ModelRepository,
    deployments: Mapping[str, Sequence[str]],
    defaults: ModelSettingsArgs,
    models: Mapping[str, ModelSettingsArgs],
    names: SettingNames,
) -> Iterator[Problem]:
    """An ensemble step's model_version is -1 (the latest loaded) or a version Triton loads: any other is
    refused ("ensemble '<e>' depends on '<m>' whose required version <v> is not loaded.",
    ModelRepositoryManager::CheckNode, core src/model_repository_manager/model_repository_manager.cc). An unset
    model_version is 0, which is never loaded."""
    served = sorted({m for listed in deployments.values() for m in listed if m in repo.models})
    for name in (n for n in served if repo.models[n].is_ensemble):
        ensemble = repo.models[name]
        for number, step in enumerate(ensemble.config.ensemble_scheduling.step, start=1):
            chained = repo.models.get(step.model_name)
            if chained is None or step.model_version == -1:
                continue
            loaded = served_versions(chained, effective_settings(chained, defaults, models.get(step.model_name)))
            if step.model_version in loaded:
                continue
            yield (
                names.base(ensemble),
                f"ensemble {name!r} step {number} pins model_version {step.model_version}"
                f"{' (unset is 0)' if step.model_version == 0 else ''} of {step.model_name!r}, which Triton "
                f"does not load (versions loaded: {', '.join(map(str, loaded)) or 'none'}); pin a loaded "
                "version, or -1 for the latest",
            )


def _names_apart_in_case(
    repo: ModelRepository, deployments: Mapping[str, Sequence[str]], names: SettingNames
) -> Iterator[Problem]:
    """Served models whose names differ only in case. Triton on Linux takes them as two models, but on a
    case-insensitive file system (macOS, Windows) their folders are one, so a checkout of the repository or
    `stackctl model-repo --out` there holds one model in place of both."""
    by_fold: dict[str, list[str]] = {}
    for name in sorted({m for served in deployments.values() for m in served if m in repo.models}):
        by_fold.setdefault(name.casefold(), []).append(name)
    for same in (group for group in by_fold.values() if len(group) > 1):
        yield (
            names.file(repo.models[same[-1]].path),
            f"models {', '.join(map(repr, same))} differ only in case; on a case-insensitive file system their "
            "folders are one, so a copy of the repository would hold one of them. Rename one",
        )
