"""Parse a stack's config once, at the edge, and report every problem in one run.

Two doors lead here and share everything after the first step:

* ``pulumi up``/``preview``: the engine hands the program flat config, where
  structured values arrive JSON-encoded (``pulumi_source.py``);
* ``stackctl``: a stack YAML file is read and flattened the same way the CLI
  flattens it (``stack_document.py``, :func:`pulumi_config_from_stack_file`).

What it runs lives beside it, one idea a module: ``flat_config.py`` (keys and namespaces),
``empty_values.py``, ``chart_values.py``, ``plaintext_secrets.py``, ``checks.py`` (between sections)
and ``problem_text.py`` (how each problem is worded).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from platform_config import chart_values
from platform_config.checks import cross_section_issues
from platform_config.empty_values import empty_values
from platform_config.errors import ConfigError, ConfigIssue
from platform_config.flat_config import DISABLE_DEFAULT_PROVIDERS, decode_value, namespace_issues
from platform_config.kubernetes import KubernetesConfig
from platform_config.model_settings import render_stack
from platform_config.nesting import TOO_DEEP, json_too_deep
from platform_config.paths import DEFAULT_MODEL_REPO, display_path, stack_file
from platform_config.plaintext_secrets import plaintext_credentials, secret_values_in_plain_text
from platform_config.problem_text import issues_from_pydantic, key_path
from platform_config.reference import type_text
from platform_config.schema import SECTION_KEYS, PlatformConfig, section_key
from platform_config.schema_nodes import allowed_keys
from platform_config.stack_document import esc_environments, pulumi_config_from_stack_file, stack_document
from platform_config.types import stack_name_problem
from triton_platform.model_packaging.render import RenderedRepository
from triton_platform.model_packaging.source import ModelRepository, read_repository

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


def _valid_entries(field_name: str, entries: dict[str, Any]) -> dict[str, Any]:
    """The entries of a map section that are valid on their own (the map's others failed)."""
    valid: dict[str, Any] = {}
    for name, entry in entries.items():
        try:
            valid.update(_ADAPTERS[field_name].validate_python({name: entry}))
        except ValidationError:
            continue
    return valid


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
    issues += namespace_issues(flat, deferred)
    sections: dict[str, Any] = {}
    for key, field_name in SECTION_KEYS.items():
        field = PlatformConfig.model_fields[field_name]
        if key not in flat:
            if key in deferred:
                continue
            if field.is_required():
                keys = allowed_keys(field.annotation, ())
                expected = (
                    f"a mapping with keys {', '.join(keys)}" if keys else type_text(field.annotation, field.metadata)
                )
                issues.append(ConfigIssue(key, f"required key is missing (expects {expected})"))
            else:
                sections[field_name] = field.get_default(call_default_factory=True)
            continue
        # Plain strings (environment) stay strings; the CLI JSON-encodes everything else.
        value = flat[key] if field_name == "environment" else decode_value(flat[key])
        issues.extend(chart_values.section_issues(key, field_name, value))
        empty = list(empty_values(key, field.annotation, value, (), field))
        issues.extend(empty)
        try:
            parsed = _ADAPTERS[field_name].validate_python(value)
            if not empty:  # a section with an empty value is not read as if it had none
                sections[field_name] = parsed
        except ValidationError as err:
            # What the schema says of an empty value itself (`expected a mapping`), the rule above has said.
            said = {issue.path for issue in empty}
            issues.extend(i for i in issues_from_pydantic(key, field_name, err) if i.path not in said)
            if field_name == "models" and isinstance(value, dict):
                sections[field_name] = _valid_entries(field_name, value)
            elif field_name == "kubernetes" and isinstance(value, dict) and value.get("mode") in ("deploy", "render"):
                # Production must never render: say so even when other kubernetes keys are wrong.
                sections[field_name] = KubernetesConfig.model_construct(
                    mode=value["mode"], namespace=str(value.get("namespace"))
                )
    issues.extend(cross_section_issues(sections, repo))
    in_plain_text = secret_values_in_plain_text(flat, secret_keys, from_stack_file)
    issues.extend(in_plain_text)
    issues.extend(plaintext_credentials(sections, secret_keys, from_stack_file, {i.path for i in in_plain_text}))
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
    environments = esc_environments(stack_document(path), source)
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
