"""Stack files read as the Pulumi CLI reads them: YAML 1.2 scalars, unique keys, bounded aliases.

The CLI parses `Pulumi.<stack>.yaml` with gopkg.in/yaml.v3, whose plain scalars follow
the YAML 1.2 core schema; PyYAML's resolver is YAML 1.1, where `yes`/`on`/`off` are
booleans and `1:30` is 90. Reading the file with 1.1 rules would validate a value the
CLI never hands the program, so plain scalars are resolved here by a port of yaml.v3's
`resolve()`: https://github.com/go-yaml/yaml/blob/v3/resolve.go
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Hashable
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

NULL = "tag:yaml.org,2002:null"
BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
STR = "tag:yaml.org,2002:str"
TIMESTAMP = "tag:yaml.org,2002:timestamp"
MERGE = "tag:yaml.org,2002:merge"

ALIAS_NODE_BUDGET = 10_000
"""Most nodes a stack file may produce through aliases (beyond the nodes it spells out).

yaml.v3 bounds the same thing by a ratio (`allowedAliasRatio`,
https://github.com/go-yaml/yaml/blob/v3/decode.go, the fix for CVE-2019-11253); a
stack file has no use for more than a few aliases, so a flat, stricter budget reads
better in an error and stops a "billion laughs" before anything is expanded.
"""

YAML11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})
"""Words YAML 1.1 reads as booleans (any case) that YAML 1.2, and so the Pulumi CLI, reads as strings."""

# resolve.go's resolveMap: the only spellings of true, false, null, infinity and NaN.
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, float("nan"))),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, float("inf"))),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, float("-inf"))),
    "<<": (MERGE, "<<"),
}
# resolve.go's yamlStyleFloat, tried on the text with '_' removed.
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
# What strconv.ParseFloat accepts of a scalar that starts with '.' (no '_' without a base prefix).
_DOT_FLOAT = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")
# The layouts of resolve.go's allowedTimestampFormats (Go's `1`, `2`, `4`, `5` take one or two digits).
_TIMESTAMP = re.compile(
    r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?:[Tt](?P<H>[0-9]{1,2}):(?P<M>[0-9]{1,2}):(?P<S>[0-9]{1,2})(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: (?P<h>[0-9]{1,2}):(?P<m>[0-9]{1,2}):(?P<s>[0-9]{1,2})(?:\.[0-9]+)?))?$"
)
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_INT64 = range(-(2**63), 2**63)
_UINT64 = range(2**64)


class YamlTimestamp(str):
    """An unquoted date or time. The CLI hands it on as a string; the loader asks for quotes instead."""

    __slots__ = ()


class StackFileLimitError(Exception):
    """The document is refused before it is built: it would expand past a limit."""


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), else ParseUint(text, 0, 64): Go's base-prefixed integer syntax.

    https://pkg.go.dev/strconv#ParseInt: base 0 reads `0x`, `0o`, `0b` and a leading `0` (octal).
    """
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    prefix = body[:2].lower()
    if len(body) >= 3 and prefix in ("0x", "0o", "0b"):  # Go wants a digit after the prefix
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[prefix], body[2:]
    elif body[:1] == "0" and len(body) > 1:
        base, digits = 8, body[1:]
    else:
        base, digits = 10, body
    # 64 significant digits is past 64 bits in any base: too long to be an int64 without reading it.
    if not digits or any(c not in _DIGITS[base] for c in digits) or len(digits.lstrip("0")) > 64:
        return None
    value = sign * int(digits, base)
    if value in _INT64 or (text[:1] not in "+-" and value in _UINT64):
        return value
    return None


def _finite(text: str) -> float | None:
    """strconv.ParseFloat's result, or None where Go reports ErrRange (an overflow to ±Inf)."""
    value = float(text)
    return None if value in (float("inf"), float("-inf")) else value


def _timestamp(text: str) -> bool:
    """Whether yaml.v3's parseTimestamp takes `text` (time.Parse checks the ranges too)."""
    match = _TIMESTAMP.match(text)
    if match is None:
        return False
    parts = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    try:
        datetime.datetime(
            parts["y"],
            parts["mo"],
            parts["d"],
            parts.get("H", parts.get("h", 0)),
            parts.get("M", parts.get("m", 0)),
            parts.get("S", parts.get("s", 0)),
        )
    except ValueError:
        return False
    return True


def resolve_plain(text: str, *, timestamps: bool = True) -> tuple[str, Any]:
    """The tag and value yaml.v3 gives a plain (unquoted, untagged) scalar; anything else is a string.

    Port of resolve() in https://github.com/go-yaml/yaml/blob/v3/resolve.go: true/false and null
    only in the spellings of its table (so `yes`, `on`, `off`, `y`, `n` stay strings), integers in
    Go's syntax after '_' is dropped (`0x1F`, `0o17`, `0b101`, 1.1's `017`), floats matching
    yamlStyleFloat (`1e3`, `.5`; no base-60 `1:30`), and dates in its four layouts.
    """
    word = _WORDS.get(text)
    if word is not None:
        return word
    first = text[:1]
    if first == ".":
        if _DOT_FLOAT.match(text) and (value := _finite(text)) is not None:
            return FLOAT, value
    elif first and first in "+-0123456789":
        if timestamps and _timestamp(text):
            return TIMESTAMP, text
        plain = text.replace("_", "")
        if (integer := _go_int(plain)) is not None:
            return INT, integer
        if _GO_FLOAT.match(plain) and (value := _finite(plain)) is not None:
            return FLOAT, value
    return STR, text


def _short_tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


def _node_label(node: Node) -> str:
    return f"line {node.start_mark.line + 1}" if node.start_mark else "the file"


class StackFileLoader(yaml.SafeLoader):
    """SafeLoader with yaml.v3's scalar rules, unique mapping keys, and a budget on alias expansion."""

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            return resolve_plain(value)[0]
        # Quoted scalars and collections: PyYAML's defaults (str, seq, map) are YAML 1.2's too.
        return super().resolve(kind, value, (False, False))  # type: ignore[no-untyped-call]

    def compose_document(self) -> Node | None:
        # Composer.compose_document, keeping the anchors for the alias budget before they are dropped.
        self.get_event()  # type: ignore[no-untyped-call]
        node = self.compose_node(None, None)  # type: ignore[arg-type]
        self.get_event()  # type: ignore[no-untyped-call]
        anchors, self.anchors = self.anchors, {}
        if node is not None:
            _check_aliases(node, anchors)
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        # yaml.v3 refuses a key given twice ("mapping key ... already defined"); PyYAML keeps the last.
        # Merged keys (`<<: *base`) may be overridden, so only the mapping's own keys are compared.
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE:
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise ConstructorError(None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _construct_core(loader: yaml.SafeLoader, node: Node) -> Any:
    """`!!bool`, `!!int`, `!!float`, `!!null`, plain or spelled out, by yaml.v3's rules.

    As in yaml.v3, an explicit tag must fit the text (`!!int 0o17` is 15, `!!bool yes` an error)
    and `!!float` takes an integer.
    """
    assert isinstance(node, ScalarNode)
    tag, value = resolve_plain(node.value, timestamps=False)
    if tag == node.tag:
        return value
    if node.tag == FLOAT and tag == INT:
        return float(value)
    raise ConstructorError(
        None,
        None,
        f"cannot read {node.value!r} as {_short_tag(node.tag)}: YAML 1.2, as the Pulumi CLI reads it, "
        f"makes it {_short_tag(tag)}",
        node.start_mark,
    )


def _construct_timestamp(loader: yaml.SafeLoader, node: Node) -> YamlTimestamp:
    assert isinstance(node, ScalarNode)
    return YamlTimestamp(node.value)


for _tag in (NULL, BOOL, INT, FLOAT):
    StackFileLoader.add_constructor(_tag, _construct_core)
StackFileLoader.add_constructor(TIMESTAMP, _construct_timestamp)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"


def _check_aliases(root: Node, anchors: dict[str, Node]) -> None:
    """Refuse a document whose aliases expand past ALIAS_NODE_BUDGET, or an anchor holding itself.

    PyYAML composes an alias as the anchored node itself, so the document is a graph of its
    distinct nodes; this walks each once (iteratively: nesting depth is the file's to choose) and
    counts the nodes a full expansion would produce. Expansion minus distinct nodes is what the
    aliases add.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    names = {id(node): name for name, node in anchors.items()}
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        if key in on_path:
            name = names.get(key, "?")
            raise StackFileLimitError(
                f"anchor &{name} ({_node_label(node)}) holds an alias to itself (*{name}); "
                "a value cannot contain itself: write it out instead"
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    added = sizes[id(root)] - len(sizes)
    if added > ALIAS_NODE_BUDGET:
        name, node = max(anchors.items(), key=lambda item: sizes.get(id(item[1]), 0))
        raise StackFileLimitError(
            f"YAML aliases would expand to {_count(added)} nodes, more than the {ALIAS_NODE_BUDGET:,} a stack file "
            f"may produce through aliases (anchor &{name}, {_node_label(node)}, is {_count(sizes[id(node)])} nodes "
            "by itself); "
            "write the repeated values out or use fewer aliases"
        )


def load(text: str) -> Any:
    """The stack file's document; yaml.YAMLError or StackFileLimitError when it cannot be read."""
    return yaml.load(text, Loader=StackFileLoader)  # a SafeLoader: no Python objects
