"""Parse a stack's config once, at the edge, and report every problem in one run.

Two doors lead here and share everything after the first step:

* ``pulumi up``/``preview``: the engine hands the program flat config, where
  structured values arrive JSON-encoded (``pulumi_source.py``);
* ``stackctl``: a stack YAML file is read and flattened the same way the CLI
  flattens it (:func:`pulumi_config_from_stack_file`).
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from platform_config.checks import cross_section_issues
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.model_repo import DEFAULT_MODEL_REPO, PROJECT_ROOT, model_names
from platform_config.schema import PROJECT, SECTION_KEYS, ModelSettings, PlatformConfig

STACKS_DIR = PROJECT_ROOT / "stacks"
DISABLE_DEFAULT_PROVIDERS = "pulumi:disable-default-providers"
SECRET_PLACEHOLDER = "[secret]"
"""Stands in for a `secure:` value when no passphrase is at hand (validate, synth)."""

_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(cast(Any, field.annotation)) for name, field in PlatformConfig.model_fields.items()
}


@dataclass(frozen=True)
class StackConfig:
    """A validated stack: its name, where its config came from, and the typed config."""

    stack: str
    source: str
    config: PlatformConfig


def stack_file(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def display_path(path: Path) -> str:
    """A path as a user should read it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _flatten_secure(value: Any, key: str, secret_keys: set[str]) -> Any:
    """Replace `secure:` leaves, which need the stack's passphrase, with a placeholder."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            secret_keys.add(key)
            return SECRET_PLACEHOLDER
        return {k: _flatten_secure(v, key, secret_keys) for k, v in value.items()}
    if isinstance(value, list):
        return [_flatten_secure(v, key, secret_keys) for v in value]
    return value


def pulumi_config_from_stack_file(path: Path) -> tuple[dict[str, str], list[str]]:
    """A stack file's `config:` flattened the way the Pulumi CLI hands it to a program.

    Strings stay as they are; every other value, structured ones included, is
    JSON-encoded. Returns the config and the keys that hold secrets.
    """
    source = display_path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(source, [ConfigIssue("(file)", f"cannot read the stack file: {err.strerror}")]) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(source, [ConfigIssue("(file)", f"not valid YAML{where}: {problem}")]) from None
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise ConfigError(
            source, [ConfigIssue("config", "the stack file needs a top-level `config:` mapping of keys to values")]
        )
    secret_keys: set[str] = set()
    flat: dict[str, str] = {}
    for key, raw in document["config"].items():
        value = _flatten_secure(raw, str(key), secret_keys)
        flat[str(key)] = value if isinstance(value, str) else json.dumps(value)
    return flat, sorted(secret_keys)


def _decode(raw: str) -> Any:
    """A flat config value back to its structure; JSON strings become objects, lists and numbers."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def _unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional to reach a model, dict or list type."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            return annotation


def _allowed_keys(annotation: Any, loc: tuple[int | str, ...]) -> list[str]:
    """The keys a config object accepts at `loc` (below a section), for unknown-key errors."""
    current = _unwrap(annotation)
    for part in loc:
        origin = typing.get_origin(current)
        if origin in (dict, list):
            current = _unwrap(typing.get_args(current)[-1])
        elif isinstance(current, type) and issubclass(current, BaseModel):
            by_alias = {f.alias: f for f in current.model_fields.values()}
            current = _unwrap(by_alias[str(part)].annotation) if str(part) in by_alias else None
        if current is None:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(f.alias for f in current.model_fields.values() if f.alias)
    return []


def _key_path(key: str, loc: tuple[int | str, ...]) -> str:
    path = key
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            path += " (key)"
        else:
            path += f".{part}"
    return path


def _issues_from_pydantic(key: str, field_name: str, err: ValidationError) -> list[ConfigIssue]:
    annotation = PlatformConfig.model_fields[field_name].annotation
    issues = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        kind = e["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(annotation, loc[:-1])
            message = f"unknown key {loc[-1]!r}; {_suggest(str(loc[-1]), allowed)}allowed keys: {', '.join(allowed)}"
        elif kind == "missing":
            message = "required key is missing"
        elif kind in ("value_error", "assertion_error"):
            message = str(e["msg"]).removeprefix("Value error, ")
        elif loc and loc[-1] == "[key]":
            message = f"bad key {e['input']!r}: {e['msg']}"
        else:
            message = f"{e['msg']}; got {e['input']!r}"
        issues.append(ConfigIssue(_key_path(key, loc), message))
    return issues


def _valid_entries(models: dict[str, Any]) -> dict[str, ModelSettings]:
    valid = {}
    for name, entry in models.items():
        try:
            valid.update(_ADAPTERS["models"].validate_python({name: entry}))
        except ValidationError:
            continue
    return valid


def parse_config(flat: Mapping[str, str], source: str, repo_models: set[str] | None = None) -> PlatformConfig:
    """Validate flat Pulumi config into a PlatformConfig, or raise ConfigError with every problem."""
    repo = model_names(DEFAULT_MODEL_REPO) if repo_models is None else repo_models
    issues: list[ConfigIssue] = []
    sections: dict[str, Any] = {}
    known = sorted(SECTION_KEYS)

    for key in flat:
        namespace, _, _name = key.partition(":")
        if namespace == PROJECT and key not in SECTION_KEYS:
            issues.append(ConfigIssue(key, f"unknown key; {_suggest(key, known)}allowed keys: {', '.join(known)}"))
        elif namespace != PROJECT and difflib.SequenceMatcher(None, namespace, PROJECT).ratio() > 0.8:
            issues.append(ConfigIssue(key, f"unknown config namespace {namespace!r}; did you mean {PROJECT!r}?"))

    providers = _decode(flat.get(DISABLE_DEFAULT_PROVIDERS, "[]"))
    if not isinstance(providers, list) or not ({"kubernetes", "*"} & set(map(str, providers))):
        issues.append(
            ConfigIssue(
                DISABLE_DEFAULT_PROVIDERS,
                f"must list 'kubernetes' so nothing deploys through the ambient kubeconfig context; got {providers!r}",
            )
        )

    for key, field_name in SECTION_KEYS.items():
        field = PlatformConfig.model_fields[field_name]
        if key not in flat:
            if field.is_required():
                issues.append(ConfigIssue(key, "required key is missing"))
            else:
                sections[field_name] = field.get_default(call_default_factory=True)
            continue
        value = _decode(flat[key])
        try:
            sections[field_name] = _ADAPTERS[field_name].validate_python(value)
        except ValidationError as err:
            issues.extend(_issues_from_pydantic(key, field_name, err))
            if field_name == "models" and isinstance(value, dict):
                # Entries are independent: keep the valid ones so cross-section checks still see them.
                sections[field_name] = _valid_entries(value)

    issues.extend(cross_section_issues(sections, repo))
    if issues:
        raise ConfigError(source, issues)
    return PlatformConfig.model_construct(**sections)


def load_stack_file(path: Path, stack: str | None = None, repo_models: set[str] | None = None) -> StackConfig:
    """Read and validate a stack YAML file; the stack name defaults to the one in its file name."""
    flat, _secret_keys = pulumi_config_from_stack_file(path)
    name = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    source = display_path(path)
    return StackConfig(stack=name, source=source, config=parse_config(flat, source, repo_models))


def load_stack(stack: str, repo_models: set[str] | None = None) -> StackConfig:
    """Read and validate `stacks/Pulumi.<stack>.yaml`."""
    return load_stack_file(stack_file(stack), stack, repo_models)
