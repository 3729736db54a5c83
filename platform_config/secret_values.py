"""Which config values are secrets, decided in one place: no error prints one, and none is taken in clear.

A value is secret-bearing when the schema marks its field (``Annotated[..., SECRET]``, e.g. a receiver
credential's `value`), or, where the schema cannot know the keys (chart values), when its key is named
for a secret (`adminPassword`, `client_secret`, `bearerToken`, `apiKey`). URLs with credentials in
them are triton_platform/args/url_credentials.py's: masked wherever they appear.
"""

from __future__ import annotations

import re
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from platform_config.schema_nodes import field_name_of, node_at, unwrap
from triton_platform.args import url_credentials


class SecretField:
    """Field metadata: this field's value is a secret (the type stays what it is)."""

    def __repr__(self) -> str:
        return "SECRET"


SECRET = SecretField()
"""Mark a schema field secret: `value: Annotated[str | None, SECRET] = None`."""

# A key's words: camelCase, snake_case and kebab-case alike (`adminPassword`, `client_secret`, `API-Key`).
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_NOUNS = frozenset({"password", "passwd", "passphrase", "token"})
"""A key whose last word is one of these holds the secret itself; `passwordKey` or `tokenFile` say where one is kept."""
_SECRET_PAIRS = frozenset({("api", "key"), ("apikey",), ("private", "key"), ("secret", "key"), ("client", "secret")})
"""Last words that name a secret together; `existingSecret` or `secretName` name a Secret, not a secret."""


def secret_field(field: FieldInfo) -> bool:
    """Whether the schema marks this field's value secret."""
    return any(item is SECRET for item in field.metadata)


def secret_name(key: str) -> bool:
    """Whether a key is named for a secret value (not for where one is kept: `passwordKey`, `existingSecret`)."""
    words = tuple(word.lower() for word in _WORDS.findall(key))
    if not words:
        return False
    return words[-1] in _SECRET_NOUNS or words[-2:] in _SECRET_PAIRS or words[-1:] in _SECRET_PAIRS


def why_secret(key: str, value: str | float) -> str | None:
    """Why a scalar where the schema cannot mark fields (chart values) is a secret; None when it is not one.

    Its key is named for a secret (an empty value is not one: it clears a chart's default), or the
    value is a well-known token by its shape, whatever its key.
    """
    if isinstance(value, str) and url_credentials.known_token(value):
        return "shaped like a token"
    if secret_name(key) and value != "":
        return "named like one"
    return None


def holds_secret_name(value: Any) -> bool:
    """Whether a mapping or list holds, at any depth, a key named for a secret (iterative: depth is the input's)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if any(isinstance(k, str) and secret_name(k) for k in item):
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _secret_below(annotation: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether a schema type holds, at any depth, a field the schema marks secret."""
    node = unwrap(annotation)
    if node in seen:
        return False
    if isinstance(node, type) and issubclass(node, BaseModel):
        return any(secret_field(f) or _secret_below(f.annotation, seen | {node}) for f in node.model_fields.values())
    return any(_secret_below(arg, seen | {node}) for arg in typing.get_args(node) if arg is not type(None))


def hides_value(annotation: Any, loc: tuple[int | str, ...], given: Any) -> bool:
    """Whether an error at `loc` must not show its input: it is, holds or sits in a secret-bearing value.

    Secret-bearing (as this module's docstring says): a field the schema marks secret, anything whose
    schema type holds one (a credential given as a list shows the secret as much as the bare string),
    and any key named for a secret along the path or inside the input (chart values).
    """
    if any(isinstance(part, str) and secret_name(part) for part in loc):
        return True
    for depth in range(len(loc)):
        parent, part = node_at(annotation, loc[:depth]), str(loc[depth])
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            field = parent.model_fields.get(field_name_of(parent, part))
            if field is not None and secret_field(field):
                return True
    node = node_at(annotation, loc)
    return (node is not None and _secret_below(node)) or holds_secret_name(given)


def kind(value: Any) -> str:
    """What a value is, for a message that must not show it: 'a string', 'a list', ..."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"
