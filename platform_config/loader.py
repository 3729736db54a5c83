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
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from platform_config import chart_values, secret_values, yaml12
from platform_config.checks import cross_section_issues
from platform_config.errors import FILE_ISSUE, SYNTAX_ISSUE, ConfigError, ConfigIssue
from platform_config.kubernetes import KubernetesConfig
from platform_config.model_settings import render_stack
from platform_config.nesting import MAX_DEPTH, TOO_DEEP, json_too_deep
from platform_config.paths import DEFAULT_MODEL_REPO, STACK_FILE, display_path, stack_file
from platform_config.reference import type_text
from platform_config.schema import SECTION_KEYS, PlatformConfig, section_key
from platform_config.secrets_provider import SecretsProvider
from platform_config.types import HelmChart, KeyProblemError, KeyProblemsError, stack_name_problem
from triton_platform import url_credentials
from triton_platform.excerpts import EXCERPT_CHARS, excerpt, key_step
from triton_platform.formats import PATTERN_NAMES
from triton_platform.input_files import InputFile, InputFileError
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.model_packaging.source import ModelRepository, read_repository
from triton_platform.namespace import PROJECT

DISABLE_DEFAULT_PROVIDERS = "pulumi:disable-default-providers"
SECRET_PLACEHOLDER = "[secret]"
"""Stands in for a `secure:` value when no passphrase is at hand (validate, synth).

It is also what `pulumi config` prints in place of a secret, so the same text written as a
plain value is a copy of that output, never a secret: it is refused, not passed over.
"""
_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(cast(Any, field.annotation)) for name, field in PlatformConfig.model_fields.items()
}


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
    rendered: RenderedRepository | None = None
    """The served models' config.pbtxt, rendered once after validation for every consumer (the program,
    stackctl, the simulator); None when the serving or models section is left to ESC."""


def _set_secret(path: str) -> str:
    """The command that stores `path` as a Pulumi secret (`--path` reaches inside structured keys)."""
    _namespace, _colon, name = path.partition(":")
    if re.search(r"[.\[]", name):
        return f"pulumi config set --secret --path '{path}' <value>"
    return f"pulumi config set --secret {path} <value>"


@dataclass
class _FileWalk:
    """What reading a stack file's config gathers: its secret keys and every problem, in one pass."""

    secrets: SecretsProvider
    secret_keys: set[str]
    issues: list[ConfigIssue]


def _plain(value: Any, key: str, loc: tuple[int | str, ...], walk: _FileWalk) -> Any:
    """A YAML value as JSON-able data; `secure:` leaves, which need the passphrase, become a placeholder.

    Problems are added to `walk.issues` with the full key path and the walk goes on, so one run names them all.
    """
    issues = walk.issues
    if len(loc) > MAX_DEPTH:
        issues.append(ConfigIssue(key_path(key, loc), TOO_DEEP))
        return None
    if isinstance(value, dict):
        if len(value) == 1 and "secure" in value:
            # The CLI takes `secure:` as a secret only when it holds a string (its config.Value); anything
            # else would silently become a plain mapping {secure: ...}, and text that is no ciphertext
            # fails only at decryption: both are refused here, never showing what `secure:` holds.
            if problem := walk.secrets.ciphertext_problem(value["secure"]):
                path = key_path(key, loc)
                issues.append(ConfigIssue(path, f"{problem}; set the secret again: {_set_secret(path)}"))
            walk.secret_keys.add(key)
            return SECRET_PLACEHOLDER
        plain: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(k, str):
                plain[k] = _plain(v, key, (*loc, k), walk)
            else:
                issues.append(ConfigIssue(key_path(key, loc), f"key {excerpt(k)} is not a string; quote it"))
        return plain
    if isinstance(value, list):
        return [_plain(v, key, (*loc, i), walk) for i, v in enumerate(value)]
    if isinstance(value, yaml12.YamlTimestamp):
        issues.append(
            ConfigIssue(
                key_path(key, loc),
                f"unquoted date or time {_shown(_section_annotation(key), loc, str(value))}; quote it: "
                "the Pulumi CLI reads it as a string, "
                "other YAML readers as a date",
            )
        )
        return str(value)
    if value == SECRET_PLACEHOLDER:
        path = key_path(key, loc)
        issues.append(ConfigIssue(path, _placeholder_message(path)))
        return value
    if value is None or isinstance(value, str | int | float | bool):
        return value
    issues.append(
        ConfigIssue(
            key_path(key, loc),
            f"YAML value {_shown(_section_annotation(key), loc, str(value))} of type {type(value).__name__} is not "
            "allowed; quote it",
        )
    )
    return None


def _placeholder_message(path: str) -> str:
    return (
        f"the text {SECRET_PLACEHOLDER!r} is what Pulumi prints in place of a secret, not a value; "
        f"set the real value as a secret: {_set_secret(path)}"
    )


def _stack_document(path: Path) -> dict[str, Any]:
    """A stack file's YAML, or a ConfigError naming why it cannot be read."""
    source = display_path(path)

    def fail(message: str) -> ConfigError:
        return ConfigError(source, [ConfigIssue(FILE_ISSUE, message)])

    try:
        document = yaml12.load(InputFile(path, STACK_FILE).read_text())
    except InputFileError as err:
        raise fail(err.problem) from None
    except yaml12.StackFileLimitError as err:
        raise fail(str(err)) from None
    except RecursionError:
        # PyYAML composes recursively; yaml.v3 stops at 10,000 levels ("exceeded max depth").
        raise fail(f"nested too deeply to read; config is never more than {MAX_DEPTH} levels deep") from None
    except OSError as err:
        raise fail(f"cannot read the stack file: {err.strerror}") from None
    except UnicodeDecodeError:
        raise fail("not UTF-8 text; save the stack file as UTF-8") from None
    except yaml.YAMLError as err:
        # A finding in the file's text, at its line and column (validate prints file:line:column and, in CI, an
        # annotation there), not a file that cannot be read.
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ConfigError(source, [ConfigIssue(SYNTAX_ISSUE, f"not valid YAML: {problem}", line, column)]) from None
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
                    f"expected a list of ESC environment names such as [myorg/triton-production]; got {excerpt(value)}",
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
    walk = _FileWalk(SecretsProvider.of(document), set(), [])
    secret_keys, issues = walk.secret_keys, walk.issues
    flat: dict[str, str] = {}
    for key, raw in config.items():
        if not isinstance(key, str):
            issues.append(
                ConfigIssue("config", f"config key {excerpt(key)} is not a string; keys look like {PROJECT}:<name>")
            )
            continue
        value = _plain(raw, key, (), walk)
        flat[key] = value if isinstance(value, str) else json.dumps(value)
    if issues:
        raise ConfigError(source, issues)
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


def key_path(key: str, loc: tuple[int | str, ...]) -> str:
    path = _cut(key)
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            path += " (key)"
        else:
            path += key_step(part)
    return path


def _cut(text: str) -> str:
    """A key as a path shows it: no longer than an excerpt of a value."""
    return text if len(text) <= EXCERPT_CHARS else f"{text[:EXCERPT_CHARS]}…"


def _secret_below(annotation: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether a schema type holds, at any depth, a field the schema marks secret."""
    node = _unwrap(annotation)
    if node in seen:
        return False
    if isinstance(node, type) and issubclass(node, BaseModel):
        return any(
            secret_values.secret_field(f) or _secret_below(f.annotation, seen | {node})
            for f in node.model_fields.values()
        )
    return any(_secret_below(arg, seen | {node}) for arg in typing.get_args(node) if arg is not type(None))


def _hides_value(annotation: Any, loc: tuple[int | str, ...], given: Any) -> bool:
    """Whether an error at `loc` must not show its input: it is, holds or sits in a secret-bearing value.

    Secret-bearing (platform_config/secret_values.py): a field the schema marks secret, anything whose
    schema type holds one (a credential given as a list shows the secret as much as the bare string),
    and any key named for a secret along the path or inside the input (chart values).
    """
    if any(isinstance(part, str) and secret_values.secret_name(part) for part in loc):
        return True
    for depth in range(len(loc)):
        parent, part = _node_at(annotation, loc[:depth]), str(loc[depth])
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            field = parent.model_fields.get(_field_name(parent, part))
            if field is not None and secret_values.secret_field(field):
                return True
    node = _node_at(annotation, loc)
    return (node is not None and _secret_below(node)) or secret_values.holds_secret_name(given)


def _shown(annotation: Any, loc: tuple[int | str, ...], value: Any) -> str:
    """A value as an error may show it: an excerpt, or only what it is when it is secret-bearing."""
    return _unshown(value) if _hides_value(annotation, loc, value) else excerpt(value)


def _unshown(value: Any) -> str:
    return f"{secret_values.kind(value)} (not shown: the value is secret-bearing)"


def _section_annotation(key: str) -> Any:
    """The schema type of a config key (None outside the platform's sections)."""
    field_name = SECTION_KEYS.get(key)
    return PlatformConfig.model_fields[field_name].annotation if field_name else None


def _message(e: Any, annotation: Any, loc: tuple[int | str, ...]) -> tuple[tuple[int | str, ...], str]:
    """Pydantic's error in our words: what is wrong, the bad value (unless secret-bearing), what is allowed."""
    kind, given = e["type"], e.get("input")
    hidden = _hides_value(annotation, loc, given)
    given_text = _unshown(given) if hidden else excerpt(given)
    got = f"; got {given_text}"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(annotation, loc[:-1])
        return (
            loc,
            f"unknown key {excerpt(loc[-1])}; {_suggest(str(loc[-1]), allowed)}allowed keys: {', '.join(allowed)}",
        )
    if isinstance(given, str) and not hidden and (hint := _yaml11_hint(kind, given)):
        return loc, hint
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
            return (*loc, *error.key.split(".")), str(error)
        return loc, str(e["msg"]).removeprefix("Value error, ")
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        allowed = _allowed_keys(annotation, loc)
        with_keys = f" with keys {', '.join(allowed)}" if allowed else ""
        return loc, f"expected a mapping{with_keys}{got}"
    if kind == "string_pattern_mismatch":
        pattern = e.get("ctx", {}).get("pattern", "")
        return loc, f"must be {PATTERN_NAMES.get(pattern, f'a string matching {pattern}')}{got}"
    if loc and loc[-1] == "[key]":
        return loc, f"bad key {given_text}: {e['msg']}"
    return loc, f"{e['msg']}{got}"


_BASE60 = re.compile(r"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$")


def _yaml11_hint(kind: str, given: str) -> str | None:
    """For a string where a bool or number belongs: say so when YAML 1.1 would have read it as one.

    The Pulumi CLI reads stack files as YAML 1.2 (gopkg.in/yaml.v3, see platform_config/yaml12.py):
    `yes`/`on`/`off` are strings there, and base-60 numbers are gone.
    """
    if kind == "bool_type" and given.lower() in yaml12.YAML11_BOOLEANS:
        return f"the Pulumi CLI reads {given} as the string {given!r}, not a boolean (YAML 1.2); write true or false"
    if kind in ("int_type", "float_type") and _BASE60.match(given):
        sign = -1 if given.startswith("-") else 1
        value: float = 0
        for part in given.lstrip("+-").replace("_", "").split(":"):
            value = value * 60 + float(part)
        number = sign * (int(value) if value.is_integer() else value)
        return f"the Pulumi CLI reads {given} as the string {given!r}: YAML 1.2 has no base-60 numbers; write {number}"
    return None


def _field_name(model: Any, alias: str) -> str:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return next((name for name, f in model.model_fields.items() if f.alias == alias), alias)
    return alias


def _issues_from_pydantic(key: str, field_name: str, err: ValidationError) -> list[ConfigIssue]:
    annotation = PlatformConfig.model_fields[field_name].annotation
    issues = []
    for e in err.errors(include_url=False):
        found = e.get("ctx", {}).get("error")
        if isinstance(found, KeyProblemsError):
            issues += [ConfigIssue(key_path(key, (*e["loc"], *steps)), text) for steps, text in found.problems]
            continue
        loc, message = _message(e, annotation, tuple(e["loc"]))
        issues.append(ConfigIssue(key_path(key, loc), message))
    return issues


def _collection(annotation: Any) -> str | None:
    """What a schema type holds when it holds several values: `settings` (a model), a `map` or a `list`; else None."""
    node = _unwrap(annotation)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return "settings"
    return {dict: "map", list: "list"}.get(cast(Any, typing.get_origin(node)))


def _empty_message(node: Any, kind: str, field: FieldInfo | None) -> str:
    """What an empty value (YAML null) where a `kind` belongs is told (`field`: the key's, None for a map's entry or
    a list's item): null is neither `{}` nor an absent key, so it names both."""
    what = {"settings": "a mapping of settings", "map": "a map", "list": "a list"}[kind]
    head = f"empty (YAML null), where {what} belongs"
    if field is None or field.is_required():
        return f"{head}; give its {'settings' if kind == 'settings' else 'entries'}"
    if kind != "settings":
        empty = "{} for an empty map" if kind == "map" else "[] for an empty list"
        return f"{head}; write {empty}, or remove the key to keep its default"
    needs = any(f.is_required() for f in node.model_fields.values())
    given = "give its settings" if needs else "write {} for its defaults"
    return f"{head}; {given}, or remove the key to {'leave it unset' if field.default is None else 'keep its defaults'}"


def _empty_values(
    key: str, annotation: Any, value: Any, loc: tuple[int | str, ...] = (), field: FieldInfo | None = None
) -> Iterator[ConfigIssue]:
    """Each empty value (YAML null, a key written with nothing after it) where a mapping or a list belongs.

    One rule for every section, sub-section, map and list: an empty one is refused, naming its key. `gpuOperator:`
    with its settings commented out could mean the operator with its defaults or no operator, and `taints:` no taints
    or the default one; `{}`/`[]` and leaving the key out each say which. (Scalars are not concerned: an optional
    one left empty is unset.)
    """
    node = _unwrap(annotation)
    if value is None:
        kind = _collection(node)
        if kind is not None:
            yield ConfigIssue(key_path(key, loc), _empty_message(node, kind, field))
        return
    if len(loc) > MAX_DEPTH:
        return
    origin = typing.get_origin(node)
    if isinstance(node, type) and issubclass(node, BaseModel) and isinstance(value, dict):
        by_alias = {f.alias: f for f in node.model_fields.values()}
        for name, below in value.items():
            known = by_alias.get(name)
            if known is not None:
                yield from _empty_values(key, known.annotation, below, (*loc, name), known)
    elif origin is dict and isinstance(value, dict):
        for name, below in value.items():
            yield from _empty_values(key, typing.get_args(node)[-1], below, (*loc, name))
    elif origin is list and isinstance(value, list):
        for i, below in enumerate(value):
            yield from _empty_values(key, typing.get_args(node)[0], below, (*loc, i))


def _valid_entries(field_name: str, entries: dict[str, Any]) -> dict[str, Any]:
    """The entries of a map section that are valid on their own (the map's others failed)."""
    valid: dict[str, Any] = {}
    for name, entry in entries.items():
        try:
            valid.update(_ADAPTERS[field_name].validate_python({name: entry}))
        except ValidationError:
            continue
    return valid


def _near_project(namespace: str) -> bool:
    """A namespace that is the project's misspelt or cut short (`triton-platfrom`, `triton`, `Triton_Platform`).

    Other namespaces are other programs' and providers' config (`kubernetes:`, `aws:`), left alone.
    """
    spelt = namespace.lower().replace("_", "-")
    similar = difflib.SequenceMatcher(None, spelt, PROJECT).ratio() > 0.8
    return similar or (len(spelt) >= 4 and (PROJECT.startswith(spelt) or spelt.startswith(PROJECT)))


def _namespace_issues(flat: Mapping[str, str], deferred: Collection[str]) -> list[ConfigIssue]:
    issues = []
    known = sorted(SECTION_KEYS)
    for key in flat:
        namespace, colon, name = key.partition(":")
        if not colon:
            shown = _cut(key)
            issues.append(
                ConfigIssue(
                    shown, f"config keys need a namespace; {_suggest(f'{PROJECT}:{key}', known)}use {PROJECT}:{shown}"
                )
            )
        elif namespace == PROJECT and key not in SECTION_KEYS:
            issues.append(ConfigIssue(key, f"unknown key; {_suggest(key, known)}allowed keys: {', '.join(known)}"))
        elif namespace != PROJECT and _near_project(namespace):
            close = difflib.get_close_matches(f"{PROJECT}:{name}", known, n=1, cutoff=0.6)
            suggestion = close[0] if close else PROJECT
            issues.append(
                ConfigIssue(
                    _cut(key),
                    f"unknown config namespace {namespace!r}, so the platform never reads this key; "
                    f"did you mean {suggestion!r}?",
                )
            )
    if DISABLE_DEFAULT_PROVIDERS in deferred and DISABLE_DEFAULT_PROVIDERS not in flat:
        return issues
    providers = _decode(flat.get(DISABLE_DEFAULT_PROVIDERS, "[]"))
    if not isinstance(providers, list) or not ({"kubernetes", "*"} & set(map(str, providers))):
        issues.append(
            ConfigIssue(
                DISABLE_DEFAULT_PROVIDERS,
                "must list 'kubernetes' so nothing deploys through the ambient kubeconfig context; "
                f"got {excerpt(providers)}",
            )
        )
    return issues


def _secret_values_in_plain_text(
    flat: Mapping[str, str], secret_keys: Collection[str], from_stack_file: bool
) -> list[ConfigIssue]:
    """Plain values that give a secret away (credentials in a URL) or stand in for one (Pulumi's mask).

    From the engine, a key holding any secret is secret as a whole and is passed over; read from the
    file, secret leaves are already placeholders and literal placeholders were refused by `_plain`.
    """
    issues = []
    for key, raw in flat.items():
        if key in secret_keys and not from_stack_file:
            continue
        # Iterative: the engine's JSON may nest deeper than Python's recursion allows.
        pending: list[tuple[tuple[int | str, ...], Any]] = [((), _decode(raw))]
        while pending:
            loc, value = pending.pop()
            if isinstance(value, dict):
                pending += [((*loc, k), v) for k, v in value.items()]
            elif isinstance(value, list):
                pending += [((*loc, i), v) for i, v in enumerate(value)]
            elif isinstance(value, str):
                if value == SECRET_PLACEHOLDER and not from_stack_file:
                    issues.append(ConfigIssue(key_path(key, loc), _placeholder_message(key_path(key, loc))))
                for url in url_credentials.find(value) if "://" in value else ():
                    path = key_path(key, loc)
                    # Masked, the rest of a secret-bearing URL (a Slack webhook's path) is still the secret.
                    hidden = _hides_value(_section_annotation(key), loc, value)
                    shown = "(not shown: the value is secret-bearing)" if hidden else excerpt(url.masked)
                    issues.append(
                        ConfigIssue(
                            path,
                            f"URL {shown} holds {' and '.join(url.kinds)}: plain config is stored "
                            "and deployed in clear; store the value as a Pulumi secret "
                            f"({_set_secret(path)}) or use the field's secret reference (an existing Secret's key) "
                            "where it has one",
                        )
                    )
    return issues


def _plaintext_credentials(
    sections: dict[str, Any], secret_keys: Collection[str], from_stack_file: bool, reported: Collection[str] = ()
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
            path = f"{key}.receivers.{name}.{integration}.{to_camel(field)}.value"
            # Only a placeholder the loader put there (from the file) stands for a secret.
            if value is not None and not (from_stack_file and value == SECRET_PLACEHOLDER) and path not in reported:
                issues.append(
                    ConfigIssue(
                        path,
                        "a credential in plain text; store it as a Pulumi secret: "
                        f"pulumi config set --secret --path '{path}' <value> (or reference an existing Secret)",
                    )
                )
    return issues


def _chart_locs(annotation: Any, loc: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Where the schema holds a Helm chart below a section (`chart` of monitoring and scaling)."""
    node = _unwrap(annotation)
    if isinstance(node, type) and issubclass(node, HelmChart):
        yield loc
    elif isinstance(node, type) and issubclass(node, BaseModel):
        for field in node.model_fields.values():
            yield from _chart_locs(field.annotation, (*loc, str(field.alias)))


_CHARTS = {name: tuple(_chart_locs(field.annotation)) for name, field in PlatformConfig.model_fields.items()}
"""Where each section holds a Helm chart, for the chart values check."""


def _chart_values_issues(key: str, field_name: str, section: Any) -> list[ConfigIssue]:
    """What chart_values.py refuses in each chart's `values` of a section, as given (valid or not)."""
    issues = []
    for loc in _CHARTS[field_name]:
        values = section
        for part in (*loc, "values"):
            values = values.get(part) if isinstance(values, dict) else None
        if isinstance(values, dict):
            issues += [
                ConfigIssue(key_path(key, (*loc, "values", *below)), message)
                for below, message in chart_values.problems(values)
            ]
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
    # The engine's JSON may nest past what decoding can recurse through: such a key is reported at
    # the bound, as the stack file's walk reports it, and read no further.
    too_deep = {key: loc for key, raw in flat.items() if (loc := json_too_deep(raw)) is not None}
    issues = [ConfigIssue(key_path(key, loc), TOO_DEEP) for key, loc in too_deep.items()]
    flat = {key: raw for key, raw in flat.items() if key not in too_deep}
    deferred = {*deferred, *too_deep}
    issues += _namespace_issues(flat, deferred)
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
        issues.extend(_chart_values_issues(key, field_name, value))
        empty = list(_empty_values(key, field.annotation, value, (), field))
        issues.extend(empty)
        try:
            parsed = _ADAPTERS[field_name].validate_python(value)
            if not empty:  # a section with an empty value is not read as if it had none
                sections[field_name] = parsed
        except ValidationError as err:
            # What the schema says of an empty value itself (`expected a mapping`), the rule above has said.
            said = {issue.path for issue in empty}
            issues.extend(i for i in _issues_from_pydantic(key, field_name, err) if i.path not in said)
            if field_name == "models" and isinstance(value, dict):
                sections[field_name] = _valid_entries(field_name, value)
            elif field_name == "kubernetes" and isinstance(value, dict) and value.get("mode") in ("deploy", "render"):
                # Production must never render: say so even when other kubernetes keys are wrong.
                sections[field_name] = KubernetesConfig.model_construct(
                    mode=value["mode"], namespace=str(value.get("namespace"))
                )
    issues.extend(cross_section_issues(sections, repo))
    in_plain_text = _secret_values_in_plain_text(flat, secret_keys, from_stack_file)
    issues.extend(in_plain_text)
    issues.extend(_plaintext_credentials(sections, secret_keys, from_stack_file, {i.path for i in in_plain_text}))
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
    if problem := stack_name_problem(name):
        raise ConfigError(source, [ConfigIssue("(stack)", problem)])
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
    repo = read_repository(DEFAULT_MODEL_REPO) if repo is None else repo
    config = parse_config(flat, source, repo, secret_keys, from_stack_file=True, deferred=absent)
    renders = not {section_key("serving"), section_key("models")} & set(absent)
    return StackConfig(
        stack=name,
        source=source,
        config=config,
        environments=environments,
        deferred=absent,
        rendered=render_stack(name, config.serving, config.models, repo) if renders else None,
    )


def load_stack(stack: str, repo: ModelRepository | None = None) -> StackConfig:
    """Read and validate `stacks/Pulumi.<stack>.yaml`."""
    return load_stack_file(stack_file(stack), stack, repo)
