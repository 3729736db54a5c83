"""How a value appears in an error: recognisable, one line, and never a credential."""

from __future__ import annotations

import json
import re

from triton_platform.args.url_credentials import redact

EXCERPT_CHARS = 80
"""How much of a value an error shows: enough to recognise it, and a 1 MB value stays one line."""


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """`repr(value)` for an error message: URL credentials masked, cut to `limit` characters plus '…'."""
    text = redact(repr(value))
    return text if len(text) <= limit else f"{text[:limit]}…"


def is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8: a lone surrogate (U+D800-U+DFFF, from a YAML or JSON escape) cannot."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def key_step(key: str) -> str:
    """A key as one step of an error's path, for the stack file's keys and the components' Args alike: `.key`
    when plain, else `["key"]` as JSON, cut to EXCERPT_CHARS, so a path stays one line and reads back
    unambiguously (a label key's dots and slashes are not steps)."""
    if _PLAIN_KEY.fullmatch(key) and len(key) <= EXCERPT_CHARS:
        return f".{key}"
    if len(key) <= EXCERPT_CHARS:
        return f"[{json.dumps(key)}]"
    return f'[{json.dumps(key[:EXCERPT_CHARS])[:-1]}…"]'
