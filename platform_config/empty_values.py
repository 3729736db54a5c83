"""Empty values (YAML null, a key written with nothing after it) where a mapping or a list belongs: one rule for
every section, sub-section, map and list of the schema, each refused at its key with what `{}`, `[]` or leaving
the key out would say instead."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any, cast

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from platform_config.errors import ConfigIssue
from platform_config.nesting import MAX_DEPTH
from platform_config.problem_text import key_path
from platform_config.schema_nodes import unwrap


def _collection(annotation: Any) -> str | None:
    """What a schema type holds when it holds several values: `settings` (a model), a `map` or a `list`; else None."""
    node = unwrap(annotation)
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


def empty_values(
    key: str, annotation: Any, value: Any, loc: tuple[int | str, ...] = (), field: FieldInfo | None = None
) -> Iterator[ConfigIssue]:
    """Each empty value (YAML null, a key written with nothing after it) where a mapping or a list belongs.

    One rule for every section, sub-section, map and list: an empty one is refused, naming its key. `gpuOperator:`
    with its settings commented out could mean the operator with its defaults or no operator, and `taints:` no taints
    or the default one; `{}`/`[]` and leaving the key out each say which. (Scalars are not concerned: an optional
    one left empty is unset.)
    """
    node = unwrap(annotation)
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
                yield from empty_values(key, known.annotation, below, (*loc, name), known)
    elif origin is dict and isinstance(value, dict):
        for name, below in value.items():
            yield from empty_values(key, typing.get_args(node)[-1], below, (*loc, name))
    elif origin is list and isinstance(value, list):
        for i, below in enumerate(value):
            yield from empty_values(key, typing.get_args(node)[0], below, (*loc, i))
