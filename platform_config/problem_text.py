"""How a config problem is worded: the key path it names (a key cut to an excerpt's length), the bad value shown
as an excerpt or, when it is secret-bearing, only as what it is, a close match suggested for a misspelt key, and
pydantic's validation errors put in the platform's words (a YAML 1.1 reading named where it explains a wrong
type). Where the problem then stands in the file is key_positions.py's; the issue and the error that carry it
are errors.py's."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import ValidationError

from platform_config import secret_values, yaml12
from platform_config.errors import ConfigIssue
from platform_config.reference import type_text
from platform_config.schema import PlatformConfig
from platform_config.schema_nodes import allowed_keys, field_name_of, node_at
from platform_config.types import KeyProblemError, KeyProblemsError
from triton_platform.args.excerpts import EXCERPT_CHARS, excerpt, key_step
from triton_platform.args.formats import PATTERN_NAMES


def key_path(key: str, loc: tuple[int | str, ...]) -> str:
    path = cut_key(key)
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            path += " (key)"
        else:
            path += key_step(part)
    return path


def cut_key(text: str) -> str:
    """A key as a path shows it: no longer than an excerpt of a value."""
    return text if len(text) <= EXCERPT_CHARS else f"{text[:EXCERPT_CHARS]}…"


def suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def shown_value(annotation: Any, loc: tuple[int | str, ...], value: Any) -> str:
    """A value as an error may show it: an excerpt, or only what it is when it is secret-bearing."""
    return _unshown(value) if secret_values.hides_value(annotation, loc, value) else excerpt(value)


def _unshown(value: Any) -> str:
    return f"{secret_values.kind(value)} (not shown: the value is secret-bearing)"


def _message(e: Any, annotation: Any, loc: tuple[int | str, ...]) -> tuple[tuple[int | str, ...], str]:
    """Pydantic's error in our words: what is wrong, the bad value (unless secret-bearing), what is allowed."""
    kind, given = e["type"], e.get("input")
    hidden = secret_values.hides_value(annotation, loc, given)
    given_text = _unshown(given) if hidden else excerpt(given)
    got = f"; got {given_text}"
    if kind == "extra_forbidden":
        allowed = allowed_keys(annotation, loc[:-1])
        return (
            loc,
            f"unknown key {excerpt(loc[-1])}; {suggest(str(loc[-1]), allowed)}allowed keys: {', '.join(allowed)}",
        )
    if isinstance(given, str) and not hidden and (hint := _yaml11_hint(kind, given)):
        return loc, hint
    if kind == "missing":
        node = node_at(annotation, loc[:-1])
        field = node.model_fields.get(field_name_of(node, str(loc[-1]))) if node else None
        keys = allowed_keys(annotation, loc)
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
        allowed = allowed_keys(annotation, loc)
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


def issues_from_pydantic(key: str, field_name: str, err: ValidationError) -> list[ConfigIssue]:
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
