"""The stack file with a plan's values, edited round trip so that every comment, anchor and layout stays.

Each changed value carries an end-of-line note naming `stackctl plan`, the trace and the date; inside a
flow mapping (`replicas: {min: 2, max: 10}`) the note goes on the line's key. A value's note replaces an
older plan's note on the same line, so re-planning does not pile them up.
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from planner.settings import Place, Value, apply_edits

NOTE_PREFIX = "stackctl plan"


def _yaml() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    yaml.indent(mapping=2, sequence=4, offset=2)  # the stack files' own layout: lists indented under their key
    return yaml


def _new_map(parent: MutableMapping[str, Any]) -> CommentedMap:
    child = CommentedMap()
    if isinstance(parent, CommentedMap) and parent.fa.flow_style():
        child.fa.set_flow_style()
    return child


def _note(mapping: CommentedMap, key: str, note: str) -> None:
    """`  # note` at the end of `key`'s line, keeping the comments ruamel files under the same key."""
    entry = mapping.ca.items.setdefault(key, [None, None, None, None])
    # Slot 2 holds the line's own comment, then the comment lines above the next key.
    own, _, below = entry[2].value.partition("\n") if entry[2] is not None else ("", "", "")
    own = "" if own.strip().startswith(f"# {NOTE_PREFIX}") else own.strip()
    # Column 0: the emitter puts one space after the value, the text another.
    entry[2] = CommentToken(f" {own + '; ' if own else '# '}{note}\n{below}", CommentMark(0))


def _line_of(config: CommentedMap, path: Place) -> tuple[CommentedMap, str]:
    """The block mapping and key whose line holds the value at `path`: a flow mapping's line is its key's."""
    node = config
    for key in path[:-1]:
        child = node[key]
        if child.fa.flow_style():
            return node, key
        node = child
    return node, path[-1]


def _flow(value: Value) -> Any:
    """A list the way the stack files write short lists: `[8, 16]`."""
    if not isinstance(value, list):
        return value
    sequence = CommentedSeq(value)
    sequence.fa.set_flow_style()
    return sequence


def patched(text: str, changes: Mapping[Place, Value], note: str) -> str:
    """`text`, a stack file, with `changes` applied under `config:` and each changed line noted."""
    yaml = _yaml()
    doc = yaml.load(text)
    config = doc["config"]
    apply_edits(config, {path: _flow(value) for path, value in changes.items()}, _new_map)
    for path, value in changes.items():
        if value is not None:
            _note(*_line_of(config, path), note)
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def unified_diff(before: str, after: str, name: str) -> str:
    """A unified diff: `git apply`-able (a/, b/) for a file in the project, `patch -p0` for one outside."""
    old, new = (name, name) if Path(name).is_absolute() else (f"a/{name}", f"b/{name}")
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), old, new))
