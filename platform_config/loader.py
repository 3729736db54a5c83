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
import re
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from model_repository.source import DEFAULT_MODEL_REPO, ModelRepository, read_repository
from platform_config.checks import cross_section_issues
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.paths import PROJECT_ROOT, display_path
from platform_config.reference import type_text
from platform_config.schema import (
    PATTERN_NAMES,
    PROJECT,
    SECTION_KEYS,
    KeyProblemError,
    KubernetesConfig,
    PlatformConfig,
    section_key,
)

STACKS_DIR = PROJECT_ROOT / "stacks"
DISABLE_DEFAULT_PROVIDERS = "pulumi:disable-default-providers"
SECRET_PLACEHOLDER = "[secret]"
"""Stands in for a `secure:` value when no passphrase is at hand (validate, synth)."""

_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(cast(Any, field.annotation)) for name, field in PlatformConfig.model_fields.items()
}
_SIMPLE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class StackConfig:
    """A validated stack: its name, where its config came from, and the typed config."""

    stack: str
    source: str
    config: PlatformConfig
    environments: tuple[str, ...] = ()
    """The Pulumi ESC environments the stack file imports (its `environment:` key)."""
    deferred: tuple[str, ...] = ()
    """Config keys absent from the file that its ESC environments may supply: only the CLI opens those."""


def stack_file(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a mapping key given twice instead of keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _plain(value: Any, where: str, secret_keys: set[str], key: str, depth: int = 0) -> Any:
    """A YAML value as JSON-able data; `secure:` leaves, which need the passphrase, become a placeholder."""
    if depth > 50:
        raise ConfigError(where, [ConfigIssue(key, "nested too deeply (a recursive YAML alias?)")])
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            secret_keys.add(key)
            return SECRET_PLACEHOLDER
        for k in value:
            if not isinstance(k, str):
                raise ConfigError(where, [ConfigIssue(key, f"key {k!r} is not a string; quote it")])
        return {k: _plain(v, where, secret_keys, key, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, where, secret_keys, key, depth + 1) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ConfigError(
        where,
        [ConfigIssue(key, f"YAML value {str(value)!r} of type {type(value).__name__} is not allowed; quote it")],
    )


def _stack_document(path: Path) -> dict[str, Any]:
    """A stack file's YAML, or a ConfigError naming why it cannot be read."""
    source = display_path(path)

    def fail(message: str) -> ConfigError:
        return ConfigError(source, [ConfigIssue("(file)", message)])

    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as err:
        raise fail(f"cannot read the stack file: {err.strerror}") from None
    except UnicodeDecodeError:
        raise fail("not UTF-8 text; save the stack file as UTF-8") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise fail(f"not valid YAML{where}: {problem}") from None
    return document if isinstance(document, dict) else {}


def esc_environments(document: Mapping[str, Any], source: str) -> tuple[str, ...]:
    """The ESC environments a stack file imports: `environment:` as a list of names, or a definition with `imports:`.

    https://www.pulumi.com/docs/iac/concepts/projects/stack-settings-file/ ("Environment
    definition or list of environments for Pulumi ESC integration").
    """
    value = document.get("environment")
    if value is None:
        return ()
    names = value.get("imports", []) if isinstance(value, dict) else value
    if isinstance(value, dict) and not names:
        return ("(inline definition)",)  # its own values may hold pulumiConfig
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise ConfigError(
            source,
            [
                ConfigIssue(
                    "environment",
                    f"expected a list of ESC environment names such as [myorg/triton-production]; got {value!r}",
                )
            ],
        )
    return tuple(names)


def pulumi_config_from_stack_file(path: Path) -> tuple[dict[str, str], list[str]]:
    """A stack file's `config:` flattened the way the Pulumi CLI hands it to a program.

    Strings stay as they are; every other value, structured ones included, is
    JSON-encoded. Returns the config and the keys that hold secrets. A file that
    imports ESC environments may leave `config:` out.
    """
    source = display_path(path)
    document = _stack_document(path)
    config = document.get("config", {} if esc_environments(document, source) else None)
    if not isinstance(config, dict):
        raise ConfigError(
            source, [ConfigIssue("config", "the stack file needs a top-level `config:` mapping of keys to values")]
        )
    secret_keys: set[str] = set()
    flat: dict[str, str] = {}
    for key, raw in config.items():
        if not isinstance(key, str):
            raise ConfigError(
                source, [ConfigIssue("config", f"config key {key!r} is not a string; keys look like {PROJECT}:<name>")]
            )
        value = _plain(raw, source, secret_keys, key)
        flat[key] = value if isinstance(value, str) else json.dumps(value)
    return flat, sorted(secret_keys)


def _decode(raw: str) -> Any:
    """A flat config value back to its structure; the CLI JSON-encodes every non-string value."""
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


def _node_at(annotation: Any, loc: tuple[int | str, ...]) -> Any:
    """The schema type at `loc` below a section (None when `loc` leaves the schema)."""
    current = _unwrap(annotation)
    for part in loc:
        origin = typing.get_origin(current)
        if origin in (dict, list):
            current = _unwrap(typing.get_args(current)[-1])
        elif isinstance(current, type) and issubclass(current, BaseModel):
            by_alias = {f.alias: f for f in current.model_fields.values()}
            current = _unwrap(by_alias[str(part)].annotation) if str(part) in by_alias else None
        else:
            return None
    return current


def _allowed_keys(annotation: Any, loc: tuple[int | str, ...]) -> list[str]:
    node = _node_at(annotation, loc)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return sorted(f.alias for f in node.model_fields.values() if f.alias)
    return []


def _key_path(key: str, loc: tuple[int | str, ...]) -> str:
    path = key
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            path += " (key)"
        elif _SIMPLE_KEY.match(part):
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path


def _message(e: Any, annotation: Any, loc: tuple[int | str, ...]) -> tuple[tuple[int | str, ...], str]:
    """Pydantic's error in our words: what is wrong, the bad value, what is allowed."""
    kind, got = e["type"], f"; got {e.get('input')!r}"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(annotation, loc[:-1])
        return loc, f"unknown key {loc[-1]!r}; {_suggest(str(loc[-1]), allowed)}allowed keys: {', '.join(allowed)}"
    if kind == "missing":
        node = _node_at(annotation, loc[:-1])
        field = node.model_fields.get(_field_name(node, str(loc[-1]))) if node else None
        keys = _allowed_keys(annotation, loc)
        if keys:
            expected = f" (expects a mapping with keys {', '.join(keys)})"
        else:
            expected = f" (expects {type_text(field.annotation, field.metadata)})" if field else ""
        return loc, f"required key is missing{expected}"
    if kind in ("value_error", "assertion_error"):
        error = e.get("ctx", {}).get("error")
        if isinstance(error, KeyProblemError):
            return (*loc, error.key), str(error)
        return loc, str(e["msg"]).removeprefix("Value error, ")
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        allowed = _allowed_keys(annotation, loc)
        with_keys = f" with keys {', '.join(allowed)}" if allowed else ""
        return loc, f"expected a mapping{with_keys}{got}"
    if kind == "string_pattern_mismatch":
        pattern = e.get("ctx", {}).get("pattern", "")
        return loc, f"must be {PATTERN_NAMES.get(pattern, f'a string matching {pattern}')}{got}"
    if loc and loc[-1] == "[key]":
        return loc, f"bad key {e['input']!r}: {e['msg']}"
    return loc, f"{e['msg']}{got}"


def _field_name(model: Any, alias: str) -> str:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return next((name for name, f in model.model_fields.items() if f.alias == alias), alias)
    return alias


def _issues_from_pydantic(key: str, field_name: str, err: ValidationError) -> list[ConfigIssue]:
    annotation = PlatformConfig.model_fields[field_name].annotation
    issues = []
    for e in err.errors(include_url=False):
        loc, message = _message(e, annotation, tuple(e["loc"]))
        issues.append(ConfigIssue(_key_path(key, loc), message))
    return issues


def _valid_entries(field_name: str, entries: dict[str, Any]) -> dict[str, Any]:
    """The entries of a map section that are valid on their own (the map's others failed)."""
    valid: dict[str, Any] = {}
    for name, entry in entries.items():
        try:
            valid.update(_ADAPTERS[field_name].validate_python({name: entry}))
        except ValidationError:
            continue
    return valid


def _namespace_issues(flat: Mapping[str, str], deferred: Collection[str]) -> list[ConfigIssue]:
    issues = []
    known = sorted(SECTION_KEYS)
    for key in flat:
        namespace, colon, _name = key.partition(":")
        if not colon:
            issues.append(
                ConfigIssue(
                    key, f"config keys need a namespace; {_suggest(f'{PROJECT}:{key}', known)}use {PROJECT}:{key}"
                )
            )
        elif namespace == PROJECT and key not in SECTION_KEYS:
            issues.append(ConfigIssue(key, f"unknown key; {_suggest(key, known)}allowed keys: {', '.join(known)}"))
        elif namespace != PROJECT and difflib.SequenceMatcher(None, namespace, PROJECT).ratio() > 0.8:
            issues.append(ConfigIssue(key, f"unknown config namespace {namespace!r}; did you mean {PROJECT!r}?"))
    if DISABLE_DEFAULT_PROVIDERS in deferred and DISABLE_DEFAULT_PROVIDERS not in flat:
        return issues
    providers = _decode(flat.get(DISABLE_DEFAULT_PROVIDERS, "[]"))
    if not isinstance(providers, list) or not ({"kubernetes", "*"} & set(map(str, providers))):
        issues.append(
            ConfigIssue(
                DISABLE_DEFAULT_PROVIDERS,
                f"must list 'kubernetes' so nothing deploys through the ambient kubeconfig context; got {providers!r}",
            )
        )
    return issues


def _plaintext_credentials(
    sections: dict[str, Any], secret_keys: Collection[str], from_stack_file: bool
) -> list[ConfigIssue]:
    """Receiver credentials given inline must be Pulumi secrets, never plain text in the stack file.

    Read from the file, each secret leaf is a placeholder, so every credential is checked on its own.
    From the engine, a key holding any secret is secret as a whole: that is all there is to check.
    """
    key = section_key("monitoring")
    monitoring = sections.get("monitoring")
    if monitoring is None or (key in secret_keys and not from_stack_file):
        return []
    issues = []
    for name, receiver in sorted(monitoring.receivers.items()):
        for integration, field in (("slack", "webhook_url"), ("pagerduty", "routing_key"), ("webhook", "url")):
            target = getattr(receiver, integration)
            value = getattr(target, field).value if target is not None else None
            if value is not None and value != SECRET_PLACEHOLDER:
                path = f"{key}.receivers.{name}.{integration}.{to_camel(field)}.value"
                issues.append(
                    ConfigIssue(
                        path,
                        "a credential in plain text; store it as a Pulumi secret: "
                        f"pulumi config set --secret --path '{path}' <value> (or reference an existing Secret)",
                    )
                )
    return issues


def parse_config(
    flat: Mapping[str, str],
    source: str,
    repo: ModelRepository | None = None,
    secret_keys: Collection[str] = (),
    from_stack_file: bool = False,
    *,
    deferred: Collection[str] = (),
) -> PlatformConfig:
    """Validate flat Pulumi config into a PlatformConfig, or raise ConfigError with every problem.

    `secret_keys` are the config keys Pulumi holds as secrets; `from_stack_file` says secret leaves
    were replaced by placeholders (the file was read without the passphrase). Sections named in
    `deferred` and absent are left out unchecked: ESC supplies them at `pulumi up` time, and the
    result then lacks them.
    """
    repo = read_repository(DEFAULT_MODEL_REPO) if repo is None else repo
    issues = _namespace_issues(flat, deferred)
    sections: dict[str, Any] = {}
    for key, field_name in SECTION_KEYS.items():
        field = PlatformConfig.model_fields[field_name]
        if key not in flat:
            if key in deferred:
                continue
            if field.is_required():
                keys = _allowed_keys(field.annotation, ())
                expected = (
                    f"a mapping with keys {', '.join(keys)}" if keys else type_text(field.annotation, field.metadata)
                )
                issues.append(ConfigIssue(key, f"required key is missing (expects {expected})"))
            else:
                sections[field_name] = field.get_default(call_default_factory=True)
            continue
        # Plain strings (environment) stay strings; the CLI JSON-encodes everything else.
        value = flat[key] if field_name == "environment" else _decode(flat[key])
        try:
            sections[field_name] = _ADAPTERS[field_name].validate_python(value)
        except ValidationError as err:
            issues.extend(_issues_from_pydantic(key, field_name, err))
            if field_name == "models" and isinstance(value, dict):
                sections[field_name] = _valid_entries(field_name, value)
            elif field_name == "kubernetes" and isinstance(value, dict) and value.get("mode") in ("deploy", "render"):
                # Production must never render: say so even when other kubernetes keys are wrong.
                sections[field_name] = KubernetesConfig.model_construct(
                    mode=value["mode"], namespace=str(value.get("namespace"))
                )
    issues.extend(cross_section_issues(sections, repo))
    issues.extend(_plaintext_credentials(sections, secret_keys, from_stack_file))
    if issues:
        raise ConfigError(source, issues)
    return PlatformConfig.model_construct(**sections)


def load_stack_file(
    path: Path, stack: str | None = None, repo: ModelRepository | None = None, defer_to_esc: bool = False
) -> StackConfig:
    """Read and validate a stack YAML file; the stack name defaults to the one in its file name.

    When the file imports ESC environments, the sections it leaves out may come from them, and
    only the Pulumi CLI opens environments. `defer_to_esc` validates what the file holds and
    lists the rest in `deferred`; otherwise each such section is an error naming the way out.
    """
    flat, secret_keys = pulumi_config_from_stack_file(path)
    name = stack or path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    source = display_path(path)
    environments = esc_environments(_stack_document(path), source)
    expected = (DISABLE_DEFAULT_PROVIDERS, *SECTION_KEYS)
    absent = tuple(key for key in expected if key not in flat) if environments else ()
    if absent and not defer_to_esc:
        where = ", ".join(environments)
        raise ConfigError(
            source,
            [
                ConfigIssue(
                    key,
                    f"not in the stack file, so it may come from ESC environment(s) {where}, which only the Pulumi "
                    f"CLI opens; this command reads the file alone: set the key in the file, or check the stack "
                    f"with `pulumi preview --stack {name}`",
                )
                for key in absent
            ],
        )
    config = parse_config(flat, source, repo, secret_keys, from_stack_file=True, deferred=absent)
    return StackConfig(stack=name, source=source, config=config, environments=environments, deferred=absent)


def load_stack(stack: str, repo: ModelRepository | None = None) -> StackConfig:
    """Read and validate `stacks/Pulumi.<stack>.yaml`."""
    return load_stack_file(stack_file(stack), stack, repo)
