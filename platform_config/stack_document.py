"""A stack file read as the Pulumi CLI reads it (YAML 1.2, yaml12.py): its document, or a ConfigError saying why
it cannot be read; the ESC environments it imports; and its `config:` flattened into Pulumi's flat config, each
`secure:` leaf checked against the stack's secrets provider and replaced by a placeholder, and every problem the
walk meets gathered for one report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from platform_config import yaml12
from platform_config.errors import FILE_ISSUE, SYNTAX_ISSUE, ConfigError, ConfigIssue
from platform_config.nesting import MAX_DEPTH, TOO_DEEP
from platform_config.paths import STACK_FILE, display_path
from platform_config.plaintext_secrets import SECRET_PLACEHOLDER, placeholder_message, set_secret_command
from platform_config.problem_text import key_path, shown_value
from platform_config.schema import section_annotation
from platform_config.secrets_provider import SecretsProvider
from triton_platform.args.excerpts import excerpt
from triton_platform.args.input_files import InputFile, InputFileError
from triton_platform.kube.namespace import PROJECT


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
                issues.append(ConfigIssue(path, f"{problem}; set the secret again: {set_secret_command(path)}"))
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
                f"unquoted date or time {shown_value(section_annotation(key), loc, str(value))}; quote it: "
                "the Pulumi CLI reads it as a string, "
                "other YAML readers as a date",
            )
        )
        return str(value)
    if value == SECRET_PLACEHOLDER:
        path = key_path(key, loc)
        issues.append(ConfigIssue(path, placeholder_message(path)))
        return value
    if value is None or isinstance(value, str | int | float | bool):
        return value
    issues.append(
        ConfigIssue(
            key_path(key, loc),
            f"YAML value {shown_value(section_annotation(key), loc, str(value))} of type {type(value).__name__} is not "
            "allowed; quote it",
        )
    )
    return None


def stack_document(path: Path) -> dict[str, Any]:
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
    document = stack_document(path)
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
