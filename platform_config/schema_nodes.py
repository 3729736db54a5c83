"""Where a key path leads in the schema: the type at a location below a section (Annotated and Optional
stripped), the keys a model there allows, and a field's Python name for its camelCase alias. Errors name what
is allowed from it, and the secret checks find with it what a location holds."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel


def unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional to reach a model, dict or list type."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:
            return annotation


def node_at(annotation: Any, loc: tuple[int | str, ...]) -> Any:
    """The schema type at `loc` below a section (None when `loc` leaves the schema)."""
    current = unwrap(annotation)
    for part in loc:
        origin = typing.get_origin(current)
        if origin in (dict, list):
            current = unwrap(typing.get_args(current)[-1])
        elif isinstance(current, type) and issubclass(current, BaseModel):
            by_alias = {f.alias: f for f in current.model_fields.values()}
            current = unwrap(by_alias[str(part)].annotation) if str(part) in by_alias else None
        else:
            return None
    return current


def allowed_keys(annotation: Any, loc: tuple[int | str, ...]) -> list[str]:
    node = node_at(annotation, loc)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return sorted(f.alias for f in node.model_fields.values() if f.alias)
    return []


def field_name_of(model: Any, alias: str) -> str:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return next((name for name, f in model.model_fields.items() if f.alias == alias), alias)
    return alias
