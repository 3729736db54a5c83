"""Whether a model's LLM backend settings fit it: the vLLM engine arguments (`vllm.engine_args`) and TensorRT-LLM
parameters (`tensorrt_llm.parameters`) the stack writes into its model repository, each key checked against the
backend's source (model_packaging/vllm_engine.py: vLLM 0.5.5's AsyncEngineArgs, vllm_backend r24.10;
model_packaging/tensorrt_llm.py: tensorrtllm_backend v0.14.0), and only on a model of that backend.

A vLLM model's stack engine arguments are written as each version folder's `model.json`
(render.py `version_texts`); beside a `model.json` the repository already holds they are refused, not laid over
it: the platform never overwrites a model repository's file, and two sources of one engine's arguments would leave
the reader guessing which one runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from triton_platform.model_packaging.model_settings_args import ModelSettingsArgs
from triton_platform.model_packaging.source import RepoModel
from triton_platform.model_packaging.tensorrt_llm import BACKEND as TENSORRT_LLM
from triton_platform.model_packaging.tensorrt_llm import parameter_problems
from triton_platform.model_packaging.vllm_engine import BACKEND as VLLM
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS_FILE_NAME, engine_config_problems

Problem = tuple[str, str]
"""Where (a setting's path or a file) and what is wrong there: model_fit.py's."""


class SettingNames(Protocol):
    """How the caller names the settings: model_fit.py's `SettingNames`, which runs these checks."""

    @property
    def models(self) -> str: ...
    @property
    def defaults(self) -> str: ...
    @property
    def key(self) -> Callable[[str], str]: ...
    @property
    def file(self) -> Callable[[Path], str]: ...
    def base(self, model: RepoModel) -> str: ...


SETTINGS = {
    VLLM: ("vllm", "engine_args", "its engine arguments, model.json"),
    TENSORRT_LLM: ("tensorrt_llm", "parameters", "its config.pbtxt parameters"),
}
"""Each backend's settings key, the map under it, and what the map becomes."""


def _layer(names: SettingNames, own: ModelSettingsArgs | None, model: str, setting: str, key: str | None) -> str:
    """The path of `setting` (`vllm.engine_args`), and below it of `key` as the backend spells it (never camelCased),
    in the layer it came from: the model's own settings when they set it, else the defaults."""
    node: Any = own
    for part in setting.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if key is not None and isinstance(node, Mapping) and key not in node:
        node = None
    layer = f"{names.models}.{model}" if node is not None else names.defaults
    return f"{layer}.{names.key(setting)}" + (f".{key}" if key is not None else "")


def llm_settings_problems(
    model: RepoModel, settings: ModelSettingsArgs, own: ModelSettingsArgs | None, names: SettingNames
) -> Iterator[Problem]:
    """Backend settings on a model of another backend, engine arguments or parameters the backend would refuse or
    skip, and stack engine arguments beside a repository's own model.json."""
    backend = model.config.backend
    for owner, (key, _, what) in SETTINGS.items():
        if own is not None and key in own and backend != owner:
            yield (
                f"{names.models}.{model.name}.{names.key(key)}",
                f"model {model.name!r} has backend {backend or '(none)'!r} in {names.base(model)}; "
                f"{names.key(key)} sets {what} of a backend {owner!r} model only",
            )
    if backend == VLLM and "vllm" in settings:
        yield from _engine_args(model, settings["vllm"]["engine_args"], own, names)
    if backend == TENSORRT_LLM and "tensorrt_llm" in settings:
        for key, message in parameter_problems(settings["tensorrt_llm"]["parameters"]):
            yield _layer(names, own, model.name, "tensorrt_llm.parameters", key), message


def _engine_args(
    model: RepoModel, engine_args: Mapping[str, Any], own: ModelSettingsArgs | None, names: SettingNames
) -> Iterator[Problem]:
    for key, message in engine_config_problems(engine_args):
        where = _layer(names, own, model.name, "vllm.engine_args", key)
        yield where, message if key is not None else f"vLLM's engine arguments of model {model.name!r} {message}"
    for version in model.versions:
        written = model.path / str(version) / ENGINE_ARGS_FILE_NAME
        if written.exists():
            yield (
                _layer(names, own, model.name, "vllm.engine_args", None),
                f"would be written as {names.file(written)}, which the model repository already holds: the platform "
                "never overwrites a repository's file, so the stack's engine arguments are refused beside it; remove "
                f"the file, or these settings and keep the file",
            )
