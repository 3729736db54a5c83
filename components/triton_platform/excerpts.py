"""How a value appears in an error: recognisable, one line, and never a credential."""

from __future__ import annotations

from triton_platform.url_credentials import redact

EXCERPT_CHARS = 80
"""How much of a value an error shows: enough to recognise it, and a 1 MB value stays one line."""


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """`repr(value)` for an error message: URL credentials masked, cut to `limit` characters plus '…'."""
    text = redact(repr(value))
    return text if len(text) <= limit else f"{text[:limit]}…"
