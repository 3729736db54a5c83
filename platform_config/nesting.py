"""How deep config may nest: one bound for the stack file and for the engine's config alike.

The schema's deepest key is far shallower than MAX_DEPTH; the bound exists so that a value
nested thousands deep is a report naming where it goes too deep, never a RecursionError
(Python's JSON decoder and pydantic both recurse once per level).
"""

from __future__ import annotations

import json
import re

MAX_DEPTH = 50
"""Nesting a config value may reach below its key; the schema's deepest is far less."""

TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
"""The message for a value past the bound; its issue's path is the key path down to the bound."""

Loc = tuple[int | str, ...]

# One JSON token: a bracket, a separator, a string (escapes and all) or a bare scalar; whitespace skipped.
_TOKEN = re.compile(r'[{}\[\],:]|"(?:[^"\\]|\\.)*"|[^\s{}\[\],:"]+', re.DOTALL)


def json_too_deep(text: str) -> Loc | None:
    """Where JSON `text` first holds a value deeper than MAX_DEPTH below its root; None when it does not.

    The location has MAX_DEPTH + 1 parts (object keys and array indexes), as the stack file's
    walk reports it. Iterative and stops at the first value past the bound, so a value nested
    100,000 deep costs one pass over its first levels. `text` is JSON as the Pulumi engine passes
    structured config (every non-string value JSON-encoded).
    """
    kinds: list[str] = []  # the open containers, '{' or '['
    loc: list[int | str] = []  # the key or index of the value being read in each of them
    awaiting_key = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == ":":
            continue
        if token == ",":
            if kinds and kinds[-1] == "[":
                loc[-1] = int(loc[-1]) + 1
            awaiting_key = bool(kinds) and kinds[-1] == "{"
        elif token in ("]", "}"):
            if not kinds:
                return None
            kinds.pop()
            loc.pop()
        elif awaiting_key:
            loc[-1] = _unquote(token)
            awaiting_key = False
        elif len(kinds) > MAX_DEPTH:
            return tuple(loc)
        elif token in ("{", "["):
            kinds.append(token)
            loc.append(0 if token == "[" else "")
            awaiting_key = token == "{"
    return None


def _unquote(literal: str) -> str:
    try:
        return str(json.loads(literal))
    except ValueError:
        return literal.strip('"')
