"""What the model repository on disk offers: models, their versions and base configs.

Base configs are parsed with Triton's own ModelConfig protobuf, so anything
Triton accepts parses here, fields this project does not model included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc.model_config_pb2 import ModelConfig

from platform_config.paths import PROJECT_ROOT, display_path

DEFAULT_MODEL_REPO = Path(os.environ.get("TRITON_PLATFORM_MODEL_REPO", PROJECT_ROOT / "model_repo"))
"""The project's model_repo/, or the folder TRITON_PLATFORM_MODEL_REPO names (benchmarks, CI of another repo)."""
BASE_CONFIG = "config.pbtxt"


@dataclass(frozen=True)
class RepoModel:
    """One model folder: its version folders and its parsed base config.pbtxt."""

    name: str
    path: Path
    versions: tuple[int, ...]
    config: ModelConfig

    @property
    def is_ensemble(self) -> bool:
        return bool(self.config.platform == "ensemble")


@dataclass(frozen=True)
class RepoProblem:
    """A model folder Triton could not load as it is."""

    file: str
    message: str


@dataclass(frozen=True)
class ModelRepository:
    path: Path
    models: dict[str, RepoModel] = field(default_factory=dict)
    problems: dict[str, RepoProblem] = field(default_factory=dict)
    """By model name: folders whose base config does not parse."""

    @property
    def names(self) -> set[str]:
        return set(self.models) | set(self.problems)

    def describe(self) -> str:
        """The known models, for error messages."""
        if not self.path.is_dir():
            return f"none: the model repository {display_path(self.path)} does not exist"
        return ", ".join(sorted(self.names)) or f"none: {display_path(self.path)} holds no folder with a config.pbtxt"


def parse_model_config(text: str) -> ModelConfig:
    """config.pbtxt text to a ModelConfig; raises text_format.ParseError naming line and column."""
    return text_format.Parse(text, ModelConfig())


def read_repository(path: Path) -> ModelRepository:
    """Every model folder of a Triton model repository (folders holding a config.pbtxt)."""
    repo = ModelRepository(path)
    if not path.is_dir():
        return repo
    for folder in sorted(p for p in path.iterdir() if (p / BASE_CONFIG).is_file()):
        config_file = folder / BASE_CONFIG
        try:
            config = parse_model_config(config_file.read_text(encoding="utf-8"))
        except (text_format.ParseError, UnicodeDecodeError) as err:
            repo.problems[folder.name] = RepoProblem(display_path(config_file), f"Triton cannot parse it: {err}")
            continue
        if config.name and config.name != folder.name:
            repo.problems[folder.name] = RepoProblem(
                display_path(config_file),
                f"name {config.name!r} differs from its folder {folder.name!r}; Triton requires them to match",
            )
            continue
        versions = tuple(sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()))
        repo.models[folder.name] = RepoModel(folder.name, folder, versions, config)
    return repo
