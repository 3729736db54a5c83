"""Values written into PromQL: a label matcher's value is a string literal, quoted and escaped, so no name or
namespace can end the literal and rewrite the query around it."""

from __future__ import annotations

import json
from collections.abc import Iterable


def label_value(value: str) -> str:
    """`value` as a PromQL string literal: double-quoted, with Go's escapes (PromQL reads strings as Go does,
    prometheus/promql/parser/lex.go), which JSON's are a subset of for these characters."""
    return json.dumps(value, ensure_ascii=False)


REGEX_SPECIALS = frozenset("\\.+*?()|[]{}^$")
"""RE2's metacharacters: Prometheus' regex matchers are RE2, anchored at both ends."""


def regex_literal(text: str) -> str:
    """`text` matched literally in a Prometheus regex matcher (still to be quoted by `label_value`)."""
    return "".join(f"\\{c}" if c in REGEX_SPECIALS else c for c in text)


def any_of(names: Iterable[str]) -> str:
    """A regex matcher's value (quoted) that matches exactly `names`, each literally: the objects a component
    outputs, never a prefix that another's would share."""
    return label_value("|".join(regex_literal(name) for name in sorted(set(names))))
