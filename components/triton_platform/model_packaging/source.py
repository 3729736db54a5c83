"""What the model repository on disk offers: models, their versions and base configs.

Base configs are parsed with Triton's own ModelConfig protobuf, so anything
Triton accepts parses here, fields this project does not model included.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc.model_config_pb2 import ModelConfig

from triton_platform.args.input_files import InputFile, InputFileError, InputKind
from triton_platform.args.integer_limits import INT64_MAX
from triton_platform.model_packaging.config_rules import config_problems, ensemble_problems
from triton_platform.model_packaging.vllm_engine import ENGINE_ARGS_FILE, ENGINE_ARGS_FILE_NAME, engine_args_problems

BASE_CONFIG = "config.pbtxt"
CONFIG_FILE = InputKind(BASE_CONFIG, 1024 * 1024)
"""Each stack's config is rendered from it into a ConfigMap, whose data Kubernetes caps at 1 MiB
(kubernetes.io/docs/concepts/configuration/configmap/); real ones are a few KiB."""


@dataclass(frozen=True)
class RepoModel:
    """One model folder: its version folders and its parsed base config.pbtxt."""

    name: str
    path: Path
    versions: tuple[int, ...]
    config: ModelConfig
    empty_versions: frozenset[int] = frozenset()
    """Version folders holding no file (dotfiles such as .gitkeep aside): nothing for a backend to load."""
    extra_files: tuple[str, ...] = ()
    """Files outside the version folders that Triton reads when it loads the model, relative to the model folder
    (config_files): the label files and warmup data files its config.pbtxt names, each present."""

    @property
    def is_ensemble(self) -> bool:
        return bool(self.config.platform == "ensemble")

    @property
    def is_decoupled(self) -> bool:
        """Whether the model streams: its config's `model_transaction_policy { decoupled: true }`, under which it
        may send any number of responses to a request (Triton's decoupled models)."""
        return bool(self.config.model_transaction_policy.decoupled)


@dataclass(frozen=True)
class RepoProblem:
    """Something in a model folder that Triton could not load as it is."""

    file: Path
    message: str


@dataclass(frozen=True)
class ModelRepository:
    path: Path
    models: dict[str, RepoModel] = field(default_factory=dict)
    """Folders Triton can load, each with its canonical version folders."""
    problems: dict[str, list[RepoProblem]] = field(default_factory=dict)
    """By model name, what is wrong with its folder. A model whose config is missing, does not parse or names a
    missing ensemble step is absent from `models`; one with any other problem is in both."""

    @property
    def names(self) -> set[str]:
        return set(self.models) | set(self.problems)

    def describe(self, shown: str) -> str:
        """The known models, for error messages that write the repository's path as `shown`."""
        if not self.path.is_dir():
            return f"none: the model repository {shown} does not exist"
        return ", ".join(sorted(self.names)) or f"none: {shown} holds no folder with a config.pbtxt"

    def add_problem(self, name: str, file: Path, message: str) -> None:
        self.problems.setdefault(name, []).append(RepoProblem(file, message))


def parse_model_config(text: str) -> ModelConfig:
    """config.pbtxt text to a ModelConfig; raises text_format.ParseError naming line and column."""
    return text_format.Parse(text, ModelConfig())


# Triton's VersionsToLoad (https://github.com/triton-inference-server/core/blob/main/src/model_repository_manager/
# model_lifecycle.cc) skips these folders, ignores names with a leading zero and reads the rest with std::stoll, so
# "1.0" loads as version 1 and "-1" as version -1; above int64 std::stoll throws std::out_of_range, which
# VersionsToLoad does not catch (it catches std::invalid_argument only). Anything that looks like a number must
# therefore be a canonical one that fits in int64.
WARMUP_FOLDER = "warmup"
"""kWarmupDataFolder (triton-inference-server/core src/constants.h): where warmup data files are read from."""
TRITON_FOLDERS = frozenset({WARMUP_FOLDER, "initial_state", "configs"})
_NUMBER_LIKE = re.compile(r"\s*([-+]?[0-9]+)")
_VERSION = re.compile(r"[1-9][0-9]*")


def _version_folder_problem(model: str, name: str) -> str | None:
    """Why a folder that looks like a version is not one Triton reads as the user means, or None."""
    number = _NUMBER_LIKE.match(name)
    if number is None or (_VERSION.fullmatch(name) and int(name) <= INT64_MAX):
        return None
    if len(name) > 1 and name.startswith("0"):
        why = "Triton ignores a version folder whose name starts with 0"
    elif int(number[1]) < 1:
        why = "versions start at 1"
    elif int(number[1]) > INT64_MAX:
        why = f"Triton reads versions as int64 and cannot read one above {INT64_MAX}"
    else:
        why = f"Triton would read it as version {int(number[1])}"
    return (
        f"version folder {name!r} of model {model!r}: {why}; "
        "version folders are named 1, 2, 3, ... (no leading zeros, signs or dots)"
    )


def config_files(config: ModelConfig) -> list[tuple[str, str, str]]:
    """(config key, its value, the path relative to the model folder) of each file outside the version folders
    that Triton reads when it loads a model with `config`, where Triton (triton-inference-server/core) resolves it:

    - an output's `label_filename` (the classification extension's labels): `<model folder>/<label_filename>`,
      refused when it leads out of the folder (src/model.cc, Model::Init: JoinPath({model_dir_, label_filename})
      and IsChildPathEscapingParentPath);
    - a warmup input's `input_data_file`: `<model folder>/warmup/<input_data_file>` (src/backend_model_instance.cc,
      TritonModelInstance::GenerateWarmupData: JoinPath({LocalizedModelPath(), kWarmupDataFolder, ...}), with
      kWarmupDataFolder "warmup" in src/constants.h).
    """
    found = [
        (f"output[{index}].label_filename", output.label_filename, output.label_filename)
        for index, output in enumerate(config.output)
        if output.label_filename
    ]
    for index, warmup in enumerate(config.model_warmup):
        for name, data in sorted(warmup.inputs.items()):
            if data.WhichOneof("input_data_type") == "input_data_file":
                key = f"model_warmup[{index}].inputs[{name!r}].input_data_file"
                found.append((key, data.input_data_file, posixpath.join(WARMUP_FOLDER, data.input_data_file)))
    return found


def _config_file_problem(folder: Path, key: str, value: str, relative: str) -> str | None:
    """Why the file `relative` that config key `key` names (as `value`) cannot be loaded or shipped from `folder`,
    or None."""
    normal = posixpath.normpath(relative)
    where = f"model {folder.name!r}: {key} is {value!r}"
    if relative.startswith("/") or normal == ".." or normal.startswith("../"):
        return (
            f"{where}, which leads out of the model folder; Triton refuses a label file there, and only the model "
            "folder ships: give a path inside it"
        )
    if not (folder / normal).is_file():
        return (
            f"{where}, but {folder / normal} does not exist (or is no file); Triton reads it when it loads the model "
            "and fails the load without it: add the file, or remove the key"
        )
    return None


def _has_files(folder: Path) -> bool:
    return any(f.is_file() and not f.name.startswith(".") for f in folder.rglob("*"))


def _check_engine_args(repo: ModelRepository, folder: Path, config: ModelConfig, versions: list[int]) -> None:
    """A vLLM model's engine arguments in each version folder that has them (a served version without them is
    model_fit's to name)."""
    if config.backend != "vllm":
        return
    for path in (folder / str(v) / ENGINE_ARGS_FILE_NAME for v in versions):
        if not path.is_file():
            continue
        try:
            text = InputFile(path, ENGINE_ARGS_FILE).read_text()
        except InputFileError as err:
            repo.add_problem(folder.name, path, err.problem)
            continue
        except UnicodeDecodeError:
            repo.add_problem(folder.name, path, "is not UTF-8 text; it holds vLLM's engine arguments as JSON")
            continue
        for message in engine_args_problems(text):
            repo.add_problem(folder.name, path, message)


def _read_model(repo: ModelRepository, folder: Path) -> None:
    config_file = folder / BASE_CONFIG
    if not config_file.is_file():
        repo.add_problem(
            folder.name,
            folder,
            f"model folder {folder.name!r} has no {BASE_CONFIG}; every model needs one (each stack's config is "
            "rendered from it)",
        )
        return
    try:
        config = parse_model_config(InputFile(config_file, CONFIG_FILE).read_text())
    except InputFileError as err:
        repo.add_problem(folder.name, config_file, err.problem)
        return
    except (text_format.ParseError, UnicodeDecodeError) as err:
        repo.add_problem(folder.name, config_file, f"Triton cannot parse it: {err}")
        return
    for message in config_problems(config):
        repo.add_problem(folder.name, config_file, message)
    if config.name and config.name != folder.name:
        repo.add_problem(
            folder.name,
            config_file,
            f"name {config.name!r} differs from its folder {folder.name!r}; Triton requires them to match",
        )
        return
    versions, empty = [], set()
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and p.name not in TRITON_FOLDERS):
        problem = _version_folder_problem(folder.name, sub.name)
        if problem:
            repo.add_problem(folder.name, sub, problem)
        elif _VERSION.fullmatch(sub.name):
            versions.append(int(sub.name))
            if not _has_files(sub):
                empty.add(int(sub.name))
    _check_engine_args(repo, folder, config, versions)
    extra = set()
    for key, value, relative in config_files(config):
        problem = _config_file_problem(folder, key, value, relative)
        if problem:
            repo.add_problem(folder.name, config_file, problem)
        elif posixpath.normpath(relative).split("/")[0] not in {str(v) for v in versions}:
            # A file inside a version folder ships with it; one beside them is linked or copied on its own.
            extra.add(posixpath.normpath(relative))
    repo.models[folder.name] = RepoModel(
        folder.name, folder, tuple(sorted(versions)), config, frozenset(empty), tuple(sorted(extra))
    )


def _missing_steps(repo: ModelRepository) -> None:
    """Ensembles whose steps name a model the repository lacks: Triton cannot load them."""
    for name, model in sorted(repo.models.items()):
        if not model.is_ensemble:
            continue
        others = ", ".join(sorted(repo.names - {name})) or "none"
        missing = [
            (number, step.model_name)
            for number, step in enumerate(model.config.ensemble_scheduling.step, start=1)
            if step.model_name not in repo.names
        ]
        for number, step_model in missing:
            repo.add_problem(
                name,
                model.path / BASE_CONFIG,
                f"ensemble {name!r} step {number} uses model {step_model!r}, which is not in the repository "
                f"(models: {others})",
            )
        if missing:
            del repo.models[name]


def _ensembles(repo: ModelRepository) -> None:
    """Ensemble steps Triton refuses among the models it can read: circular ones, and tensor maps that do
    not fit the step's model (triton_platform/model_packaging/config_rules.py)."""
    configs = {name: model.config for name, model in repo.models.items()}
    for name, problems in ensemble_problems(configs).items():
        for problem in problems:
            repo.add_problem(name, repo.models[name].path / BASE_CONFIG, problem)


def _links_out(repo: ModelRepository, folder: Path) -> None:
    """Symbolic links in a model folder (the folder itself included) that lead out of the repository.

    Triton, `stackctl model-repo` and the bundled or published copies read through a link, so a file outside
    the repository would ship as the model's. A link to a path inside the repository stays allowed: its
    target is reviewed with the repository, and the copies hold the target's content.
    """
    root = repo.path.resolve()
    links = [folder] if folder.is_symlink() else []
    if not links:
        for parent, dirs, files in os.walk(folder):  # links to folders are listed, never walked into
            links += [Path(parent, entry) for entry in sorted(dirs + files) if Path(parent, entry).is_symlink()]
    for link in links:
        try:
            target = link.resolve()
        except (RuntimeError, OSError):  # a loop of links: Python 3.11 raises RuntimeError
            repo.add_problem(folder.name, link.parent, f"{link.name!r} is a loop of symbolic links")
            continue
        if not target.is_relative_to(root):
            repo.add_problem(
                folder.name,
                link.parent,
                f"{link.name!r} is a symbolic link to {target}, outside the model repository {repo.path}; "
                "Triton and the bundled or published copies would read it from there. Put the file itself in "
                "the repository (a link to a path inside it is allowed)",
            )


def read_repository(path: Path) -> ModelRepository:
    """Every model folder of a Triton model repository, with what is wrong with each.

    Read once while nothing under `path` changes: a program reads it to validate its stack, then TritonServing
    again from its Args, and both get the same repository (`_tree_state` tells a change, by every entry's size
    and modification time)."""
    return _read_unchanged(path, _tree_state(path))


def _tree_state(path: Path) -> tuple[tuple[str, int, int, int], ...]:
    """Every entry under `path` (links not followed): its path, mode, size and modification time in ns."""
    entries = []
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            stat = os.lstat(os.path.join(folder, name))
            entries.append((os.path.join(folder, name), stat.st_mode, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(entries))


@functools.lru_cache(maxsize=4)
def _read_unchanged(path: Path, state: tuple[tuple[str, int, int, int], ...]) -> ModelRepository:
    repo = ModelRepository(path)
    if not path.is_dir():
        return repo
    for folder in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        _links_out(repo, folder)
        _read_model(repo, folder)
    _missing_steps(repo)
    _ensembles(repo)
    return repo
